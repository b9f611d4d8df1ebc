#pragma once
// configs' rows (search/configs_run.hpp) as CSV, the columns scripts/plot_configs.py reads, and as
// an aligned table for people with its heading: the model, systems, strategies and order.
#include <cstdint>
#include <string>
#include <vector>

#include "io/launch.hpp"
#include "search/configs_run.hpp"

namespace perfsweep {

// system, n_gpus, strategy, the degrees, the execution options (by name), throughput, fits, the
// memory limit and headroom, every totals key, hbm_capacity, the efficiency, the budget and the
// costs where asked. Every number is checked before it is written (core/published.hpp).
// launch: each row's launch line (arguments only), a last column; empty: no such column.
// tokens: the training budget's tokens (0: no budget columns).
std::string configs_csv(const std::vector<SystemConfigRow>& rows, std::int64_t n_gpus,
                        const std::vector<SystemRun>& systems, const std::vector<LaunchLine>& launch, double tokens);

// The title line (model, systems, strategies, attention, GPU count, batch, row count and order)
// and one line per system: its NVLink domain, runtime, memory limit, price and calibration status.
std::string configs_heading(const std::vector<SystemRun>& systems, const Transformer& model, std::int64_t n_gpus,
                            std::int64_t global_batch, std::size_t n_rows, bool by_cost, bool by_throughput);

// The options given as lists (attention, and each searched execution option of `choices` with
// several values): configs_table's `listed`.
std::vector<std::string> listed_options(const std::vector<SystemRun>& systems, const ExecutionChoices& choices);

// Aligned, for people: one line per configuration, times in seconds per iteration. The options
// every row shares on a line above the table; those given as lists (`listed`) or differing between
// rows in an options column, with several strategies or systems each row's in a column; a footer
// naming the columns' units.
std::string configs_table(const std::vector<SystemConfigRow>& rows, bool several_strategies,
                          const std::vector<std::string>& listed, const std::vector<SystemRun>& systems,
                          const Transformer& model, double tokens);

}  // namespace perfsweep
