#pragma once
// --tokens and --gpu-hour-cost (estimate, configs, sweep): the token budget whose days, GPU-hours
// and cost a tool prints beside each configuration (model/efficiency.hpp), and the price of a
// GPU-hour on each system.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/human.hpp"
#include "core/limits.hpp"
#include "core/text.hpp"
#include "model/efficiency.hpp"

namespace perfsweep::cli {

struct BudgetOptions {
  std::string tokens_text, prices_text;
  // Set by check() (which tools call on their const options): the token budget (0: none) and
  // the prices.
  mutable double tokens = 0;
  mutable GpuHourPrices prices;

  void add_to(CLI::App& app) {
    app.add_option("--tokens", tokens_text,
                   "tokens to train on: 15T, 300B, 2.5e12 (k, M, B or G, T, P): prints the days, steps, GPU-hours "
                   "and, with a price, the cost");
    app.add_option("--gpu-hour-cost", prices_text,
                   "price of one GPU-hour (any one currency): PRICE for every system, or SYSTEM=PRICE,... per "
                   "system by name (over a system file's gpu_hour_cost): the cost per million tokens and, with "
                   "--tokens, of the training");
  }

  // Parses both flags; InputError naming the flag and the value otherwise.
  void check() const {
    tokens = 0;
    if (!tokens_text.empty()) {
      const auto v = parse_si_number(tokens_text);
      if (!v || *v > kMaxTokens) {
        throw InputError("--tokens must be a number of tokens up to 1e18, such as 15T, 300B or 2.5e12 (suffixes k, "
                         "M, B or G, T, P), got " + quoted_text(tokens_text));
      }
      tokens = *v;
    }
    prices = {};
    if (prices_text.empty()) return;
    std::size_t pos = 0;
    while (pos <= prices_text.size()) {
      const std::size_t comma = prices_text.find(',', pos);
      const std::string item = prices_text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      const std::size_t eq = item.rfind('=');
      const std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
      const std::string text = eq == std::string::npos ? item : item.substr(eq + 1);
      const auto v = parse_si_number(text);
      if (!v || *v > kMaxGpuHourCost || (eq != std::string::npos && name.empty())) {
        throw InputError("--gpu-hour-cost must be PRICE (every system) or SYSTEM=PRICE,... with prices from 0 to "
                         "1e6 per GPU-hour, got " + quoted_text(item));
      }
      if (eq == std::string::npos) {
        if (prices.all > 0) throw InputError("--gpu-hour-cost gives a price for every system twice: " +
                                             quoted_text(prices_text));
        prices.all = *v;
      } else {
        for (const auto& [known, price] : prices.by_system) {
          if (known == name) throw InputError("--gpu-hour-cost prices system " + quoted_text(name) + " twice");
        }
        prices.by_system.emplace_back(name, *v);
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }

  void check_systems(const std::vector<std::string>& names) const { prices.check_systems(names); }

  double price_for(const System& system) const { return prices.for_system(system); }
};

}  // namespace perfsweep::cli
