#include "search/configs.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
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

std::string no_placement_reason(const Layout& layout, const PlacementChoice& choice, std::int64_t nvs) {
  const PlacedAxes& placed = placed_axes(layout.strategy);
  std::string groups, given;
  for (std::size_t i = 0; i < placed.count; ++i) {
    const LayoutAxis& a = kAxes[placed.axis[i]];
    // appended piecewise (GCC 12's -Wrestrict on a concatenated temporary)
    if (!groups.empty()) groups += ' ';
    groups += a.name;
    groups += '=';
    groups += std::to_string(a.degree(layout));
    if (const std::optional<std::int64_t>& nv = choice.nv[placed.axis[i]]) {
      if (!given.empty()) given += ", ";
      given += key_flag(a.nv_key);
      given += '=';
      given += std::to_string(*nv);
    }
  }
  if (given.empty()) given = "no share given";
  return "no NVLink placement of " + groups + " on domains of " + std::to_string(nvs) + " GPUs keeps " + given +
         " (each share divides its group; the shares fill the domain, or where the GPUs are not a multiple of it, "
         "as far as whole groups allow" +
         (choice.rank_order ? "; under a framework's runtime, as its rank order places them" : "") + ")";
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
template <typename At, typename Stopped, typename Skip>
void walk_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                  std::int64_t global_batch, const ConfigRanges& r, ConfigSweep& out, At&& at, Stopped&& stopped,
                  Skip&& skip) {
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
  auto enter = [&](std::size_t, std::size_t d, const Choice&, const Layout& c) {
    if (stopped()) return false;
    if (d >= mbs_dim && skip(c, choice, d)) return false;
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

// The blocks and end layers of configs' layouts, each costed once per block cache key (the
// search's BlockKey: block_axis_codes, block_cost_codes, whether a tied head shares the
// embedding's stage) and what a search's run holds fixed (strategy, tensor split, attention mode),
// as the search caches them: a row composed from them is evaluate's to the last bit.
class CostedBlocks {
 public:
  // mech: the runtime's mechanisms, the same for every layout.
  CostedBlocks(const System& sys, const Transformer& model, const Mechanisms& mech)
      : sys_(sys), model_(model), mech_(mech) {}
  // Of a layout with the runtime's attention; ConfigError where cost_block refuses it.
  const CostedLayout& get(const Layout& x) {
    Key key{};
    const auto axes = block_axis_codes(x);
    const auto options = block_cost_codes(x.exec);
    std::copy(axes.begin(), axes.end(), key.begin());
    std::copy(options.begin(), options.end(), key.begin() + kBlockCostAxes);
    std::size_t i = kBlockCostAxes + kBlockCostOptions;
    // what a search's run fixes (its tensor split, strategy and attention), configs' walk varies
    key[i++] = static_cast<std::int64_t>(x.strategy);
    key[i++] = x.tensor.tp1;
    key[i++] = x.tensor.tp2;
    key[i++] = x.tensor.cp;
    key[i++] = x.attention.flash ? 1 : 0;
    key[i++] = x.attention.recompute ? 1 : 0;
    key[i] = model_.vocab_size > 0 && model_.tie_embeddings && x.pp == 1 ? 1 : 0;
    auto it = costed_.find(key);
    if (it == costed_.end()) {
      Module mlp, sa;
      CostedLayout c{cost_block(sys_, model_, x, mech_, describe_block(model_, x.attention),
                                describe_dense_block(model_, x.attention), mlp, sa),
                     stage_end_sums(sys_, model_, x, mech_)};
      it = costed_.emplace(key, std::move(c)).first;
    }
    return it->second;
  }
  // with_balanced_stages with these blocks.
  Layout balanced(const Runtime& rt, const Layout& c, std::int64_t global_batch) {
    return with_balanced_stages(sys_, model_, rt, c, global_batch, [&](const Layout& x) { return get(x); });
  }
  // evaluate's totals, throughput and fit of a placed layout, from these blocks.
  ConfigRow row(const Runtime& rt, const Layout& placed, std::int64_t global_batch) {
    Layout x = placed;
    x.attention = runtime_attention(rt, x.attention);
    validate_runtime_layout(rt, x);
    const CostedLayout& c = get(x);
    ConfigRow row;
    row.layout = placed;
    row.totals = compose_step(sys_, model_, rt, x, c.block, global_batch, c.ends).totals;
    row.throughput = static_cast<double>(global_batch) / row.totals.t;
    row.fits = !(row.totals.mem > row.totals.mem_limit) && fits_host(sys_, row.totals);
    row.micro_batches = global_batch / placed.dp / placed.mbs;
    return row;
  }

 private:
  using Key = std::array<std::int64_t, kBlockCostAxes + kBlockCostOptions + 7>;
  const System& sys_;
  const Transformer& model_;
  const Mechanisms& mech_;
  std::map<Key, CostedLayout> costed_;
};

// The step-time bound of the search (search.cpp, model/step.hpp step_seconds_lower_bound) on
// configs' walk, for the lists kept by throughput (ConfigRanges::prune): no configuration below a
// node of the walk from the micro-batch's on steps faster than the fastest block any of them can
// have (the listed values of each block option not chosen yet, every attention mode, every
// placement the leaf would try with each rank order not chosen yet), for every micro-batch on the
// fullest stage (at least ceil(depth / pp) blocks, whatever the partition: the stages hold every
// block), plus 1F1B's bubble of (pp - 1) / V such slots where 1F1B is chosen, or not chosen yet
// and the only schedule listed (V chosen, else the most listed). Where even that throughput is
// below the last of a full list of rows that fit, no row below can enter it: keep_row turns away
// a row that does not rank before the last. At a leaf the same with its own options and block,
// before it is balanced, checked or costed. Blocks are costed once per block cache key and
// attention mode; a block that cannot be costed (a layout validate_layout would refuse) gives no
// bound.
class ConfigBound {
 public:
  ConfigBound(const System& sys, const Transformer& model, const ConfigRanges& r, const ExecutionChoices& choices,
              std::int64_t global_batch, CostedBlocks& blocks)
      : sys_(sys), model_(model), r_(r), choices_(choices), global_batch_(global_batch), costed_(blocks),
        tp_hidden_(least_tp_comm_hidden(r.runtime, choices)) {
    const std::span<const SearchDimension> dims = search_dimensions();
    for (const ExecutionOption& o : kExecutionOptions) {
      if (!o.searched() || !(o.block_cost || std::string_view(o.key) == "rank_order")) continue;
      options_.push_back(&o);
      option_dims_.push_back(search_dimension_index(o.key));
    }
    nb_dim_ = search_dimension_index("nb");
    interleave_dim_ = search_dimension_index("interleave");
    schedule_dim_ = search_dimension_index("schedule");
    for (std::size_t d = 0; d < dims.size(); ++d) {
      bounds_at_.push_back(d == search_dimension_index("mbs") || d == interleave_dim_ || d == schedule_dim_ ||
                           std::find(option_dims_.begin(), option_dims_.end(), d) != option_dims_.end());
    }
    for (const std::int64_t v : choices.interleave) most_interleave_ = std::max(most_interleave_, v);
    only_one_f_one_b_ = std::all_of(choices.schedule.begin(), choices.schedule.end(),
                                    [](PipelineSchedule x) { return x == PipelineSchedule::OneFOneB; });
  }

  // Whether the node of dimension d tightens the bound (the micro-batch, a block option, the
  // rank order, interleaving, the schedule).
  bool bounds_at(std::size_t d) const { return bounds_at_[d]; }

  // The least step (s) below the node of dimension `at` (from the micro-batch's on) of layout c,
  // the dimensions up to `at` set; 0: none.
  double node_seconds(const Layout& c, const PlacementChoice& choice, std::size_t at) {
    const std::int64_t micro_batches = micro_batches_of(c);
    if (micro_batches == 0) return 0;
    double block_s = std::numeric_limits<double>::infinity();
    Layout x = c;
    const bool summa = has_summa_blocks(plan_of(c.strategy));
    const std::vector<std::int64_t> nbs =
        summa && !r_.nb.empty() && at < nb_dim_ ? r_.nb : std::vector<std::int64_t>{x.tensor.nb};
    for (const AttentionMode& attention : r_.attentions) {
      x.attention = attention;
      for (const std::int64_t nb : nbs) {
        x.tensor.nb = nb;
        if (!least_block(x, choice, at, 0, block_s)) return 0;
      }
    }
    if (!(block_s < std::numeric_limits<double>::infinity())) return 0;
    const std::int64_t interleave = at >= interleave_dim_ ? c.exec.interleave : most_interleave_;
    const bool one_f_one_b = at >= schedule_dim_ ? c.exec.schedule == PipelineSchedule::OneFOneB : only_one_f_one_b_;
    return step_seconds_lower_bound(block_s, micro_batches, fullest_blocks(c.pp), c.pp, interleave, one_f_one_b);
  }

  // The least step (s) of the leaf layout c over the placements the leaf tries; 0: none.
  double leaf_seconds(const Layout& c, const PlacementChoice& choice) {
    const std::int64_t micro_batches = micro_batches_of(c);
    if (micro_batches == 0) return 0;
    double block_s = std::numeric_limits<double>::infinity();
    if (!placed_blocks(c, choice, block_s) || !(block_s < std::numeric_limits<double>::infinity())) return 0;
    return step_seconds_lower_bound(block_s, micro_batches, fullest_blocks(c.pp), c.pp, c.exec.interleave,
                                    c.exec.schedule == PipelineSchedule::OneFOneB);
  }

 private:
  std::int64_t micro_batches_of(const Layout& c) const {
    if (c.dp < 1 || c.mbs < 1 || global_batch_ % c.dp != 0 || (global_batch_ / c.dp) % c.mbs != 0) return 0;
    return global_batch_ / c.dp / c.mbs;
  }
  std::int64_t fullest_blocks(std::int64_t pp) const { return pp > 1 ? (model_.depth + pp - 1) / pp : model_.depth; }

  // Every listed value of the block's options (and rank orders) not chosen at `at`, from option i
  // on; false where a block cannot be costed.
  bool least_block(Layout& x, const PlacementChoice& choice, std::size_t at, std::size_t i, double& block_s) {
    while (i < options_.size() && option_dims_[i] <= at) ++i;
    if (i == options_.size()) return placed_blocks(x, choice, block_s);
    const ExecutionOption& o = *options_[i];
    const std::int64_t kept = o.get(x.exec);
    for (std::size_t k = 0; k < o.count(choices_); ++k) {
      o.set(x.exec, o.at(choices_, k));
      if (!least_block(x, choice, at, i + 1, block_s)) return false;
    }
    o.set(x.exec, kept);
    return true;
  }

  // The fastest block of the layout's placements (configs' for_each_placement: the leaf's).
  bool placed_blocks(const Layout& c, const PlacementChoice& choice, double& block_s) {
    bool ok = true;
    perfsweep::for_each_placement(sys_, model_, c, choice, [&](const Layout& placed) {
      if (!ok) return;
      Layout x = placed;
      x.attention = runtime_attention(r_.runtime, x.attention);
      double pass = -1;  // no bound
      try {
        pass = block_pass_seconds(tp_hidden_, costed_.get(x).block, fullest_blocks(x.pp));
      } catch (const ConfigError&) {
      }
      if (!(pass >= 0)) {
        ok = false;
        return;
      }
      block_s = std::min(block_s, pass);
    });
    return ok;
  }

  const System& sys_;
  const Transformer& model_;
  const ConfigRanges& r_;
  const ExecutionChoices& choices_;
  std::int64_t global_batch_;
  std::vector<const ExecutionOption*> options_;
  std::vector<std::size_t> option_dims_;  // each option's index in search_dimensions()
  std::vector<bool> bounds_at_;           // by dimension
  std::size_t nb_dim_ = 0, interleave_dim_ = 0, schedule_dim_ = 0;
  std::int64_t most_interleave_ = 1;
  bool only_one_f_one_b_ = true;
  CostedBlocks& costed_;
  double tp_hidden_;  // the listed layouts' least tensor-parallel exposure (least_tp_comm_hidden)
};

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
      [&] { return points > limit; }, [](const Layout&, const PlacementChoice&, std::size_t) { return false; });
  return points;
}

ConfigSweep sweep_configs(const System& sys, const Transformer& model, Strategy strategy, std::int64_t n_gpus,
                          std::int64_t global_batch, const ConfigRanges& r) {
  ConfigSweep out;
  out.refused_by_rule.assign(layout_rules().size(), 0);
  ExecutionChoices choices = r.choices;
  fill_runtime_defaults(r.runtime, choices);  // as walk_configs lists them
  CostedBlocks blocks(sys, model, r.runtime.mechanisms);
  ConfigBound bound(sys, model, r, choices, global_batch, blocks);
  const bool prune = r.prune && r.keep > 0 && r.by_throughput;
  // The throughput a row must beat to enter the list: the last of a full list of rows that fit
  // (0 while none is turned away by throughput alone).
  auto admission = [&] {
    return prune && out.rows.size() == r.keep && out.rows.back().fits ? out.rows.back().throughput : 0.0;
  };
  auto below_admission = [&](double step_s) {
    const double a = admission();
    return a > 0 && step_s > 0 && static_cast<double>(global_batch) / step_s < a;
  };
  // The rows of one layout: its fastest placement, or each placement.
  auto add_rows = [&](Layout c, const PlacementChoice& choice, auto&& reject) {
    if (r.on_points) r.on_points(layout_points(sys, model, c, choice));
    if (prune && below_admission(bound.leaf_seconds(c, choice))) {
      ++out.pruned_layouts;
      return;
    }
    const bool balance = r.balance_stages || (!r.stages_given && balances_where_uneven(r.runtime, model, c));
    try {
      if (balance) c = blocks.balanced(r.runtime, c, global_batch);
      validate_layout(sys, model, c, global_batch, r.runtime.mechanisms);
    } catch (const ConfigError& e) {
      if (const auto* broken = dynamic_cast<const RuleError*>(&e)) ++out.refused_by_rule[broken->rule()];
      reject(e.what());
      return;
    }
    // each placement (balanced, where the stages are), as best_placement evaluates them
    std::optional<ConfigRow> best;  // the fastest placement (ties: the first)
    bool any = false;
    for_each_placement(sys, model, c, choice, [&](const Layout& given) {
      any = true;
      const Layout placed = balance ? blocks.balanced(r.runtime, given, global_batch) : given;
      ConfigRow row = blocks.row(r.runtime, placed, global_batch);
      if (r.all_placements) {
        keep_row(out.rows, std::move(row), r);
      } else if (!best || row.throughput > best->throughput) {
        best = std::move(row);
      }
    });
    if (!any) {
      reject(no_placement_reason(c, choice, sys.nvlink_size));
    } else if (best) {
      keep_row(out.rows, std::move(*best), r);
    }
  };
  // in the order asked for, the first `keep` rows are all there are to keep
  const auto full = [&] { return r.keep > 0 && !r.by_throughput && out.rows.size() == r.keep; };
  auto skip = [&](const Layout& c, const PlacementChoice& choice, std::size_t d) {
    if (!prune || !bound.bounds_at(d) || !(admission() > 0) || !below_admission(bound.node_seconds(c, choice, d))) {
      return false;
    }
    ++out.pruned_subtrees;
    return true;
  };
  walk_configs(sys, model, strategy, n_gpus, global_batch, r, out, add_rows, full, skip);
  return out;
}

}  // namespace perfsweep
