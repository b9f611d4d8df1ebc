// Configuration sweeps (lib/search/configs): with nothing chosen, the space is the search's, so
// the fastest fitting row is the search's optimum at every GPU count; with degrees chosen, rows
// come in the order asked for with the rest derived; the search's micro-batch sizes by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <ostream>
#include <string>

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "io/report.hpp"
#include "search/configs.hpp"
#include "search/search.hpp"
#include "search/top_n.hpp"

namespace perfsweep {
namespace {

struct SpaceCase {
  Strategy strategy;
  const char* model;
  const char* system;
  std::int64_t nvs;
  bool fits_somewhere = true;  // 1d vit_era5 fits at no GPU count (the reference's outputs are empty)
};

std::string case_name(const ::testing::TestParamInfo<SpaceCase>& info) {
  const SpaceCase& c = info.param;
  const char* strat = c.strategy == Strategy::OneD ? "1d" : c.strategy == Strategy::TwoD ? "2d" : "2dseqp";
  return std::string(strat) + "_" + c.model + "_" + c.system + "_NVS" + std::to_string(c.nvs);
}

// Keeps CTest's discovered names stable (gtest otherwise prints the struct's bytes, pointers included).
void PrintTo(const SpaceCase& c, std::ostream* os) { *os << case_name({c, 0}); }

class SearchSpace : public ::testing::TestWithParam<SpaceCase> {};

TEST_P(SearchSpace, FastestFittingRowIsTheSearchOptimum) {
  const SpaceCase c = GetParam();
  SearchProblem p;
  p.strategy = c.strategy;
  p.model = load_model(PERFSWEEP_SOURCE_DIR "/models/" + std::string(c.model) + ".yaml");
  p.system = load_system(PERFSWEEP_SOURCE_DIR "/systems/" + std::string(c.system) + ".yaml");
  p.system.nvlink_size = c.nvs;
  p.top_n = 1;
  Searcher searcher(p);
  int compared = 0;
  for (std::int64_t n = 4; n <= 16384; n *= 2) {
    SearchCounters counters;
    const TopN top = searcher.run_all(n, counters);
    const ConfigSweep sweep = sweep_configs(p.system, p.model, p.strategy, n, p.global_batch, ConfigRanges{});
    const ConfigRow* best = nullptr;
    for (const ConfigRow& r : sweep.rows) {
      if (r.fits && (!best || r.throughput > best->throughput)) best = &r;
    }
    if (top.items().empty()) {
      EXPECT_EQ(best, nullptr) << n << " GPUs: the search found nothing that fits";
      continue;
    }
    ASSERT_NE(best, nullptr) << n << " GPUs";
    const Candidate& s = top.items().front();
    EXPECT_EQ(best->throughput, s.throughput) << n << " GPUs";
    EXPECT_EQ(best->totals.mem, s.mem) << n << " GPUs";
    EXPECT_EQ(best->layout.n_gpus(), n);
    ++compared;
  }
  EXPECT_EQ(compared > 0, c.fits_somewhere);
}

INSTANTIATE_TEST_SUITE_P(configs, SearchSpace,
                         ::testing::Values(SpaceCase{Strategy::OneD, "gpt3_1T", "B200", 8},
                                           SpaceCase{Strategy::OneD, "vit_era5", "A100", 4, false},
                                           SpaceCase{Strategy::TwoD, "gpt3_1T", "B200", 64},
                                           SpaceCase{Strategy::TwoD, "vit_era5", "H200", 8},
                                           SpaceCase{Strategy::TwoDSeqp, "gpt3_1T", "H200", 64},
                                           SpaceCase{Strategy::TwoDSeqp, "vit_era5", "A100", 4}),
                         case_name);

// Under a framework's runtime every row is placed as its rank order places it (Megatron-Core's
// tp-cp-ep-dp-pp: the tensor group inside a node before any data-parallel replica shares it),

// configs counts what each rule of the rule table refused (model/layout_rules.cpp; -v prints
// them): Llama 3 8B's 32 blocks on pp 3 under the reference runtime, which runs no uneven stages,
// is one layout (tp 1, dp 1, mbs 1) that stages_and_experts refuses; pp 2 and 4 divide the depth.
TEST(configs, CountsTheLayoutsEachRuleRefused) {
  const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/llama3_8b.yaml");
  const System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/H100.yaml");
  ConfigRanges r;
  r.tp1 = {1};
  r.mbs = {1};
  std::size_t rule = layout_rules().size();
  for (std::size_t i = 0; i < layout_rules().size(); ++i) {
    if (std::string_view(layout_rules()[i].name) == "stages_and_experts") rule = i;
  }
  ASSERT_LT(rule, layout_rules().size());
  const ConfigSweep three = sweep_configs(sys, model, Strategy::OneD, 3, 8, r);
  ASSERT_EQ(three.refused_by_rule.size(), layout_rules().size());
  EXPECT_EQ(three.refused_by_rule[rule], 1);
  EXPECT_TRUE(three.rows.empty());
  const ConfigSweep four = sweep_configs(sys, model, Strategy::OneD, 4, 8, r);
  for (const std::int64_t n : four.refused_by_rule) EXPECT_EQ(n, 0);
  EXPECT_FALSE(four.rows.empty());
}

// and `configs` and the search agree on the best; asked for every placement, the rows include
// the ones the reference's search tries that the framework never launches (TP 4 as 2 + 2 over
// two nodes).
TEST(configs, FrameworkPlacementsFollowItsRankOrder) {
  const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/llama3_70b.yaml");
  const System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/H100.yaml");
  ConfigRanges r;
  r.runtime = load_runtime_named("megatron");
  r.tp1 = {2, 4, 8};
  fill_runtime_defaults(r.runtime, r.choices);
  const ConfigSweep sweep = sweep_configs(sys, model, Strategy::OneD, 64, 128, r);
  ASSERT_FALSE(sweep.rows.empty());
  const PlacedAxes& placed = placed_axes(Strategy::OneD);
  for (const ConfigRow& row : sweep.rows) {
    const std::array<std::int64_t, kMaxPlacedAxes> want = rank_order_shares(row.layout, sys.nvlink_size);
    for (std::size_t i = 0; i < placed.count; ++i) {
      EXPECT_EQ(kAxes[placed.axis[i]].nv(row.layout), want[i]) << kAxes[placed.axis[i]].name;
    }
    EXPECT_EQ(row.layout.tensor.nv1, std::min<std::int64_t>(row.layout.tensor.tp1, 8));
  }
  r.all_placements = true;
  const ConfigSweep every = sweep_configs(sys, model, Strategy::OneD, 64, 128, r);
  EXPECT_GT(every.rows.size(), sweep.rows.size());
  bool split_tensor_group = false;
  for (const ConfigRow& row : every.rows) {
    split_tensor_group = split_tensor_group || row.layout.tensor.nv1 < std::min<std::int64_t>(row.layout.tensor.tp1, 8);
  }
  EXPECT_TRUE(split_tensor_group);
}

// With nothing given, `configs` searches what the search does under a framework's runtime too,
// where pipelines that do not divide the depth run with their stages balanced: the same best at
// depths 126 (Llama 3.1 405B), 61 (DeepSeek-V3's), 80 (Llama 3 70B) and 27 (DeepSeek-V2-Lite's).
TEST(configs, SameBestAsTheSearchAtEveryDepth) {
  struct DepthCase {
    const char* model;
    std::int64_t depth;
    std::int64_t gpus[2];
  };
  for (const DepthCase& d : {DepthCase{"llama3_405b", 126, {128, 512}}, DepthCase{"llama3_8b", 61, {16, 64}},
                             DepthCase{"llama3_70b", 80, {32, 128}}, DepthCase{"llama3_8b", 27, {16, 64}}}) {
    SearchProblem p;
    p.model = load_model(PERFSWEEP_SOURCE_DIR "/models/" + std::string(d.model) + ".yaml");
    p.model.depth = d.depth;
    p.system = load_system(PERFSWEEP_SOURCE_DIR "/systems/H100.yaml");
    p.runtime = load_runtime_named("megatron");
    p.global_batch = 256;
    p.top_n = 1;
    fill_runtime_defaults(p.runtime, p.exec);
    check_runtime_choices(p.system, p.runtime, p.strategy, p.exec);
    Searcher searcher(p);
    ConfigRanges r;
    r.runtime = p.runtime;
    r.choices = p.exec;
    for (const std::int64_t n : d.gpus) {
      SearchCounters counters;
      const TopN top = searcher.run_all(n, counters);
      const ConfigSweep sweep = sweep_configs(p.system, p.model, p.strategy, n, p.global_batch, r);
      const ConfigRow* best = nullptr;
      for (const ConfigRow& row : sweep.rows) {
        if (row.fits && (!best || row.throughput > best->throughput)) best = &row;
      }
      ASSERT_FALSE(top.items().empty()) << d.model << " depth " << d.depth << ", " << n << " GPUs";
      ASSERT_NE(best, nullptr) << d.model << " depth " << d.depth << ", " << n << " GPUs";
      const Candidate& s = top.items().front();
      EXPECT_EQ(best->throughput, s.throughput) << d.model << " depth " << d.depth << ", " << n << " GPUs";
      EXPECT_EQ(best->layout.pp, s.layout.pp) << d.model << " depth " << d.depth;
      EXPECT_EQ(best->layout.exec.first_stage_blocks, s.layout.exec.first_stage_blocks) << d.model << " " << d.depth;
      EXPECT_EQ(best->layout.exec.last_stage_blocks, s.layout.exec.last_stage_blocks) << d.model << " " << d.depth;
    }
  }
}

// The notebook's first sweep: TP 8, PP 1..128 at 16384 GPUs, DP derived, one micro-batch.
// The notebook's system: B200 in NVLink domains of 8.
System b200_nvs8() {
  System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/B200.yaml");
  sys.nvlink_size = 8;
  return sys;
}

TEST(configs, ChosenDegreesInTheOrderAskedFor) {
  const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/gpt3_1T.yaml");
  const System sys = b200_nvs8();
  ConfigRanges r;
  r.tp1 = {8};
  r.pp = {1, 2, 4, 8, 16, 32, 64, 128};
  const ConfigSweep sweep = sweep_configs(sys, model, Strategy::OneD, 16384, 4096, r);
  ASSERT_EQ(sweep.rows.size(), 8u);
  for (std::size_t i = 0; i < sweep.rows.size(); ++i) {
    const Layout& l = sweep.rows[i].layout;
    EXPECT_EQ(l.pp, r.pp[i]);
    EXPECT_EQ(l.dp, 16384 / (8 * l.pp));
    EXPECT_EQ(l.mbs, 1);
    EXPECT_EQ(sweep.rows[i].micro_batches, 4096 / l.dp);
  }
  EXPECT_FALSE(sweep.rows[0].fits);  // pp 1: 561 GB of 192
  EXPECT_TRUE(sweep.rows[7].fits);

  // A DP that no PP of the list leaves: nothing, and the reason.
  r.dp = {3000};
  const ConfigSweep none = sweep_configs(sys, model, Strategy::OneD, 16384, 4096, r);
  EXPECT_TRUE(none.rows.empty());
  ASSERT_FALSE(none.rejections.empty());
  EXPECT_NE(none.rejections.front().find("not one of --dp"), std::string::npos) << none.rejections.front();
}

// Unfused attention (configs --attention unfused [--attention-recompute]): every row is evaluated
// with it, as `estimate` evaluates the same layout, and differs from the flash-attention row.
TEST(configs, AttentionModeReachesEveryRow) {
  const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/gpt3_1T.yaml");
  const System sys = b200_nvs8();
  ConfigRanges r;
  r.tp1 = {8};
  r.pp = {8, 16};
  const ConfigSweep flash = sweep_configs(sys, model, Strategy::OneD, 1024, 4096, r);
  for (const bool recompute : {false, true}) {
    r.attentions = {AttentionMode{false, recompute}};
    const ConfigSweep unfused = sweep_configs(sys, model, Strategy::OneD, 1024, 4096, r);
    ASSERT_EQ(unfused.rows.size(), flash.rows.size());
    for (std::size_t i = 0; i < unfused.rows.size(); ++i) {
      const ConfigRow& row = unfused.rows[i];
      EXPECT_FALSE(row.layout.attention.flash);
      EXPECT_EQ(row.layout.attention.recompute, recompute);
      const Evaluation ev = evaluate(sys, model, row.layout, 4096);
      EXPECT_EQ(row.throughput, ev.throughput);
      EXPECT_EQ(row.totals.mem, ev.totals.mem);
      EXPECT_NE(row.throughput, flash.rows[i].throughput);
    }
  }
}

// vit_era5: 64800 tokens = 2^5 x 2025, so a 64-way token split needs an even micro-batch.
TEST(configs, SearchMicroBatchSizes) {
  const Transformer vit = load_model(PERFSWEEP_SOURCE_DIR "/models/vit_era5.yaml");
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(search_micro_batch_sizes(Strategy::OneD, vit, {64, 1, 1, 1, 1}, 8), (V{2, 4, 8}));
  EXPECT_EQ(search_micro_batch_sizes(Strategy::OneD, vit, {32, 1, 1, 1, 1}, 8), (V{1, 2, 4, 8}));
  EXPECT_EQ(search_micro_batch_sizes(Strategy::TwoD, vit, {64, 1, 1, 1, 1}, 8), (V{1, 2, 4, 8}));  // tp2 only
  EXPECT_EQ(search_micro_batch_sizes(Strategy::TwoD, vit, {1, 64, 1, 1, 1}, 8), (V{2, 4, 8}));
  EXPECT_EQ(search_micro_batch_sizes(Strategy::TwoDSeqp, vit, {8, 8, 1, 1, 1}, 6), (V{2, 6}));
}

// Lists of options (configs --recompute none,full --zero 0,1 ...): every combination once, in the
// search's dimension order (recompute outermost, then zero, precision innermost), each with the
// stages' blocks given. llama3_8b (32 blocks) on 16 H100s under megatron: tp 8, pp 2, dp 1, 15 blocks
// on the first stage and 17 on the last.
TEST(configs, ExecutionCombinations) {
  const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/llama3_8b.yaml");
  const System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/H100.yaml");
  ConfigRanges r;
  r.tp1 = {8};
  r.pp = {2};
  r.runtime = load_runtime_named("megatron");
  r.choices.recompute = {Recompute::None, Recompute::Full};
  r.choices.zero = {0, 1};
  r.choices.precision = {Precision::Bf16, Precision::Fp8};
  r.stage_choices.front().first_stage_blocks = 15;
  r.stage_choices.front().last_stage_blocks = 17;
  const ConfigSweep sweep = sweep_configs(sys, model, Strategy::OneD, 16, 8, r);
  ASSERT_EQ(sweep.rows.size(), 2u * 2u * 2u) << (sweep.rejections.empty() ? "" : sweep.rejections.front());
  for (std::size_t i = 0; i < sweep.rows.size(); ++i) {
    const Execution& x = sweep.rows[i].layout.exec;
    EXPECT_EQ(x.recompute, r.choices.recompute[i / 4]);
    EXPECT_EQ(x.zero, r.choices.zero[(i / 2) % 2]);
    EXPECT_EQ(x.precision, r.choices.precision[i % 2]);
    EXPECT_EQ(x.first_stage_blocks, 15);
    EXPECT_EQ(x.last_stage_blocks, 17);
  }
}

TEST(configs, StrategyLists) {
  EXPECT_EQ(parse_strategies("all"), (std::vector<Strategy>{Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp}));
  EXPECT_EQ(parse_strategies("2d-seqp,1d"), (std::vector<Strategy>{Strategy::TwoDSeqp, Strategy::OneD}));
  EXPECT_EQ(parse_strategies("2d"), std::vector<Strategy>{Strategy::TwoD});
  for (const char* bad : {"1d,1d", "1d,all", "1d,", "3d", "2d-seq,2d-seqp"}) {
    EXPECT_THROW(parse_strategies(bad), InputError) << bad;
  }
}

// Values a strategy cannot take leave its lists with a line saying so; an option with nothing
// left, or a strategy the runtime does not run, is refused.
TEST(configs, ChoicesAStrategyCannotTake) {
  const System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/H100.yaml");
  const Runtime reference = reference_runtime();
  ExecutionChoices c;
  c.sequence_parallel = {true, false};
  std::vector<std::string> dropped;
  ExecutionChoices one_d = c;
  check_runtime_choices(sys, reference, Strategy::OneD, one_d, &dropped);
  EXPECT_EQ(one_d.sequence_parallel, c.sequence_parallel);
  EXPECT_TRUE(dropped.empty());
  ExecutionChoices seqp = c;
  check_runtime_choices(sys, reference, Strategy::TwoDSeqp, seqp, &dropped);
  EXPECT_EQ(seqp.sequence_parallel, std::vector<bool>{true});
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_NE(dropped.front().find("--sp off dropped for 2d-seqp"), std::string::npos) << dropped.front();
  ExecutionChoices off;
  off.sequence_parallel = {false};
  EXPECT_THROW(check_runtime_choices(sys, reference, Strategy::TwoD, off), InputError);
  ExecutionChoices any;
  EXPECT_THROW(check_runtime_choices(sys, load_runtime_named("megatron"), Strategy::TwoD, any), StrategyNotRunError);
}

// The work counted before configs starts is the work it does, and counting stops past its limit;
// the rows kept with --top are the first of the whole sweep's, whatever the order, while memory
// holds only those.
TEST(configs, CountedWorkAndRowsKeptByTop) {
  const System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/H100.yaml");
  const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/llama3_8b.yaml");
  ConfigRanges r;
  r.runtime = load_runtime_named("megatron");
  r.choices.recompute = {Recompute::None, Recompute::Full};
  r.choices.zero = {0, 1};
  r.all_placements = true;
  check_runtime_choices(sys, r.runtime, Strategy::OneD, r.choices);
  const std::int64_t n = 256, batch = 512;
  std::int64_t evaluated = 0;
  r.on_points = [&](std::int64_t points) { evaluated += points; };
  const ConfigSweep all = sweep_configs(sys, model, Strategy::OneD, n, batch, r);
  const std::int64_t counted = count_configs(sys, model, Strategy::OneD, n, batch, r, std::int64_t{1} << 40);
  EXPECT_EQ(counted, evaluated);
  EXPECT_GE(counted, static_cast<std::int64_t>(all.rows.size()));
  ASSERT_GT(all.rows.size(), 20u);
  // past the limit, counting stops: more than the limit, far less than the whole
  const std::int64_t stopped = count_configs(sys, model, Strategy::OneD, n, batch, r, 10);
  EXPECT_GT(stopped, 10);
  EXPECT_LT(stopped, counted);

  for (const bool by_throughput : {false, true}) {
    for (const bool fits_only : {false, true}) {
      std::vector<ConfigRow> expected = all.rows;
      if (fits_only) std::erase_if(expected, [](const ConfigRow& row) { return !row.fits; });
      if (by_throughput) {
        std::stable_sort(expected.begin(), expected.end(), [](const ConfigRow& a, const ConfigRow& b) {
          return a.fits != b.fits ? a.fits : a.throughput > b.throughput;
        });
      }
      expected.resize(std::min<std::size_t>(expected.size(), 7));
      ConfigRanges kept = r;
      kept.keep = 7;
      kept.by_throughput = by_throughput;
      kept.fits_only = fits_only;
      const ConfigSweep top = sweep_configs(sys, model, Strategy::OneD, n, batch, kept);
      ASSERT_EQ(top.rows.size(), expected.size()) << by_throughput << fits_only;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(top.rows[i].throughput, expected[i].throughput) << i;
        EXPECT_EQ(top.rows[i].layout.dp, expected[i].layout.dp) << i;
        EXPECT_EQ(top.rows[i].layout.exec.recompute, expected[i].layout.exec.recompute) << i;
        EXPECT_EQ(top.rows[i].layout.tensor.nv1, expected[i].layout.tensor.nv1) << i;
      }
    }
  }
}

// Whether two sweeps' rows are the same rows in the same order, every number bit for bit
// (identical_lists: totals, throughput, configuration keys, execution options) and fit.
void expect_same_rows(const ConfigSweep& pruned, const ConfigSweep& all, const std::string& what) {
  auto candidates = [](const ConfigSweep& sweep) {
    std::vector<Candidate> out;
    for (const ConfigRow& row : sweep.rows) out.push_back({row.throughput, row.totals.mem, row.layout, row.totals});
    return out;
  };
  EXPECT_TRUE(identical_lists(candidates(pruned), candidates(all))) << what;
  ASSERT_EQ(pruned.rows.size(), all.rows.size()) << what;
  for (std::size_t i = 0; i < all.rows.size(); ++i) {
    EXPECT_EQ(pruned.rows[i].fits, all.rows[i].fits) << what << " row " << i;
    EXPECT_EQ(pruned.rows[i].throughput, all.rows[i].throughput) << what << " row " << i;
  }
}

// configs' step-time bound (ConfigRanges::prune) leaves the rows kept by throughput as the
// exhaustive walk keeps them, bit for bit: every option list at one GPU count, under a framework's
// runtime (the rank order's placement) and the reference's (every placement, partial NVLink
// domains at 200 GPUs of NVL72), with and without --fits-only, at top 1, 3 and 10.
TEST(configs, PrunedTopIsTheExhaustiveTop) {
  struct Case {
    const char* model;
    const char* system;
    const char* runtime;
    std::int64_t n, batch;
  };
  for (const Case& k : {Case{"llama3_70b", "H100-calibrated", "megatron", 64, 256},
                        Case{"llama3_8b", "GB200", "reference", 200, 1000},
                        Case{"llama3_8b", "H100", "nemo", 48, 96}}) {
    const System sys = load_system(PERFSWEEP_SOURCE_DIR "/systems/" + std::string(k.system) + ".yaml");
    const Transformer model = load_model(PERFSWEEP_SOURCE_DIR "/models/" + std::string(k.model) + ".yaml");
    ConfigRanges r;
    r.runtime = std::string(k.runtime) == "reference" ? reference_runtime() : load_runtime_named(k.runtime);
    r.choices.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
    r.choices.zero = {0, 1, 2, 3};
    r.choices.interleave = {1, 2, 4};
    r.choices.precision = {Precision::Bf16, Precision::Fp8};
    r.choices.schedule = {PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1};
    r.choices.sequence_parallel = {true, false};
    check_runtime_choices(sys, r.runtime, Strategy::OneD, r.choices);
    for (const bool fits_only : {false, true}) {
      for (const std::size_t top : {1u, 3u, 10u}) {
        ConfigRanges kept = r;
        kept.keep = top;
        kept.by_throughput = true;
        kept.fits_only = fits_only;
        kept.prune = false;
        const ConfigSweep all = sweep_configs(sys, model, Strategy::OneD, k.n, k.batch, kept);
        kept.prune = true;
        const ConfigSweep pruned = sweep_configs(sys, model, Strategy::OneD, k.n, k.batch, kept);
        const std::string what = std::string(k.model) + " " + k.system + " " + k.runtime + " top " +
                                 std::to_string(top) + (fits_only ? " fits-only" : "");
        ASSERT_FALSE(all.rows.empty()) << what;
        expect_same_rows(pruned, all, what);
        // each row as evaluate gives its layout (configs composes it from blocks costed once per key)
        for (const ConfigRow& row : all.rows) {
          const Evaluation ev = evaluate(sys, model, r.runtime, row.layout, k.batch);
          EXPECT_EQ(std::memcmp(&ev.totals, &row.totals, sizeof(Totals)), 0) << what;
          EXPECT_EQ(ev.throughput, row.throughput) << what;
          EXPECT_EQ(ev.fits, row.fits) << what;
        }
        EXPECT_EQ(all.pruned_subtrees + all.pruned_layouts, 0) << what;
        if (top == 1) {
          EXPECT_GT(pruned.pruned_subtrees + pruned.pruned_layouts, 0) << what << ": nothing skipped";
        }
      }
    }
  }
}

}  // namespace
}  // namespace perfsweep
