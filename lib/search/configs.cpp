#include "search/configs.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"
#include "search/candidates.hpp"
#include "search/dimensions.hpp"
#include "search/search.hpp"

namespace perfsweep {

bool PlacementChoice::admits(const PlacedAxes& placed, std::span<const std::int64_t> shares) const {
  for (std::size_t i = 0; i < placed.count; ++i) {
    const std::optional<std::int64_t>& given = nv[placed.axis[i]];
    if (given && *given != shares[i]) return false;
  }
  return true;
}

void for_each_placement(const System& sys, const Transformer& model, const Layout& layout,
                        const PlacementChoice& choice, const std::function<void(const Layout&)>& f) {
  const PlacedAxes& placed = placed_axes(layout.strategy);
  auto placements = [&](const Layout& c) {
    const auto place = [&](std::span<const std::int64_t> shares) {
      if (!choice.admits(placed, shares)) return;
      Layout p = c;
      set_placement(p, placed, shares);
      f(p);
    };
    if (choice.rank_order) {
      const std::array<std::int64_t, kMaxPlacedAxes> shares = rank_order_shares(c, sys.nvlink_size);
      place(std::span<const std::int64_t>(shares.data(), placed.count));
    } else {
      perfsweep::for_each_placement(c, sys.nvlink_size, place);
    }
  };
  const StrategyPlan& plan = plan_of(layout.strategy);
  if (has_summa_blocks(plan) && choice.search_nb) {
    for_each_summa_nb(layout.tensor.tp1, layout.tensor.tp2, model.e, [&](std::int64_t nb) {
      Layout c = layout;
      c.tensor.nb = nb;
      placements(c);
    });
  } else {
    placements(layout);
  }
}

std::optional<Evaluation> best_placement(const System& sys, const Transformer& model, Layout& layout,
                                         std::int64_t global_batch, const PlacementChoice& choice,
                                         const Runtime& runtime, bool balance_stages) {
  std::optional<Evaluation> best;
  Layout best_layout = layout;
  for_each_placement(sys, model, layout, choice, [&](const Layout& placed) {
    const Layout c = balance_stages ? with_balanced_stages(sys, model, runtime, placed, global_batch) : placed;
    Evaluation ev = evaluate(sys, model, runtime, c, global_batch);
    if (!best || ev.throughput > best->throughput) {
      best = std::move(ev);
      best_layout = c;
    }
  });
  layout = best_layout;
  return best;
}

namespace {

std::vector<std::int64_t> or_divisors(const std::vector<std::int64_t>& given, std::int64_t n) {
  return given.empty() ? divisors(n) : given;
}

bool contains(const std::vector<std::int64_t>& v, std::int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

ConfigRow make_row(const Layout& c, const Evaluation& ev, std::int64_t global_batch) {
  return {c, ev.totals, ev.throughput, ev.fits, global_batch / c.dp / c.mbs};
}

}  // namespace

std::vector<std::int64_t>& ConfigRanges::degrees_of(std::string_view axis) {
  if (axis == "tp" || axis == "tp1") return tp1;
  if (axis == "tp2") return tp2;
  if (axis == "dp") return dp;
  if (axis == "pp") return pp;
  throw std::logic_error("configs has no list for the axis " + std::string(axis));
}

std::vector<std::int64_t> search_micro_batch_sizes(Strategy strategy, const Transformer& model,
                                                   const TensorSplit& tensor, std::int64_t local_batch) {
  Layout split;
  split.tensor = tensor;
  const std::int64_t tokens_over = parallel_grid(split).group(plan_of(strategy).tokens).size;
  std::vector<std::int64_t> out;
  for (std::int64_t mbs : divisors(local_batch)) {
    if ((mbs * model.l) % tokens_over == 0) out.push_back(mbs);
  }
  return out;
}

namespace {

// The walk `configs` makes, shared by counting and evaluating: at(layout, placement choice) for
// every layout of the ranges in enumeration order (tensor split, pp and dp, mbs, nb, each execution
// option's list in the search's order, attention, the stages' blocks), the reasons for what cannot
// run in out.rejections and the degree combinations in out.combinations; stopped() ends the walk.
template <typename At, typename Stopped>
void walk_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                  std::int64_t global_batch, const ConfigRanges& r, ConfigSweep& out, At&& at, Stopped&& stopped) {
  auto reject = [&](const std::string& why) {
    if (std::find(out.rejections.begin(), out.rejections.end(), why) == out.rejections.end()) {
      out.rejections.push_back(why);
    }
  };
  std::vector<TensorSplit> splits;
  if (r.tp1.empty() && r.tp2.empty()) {
    SearchProblem problem;
    problem.strategy = strategy;
    problem.model = model;
    problem.system = sys;
    problem.global_batch = global_batch;
    splits = tensor_splits(problem, n_gpus);
  } else {
    for (std::int64_t t1 : or_divisors(r.tp1, n_gpus)) {
      const std::vector<std::int64_t> t2s =
          !has_tp2(plan_of(strategy)) ? std::vector<std::int64_t>{1}
                                     : or_divisors(r.tp2, n_gpus / std::max<std::int64_t>(t1, 1));
      for (std::int64_t t2 : t2s) {
        TensorSplit t;
        t.tp1 = t1;
        t.tp2 = t2;
        splits.push_back(t);
      }
    }
  }
  if (r.choices.cp != std::vector<std::int64_t>{1}) {
    // every tensor split with each context-parallel degree (cp = 1 alone: the splits as they are)
    std::vector<TensorSplit> with_cp;
    for (const TensorSplit& t : splits) {
      for (const std::int64_t cp : r.choices.cp) {
        TensorSplit x = t;
        x.cp = cp;
        with_cp.push_back(x);
      }
    }
    splits = std::move(with_cp);
  }
  PlacementChoice choice = r.placement;
  // Under a framework's runtime, with no share given and no row per placement asked for, the
  // placement its rank order makes: the one the framework launches.
  const bool any_given =
      std::any_of(choice.nv.begin(), choice.nv.end(), [](const std::optional<std::int64_t>& nv) { return nv.has_value(); });
  choice.rank_order = !r.runtime.is_reference() && !any_given && !r.all_placements;
  const bool summa = has_summa_blocks(plan_of(strategy));
  choice.search_nb = summa && r.nb.empty();
  const std::vector<std::int64_t> nbs = summa && !r.nb.empty() ? r.nb : std::vector<std::int64_t>{1};
  const bool search_mbs = r.all_micro_batch_sizes ||
                          (r.mbs.empty() && r.tp1.empty() && r.tp2.empty() && r.pp.empty() && r.dp.empty());
  // The search's nest (search/dimensions.hpp walk_dimensions) with the user's lists: pp (and dp),
  // mbs, nb, then each execution option's list in the search's order; the placement at the leaf.
  // Every value given is tried, so that validate_layout says why one cannot run.
  ExecutionChoices choices = r.choices;
  fill_runtime_defaults(r.runtime, choices);  // the rank order not listed: the runtime's
  const std::span<const SearchDimension> dims = search_dimensions();
  const std::size_t pp_dim = search_dimension_index("pp"), mbs_dim = search_dimension_index("mbs"),
                    nb_dim = search_dimension_index("nb"), nv_dim = search_dimension_index("nv");
  std::vector<std::size_t> walked;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d != nv_dim) walked.push_back(d);
  }
  std::vector<std::vector<Choice>> lists(dims.size());
  std::vector<Choice> pipelines;  // (pp, dp) of the split
  auto values = [&](std::size_t d, const Layout& c) -> const std::vector<Choice>& {
    std::vector<Choice>& out_values = lists[d];
    out_values.clear();
    if (d == pp_dim) return pipelines;
    if (d == mbs_dim) {
      std::vector<std::int64_t> mbss = r.mbs.empty() ? std::vector<std::int64_t>{1} : r.mbs;
      if (search_mbs && global_batch % c.dp == 0) {
        mbss = search_micro_batch_sizes(strategy, model, c.tensor, global_batch / c.dp);
        if (mbss.empty()) {
          reject("no micro-batch size of the local batch " + std::to_string(global_batch / c.dp) +
                 " splits its tokens over tp=" + std::to_string(c.tensor.tp1 * c.tensor.tp2 * c.tensor.cp));
        }
      }
      for (const std::int64_t mbs : mbss) out_values.push_back({{mbs}});
    } else if (d == nb_dim) {
      for (const std::int64_t nb : nbs) out_values.push_back({{nb}});
    } else if (const ExecutionOption* o = find_execution_option(dims[d].name); o != nullptr && o->searched()) {
      // every listed value; an option that does not apply to the layout, the first alone
      const std::size_t n = o->count(choices);
      for (std::size_t i = 0; i < n; ++i) {
        out_values.push_back({{o->at(choices, i)}});
        if (o->applies != nullptr && !o->applies(c)) break;
      }
    } else {
      throw std::logic_error(std::string("configs lists no values for search dimension ") + dims[d].name);
    }
    return out_values;
  };
  auto enter = [&](std::size_t, std::size_t d, const Choice&, const Layout&) {
    if (stopped()) return false;
    if (d == nb_dim) ++out.combinations;
    return true;
  };
  // each attention mode and partition of the stages' blocks given
  auto leaf = [&](const Layout& c) {
    for (const AttentionMode& attention : r.attentions) {
      for (const Execution& stages : r.stage_choices) {
        Layout x = c;
        x.attention = attention;
        x.exec.first_stage_blocks = stages.first_stage_blocks;
        x.exec.last_stage_blocks = stages.last_stage_blocks;
        x.exec.stage_partition = r.runtime.stage_partition;  // the framework's partition
        at(x, choice, reject);
      }
    }
  };
  WalkPolicy policy{values, enter, leaf};
  for (const TensorSplit& t : splits) {
    if (stopped()) return;
    const std::int64_t tp = t.tp1 * t.tp2 * t.cp;  // the GPUs of one replica's pipeline stage
    if (tp < 1 || n_gpus % tp != 0) {
      reject((t.cp > 1 ? "tp x cp=" : "tp=") + std::to_string(tp) + " does not divide " + std::to_string(n_gpus) +
             " GPUs");
      continue;
    }
    const std::int64_t rest = n_gpus / tp;
    std::vector<std::int64_t> pps = r.pp;
    if (pps.empty()) {
      if (r.dp.empty()) {
        pps = divisors(rest);
      } else {
        for (std::int64_t dp : r.dp) {
          if (dp >= 1 && rest % dp == 0) pps.push_back(rest / dp);
        }
      }
    }
    pipelines.clear();
    for (std::int64_t pp : pps) {
      if (pp < 1 || rest % pp != 0) {
        reject("tp x pp = " + std::to_string(tp) + " x " + std::to_string(pp) + " does not divide " +
               std::to_string(n_gpus) + " GPUs");
        continue;
      }
      const std::int64_t dp = rest / pp;
      if (!r.dp.empty() && !contains(r.dp, dp)) {
        reject("tp x pp = " + std::to_string(tp) + " x " + std::to_string(pp) + " leaves dp=" + std::to_string(dp) +
               ", not one of --dp");
        continue;
      }
      pipelines.push_back({{pp, dp}});
    }
    Layout c;
    c.strategy = strategy;
    c.tensor = t;
    walk_dimensions(dims, walked, c, policy);
  }
}

// The points of one layout: its NVLink placements (each one evaluated), or 1 for a layout that
// cannot run (validate_layout says why, at the cost of a check).
std::int64_t layout_points(const System& sys, const Transformer& model, const Layout& c, const PlacementChoice& choice) {
  std::int64_t placements = 0;
  for_each_placement(sys, model, c, choice, [&](const Layout&) { ++placements; });
  return std::max<std::int64_t>(placements, 1);
}

// Where a row goes: those that do not fit left out with fits_only; with `keep`, only the first
// `keep` in the order the rows are listed (by_throughput: those that fit first, then by
// throughput, ties in enumeration order, as std::stable_sort orders them), so that memory holds
// at most `keep` rows whatever the space.
void keep_row(std::vector<ConfigRow>& rows, ConfigRow&& row, const ConfigRanges& r) {
  if (r.fits_only && !row.fits) return;
  if (r.keep == 0) {
    rows.push_back(std::move(row));
    return;
  }
  auto at = rows.end();
  if (r.by_throughput) {
    at = std::upper_bound(rows.begin(), rows.end(), row, [](const ConfigRow& a, const ConfigRow& b) {
      return a.fits != b.fits ? a.fits : a.throughput > b.throughput;
    });
  }
  if (rows.size() == r.keep && at == rows.end()) return;
  rows.insert(at, std::move(row));
  if (rows.size() > r.keep) rows.pop_back();
}

}  // namespace

std::int64_t count_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                           std::int64_t global_batch, const ConfigRanges& r, std::int64_t limit) {
  ConfigSweep scratch;
  std::int64_t points = 0;
  walk_configs(
      sys, model, strategy, n_gpus, global_batch, r, scratch,
      [&](const Layout& c, const PlacementChoice& choice, auto&&) { points += layout_points(sys, model, c, choice); },
      [&] { return points > limit; });
  return points;
}

ConfigSweep sweep_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                          std::int64_t global_batch, const ConfigRanges& r) {
  ConfigSweep out;
  // The rows of one layout: its fastest placement, or each placement.
  auto add_rows = [&](Layout c, const PlacementChoice& choice, auto&& reject) {
    if (r.on_points) r.on_points(layout_points(sys, model, c, choice));
    const bool balance = r.balance_stages || (!r.stages_given && balances_where_uneven(r.runtime, model, c));
    try {
      if (balance) c = with_balanced_stages(sys, model, r.runtime, c, global_batch);
      validate_layout(sys, model, c, global_batch);
    } catch (const ConfigError& e) {
      reject(e.what());
      return;
    }
    if (r.all_placements) {
      bool any = false;
      for_each_placement(sys, model, c, choice, [&](const Layout& given) {
        const Layout placed = balance ? with_balanced_stages(sys, model, r.runtime, given, global_batch) : given;
        keep_row(out.rows, make_row(placed, evaluate(sys, model, r.runtime, placed, global_batch), global_batch), r);
        any = true;
      });
      if (!any) reject("no NVLink placement of the search matches the given --nv-* values");
    } else if (auto ev = best_placement(sys, model, c, global_batch, choice, r.runtime, balance)) {
      keep_row(out.rows, make_row(c, *ev, global_batch), r);
    } else {
      reject("no NVLink placement of the search matches the given --nv-* values");
    }
  };
  // in the order asked for, the first `keep` rows are all there are to keep
  const auto full = [&] { return r.keep > 0 && !r.by_throughput && out.rows.size() == r.keep; };
  walk_configs(sys, model, strategy, n_gpus, global_batch, r, out, add_rows, full);
  return out;
}

}  // namespace perfsweep
