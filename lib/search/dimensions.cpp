#include "search/dimensions.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "search/candidates.hpp"

namespace perfsweep {
namespace {
using I = std::int64_t;

// Pipeline depths dividing both the GPUs left after tensor (and context) parallelism and the model
// depth (execute_*: pp over the divisors of min(n / tp, depth)); dp = n / (tp cp pp) must divide
// the batch.
// With MoE every `every` > 1 blocks, a stage holds whole groups of every blocks. Under a runtime
// beyond the reference, also the depths dividing the GPUs alone that leave each stage a group of
// blocks: their stages hold the partition balanced_stages chooses (the leaf sets it).
void pipeline_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  const Transformer& m = x.problem.model;
  const I n = x.n_gpus, tp = parallel_grid(c).group(grid_axes("tp1 tp2 cp")).size, depth = m.depth;
  const I G = x.problem.global_batch;
  const I every = m.is_moe() ? m.moe.every : 1;
  const bool uneven = !x.problem.runtime.is_reference() && depth % every == 0;
  const I max_pp = std::min(n / tp, uneven ? depth / every : depth);
  for (I pp = 1; pp <= max_pp; ++pp) {
    if (n % (tp * pp)) continue;
    if (!splits_evenly(m, pp) && !(uneven && pp > 1)) continue;
    const I dp = n / (tp * pp);
    if (dp > G || G % dp) {
      ++x.counters.pipelines_rejected_dp;
      continue;
    }
    out.push_back({{pp, dp}});
  }
}

// Micro-batch sizes dividing the local batch whose tokens split over the GPUs sharing a
// micro-batch (micro_batch_size_candidates).
void micro_batch_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  const I local_batch = x.problem.global_batch / c.dp;
  const I tokens_over = parallel_grid(c).group(plan_of(c.strategy).tokens).size;
  for (const I mbs : x.batch_divisors) {
    if (mbs > local_batch) break;
    if (local_batch % mbs || (mbs * x.problem.model.l) % tokens_over) continue;
    out.push_back({{mbs}});
  }
}

// SUMMA block counts (summa_nb_candidates) for 2d; one block otherwise.
void summa_block_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  if (!has_summa_blocks(plan_of(c.strategy))) {
    out.push_back({{1}});
    return;
  }
  for_each_summa_nb(c.tensor.tp1, c.tensor.tp2, x.problem.model.e, [&](I nb) { out.push_back({{nb}}); });
}

// The NVLink shares of the strategy's placed axes (model/axes.hpp), in their order: every one the
// reference's search tries, or under a framework's runtime the one its rank order makes.
void placement_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  if (!x.problem.runtime.is_reference()) {
    const std::array<I, kMaxPlacedAxes> shares = rank_order_shares(c, x.problem.system.nvlink_size);
    Choice v;
    std::copy(shares.begin(), shares.end(), v.v.begin());
    out.push_back(v);
    return;
  }
  for_each_placement(c, x.problem.system.nvlink_size, [&](std::span<const I> nv) {
    Choice v;
    std::copy(nv.begin(), nv.end(), v.v.begin());
    out.push_back(v);
  });
}

void recompute_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  for (Recompute r : x.problem.exec.recompute) {
    // selective recomputation of unfused attention is the reference's sa_1d option only
    if (r == Recompute::Selective && !c.attention.flash && c.strategy != Strategy::OneD) continue;
    out.push_back({{static_cast<I>(r)}});
  }
}

void sequence_parallel_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  for (bool sp : x.problem.exec.sequence_parallel) {
    if (!sp && has_tp2(plan_of(c.strategy))) continue;  // plain TP is a 1d option
    out.push_back({{sp ? 1 : 0}});
  }
}

// Interleaved 1F1B needs pipeline stages split evenly, V dividing a stage's blocks and the
// micro-batches a multiple of pp (Megatron-LM's schedule).
void interleave_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  const I micro_batches = x.problem.global_batch / c.dp / c.mbs;
  const Transformer& m = x.problem.model;
  for (I v : x.problem.exec.interleave) {
    if (v > 1) {
      if (c.pp == 1 || micro_batches % c.pp) continue;
      // an even split in chunks of V, or the slotted one (the ends taking a slot) of dense blocks
      const bool chunks = splits_evenly(m, c.pp) ? (m.depth / c.pp) % v == 0
                                                 : (!m.is_moe() || m.moe.every == 1) &&
                                                       slotted_stages(m.depth, c.pp, v).first > 0;
      if (!chunks) continue;
    }
    out.push_back({{v}});
  }
}

// Expert-parallel degrees dividing the experts and dp (the group is drawn from the data-parallel
// ranks); a dense model has ep = 1 only.
void expert_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  for (I ep : x.problem.exec.ep) {
    if (ep > 1 && (!x.problem.model.is_moe() || x.problem.model.moe.experts % ep || c.dp % ep)) continue;
    out.push_back({{ep}});
  }
}

// Expert tensor-parallel degrees dividing tp1 (each routed expert splits over the innermost etp
// GPUs of the tensor group; layout rule expert_tensor_split), 0 (tp1 itself) always; a dense model
// takes 0 and tp1 only. tp1 listed beside 0 is the same layout, tried once.
void expert_tensor_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  const std::vector<I>& listed = x.problem.exec.etp;
  const I tp = c.tensor.tp1;
  const bool tp_listed = std::find(listed.begin(), listed.end(), I{0}) != listed.end();
  for (I etp : listed) {
    if (etp > 0 && (etp == tp ? tp_listed : !x.problem.model.is_moe() || tp % etp)) continue;
    out.push_back({{etp}});
  }
}

// The schedules a layout can run: 1F1B always; the others with pp > 1 and no interleaving, and
// DualPipe with pp even and an even count of at least 2 pp micro-batches.
void schedule_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  const I micro_batches = x.problem.global_batch / c.dp / c.mbs;
  for (PipelineSchedule s : x.problem.exec.schedule) {
    // the layout rule's conditions (model/schedule.hpp ScheduleKind)
    if (!schedule_runs(schedule_kind(s), c.pp, c.exec.interleave, micro_batches)) continue;
    out.push_back({{static_cast<I>(s)}});
  }
}

// kExecutionOptions' index of `key` (a compile-time error where there is none).
consteval std::size_t option_index(std::string_view key) {
  for (std::size_t i = 0; i < kExecutionOptions.size(); ++i) {
    if (key == kExecutionOptions[i].key) return i;
  }
  throw "no such execution option";
}

// How context-parallel attention exchanges keys and values (cp > 1; cp = 1 takes the first, as
// listed_values does for an option that does not apply).
void cp_comm_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  static constexpr const ExecutionOption& cp_comm = kExecutionOptions[option_index("cp_comm")];
  for (CpComm k : x.problem.exec.cp_comm) {
    // a2a splits the heads over the cp group (validate_layout's rule cp_splits)
    if (c.tensor.cp > 1 && !cp_splits_heads(x.problem.model, c.tensor.tp1, cp_head_ranks(x.problem.model, c.tensor, k))) {
      continue;
    }
    out.push_back({{static_cast<I>(k)}});
    if (!cp_comm.applies(c)) break;
  }
}

// What a layout keeps on the host (check_runtime_choices leaves what the runtime and system
// run; offload_runs_with what the layout allows, as validate_layout checks it).
void offload_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  for (Offload k : x.problem.exec.offload) {
    if (offload_runs_with(k, c)) out.push_back({{static_cast<I>(k)}});
  }
}

// An option's list as it stands (kExecutionOptions[I]): every value where the option applies to the
// layout, the first alone where it does not (ExecutionOption::applies).
template <std::size_t I>
void listed_values(const SearchContext& x, const Layout& c, std::vector<Choice>& out) {
  constexpr const ExecutionOption& o = kExecutionOptions[I];
  const std::size_t n = o.count(x.problem.exec);
  const bool all = o.applies == nullptr || o.applies(c);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back({{o.at(x.problem.exec, i)}});
    if (!all) break;
  }
}
template <std::size_t I>
void set_option(Layout& c, const Choice& v) {
  kExecutionOptions[I].set(c.exec, v.v[0]);
}
// The dimension of an option with no rule beyond its list (listed_values); its block cost as the
// option declares it (ExecutionOption::block_cost).
template <std::size_t I>
constexpr SearchDimension option_dimension(bool changes_memory, const char* depends_on) {
  return {.name = kExecutionOptions[I].key,
          .changes_memory = changes_memory,
          .changes_block = kExecutionOptions[I].block_cost,
          .depends_on = depends_on,
          .values = listed_values<I>,
          .set = set_option<I>,
          .listed = &kExecutionOptions[I]};
}

// changes_block: the fields of BlockKey (search.cpp): mbs, nb and the tensor and expert groups'
// placement (block_axis_codes), the options the block's cost reads (block_cost_codes).
constexpr SearchDimension kDimensions[] = {
    {.name = "pp", .changes_memory = true, .changes_block = false, .depends_on = "", .values = pipeline_values,
     .set =
         [](Layout& c, const Choice& v) {
           c.pp = v.v[0];
           c.dp = v.v[1];
           c.exec.first_stage_blocks = 0;  // an even split; the leaf balances an uneven one
           c.exec.last_stage_blocks = 0;
         }},
    {.name = "mbs", .changes_memory = true, .changes_block = true, .depends_on = "pp", .values = micro_batch_values,
     .set = [](Layout& c, const Choice& v) { c.mbs = v.v[0]; }},
    {.name = "nb", .changes_memory = true, .changes_block = true, .depends_on = "", .values = summa_block_values,
     .set = [](Layout& c, const Choice& v) { c.tensor.nb = v.v[0]; }},
    {.name = "recompute", .changes_memory = true, .changes_block = true, .depends_on = "", .values = recompute_values,
     .set = [](Layout& c, const Choice& v) { c.exec.recompute = static_cast<Recompute>(v.v[0]); }},
    {.name = "sp", .changes_memory = true, .changes_block = true, .depends_on = "", .values = sequence_parallel_values,
     .set = [](Layout& c, const Choice& v) { c.exec.sequence_parallel = v.v[0] != 0; }},
    {.name = "interleave", .changes_memory = true, .changes_block = false, .depends_on = "pp mbs",
     .values = interleave_values, .set = [](Layout& c, const Choice& v) { c.exec.interleave = v.v[0]; }},
    option_dimension<option_index("zero")>(true, ""),
    option_dimension<option_index("layout")>(true, ""),
    {.name = "ep", .changes_memory = true, .changes_block = true, .depends_on = "pp", .values = expert_values,
     .set = [](Layout& c, const Choice& v) { c.exec.ep = v.v[0]; }},
    {.name = "etp", .changes_memory = true, .changes_block = true, .depends_on = "", .values = expert_tensor_values,
     .set = [](Layout& c, const Choice& v) { c.exec.etp = v.v[0]; }},
    // the MoE dispatcher (with ep > 1): the dispatch and combine's volumes
    option_dimension<option_index("moe_dispatcher")>(false, "ep"),
    // the precisions check_runtime_choices leaves (fp8 where the runtime, strategy and system run it)
    option_dimension<option_index("precision")>(true, ""),
    // FP8 parameters: the weights' bytes and the gathers' (with a low precision only)
    option_dimension<option_index("fp8_params")>(true, "precision"),
    // the tensor-parallel collectives' overlap: the step's composition of the block (runtime_view)
    option_dimension<option_index("tp_comm_overlap")>(false, ""),
    {.name = "schedule", .changes_memory = true, .changes_block = false, .depends_on = "pp mbs interleave",
     .values = schedule_values,
     .set = [](Layout& c, const Choice& v) { c.exec.schedule = static_cast<PipelineSchedule>(v.v[0]); }},
    // both variants keep the same tensors for the backward (the local K and V): memory is checked before
    {.name = "cp_comm", .changes_memory = false, .changes_block = true, .depends_on = "", .values = cp_comm_values,
     .set = [](Layout& c, const Choice& v) { c.exec.cp_comm = static_cast<CpComm>(v.v[0]); }},
    {.name = "offload", .changes_memory = true, .changes_block = false, .depends_on = "pp recompute zero",
     .values = offload_values, .set = [](Layout& c, const Choice& v) { c.exec.offload = static_cast<Offload>(v.v[0]); }},
    option_dimension<option_index("offload_percent")>(true, "offload"),
    // the network tiers each group crosses: the step's communication only
    option_dimension<option_index("rank_order")>(false, "pp"),
    // under a framework's runtime the rank order's placement (placement_values); the tensor and
    // expert groups' shares are the block's
    {.name = "nv", .changes_memory = false, .changes_block = true, .depends_on = "pp rank_order",
     .values = placement_values, .set = [](Layout& c, const Choice& v) { set_placement(c, placed_axes(c.strategy), v.v); }},
};

}  // namespace

std::span<const SearchDimension> search_dimensions() { return kDimensions; }

std::size_t search_dimension_index(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kDimensions); ++i) {
    if (name == kDimensions[i].name) return i;
  }
  throw std::logic_error("no search dimension " + std::string(name));
}

std::vector<std::uint32_t> search_dependencies() {
  const std::span<const SearchDimension> dims = kDimensions;
  if (dims.size() > 32) throw std::logic_error("more search dimensions than a dependency mask holds");
  std::vector<std::uint32_t> out(dims.size(), 0);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    std::istringstream names(dims[d].depends_on);
    for (std::string name; names >> name;) {
      std::size_t i = 0;
      while (i < d && name != dims[i].name) ++i;
      if (i == d) throw std::logic_error(std::string("search dimension ") + dims[d].name + " depends on " + name + ", not an outer dimension");
      out[d] |= 1u << i;
    }
  }
  return out;
}

}  // namespace perfsweep
