#include "search/configs_run.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "config/inputs.hpp"
#include "config/system_list.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/text.hpp"
#include "io/report.hpp"
#include "model/guards.hpp"
#include "model/layout_rules.hpp"
#include "search/candidates.hpp"
#include "search/neighbours.hpp"

namespace perfsweep {

SystemConfigRow make_row(ConfigRow r, std::size_t system, const SystemRun& run, const Transformer& model,
                         std::int64_t global_batch, double tokens) {
  SystemConfigRow x;
  // the precision's peak as the runtime's recipe runs it (FP8 or MXFP8)
  const Precision peak = peak_precision(run.sys, r.layout.exec.precision, run.runtime.mechanisms.fp8.recipe);
  x.efficiency = efficiency(model, run.sys, r.layout.n_gpus(), global_batch, r.totals.t, peak);
  x.budget = training_budget(x.efficiency, r.layout.n_gpus(), global_batch, model.l, tokens, run.price);
  x.cost_per_mtok = run.price > 0 ? run.price / 3600 / x.efficiency.tokens_per_s_per_gpu * 1e6 : 0;
  x.config = std::move(r);
  x.system = system;
  return x;
}

std::vector<std::string> system_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    std::string name = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (name.empty()) throw InputError("--system takes a name or path, or a list A,B,C; got '" + text + "'");
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      throw InputError("--system lists " + quoted_text(name) + " twice");
    }
    out.push_back(std::move(name));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::vector<SystemRun> load_system_runs(const std::vector<std::string>& names, std::optional<std::int64_t> nvs) {
  std::vector<SystemRun> systems;
  for (const std::string& name : names) {
    SystemRun s;
    s.sys = load_system_named(name);
    if (nvs) {
      check_count(*nvs, kMaxNvlinkDomain, "--nvs");
      s.sys.nvlink_size = *nvs;
    }
    for (const SystemRun& other : systems) {
      if (other.sys.name == s.sys.name) {
        throw InputError("--system: two systems named " + quoted_text(s.sys.name) + " (" + name + " and another)");
      }
    }
    systems.push_back(std::move(s));
  }
  return systems;
}

void check_priced(const std::vector<SystemRun>& systems) {
  std::string unpriced;
  for (const SystemRun& s : systems) {
    if (!(s.price > 0)) unpriced += (unpriced.empty() ? "" : ", ") + s.sys.name;
  }
  if (!unpriced.empty()) {
    throw InputError("--sort cost needs the price of a GPU-hour on every system; none for " + unpriced +
                     ": give --gpu-hour-cost PRICE or SYSTEM=PRICE,... (or gpu_hour_cost: in its system file)");
  }
}

std::vector<std::int64_t> degrees(const std::string& text, const std::string& flag, std::int64_t n_gpus) {
  if (text.empty()) return {};
  const std::string n = std::to_string(n_gpus);
  std::vector<std::int64_t> out;
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    for (std::int64_t v : parse_gpu_counts(text, flag)) {
      if (n_gpus % v) throw InputError(flag + "=" + std::to_string(v) + " does not divide --n-gpus=" + n);
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
  }
  auto bound = [&](const std::string& s, const char* which) {
    const std::string where = flag + " (range " + which + ")";
    const std::vector<std::int64_t> v = parse_gpu_counts(s, where);
    if (v.size() != 1) throw InputError(where + " must be a positive integer, got '" + s + "'");
    return v.front();
  };
  const std::int64_t lo = bound(text.substr(0, colon), "start"), hi = bound(text.substr(colon + 1), "end");
  if (lo > hi) throw InputError(flag + ": a range runs from low to high, got '" + text + "'");
  for (std::int64_t d : divisors(n_gpus)) {
    if (d >= lo && d <= hi) out.push_back(d);
  }
  if (out.empty()) throw InputError(flag + "=" + text + ": no divisor of --n-gpus=" + n + " in that range");
  return out;
}

std::vector<std::int64_t> values(const std::string& text, const std::string& flag) {
  if (text.empty()) return {};
  return parse_gpu_counts(text, flag);
}

void add_strategy_ranges(std::vector<SystemRun>& systems, const std::vector<Strategy>& strategies,
                         const ConfigRangesFlags& flags, const std::function<void(Strategy)>& check_strategy,
                         const std::function<void(const std::string&)>& note) {
  for (SystemRun& s : systems) {
    for (const Strategy strategy : strategies) {
      check_strategy(strategy);
      ConfigRanges r;
      const StrategyPlan& plan = plan_of(strategy);
      for (std::size_t i = 0; i < kAxisCount; ++i) {
        if (!kAxes[i].has_degree_flag() || !has_axis(plan, i)) continue;
        r.degrees_of(kAxes[i].name) = degrees(flags.degree[i], key_flag(kAxes[i].name), flags.n_gpus);
      }
      r.all_micro_batch_sizes = flags.mbs == "all";
      if (!r.all_micro_batch_sizes) r.mbs = values(flags.mbs, "--mbs");
      if (strategy == Strategy::TwoD) r.nb = values(flags.nb, "--nb");
      r.placement.nv = flags.nv;
      r.all_placements = flags.all_placements;
      r.attentions = parse_attentions(flags.attention, flags.attention_recompute, strategy);
      ExecutionChoices runnable = flags.choices;
      std::vector<std::string> dropped;
      try {
        check_runtime_choices(s.sys, s.runtime, strategy, runnable, &dropped);
      } catch (const StrategyNotRunError& e) {
        // of several strategies, one the runtime does not run is left out; when none is left, refused
        if (strategies.size() == 1 || (s.strategies.empty() && strategy == strategies.back())) throw;
        note(s.sys.name + ": --strat " + std::string(strategy_name(strategy)) + " dropped: " + e.what());
        continue;
      }
      for (const std::string& line : dropped) note((systems.size() > 1 ? s.sys.name + ": " : std::string()) + line);
      r.choices = runnable;
      r.stage_choices = flags.stage_choices;
      r.balance_stages = flags.balance_stages;
      r.stages_given = flags.stages_given;
      r.runtime = s.runtime;
      r.fits_only = flags.fits_only;
      r.keep = flags.top;
      // within one system and GPU count the cost of a token follows the throughput: the same top
      r.by_throughput = flags.by_throughput;
      s.ranges.push_back(std::move(r));
      s.strategies.push_back(strategy);
    }
  }
}

std::int64_t count_system_runs(const std::vector<SystemRun>& systems, const Transformer& model, std::int64_t n_gpus,
                               std::int64_t global_batch, std::int64_t max_points, bool pruned) {
  check_count(max_points, kMaxConfigPoints, "--max-points");
  const std::int64_t limit = pruned ? std::min(kMaxConfigPoints, max_points * kPrunedSpaceFactor) : max_points;
  std::int64_t points = 0;
  for (const SystemRun& s : systems) {
    for (std::size_t k = 0; k < s.strategies.size(); ++k) {
      points += count_configs(s.sys, model, s.strategies[k], n_gpus, global_batch, s.ranges[k], limit - points);
      if (points > limit) {
        throw InputError("configs would evaluate more than " +
                         (pruned ? std::to_string(limit) + " configurations (--max-points=" +
                                       std::to_string(max_points) + " x " + std::to_string(kPrunedSpaceFactor) +
                                       " with --top, whose walk skips what cannot enter the top)"
                                 : "--max-points=" + std::to_string(max_points) + " configurations") +
                         " (layouts x NVLink placements); narrow the lists (--tp, --pp, --dp, --mbs, "
                         "the execution options, --strat, --system) or raise --max-points to run it");
      }
    }
  }
  return points;
}

SystemRunsSweep sweep_system_runs(std::vector<SystemRun>& systems, const Transformer& model, std::int64_t n_gpus,
                                  std::int64_t global_batch, double tokens, std::size_t top,
                                  const std::function<void(std::int64_t)>& on_points,
                                  const std::function<void(const std::string&)>& note) {
  SystemRunsSweep out;
  out.refused_by_rule.assign(layout_rules().size(), 0);
  for (std::size_t si = 0; si < systems.size(); ++si) {
    SystemRun& s = systems[si];
    out.several_strategies = out.several_strategies || s.strategies.size() > 1;
    for (std::size_t k = 0; k < s.strategies.size(); ++k) {
      s.ranges[k].on_points = on_points;
      ConfigSweep one = sweep_configs(s.sys, model, s.strategies[k], n_gpus, global_batch, s.ranges[k]);
      const std::string strategy = s.strategies.size() > 1 ? std::string(strategy_name(s.strategies[k])) : "";
      if (one.pruned_subtrees + one.pruned_layouts > 0) {
        note(s.sys.name + (strategy.empty() ? "" : " " + strategy) + ": the step-time bound skipped " +
             std::to_string(one.pruned_subtrees) + " subtrees and " + std::to_string(one.pruned_layouts) +
             " layouts that could not enter the top " + std::to_string(top));
      }
      for (ConfigRow& r : one.rows) out.rows.push_back(make_row(std::move(r), si, s, model, global_batch, tokens));
      for (std::size_t i = 0; i < one.refused_by_rule.size(); ++i) out.refused_by_rule[i] += one.refused_by_rule[i];
      for (std::string& why : one.rejections) {
        if (!strategy.empty()) why = strategy + ": " + why;
        if (systems.size() > 1) why = s.sys.name + ": " + why;
        out.rejections.push_back(std::move(why));
      }
    }
  }
  return out;
}

std::string refused_by_rule_text(const std::vector<std::int64_t>& refused_by_rule) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < refused_by_rule.size(); ++i) {
    if (refused_by_rule[i] > 0) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return refused_by_rule[a] > refused_by_rule[b]; });
  std::string counts;
  for (std::size_t i : order) {
    counts += (counts.empty() ? "" : ", ") + std::string(layout_rules()[i].name) + " " +
              std::to_string(refused_by_rule[i]);
  }
  return counts.empty() ? "none" : counts;
}

std::string no_rows_message(const std::vector<std::string>& rejections, const std::vector<SystemRun>& systems,
                            const Transformer& model, std::int64_t n_gpus, std::int64_t global_batch, bool fits_only) {
  std::string why = rejections.empty() ? "" : ": " + rejections.front();
  if (rejections.size() > 1) why += " (and " + std::to_string(rejections.size() - 1) + " other reasons)";
  // where it runs instead: the nearest counts at which the search with the same options finds one that fits
  const NearestCounts near =
      nearest_feasible_counts(search_problems(systems, model, global_batch), n_gpus, global_batch, kNearestCountReach);
  std::string counts;
  if (near.below) counts = std::to_string(*near.below);
  if (near.above) counts += (counts.empty() ? "" : " and ") + std::to_string(*near.above);
  why += counts.empty() ? "; no GPU count within " + std::to_string(kNearestCountReach) +
                              " of it has a configuration that fits with these options"
                        : "; the nearest GPU counts with a configuration that fits (the search's, with these "
                          "options and batch): " + counts;
  return "no configuration of " + std::to_string(n_gpus) + " GPUs " +
         (fits_only ? "fits in memory among those asked for" : "matches the ranges asked for") + why;
}

void rank_rows(std::vector<SystemConfigRow>& rows, bool by_cost, bool by_throughput) {
  if (by_cost) {
    // Those that fit first, the cheapest per token first; then the cheapest of those that do not.
    std::stable_sort(rows.begin(), rows.end(), [](const SystemConfigRow& a, const SystemConfigRow& b) {
      return a.config.fits != b.config.fits ? a.config.fits : a.cost_per_mtok < b.cost_per_mtok;
    });
  } else if (by_throughput) {
    // Those that fit first, as the search ranks them; then the fastest of those that do not.
    std::stable_sort(rows.begin(), rows.end(), [](const SystemConfigRow& a, const SystemConfigRow& b) {
      return a.config.fits != b.config.fits ? a.config.fits : a.config.throughput > b.config.throughput;
    });
  }
}

std::vector<std::string> caveat_warnings(const std::vector<SystemConfigRow>& rows,
                                         const std::vector<SystemRun>& systems, std::int64_t n_gpus) {
  std::vector<std::string> out;
  std::vector<std::string> said;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SystemConfigRow& x = rows[i];
    if (i > 0 && !(x.efficiency.mfu_precision > 1)) continue;
    const SystemRun& s = systems[x.system];
    for (std::string& w : prediction_caveats("configuration " + std::to_string(i + 1), s.sys, s.runtime, n_gpus,
                                             x.efficiency, x.config.layout.exec.precision)) {
      // one warning per sentence past the row's name, however many rows share it
      std::string cause = w.substr(w.find(':'));
      if (std::find(said.begin(), said.end(), cause) != said.end()) continue;
      said.push_back(std::move(cause));
      out.push_back(std::move(w));
    }
  }
  return out;
}

std::vector<SearchProblem> search_problems(const std::vector<SystemRun>& systems, const Transformer& model,
                                           std::int64_t global_batch) {
  std::vector<SearchProblem> out;
  for (const SystemRun& s : systems) {
    for (std::size_t k = 0; k < s.strategies.size(); ++k) {
      for (const AttentionMode& attention : s.ranges[k].attentions) {
        SearchProblem p;
        p.strategy = s.strategies[k];
        p.model = model;
        p.system = s.sys;
        p.global_batch = global_batch;
        p.top_n = 1;
        p.attention = attention;
        p.exec = s.ranges[k].choices;
        p.runtime = s.runtime;
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

std::optional<std::string> ConfigProgress::add(std::int64_t points) {
  done_ += points;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < kProgressSeconds) return std::nullopt;
  last_ = now;
  const double s = std::chrono::duration<double>(now - start_).count();
  const double rate = static_cast<double>(done_) / s;
  char line[256];
  if (pruned_) {
    std::snprintf(line, sizeof line, "progress %lld configurations walked of %lld (%.0f/s; the rest may be skipped)",
                  static_cast<long long>(done_), static_cast<long long>(total_), rate);
  } else {
    std::snprintf(line, sizeof line, "progress %lld/%lld configurations (%.1f%%), %.0f/s, ETA %.0f s",
                  static_cast<long long>(done_), static_cast<long long>(total_),
                  100.0 * static_cast<double>(done_) / static_cast<double>(std::max<std::int64_t>(total_, 1)), rate,
                  static_cast<double>(total_ - done_) / rate);
  }
  return std::string(line);
}

}  // namespace perfsweep
