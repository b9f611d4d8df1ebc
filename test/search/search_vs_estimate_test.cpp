// The search and `estimate` compose a step the same way: every configuration a search ranks,
// evaluated on its own (model/step.hpp: evaluate), has bit-identical throughput, memory and
// totals. The search caches block summaries; a cache key that loses a field hands one
// configuration another's costs, which this comparison catches.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "config/inputs.hpp"
#include "search/search.hpp"
#include "search/top_n.hpp"

namespace perfsweep {
namespace {

Transformer shipped_model(const char* name) {
  return load_model(PERFSWEEP_SOURCE_DIR "/models/" + std::string(name) + ".yaml");
}

void expect_search_matches_estimate(Strategy strategy, const Transformer& model, const char* system, std::int64_t nvs,
                                    std::int64_t n_gpus, std::int64_t global_batch, const ExecutionChoices& exec = {}) {
  SearchProblem p;
  p.exec = exec;
  p.strategy = strategy;
  p.model = model;
  p.system = load_system(PERFSWEEP_SOURCE_DIR "/systems/" + std::string(system) + ".yaml");
  p.system.nvlink_size = nvs;
  p.global_batch = global_batch;
  p.top_n = 10;
  Searcher searcher(p);
  SearchCounters counters;
  const TopN top = searcher.run_all(n_gpus, counters);
  ASSERT_FALSE(top.items().empty()) << n_gpus << " GPUs: no feasible configuration";
  for (std::size_t rank = 0; rank < top.items().size(); ++rank) {
    const Candidate& c = top.items()[rank];
    const Layout& l = c.layout;
    const std::string where = std::to_string(n_gpus) + " GPUs, rank " + std::to_string(rank) + ": dp=" +
                              std::to_string(l.dp) + " tp1=" + std::to_string(l.tensor.tp1) +
                              " tp2=" + std::to_string(l.tensor.tp2) + " pp=" + std::to_string(l.pp) +
                              " mbs=" + std::to_string(l.mbs) + " nb=" + std::to_string(l.tensor.nb);
    const Evaluation ev = evaluate(p.system, p.model, l, global_batch);
    // Bit-identical: the same functions on the same inputs, so ==, not a tolerance. One failure per
    // configuration, naming every field that differs (search value vs estimate value).
    std::string differ;
    auto compare = [&](const char* name, double searched, double estimated) {
      if (searched == estimated) return;
      char buf[160];
      std::snprintf(buf, sizeof buf, "\n  %s: search %.17g, estimate %.17g", name, searched, estimated);
      differ += buf;
    };
    compare("throughput (samples/s)", c.throughput, ev.throughput);
    compare("mem (GB)", c.mem, ev.totals.mem);
    for (const TotalsField& f : kTotalsFields) compare(f.name, c.totals.*f.member, ev.totals.*f.member);
    if (!differ.empty()) ADD_FAILURE() << where << differ;
    EXPECT_TRUE(ev.fits) << where << ": the search kept a configuration that does not fit";
  }
}

void expect_search_matches_estimate(Strategy strategy, const char* model, const char* system, std::int64_t nvs,
                                    std::int64_t n_gpus, std::int64_t global_batch, const ExecutionChoices& exec = {}) {
  expect_search_matches_estimate(strategy, shipped_model(model), system, nvs, n_gpus, global_batch, exec);
}

// Execution options as search dimensions: recomputation and sequence parallelism change the
// block (its cache key), ZeRO, interleaving and the parameter layout the step (the memory check
// before placements). Every ranked configuration must still be what evaluate gives.
TEST(SearchVsEstimate, ExecutionOptionsAsDimensions) {
  ExecutionChoices x;
  x.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  x.sequence_parallel = {true, false};
  x.zero = {0, 1, 3};
  x.interleave = {1, 2, 4};
  x.params = {ParamLayout::Reference, ParamLayout::Megatron};
  for (std::int64_t n : {64, 256}) {
    expect_search_matches_estimate(Strategy::OneD, "llama3_8b", "H100", 8, n, 512, x);
    expect_search_matches_estimate(Strategy::TwoDSeqp, "gpt3", "H100", 8, n, 512, x);
  }
}

// Expert parallelism as a search dimension: ep changes the block (experts per GPU, the
// all-to-alls' group and its NVLink share), so it is part of the cache key; every ranked
// configuration must be what evaluate gives, and the ranking must use more than one ep.
TEST(SearchVsEstimate, ExpertParallelAsDimension) {
  ExecutionChoices x;
  x.ep = {1, 2, 4, 8};
  x.zero = {1, 3};
  for (std::int64_t n : {64, 256}) {
    expect_search_matches_estimate(Strategy::OneD, "mixtral_8x7b", "H100", 8, n, 512, x);
    expect_search_matches_estimate(Strategy::TwoDSeqp, "mixtral_8x7b", "H100", 8, n, 512, x);
  }
}

// Expert tensor parallelism as a search dimension: etp changes the block (an expert's GEMMs, the
// tokens exchanged) and memory (the experts' weights and their data-parallel group), so it is part
// of the cache key; `--etp 1,<tp>` (0: tp) and a list of degrees, each configuration what evaluate
// gives.
TEST(SearchVsEstimate, ExpertTensorParallelAsDimension) {
  ExecutionChoices x;
  x.ep = {1, 4, 8};
  x.etp = {0, 1};
  x.zero = {1, 3};
  expect_search_matches_estimate(Strategy::OneD, "mixtral_8x7b", "H100", 8, 64, 512, x);
  expect_search_matches_estimate(Strategy::TwoDSeqp, "mixtral_8x7b", "H100", 8, 64, 512, x);
  x.etp = {1, 2, 4, 8};
  expect_search_matches_estimate(Strategy::OneD, "mixtral_8x7b", "H100", 8, 256, 512, x);
}

// One walk judged against several HBM capacities (a hardware sweep's capacity axis) keeps, for
// each capacity, exactly the top-N and the counts of a search at that capacity alone: the
// capacities offered out of order, some equal, one fitting nothing, one fitting everything; each
// configuration kept with the totals a search at that capacity gives.
TEST(SearchVsEstimate, CapacitiesShareOneWalk) {
  for (Strategy strategy : {Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp}) {
    SearchProblem p;
    p.strategy = strategy;
    p.model = load_model(PERFSWEEP_SOURCE_DIR "/models/gpt3_1T.yaml");
    p.system = load_system(PERFSWEEP_SOURCE_DIR "/systems/B200.yaml");
    p.system.nvlink_size = 8;
    p.global_batch = 4096;
    p.top_n = 10;
    const std::vector<double> capacities{400, 80, 1e9, 192, 80, 1, 120, 1000};
    for (std::int64_t n : {512, 4096}) {
      Searcher shared(p);
      std::vector<TopN> tops(capacities.size(), TopN(p.top_n));
      std::vector<SearchCounters> counters(capacities.size());
      for (const TensorSplit& split : tensor_splits(p, n)) shared.run(n, split, capacities, tops, counters);
      for (std::size_t i = 0; i < capacities.size(); ++i) {
        SearchProblem alone = p;
        alone.system.hbm_capacity = capacities[i];
        Searcher searcher(alone);
        SearchCounters expected;
        const TopN top = searcher.run_all(n, expected);
        const std::string where = std::string(plan_of(strategy).name) + " at " + std::to_string(n) + " GPUs, " +
                                  std::to_string(capacities[i]) + " GB";
        ASSERT_EQ(tops[i].items().size(), top.items().size()) << where;
        for (std::size_t r = 0; r < top.items().size(); ++r) {
          EXPECT_EQ(tops[i].items()[r].throughput, top.items()[r].throughput) << where << ", rank " << r;
          EXPECT_FALSE(ranks_before(tops[i].items()[r], top.items()[r]) || ranks_before(top.items()[r], tops[i].items()[r]))
              << where << ", rank " << r;
          // every totals field, mem_limit (the capacity's own) among them: what --resume checks
          for (const TotalsField& f : kAllTotalsFields) {
            EXPECT_EQ(tops[i].items()[r].totals.*(f.member), top.items()[r].totals.*(f.member))
                << where << ", rank " << r << ", " << f.name;
          }
        }
        EXPECT_EQ(counters[i].candidates, expected.candidates) << where;
        EXPECT_EQ(counters[i].infeasible_memory, expected.infeasible_memory) << where;
      }
    }
  }
}

// MoE every other block: the search costs the mean of an MoE and a dense block once per key and
// skips pipelines whose stages would not hold whole pairs; evaluate mixes the same two blocks.
TEST(SearchVsEstimate, MixtureOfExpertsEveryOtherBlock) {
  Transformer m = shipped_model("mixtral_8x7b");
  m.moe.every = 2;
  ExecutionChoices x;
  x.ep = {1, 2, 8};
  x.zero = {1, 3};
  for (std::int64_t n : {64, 256}) {
    expect_search_matches_estimate(Strategy::OneD, m, "H100", 8, n, 512, x);
    expect_search_matches_estimate(Strategy::TwoDSeqp, m, "H100", 8, n, 512, x);
  }
}

// Tied embeddings (GPT-2): one stage shares the embedding's weights, several all-reduce the
// head's copy between the end stages; the search's cache and evaluate must agree on both.
TEST(SearchVsEstimate, TiedEmbeddings) {
  ExecutionChoices x;
  x.params = {ParamLayout::Reference, ParamLayout::Megatron};
  for (std::int64_t n : {16, 64}) expect_search_matches_estimate(Strategy::OneD, "gpt2_small", "H100", 8, n, 512, x);
}

TEST(SearchVsEstimate, Gpt3OneD) {
  for (std::int64_t n : {32, 64}) expect_search_matches_estimate(Strategy::OneD, "gpt3", "B200", 8, n, 4096);
}

TEST(SearchVsEstimate, Gpt3TwoD) {
  for (std::int64_t n : {32, 64}) expect_search_matches_estimate(Strategy::TwoD, "gpt3", "B200", 8, n, 4096);
}

TEST(SearchVsEstimate, Gpt3TwoDSeqp) {
  for (std::int64_t n : {32, 64}) expect_search_matches_estimate(Strategy::TwoDSeqp, "gpt3", "B200", 8, n, 4096);
}

// 720720 = 2^4 x 3^2 x 5 x 7 x 11 x 13 has 5 x 3 x 2^4 = 240 divisors: micro-batch indices fit in
// 8 bits.
TEST(SearchVsEstimate, Gpt3TwoDBatchWith240Divisors) {
  for (std::int64_t n : {32, 64}) expect_search_matches_estimate(Strategy::TwoD, "gpt3", "B200", 8, n, 720720);
}

// 1441440 = 2^5 x 3^2 x 5 x 7 x 11 x 13 has 288 divisors, and the search cache packs the
// micro-batch index into 8 bits, so a 2d search reuses another micro-batch size's block costs
// (it ranked dp=2 tp1=2 pp=8 mbs=32760 nb=8 first at about 635,636 samples/s, where estimate
// gives about 20.5). The cache key is now the checked fields themselves.
TEST(SearchVsEstimate, Gpt3TwoDBatchWith288Divisors) {
  for (std::int64_t n : {32, 64}) expect_search_matches_estimate(Strategy::TwoD, "gpt3", "B200", 8, n, 1441440);
}

}  // namespace
}  // namespace perfsweep
