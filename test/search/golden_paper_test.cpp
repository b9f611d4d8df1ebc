// The search against all 54 published outputs of the reference (3 strategies x 2 models x 9
// systems, test/data/paper): GPU counts, best and N-th throughputs, and every configuration,
// memory and stats value of each top-10 list, bit for bit (the reference's JSON holds Python's
// shortest round-trip repr of each double, which reads back to the same double).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstring>
#include <string>

#include "config/inputs.hpp"
#include "io/report.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

struct PaperCase {
  const char* strat;
  const char* model;
  const char* system;
  std::int64_t nvs;
};

std::vector<PaperCase> all_cases() {
  std::vector<PaperCase> out;
  for (const char* strat : {"1d", "2d", "2d-seqp"})
    for (const char* model : {"gpt3_1T", "vit_era5"})
      for (const char* sys : {"A100", "H200", "B200"})
        for (std::int64_t nvs : {4, 8, 64}) out.push_back({strat, model, sys, nvs});
  return out;
}

// Equal doubles; the count and the largest relative difference seen are kept for the closing line.
std::size_t compared = 0;
double largest_difference = 0;
bool same(double expected, double actual) {
  ++compared;
  if (expected == actual) return true;
  largest_difference = std::max(largest_difference, std::fabs(expected - actual) /
                                                        std::max(std::fabs(expected), std::fabs(actual)));
  return false;
}

class PaperOutputs : public ::testing::TestWithParam<PaperCase> {};

TEST_P(PaperOutputs, MatchTheReference) {
  const PaperCase pc = GetParam();
  const std::string file = std::string(PERFSWEEP_TEST_DATA_DIR "/paper/") + pc.strat + "_" + pc.model + "_" +
                           pc.system + "-NVS" + std::to_string(pc.nvs) + ".json";
  const YAML::Node golden = YAML::LoadFile(file);

  SearchProblem p;
  p.strategy = std::strcmp(pc.strat, "1d") == 0 ? Strategy::OneD
               : std::strcmp(pc.strat, "2d") == 0 ? Strategy::TwoD
                                                   : Strategy::TwoDSeqp;
  p.model = load_model(PERFSWEEP_SOURCE_DIR "/models/" + std::string(pc.model) + ".yaml");
  p.system = load_system(PERFSWEEP_SOURCE_DIR "/systems/" + std::string(pc.system) + ".yaml");
  p.system.nvlink_size = pc.nvs;
  p.global_batch = golden["global_batch_size"].as<std::int64_t>();
  p.top_n = golden["top_n"].as<std::size_t>();

  Searcher searcher(p);
  SearchCounters counters;
  std::vector<TopN> tops;
  std::vector<std::int64_t> counts;
  for (std::int64_t n = 4; n <= 16384; n *= 2) {
    counts.push_back(n);
    tops.push_back(searcher.run_all(n, counters));
  }
  std::size_t start = 0;
  while (start < tops.size() && tops[start].items().empty()) ++start;

  const YAML::Node n_gpus = golden["n_gpus"];
  if (start == tops.size()) {
    EXPECT_EQ(n_gpus.size(), 0u) << "the reference found feasible configurations";
    return;
  }
  ASSERT_EQ(n_gpus.size(), tops.size() - start);
  compared = 0;
  largest_difference = 0;
  for (std::size_t i = start; i < tops.size(); ++i) {
    const std::size_t gi = i - start;
    ASSERT_EQ(n_gpus[gi].as<std::int64_t>(), counts[i]);
    const auto& items = tops[i].items();
    const YAML::Node list = golden["top"][gi];
    ASSERT_EQ(list.size(), items.size()) << "n_gpus " << counts[i];
    EXPECT_TRUE(same(golden["t_max"][gi].as<double>(), items.front().throughput)) << "n_gpus " << counts[i];
    EXPECT_TRUE(same(golden["t_min"][gi].as<double>(), items.back().throughput)) << "n_gpus " << counts[i];
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Candidate& c = items[k];
      const YAML::Node g = list[k];
      const std::string where = "n_gpus " + std::to_string(counts[i]) + " rank " + std::to_string(k);
      EXPECT_TRUE(same(g["throughput"].as<double>(), c.throughput)) << where;
      EXPECT_TRUE(same(g["mem"].as<double>(), c.mem)) << where;
      for (const auto& [key, v] : config_keys(c.layout)) EXPECT_EQ(g["config"][key].as<std::int64_t>(), v) << where << " " << key;
      EXPECT_EQ(g["config"].size(), config_keys(c.layout).size()) << where;
      for (const TotalsField& f : kTotalsFields) {
        EXPECT_TRUE(same(g["stats"][f.name].as<double>(), c.totals.*f.member))
            << where << " " << f.name << ": expected " << g["stats"][f.name].as<std::string>() << ", got "
            << c.totals.*f.member;
      }
      for (const auto& [key, v] : nv_keys(c.layout)) EXPECT_EQ(g["stats"][key].as<std::int64_t>(), v) << where << " " << key;
      EXPECT_EQ(g["stats"].size(), kTotalsFields.size() + nv_keys(c.layout).size()) << where;
    }
  }
  std::printf("%s_%s_%s-NVS%lld: %zu GPU counts, %lld candidates, %zu values compared, largest relative difference %.3g\n",
              pc.strat, pc.model, pc.system, static_cast<long long>(pc.nvs), n_gpus.size(),
              static_cast<long long>(counters.candidates), compared, largest_difference);
}

INSTANTIATE_TEST_SUITE_P(AllPublished, PaperOutputs, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<PaperCase>& param_info) {
                           std::string name = std::string(param_info.param.strat) + "_" + param_info.param.model + "_" +
                                              param_info.param.system + "_NVS" + std::to_string(param_info.param.nvs);
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace perfsweep
