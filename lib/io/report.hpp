#pragma once
// Reports of one evaluated configuration (the `estimate` tool): the reference's per-layer JSON,
// CSV, and readable tables.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/step.hpp"

namespace perfsweep {

// The strategy's parallel-config keys as the reference names them ({"dp", "tp", "pp", "mbs"}, ...)
// and the NVLink-placement keys ({"nv_tp", "nv_dp", "nv_pp"} or nv_tp1, nv_tp2, ...).
std::vector<std::pair<const char*, std::int64_t>> config_keys(const Layout& layout);
std::vector<std::pair<const char*, std::int64_t>> nv_keys(const Layout& layout);

std::string_view strategy_name(Strategy s);  // "1d", "2d", "2d-seqp"
Strategy parse_strategy(const std::string& name);  // also accepts "2d-seq"; InputError otherwise

// {"modules": {"mlp": [...], "sa": [...], "dp": [...], "pp": [...]}, "totals": {...}, "throughput": x}
std::string estimate_json(const Evaluation& ev, const Layout& layout);

// One CSV row per layer (module, layer, every per-layer field), then the totals as `totals` rows.
std::string estimate_csv(const Evaluation& ev, const Layout& layout);

// Aligned tables for people: per-layer costs and times, totals, and the memory breakdown.
std::string estimate_text(const Evaluation& ev, const Layout& layout, const System& system, const Transformer& model,
                          std::int64_t global_batch);

}  // namespace perfsweep
