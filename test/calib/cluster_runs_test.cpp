// The readers of the measured training runs (test/data/cluster): each format's columns mapped to
// the configuration the run ran, malformed rows refused with file, line and column, and the
// pieces of the prediction that can be derived by hand.
#include "calib/cluster_runs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/inputs.hpp"
#include "core/error.hpp"

namespace perfsweep::calib {
namespace {

const std::filesystem::path kData = std::filesystem::path(PERFSWEEP_TEST_DATA_DIR) / "cluster";

const ClusterRun& by_id(const std::vector<ClusterRun>& runs, const std::string& id) {
  for (const ClusterRun& r : runs) {
    if (r.id == id) return r;
  }
  throw std::runtime_error("no run " + id);
}

TEST(ClusterRuns, MegatronColumns) {
  const auto runs = read_cluster_runs(RunSet::Megatron, kData / "megatron_published.csv");
  ASSERT_EQ(runs.size(), 18u);
  const ClusterRun& k = by_id(runs, "korthikanti-175B-selective");
  EXPECT_EQ(k.group, "korthikanti2022_table5");
  EXPECT_EQ(k.line, 15u);
  EXPECT_EQ(k.quantity, Quantity::IterationSeconds);
  EXPECT_DOUBLE_EQ(k.measured, 13.75);
  EXPECT_EQ(k.global_batch, 64);
  EXPECT_EQ(k.layout.tensor.tp1, 8);
  EXPECT_EQ(k.layout.pp, 8);
  EXPECT_EQ(k.layout.dp, 1);
  EXPECT_EQ(k.layout.mbs, 1);
  EXPECT_EQ(k.layout.exec.interleave, 3);
  EXPECT_EQ(k.layout.exec.recompute, Recompute::Selective);
  EXPECT_TRUE(k.layout.exec.sequence_parallel);
  EXPECT_EQ(k.layout.exec.zero, 0);
  EXPECT_TRUE(k.layout.exec.p2p_scatter_gather);
  EXPECT_FALSE(k.layout.attention.flash);
  EXPECT_EQ(k.model.e, 12288);
  EXPECT_EQ(k.model.h, 96);
  EXPECT_EQ(k.model.depth, 96);
  EXPECT_EQ(k.model.f, 4 * 12288);
  EXPECT_EQ(k.model.l, 2048);
  EXPECT_EQ(k.model.vocab_size, 51200);
  EXPECT_TRUE(k.model.tie_embeddings);
  EXPECT_EQ(k.layout.tensor.nv1, 8);  // tp fills the DGX
  EXPECT_EQ(k.layout.nv_dp, 1);
  EXPECT_EQ(k.layout.nv_pp, 1);
  EXPECT_FALSE(k.fit);

  const ClusterRun& full = by_id(runs, "korthikanti-22B-full");
  EXPECT_EQ(full.layout.exec.recompute, Recompute::Full);
  EXPECT_FALSE(full.layout.exec.sequence_parallel);
  EXPECT_EQ(full.layout.mbs, 4);

  const ClusterRun& n = by_id(runs, "narayanan-1008B");
  EXPECT_EQ(n.quantity, Quantity::TflopsPerGpu);
  EXPECT_DOUBLE_EQ(n.measured, 163);
  EXPECT_EQ(n.layout.dp, 3072 / (8 * 64));
  EXPECT_EQ(n.layout.mbs, 1);  // not in the table: Megatron-LM's examples/sc21/run_table_1.sh
  EXPECT_EQ(n.global_batch, 3072);
  EXPECT_EQ(n.layout.exec.interleave, 1);
  EXPECT_TRUE(n.layout.exec.dp_after_backward);  // DDP=local
  const ClusterRun& small = by_id(runs, "narayanan-1.7B");
  EXPECT_EQ(small.layout.mbs, 16);
  EXPECT_FALSE(small.layout.exec.dp_after_backward);  // DDP=torch
  const ClusterRun& mid = by_id(runs, "narayanan-76.1B");
  EXPECT_EQ(mid.layout.mbs, 2);
  EXPECT_EQ(mid.layout.exec.interleave, 3);  // 15 layers a stage, 5 a virtual stage
  EXPECT_TRUE(k.layout.exec.sp_backward_gather);
  EXPECT_TRUE(k.layout.exec.fused_elementwise);  // bias-GeLU and bias-dropout-add kernels
  EXPECT_FALSE(k.layout.exec.dp_after_backward);
  for (const ClusterRun& r : runs) EXPECT_FALSE(r.fit) << r.id;
}

TEST(ClusterRuns, VtrainColumns) {
  const auto runs = read_cluster_runs(RunSet::Vtrain, kData / "vtrain_ground_truth_multi.csv");
  ASSERT_EQ(runs.size(), 109u);
  const ClusterRun& r = runs[0];
  EXPECT_EQ(r.id, "vtrain-001");
  EXPECT_EQ(r.line, 2u);
  EXPECT_DOUBLE_EQ(r.measured, 3.5665);  // 3566.5 ms
  EXPECT_EQ(r.layout.tensor.tp1, 1);
  EXPECT_EQ(r.layout.dp, 64);
  EXPECT_EQ(r.layout.pp, 1);
  EXPECT_EQ(r.layout.mbs, 8);
  EXPECT_EQ(r.global_batch, 512);
  EXPECT_EQ(r.model.e, 3072);
  EXPECT_EQ(r.model.h, 32);
  EXPECT_EQ(r.model.depth, 30);
  EXPECT_EQ(r.model.vocab_size, 50304);  // 50257 padded to 128 x tp
  EXPECT_EQ(r.layout.exec.recompute, Recompute::Full);
  EXPECT_TRUE(r.layout.exec.fused_elementwise);
  EXPECT_FALSE(r.layout.exec.sequence_parallel);
  EXPECT_EQ(runs[2].model.vocab_size, 50432);  // tp 2: a multiple of 256
  // Every third run by file order, from the first, fits the A100 calibration's scales.
  std::size_t fit = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].fit, i % 3 == 0) << runs[i].id;
    fit += runs[i].fit ? 1u : 0u;
  }
  EXPECT_EQ(fit, 37u);
  EXPECT_LE(3 * fit, runs.size() + 2);  // at most a third (rounded up)
}

TEST(ClusterRuns, NanotronColumns) {
  const auto runs = read_cluster_runs(RunSet::Nanotron, kData / "nanotron_bench_h100.csv");
  ASSERT_EQ(runs.size(), 4104u);
  const ClusterRun& r = runs[0];
  EXPECT_EQ(r.id, "14113488");
  EXPECT_EQ(r.status, "Success");
  EXPECT_EQ(r.quantity, Quantity::TokensPerSecondPerGpu);
  EXPECT_DOUBLE_EQ(r.measured, 40149.94);
  EXPECT_DOUBLE_EQ(r.measured_mem_gb, 25.07);
  EXPECT_EQ(r.layout.dp, 8);
  EXPECT_EQ(r.layout.tensor.tp1, 1);
  EXPECT_EQ(r.layout.pp, 1);
  EXPECT_EQ(r.layout.mbs, 2);
  EXPECT_EQ(r.global_batch, 8 * 2 * 16);
  EXPECT_EQ(r.layout.exec.zero, 0);
  EXPECT_TRUE(r.layout.exec.sequence_parallel);  // tp_mode REDUCE_SCATTER
  EXPECT_EQ(r.layout.exec.params, ParamLayout::Megatron);
  EXPECT_EQ(r.layout.exec.recompute, Recompute::None);
  EXPECT_TRUE(r.layout.attention.flash);
  EXPECT_EQ(r.model.e, 2048);
  EXPECT_EQ(r.model.f, 8192);
  EXPECT_EQ(r.model.h, 32);
  EXPECT_EQ(r.model.kv(), 32);
  EXPECT_EQ(r.model.depth, 16);
  EXPECT_EQ(r.model.l, 4096);
  EXPECT_EQ(r.model.vocab_size, 131072);
  EXPECT_TRUE(r.model.tie_embeddings);
  EXPECT_EQ(r.model.mlp, MlpKind::SwiGlu);
  EXPECT_EQ(r.model.norm, NormKind::RmsNorm);
  EXPECT_FALSE(r.model.bias);
  EXPECT_TRUE(r.model.causal);
  EXPECT_EQ(r.layout.tensor.nv1 * r.layout.nv_dp * r.layout.nv_pp, 8);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_DOUBLE_EQ(r.cluster_allreduce_GBps, 425.34);
  EXPECT_FALSE(r.pipeline_before_fix);  // after_pp_fix True
  const ClusterRun& before_fix = by_id(runs, "13849258");  // after_pp_fix False, 16 nodes, pp 2
  EXPECT_TRUE(before_fix.pipeline_before_fix);
  EXPECT_EQ(before_fix.nodes, 16);
  EXPECT_EQ(before_fix.layout.pp, 2);
  // Every third run by file order, from the first, fits the cluster's network.
  std::size_t fit = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].fit, i % 3 == 0) << runs[i].id;
    fit += runs[i].fit ? 1u : 0u;
  }
  EXPECT_EQ(fit, 1368u);
  // The network: medians over the fit runs of more than one node, by node count.
  const ClusterNetwork net = fit_cluster_network(runs);
  ASSERT_EQ(net.scaling.nodes, (std::vector<std::int64_t>{2, 4, 8, 16, 32, 64}));
  for (std::size_t i = 1; i < net.scaling.nodes.size(); ++i) {
    EXPECT_LT(net.scaling.allreduce_bus_GBps[i], net.scaling.allreduce_bus_GBps[i - 1]);
  }
  // The compute scale, fitted on the fit runs of one node.
  const ComputeScaleFit compute = fit_one_node_compute(load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "hf_h100.yaml"), runs);
  EXPECT_EQ(compute.runs, 24u);
  // a scale of the calibrated efficiencies: physical (never above the calibration's), and not degenerate
  EXPECT_GT(compute.compute, 0.5);
  EXPECT_LE(compute.compute, 1.0);
  EXPECT_LT(compute.median_abs_after, compute.median_abs_before);
  EXPECT_TRUE(compute.one_node);
  // Without enough one-node runs (here: the multi-node fit successes of the first 600 runs), the
  // scale is fitted on every fit run, over the cluster's network.
  std::vector<ClusterRun> multi_node;
  for (std::size_t i = 0; i < 600; ++i) {
    if (runs[i].nodes > 1) multi_node.push_back(runs[i]);
  }
  std::size_t multi_fit = 0;
  for (const ClusterRun& m : multi_node) multi_fit += m.fit && std::isfinite(m.measured) ? 1u : 0u;
  ASSERT_GE(multi_fit, kMinOneNodeFitRuns);
  const ComputeScaleFit all = fit_one_node_compute(
      load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "hf_h100.yaml"), multi_node, {}, &net);
  EXPECT_FALSE(all.one_node);
  EXPECT_EQ(all.runs, multi_fit);
  EXPECT_LE(all.median_abs_after, all.median_abs_before);

  // A run that never started: kv heads from the name's "_gqa8", untied (hidden 8192).
  const ClusterRun& oom = by_id(runs, "14311348");
  EXPECT_EQ(oom.status, "OOM");
  EXPECT_TRUE(std::isnan(oom.measured));
  EXPECT_TRUE(std::isnan(oom.measured_mem_gb));
  EXPECT_EQ(oom.model.kv(), 8);
  EXPECT_FALSE(oom.model.tie_embeddings);
  EXPECT_EQ(oom.model.f, 28672);
  EXPECT_EQ(oom.model.vocab_size, 49152);
  EXPECT_EQ(oom.global_batch, 2 * 2 * 64);
}

TEST(ClusterRuns, MegatronFlopsFormula) {
  Transformer m;
  m.l = 2048;
  m.e = 4096;
  m.depth = 36;
  m.vocab_size = 51200;
  const double expected = 96.0 * 512 * 2048 * 36 * 4096.0 * 4096 *
                          (1 + 2048.0 / (6 * 4096) + 51200.0 / (16.0 * 36 * 4096));
  EXPECT_DOUBLE_EQ(megatron_model_flops(m, 512), expected);
}

TEST(ClusterRuns, MegatronRankOrderPlacement) {
  Layout c;
  c.tensor.tp1 = 4;
  c.dp = 4;
  c.pp = 2;
  place_megatron_order(c, 8);
  EXPECT_EQ(c.tensor.nv1, 4);
  EXPECT_EQ(c.nv_dp, 2);
  EXPECT_EQ(c.nv_pp, 1);
  c.tensor.tp1 = 1;
  c.dp = 1;
  c.pp = 16;
  place_megatron_order(c, 8);
  EXPECT_EQ(c.nv_pp, 8);
}

TEST(ClusterRuns, PredictionRowsAndCsv) {
  const auto runs = read_cluster_runs(RunSet::Megatron, kData / "megatron_published.csv");
  const System s = load_system(std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems" / "selene_a100.yaml");
  EXPECT_NE(s.kernel_calibration, nullptr);
  const auto rows = validate_runs(s, runs);
  ASSERT_EQ(rows.size(), runs.size());
  for (const RunResult& r : rows) {
    ASSERT_TRUE(r.prediction.error.empty()) << r.run.id << ": " << r.prediction.error;
    ASSERT_TRUE(r.has_error());
    if (r.run.quantity == Quantity::TflopsPerGpu) {
      EXPECT_NEAR(r.prediction.predicted,
                  megatron_model_flops(r.run.model, r.run.global_batch) /
                      (r.prediction.iteration_s * static_cast<double>(r.run.layout.n_gpus())) * 1e-12,
                  1e-9);
    }
  }
  const std::string csv = runs_csv(RunSet::Megatron, rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "id,quantity,measured,predicted,rel_err,fit,predicted_iteration_s,note");
  // The step with every digit of its double.
  char step[40];
  std::snprintf(step, sizeof step, ",%.17g,\n", rows.front().prediction.iteration_s);
  EXPECT_NE(csv.find(step), std::string::npos) << step;
  EXPECT_NE(csv.find("\nnarayanan-1.7B,tflops_per_gpu,137,"), std::string::npos);
  const std::string summary = runs_summary(RunSet::Megatron, rows);
  EXPECT_EQ(summary.rfind("validate megatron\n", 0), 0u);
  EXPECT_NE(summary.find("korthikanti2022_table5,held_out,8,"), std::string::npos);
}

// Writes `text` to a file of the test's temporary directory.
std::filesystem::path write_file(const std::string& name, const std::string& text) {
  // one directory per test: ctest runs the tests of this file in parallel
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = std::filesystem::temp_directory_path() / (std::string("perfsweep_cluster_runs_test_") + test->name());
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

std::string read_error(RunSet set, const std::filesystem::path& file) {
  try {
    read_cluster_runs(set, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The reader's error on a file of `text`, after the file's own path, which it must start with.
std::string row_error(RunSet set, const std::string& name, const std::string& text) {
  const std::string path = write_file(name, text).string();
  const std::string e = read_error(set, path);
  return e.starts_with(path) ? e.substr(path.size()) : "(no path) " + e;
}

const std::string kMegatronHeader =
    "source,params_b,heads,hidden,layers,seq_len,vocab,tp,pp,gpus,global_batch,micro_batch,interleave,recompute,"
    "sequence_parallel,measured_tflops_per_gpu,measured_iteration_s\n";

TEST(ClusterRuns, MalformedRowsNameFileLineAndColumn) {
  EXPECT_EQ(row_error(RunSet::Megatron, "bad_number.csv",
                      kMegatronHeader + "t1,1.7,24,2304,24,2048,51200,1,1,32,512,,1,full,no,137,\n"
                      "t1,3.6,32,3072,30,2048,51200,two,1,64,512,,1,full,no,138,\n"),
            ":3: column 'tp': expected a number, got 'two'");

  EXPECT_EQ(row_error(RunSet::Megatron, "fields.csv", kMegatronHeader + "t1,1.7,24,2304\n"),
            ":2: 4 fields, the header has 17");

  EXPECT_EQ(row_error(RunSet::Megatron, "missing.csv", "source,params_b\nx,1\n"),
            ": no column 'heads' in the header");

  EXPECT_EQ(row_error(RunSet::Megatron, "recompute.csv",
                      kMegatronHeader + "t1,1.7,24,2304,24,2048,51200,1,1,32,512,,1,some,no,137,\n"),
            ":2: column 'recompute': expected none, selective or full, got 'some'");

  EXPECT_EQ(row_error(RunSet::Megatron, "gpus.csv",
                      kMegatronHeader + "t1,1.7,24,2304,24,2048,51200,8,1,12,512,,1,full,no,137,\n"),
            ":2: column 'gpus': not a multiple of tp x pp = 8");

  EXPECT_EQ(row_error(RunSet::Megatron, "both.csv",
                      kMegatronHeader + "t1,1.7,24,2304,24,2048,51200,1,1,32,512,,1,full,no,137,1.5\n"),
            ":2: column 'measured_iteration_s': exactly one of measured_tflops_per_gpu and measured_iteration_s "
            "is needed");

  const std::string vtrain_header =
      "\xEF\xBB\xBFParameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
      "sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\r\n";
  EXPECT_EQ(row_error(RunSet::Vtrain, "vtrain.csv", vtrain_header + "3.6,64,512,8,3072,32,30,2048,1,32,1,3566.5\r\n"),
            ":2: column '# GPUs': is not tp x dp x pp = 32");
  EXPECT_EQ(row_error(RunSet::Vtrain, "vtime.csv", vtrain_header + "3.6,64,512,8,3072,32,30,2048,1,64,1,-3\r\n"),
            ":2: column 'iteration time (ms)': expected a positive number (at least 1e-12), got '-3'");
  // A denormal is no measured time: relative errors divide by it.
  EXPECT_EQ(row_error(RunSet::Vtrain, "vtime.csv", vtrain_header + "3.6,64,512,8,3072,32,30,2048,1,64,1,5e-324\r\n"),
            ":2: column 'iteration time (ms)': expected a positive number (at least 1e-12), got '5e-324'");
  // Degrees whose product overflows int64 are refused before they are multiplied.
  EXPECT_EQ(row_error(RunSet::Vtrain, "vgpus.csv",
                      vtrain_header + "3.6,64,512,8,3072,32,30,2048,1048576,1048576,1048576,3566.5\r\n"),
            ":2: column '# GPUs': tp x dp x pp exceeds 1073741824");

  // nanotron: columns found by name in any order; a successful run needs its throughput.
  const std::string nano_header =
      "status,job_id,name,nodes,seq_len,mbs,batch_accum,tok/s/gpu,Mem Alloc (GB),dp,pp,tp,tp_mode,hidden_size,"
      "num_layers,num_heads,num_kv_heads,vocab_size,tie_word_embeddings,zero_stage,accumulate_grad_in_fp32\n";
  EXPECT_EQ(row_error(RunSet::Nanotron, "nano.csv",
                      nano_header +
                          "Success,1,a,1.0,4096,1,4.0,,10.5,8,1,1,REDUCE_SCATTER,2048,16,32,32,131072,True,0,True\n"),
            ":2: column 'tok/s/gpu': missing value");
  EXPECT_EQ(row_error(RunSet::Nanotron, "mode.csv",
                      nano_header + "OOM,1,a,1.0,4096,1,4.0,,,8,1,1,SOMETIMES,2048,16,32,32,131072,True,0,True\n"),
            ":2: column 'tp_mode': expected REDUCE_SCATTER or ALL_REDUCE, got 'SOMETIMES'");
  EXPECT_EQ(row_error(RunSet::Nanotron, "hidden.csv",
                      nano_header + "OOM,1,a,1.0,4096,1,4.0,,,8,1,1,ALL_REDUCE,1000,16,32,32,131072,True,0,True\n"),
            ":2: column 'hidden_size': no known Llama MLP width for hidden size 1000");
  const auto ok = write_file(
      "ok.csv", nano_header + "OOM,7,a_gqa4,1.0,4096,1,4.0,,,8,1,1,ALL_REDUCE,2048,16,32,,131072,,1,\n");
  const auto runs = read_cluster_runs(RunSet::Nanotron, ok);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model.kv(), 4);
  EXPECT_FALSE(runs[0].layout.exec.sequence_parallel);
  EXPECT_TRUE(runs[0].model.tie_embeddings);
  EXPECT_EQ(runs[0].layout.exec.zero, 1);
  EXPECT_FALSE(runs[0].pipeline_before_fix);  // no after_pp_fix column: the engine as it is

  const std::string fix_header = nano_header.substr(0, nano_header.size() - 1) + ",after_pp_fix\n";
  EXPECT_EQ(row_error(RunSet::Nanotron, "fix.csv",
                      fix_header + "OOM,7,a,1.0,4096,1,4.0,,,4,2,1,ALL_REDUCE,2048,16,32,,131072,,1,,maybe\n"),
            ":2: column 'after_pp_fix': expected yes/no or true/false, got 'maybe'");

  EXPECT_EQ(read_error(RunSet::Vtrain, kData / "absent.csv"),
            (kData / "absent.csv").string() + ": cannot open the measurements file");
}

}  // namespace

// A run of tp x pp GPUs on `nodes` nodes of 8, for the framework overhead's arithmetic.
ClusterRun overhead_run(std::int64_t tp, std::int64_t pp, std::int64_t nodes, bool before_fix) {
  ClusterRun r;
  r.layout.tensor.tp1 = tp;
  r.layout.pp = pp;
  r.layout.dp = nodes * 8 / (tp * pp);
  r.nodes = nodes;
  r.pipeline_before_fix = before_fix;
  r.quantity = Quantity::IterationSeconds;
  return r;
}

TEST(ClusterRuns, FrameworkOverheadByHand) {
  System s;
  s.nvlink_size = 8;
  RunPrediction p;
  p.iteration_s = 0.05 * 10 + 0.2;
  p.slot_s = 0.05;  // 10 slots of 50 ms and 200 ms of exposed data-parallel communication
  p.slots = 10;
  p.outside_s = 0.2;
  p.stage_layers = 8;
  FrameworkOverhead o;
  EXPECT_DOUBLE_EQ(iteration_with_overhead(s, overhead_run(4, 2, 2, true), p, o), p.iteration_s);
  o.layer_s = 0.004;
  o.pipelined_layer_per_tp_s = 0.002;
  o.tp_domain_layer_s = 0.003;
  o.before_fix_slot_s = 0.5;
  // pp 1, one domain: 8 x 4 ms = 32 ms under the GPU's 50 ms: unchanged.
  EXPECT_DOUBLE_EQ(iteration_with_overhead(s, overhead_run(4, 1, 1, false), p, o), 0.7);
  // pp 2, tp 4: 8 x (4 + 4 x 2) ms = 96 ms per slot.
  EXPECT_NEAR(iteration_with_overhead(s, overhead_run(4, 2, 2, false), p, o), 0.096 * 10 + 0.2, 1e-12);
  // before the fix, on 2 nodes: 0.5 s more per slot; on one node none.
  EXPECT_NEAR(iteration_with_overhead(s, overhead_run(4, 2, 2, true), p, o), 0.596 * 10 + 0.2, 1e-12);
  EXPECT_NEAR(iteration_with_overhead(s, overhead_run(4, 2, 1, true), p, o), 0.096 * 10 + 0.2, 1e-12);
  // tp 16 spans two domains: 8 x (4 + 3) ms = 56 ms at pp 1.
  EXPECT_NEAR(iteration_with_overhead(s, overhead_run(16, 1, 2, false), p, o), 0.056 * 10 + 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(quantity_of_iteration(overhead_run(4, 1, 1, false), 1.25), 1.25);
}

TEST(ClusterRuns, FrameworkOverheadFitRecoversAFloor) {
  System s;
  s.nvlink_size = 8;
  // Runs of one domain without a pipeline whose GPU time per slot varies from 10 to 45 ms over
  // 8 blocks, measured with a host floor of 4.5 ms per block (36 ms per slot): the fit must find
  // that floor, and nothing for the terms no run exercises.
  std::vector<ClusterRun> runs;
  std::vector<RunPrediction> base;
  FrameworkOverhead truth;
  truth.layer_s = 4.5e-3;
  for (int k = 0; k < 15; ++k) {
    ClusterRun r = overhead_run(2, 1, 1, false);
    r.fit = k % 5 != 4;  // a run not marked fit is left out of the fit
    RunPrediction p;
    p.slot_s = 0.010 + 0.0025 * k;
    p.slots = 16;
    p.outside_s = 0.01;
    p.stage_layers = 8;
    p.iteration_s = p.slot_s * p.slots + p.outside_s;
    p.predicted = p.iteration_s;
    r.measured = k % 5 == 4 ? 1e3 : iteration_with_overhead(s, r, p, truth);
    runs.push_back(r);
    base.push_back(p);
  }
  const OverheadFit fit = fit_framework_overhead(s, runs, base);
  EXPECT_EQ(fit.runs, 12u);
  EXPECT_GT(fit.median_abs_before, 0.05);
  EXPECT_NEAR(fit.median_abs_after, 0, 1e-12);
  EXPECT_NEAR(fit.overhead.layer_s, 4.5e-3, 1e-12);
  EXPECT_EQ(fit.overhead.pipelined_layer_per_tp_s, 0);
  EXPECT_EQ(fit.overhead.tp_domain_layer_s, 0);
  EXPECT_EQ(fit.overhead.before_fix_slot_s, 0);
}

TEST(ClusterRuns, NetworkInterpolatesLogLog) {
  NetworkScaling net;
  net.nodes = {2, 8};
  net.allreduce_bus_GBps = {400, 100};
  EXPECT_DOUBLE_EQ(net.bus_GBps(1), 400);  // below the smallest: its value
  EXPECT_DOUBLE_EQ(net.bus_GBps(2), 400);
  EXPECT_NEAR(net.bus_GBps(4), 200, 1e-9);  // log-log between 2 and 8
  EXPECT_NEAR(net.bus_GBps(32), 25, 1e-9);  // the last slope carried on
  EXPECT_TRUE(std::isnan(NetworkScaling{}.bus_GBps(4)));
}

}  // namespace perfsweep::calib
