// Every per-layer field and total of `estimate --json` against the reference implementation's own
// output: flash attention (the reference's search) for the configurations in
// test/data/layer_cases.json, unfused attention with and without recompute for those in
// test/data/attention/cases.json (see test/data/README.md).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "common/compare.hpp"
#include "io/report.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

System system_from(const YAML::Node& n) {
  System s;
  s.name = "fixture";
  s.matrix_flops_fp16 = n["matrix_flops_fp16"].as<double>();
  s.vector_flops_fp32 = n["vector_flops_fp32"].as<double>();
  s.vector_flops_fp16 = n["vector_flops_fp16"].as<double>();
  s.hbm_bandwidth = n["hbm_bandwidth"].as<double>();
  s.hbm_capacity = n["hbm_capacity"].as<double>();
  s.nvlink_bandwidth = n["nvlink_bandwidth"].as<double>();
  s.nvlink_eff = n["nvlink_eff"].as<double>();
  s.nvlink_latency = n["nvlink_latency"].as<double>();
  s.ib_bandwidth = n["ib_bandwidth"].as<double>();
  s.ib_eff = n["ib_eff"].as<double>();
  s.ib_latency = n["ib_latency"].as<double>();
  s.nvlink_size = n["nvlink_size"].as<std::int64_t>();
  s.nic_factor = n["nic_factor"].as<double>();
  s.summa_nb = n["summa_nb"].as<std::int64_t>();
  s.element_size = n["element_size"].as<double>();
  s.mask_element_size = n["mask_element_size"].as<double>();
  s.flops_units = n["flops_units"].as<double>();
  return s;
}

Layout layout_from(const YAML::Node& c) {
  const std::string strat = c["strat"].as<std::string>();
  const YAML::Node cfg = c["config"], nv = c["nv"];
  Layout l;
  l.strategy = strat == "1d" ? Strategy::OneD : strat == "2d" ? Strategy::TwoD : Strategy::TwoDSeqp;
  l.dp = cfg["dp"].as<std::int64_t>();
  l.pp = cfg["pp"].as<std::int64_t>();
  l.mbs = cfg["mbs"].as<std::int64_t>();
  l.nv_dp = nv["dp"].as<std::int64_t>();
  l.nv_pp = nv["pp"].as<std::int64_t>();
  if (l.strategy == Strategy::OneD) {
    l.tensor.tp1 = cfg["tp"].as<std::int64_t>();
    l.tensor.nv1 = nv["tp"].as<std::int64_t>();
  } else {
    l.tensor.tp1 = cfg["tp1"].as<std::int64_t>();
    l.tensor.tp2 = cfg["tp2"].as<std::int64_t>();
    l.tensor.nv1 = nv["tp1"].as<std::int64_t>();
    l.tensor.nv2 = nv["tp2"].as<std::int64_t>();
    if (cfg["nb"]) l.tensor.nb = cfg["nb"].as<std::int64_t>();
  }
  if (c["attention"]) {
    l.attention.flash = c["attention"].as<std::string>() == "flash";
    l.attention.recompute = c["recompute"] && c["recompute"].as<bool>();
  }
  return l;
}

Transformer model_from(const YAML::Node& m) {
  Transformer t;
  t.name = "fixture";
  t.l = m["l"].as<std::int64_t>();
  t.e = m["e"].as<std::int64_t>();
  t.h = m["h"].as<std::int64_t>();
  t.depth = m["depth"].as<std::int64_t>();
  t.f = m["f"] ? m["f"].as<std::int64_t>() : 4 * t.e;
  return t;
}

struct GoldenCounts {
  std::size_t cases = 0, failures = 0;
};

// Evaluates every case of `expected_file` and compares its `estimate --json` output with the
// reference's rows, totals and throughput, bit for bit.
GoldenCounts compare_with_reference(const char* expected_file, std::size_t min_cases) {
  const YAML::Node cases = YAML::LoadFile(expected_file);
  EXPECT_GE(cases.size(), min_cases);
  GoldenCounts counts;
  counts.cases = cases.size();
  test::compared_numbers() = 0;
  test::largest_relative_difference() = 0;
  for (const YAML::Node& c : cases) {
    const std::string id = c["id"].as<std::string>();
    const System sys = system_from(c["system"]);
    const Transformer model = model_from(c["model"]);
    const Layout layout = layout_from(c);
    const Evaluation ev = evaluate(sys, model, layout, c["gbs"].as<std::int64_t>());
    YAML::Node actual = YAML::Load(estimate_json(ev, layout, sys));
    // perfsweep's additions to the reference's stats: which model timed each layer's collectives
    // (here, without a calibration, the analytical one), checked and set aside ...
    for (const char* module : {"mlp", "sa", "dp", "pp"}) {
      for (YAML::Node layer : actual["modules"][module]) {
        if (!layer["comm_model"]) continue;
        EXPECT_EQ(layer["comm_model"].as<std::string>(), "analytical") << id << " " << module;
        layer.remove("comm_model");
      }
    }
    YAML::Node actual_totals = actual["totals"];
    EXPECT_EQ(actual_totals["calibrated_collectives"].as<int>(), 0) << id;
    EXPECT_NE(actual_totals["comm_model"].as<std::string>(), "calibrated") << id;
    EXPECT_FALSE(actual_totals["calibration"]) << id;
    for (const char* key : {"comm_model", "collectives", "calibrated_collectives"}) actual_totals.remove(key);
    YAML::Node expected;
    expected["modules"] = c["modules"];
    YAML::Node totals = YAML::Clone(c["totals"]);
    totals["fits"] = ev.fits;  // ... and fits, checked against hbm_capacity below
    expected["totals"] = totals;
    expected["throughput"] = c["throughput"];
    const auto diffs = test::compare_json(expected, actual, id);
    for (const auto& d : diffs) ADD_FAILURE() << d;
    counts.failures += diffs.size();
    EXPECT_EQ(ev.fits, !(c["totals"]["mem"].as<double>() > sys.hbm_capacity)) << id;
  }
  return counts;
}

TEST(GoldenLayers, EveryFieldMatchesTheReference) {
  const GoldenCounts n = compare_with_reference(PERFSWEEP_TEST_DATA_DIR "/layer_expected.json", 30);
  std::printf("golden layers: %zu cases, %zu numbers compared, %zu mismatches, largest relative difference %.3g\n",
              n.cases, test::compared_numbers(), n.failures, test::largest_relative_difference());
}

// Unfused attention (logits, softmax, dpr_at, attend and their context-parallel variants), with
// and without 1d attention recompute: reachable through Layout::attention only, not the search.
TEST(GoldenLayers, UnfusedAttentionMatchesTheReference) {
  const char* file = PERFSWEEP_TEST_DATA_DIR "/attention/expected.json";
  const YAML::Node cases = YAML::LoadFile(file);
  std::size_t unfused = 0, recompute = 0;
  for (const YAML::Node& c : cases) {
    const Layout l = layout_from(c);
    if (!l.attention.flash) ++unfused;
    if (l.attention.recompute) ++recompute;
    std::size_t scores_layers = 0;
    for (const YAML::Node& layer : c["modules"]["sa"]) {
      const std::string name = layer["name"].as<std::string>();
      if (name == "logits" || name == "softmax" || name == "dpr_at" || name == "attend") ++scores_layers;
      EXPECT_NE(name, "fusedla") << c["id"].as<std::string>();
    }
    EXPECT_EQ(scores_layers, 4u) << c["id"].as<std::string>();
  }
  EXPECT_EQ(unfused, cases.size());
  EXPECT_GE(recompute, 1u);
  const GoldenCounts n = compare_with_reference(file, 12);
  std::printf("golden unfused attention: %zu cases (%zu with recompute), %zu numbers compared, %zu mismatches, "
              "largest relative difference %.3g\n",
              n.cases, recompute, test::compared_numbers(), n.failures, test::largest_relative_difference());
}

}  // namespace
}  // namespace perfsweep
