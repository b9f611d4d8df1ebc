// Collective measurements, the calibrated model and its validation against nccl-tests on Perlmutter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "comm/calibration.hpp"
#include "comm/measurements.hpp"
#include "comm/validation.hpp"
#include "core/error.hpp"

namespace fs = std::filesystem;
using namespace perfsweep;
using namespace perfsweep::comm;

namespace {

const fs::path kData = PERFSWEEP_TEST_DATA_DIR;
const fs::path kPerlmutterCsv = kData / "nccl_tests_perlmutter.csv";
const fs::path kAllReduceOutput = kData / "nccl_tests" / "all_reduce_perf_2x4.txt";

// The reference's A100 (systems/config-A100.json): only the collective parameters matter here.
System a100() {
  System s;
  s.name = "A100";
  s.nvlink_bandwidth = 300;
  s.nvlink_eff = 0.7;
  s.nvlink_latency = 2.5e-6;
  s.ib_bandwidth = 25;
  s.ib_eff = 0.7;
  s.ib_latency = 5e-6;
  s.nvlink_size = 4;
  s.nic_factor = 1;
  return s;
}

// A scratch directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / (std::string("perfsweep_comm_") + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    std::ofstream(p) << text;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

std::vector<double> relative_errors(const std::vector<ValidationRow>& rows) {
  std::vector<double> e;
  for (const auto& r : rows) e.push_back(r.relative_error().value());
  return e;
}

const std::vector<std::int64_t> kFitNodes = {1, 2, 8, 32, 128};
const std::vector<std::int64_t> kHeldOutNodes = {4, 16, 64, 256};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reading measurements

TEST(CommMeasurements, ReadsPerlmutterCsv) {
  const auto rows = read_measurements_csv(kPerlmutterCsv);
  ASSERT_EQ(rows.size(), 1329u);
  // First data row: 32768,64,-1,770.9,0.04,0.04,0,747.4,0.04,0.04,0,128,1,allgather
  EXPECT_EQ(rows[0].op, CommType::AllGather);
  EXPECT_EQ(rows[0].num_nodes, 128);
  EXPECT_EQ(rows[0].gpus_per_node, 1);
  EXPECT_EQ(rows[0].size_bytes, 32768);
  EXPECT_DOUBLE_EQ(rows[0].time_oop_s, 770.9e-6);
  EXPECT_DOUBLE_EQ(rows[0].time_ip_s, 747.4e-6);
  EXPECT_DOUBLE_EQ(rows[0].measured_s(), 0.5 * (770.9e-6 + 747.4e-6));
  std::map<CommType, int> per_op;
  for (const auto& m : rows) ++per_op[m.op];
  EXPECT_EQ(per_op[CommType::AllGather], 437);
  EXPECT_EQ(per_op[CommType::AllReduce], 455);
  EXPECT_EQ(per_op[CommType::ReduceScatter], 437);
}

TEST(CommMeasurements, CsvErrorsNameFileAndLine) {
  TempDir dir;
  const std::string header = "size,time-o,time-i,num_nodes,gpus_per_node,op\n";
  const auto bad_time = dir.write("bad_time.csv", header + "1024,10.5,11.0,2,4,allreduce\n2048,abc,11.0,2,4,allreduce\n");
  EXPECT_NE(error_of([&] { read_measurements_csv(bad_time); }).find("bad_time.csv:3: time-o"), std::string::npos);
  const auto short_row = dir.write("short.csv", header + "1024,10.5,11.0,2\n");
  EXPECT_NE(error_of([&] { read_measurements_csv(short_row); }).find("short.csv:2: expected 6 columns"),
            std::string::npos);
  const auto bad_op = dir.write("op.csv", header + "1024,10.5,11.0,2,4,alltoall\n");
  EXPECT_NE(error_of([&] { read_measurements_csv(bad_op); }).find("op.csv:2: op must be"), std::string::npos);
  const auto no_column = dir.write("cols.csv", "size,time-o,num_nodes,gpus_per_node,op\n");
  EXPECT_NE(error_of([&] { read_measurements_csv(no_column); }).find("missing column 'time-i'"), std::string::npos);
}

TEST(CommMeasurements, ReadsNcclTestsOutput) {
  const auto rows = read_nccl_tests_output(kAllReduceOutput, 2, 4);
  ASSERT_EQ(rows.size(), 16u);  // the MPI help-message line in the table is skipped
  for (const auto& m : rows) {
    EXPECT_EQ(m.op, CommType::AllReduce);  // from "# Collective test starting: all_reduce_perf"
    EXPECT_EQ(m.num_nodes, 2);
    EXPECT_EQ(m.gpus_per_node, 4);
  }
  EXPECT_EQ(rows.front().size_bytes, 32768);
  EXPECT_DOUBLE_EQ(rows.front().time_oop_s, 52.07e-6);
  EXPECT_DOUBLE_EQ(rows.front().time_ip_s, 39.09e-6);
  EXPECT_EQ(rows.back().size_bytes, 1073741824);
  EXPECT_DOUBLE_EQ(rows.back().time_oop_s, 26293e-6);

  // The same runs as the CSV rows of allreduce on 2 nodes x 4 GPUs.
  std::map<double, double> csv;
  for (const auto& m : read_measurements_csv(kPerlmutterCsv)) {
    if (m.op == CommType::AllReduce && m.num_nodes == 2 && m.gpus_per_node == 4) csv[m.size_bytes] = m.measured_s();
  }
  for (const auto& m : rows) EXPECT_NEAR(m.measured_s(), csv.at(m.size_bytes), 1e-12) << m.size_bytes;
}

TEST(CommMeasurements, NcclTestsOperationFromNameOrArgument) {
  TempDir dir;
  // nccl-tests before 2.14 print no "Collective test starting" line and no redop/root columns.
  const std::string table =
      "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "        1024           256     float    20.51    0.05    0.05  0e+00    20.01    0.05    0.05  0e+00\n"
      "        2048           512     float    21.33    0.10    0.09  0e+00    21.02    0.10    0.09    N/A\n";
  const auto named = dir.write("slurm-all_gather_perf-4n.out", table);
  const auto rows = read_nccl_tests_output(named, 4, 1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].op, CommType::AllGather);
  EXPECT_DOUBLE_EQ(rows[1].time_ip_s, 21.02e-6);

  const auto anonymous = dir.write("run7.log", table);
  EXPECT_NE(error_of([&] { read_nccl_tests_output(anonymous, 4, 1); }).find("cannot tell the collective"),
            std::string::npos);
  EXPECT_EQ(read_nccl_tests_output(anonymous, 4, 1, CommType::ReduceScatter)[0].op, CommType::ReduceScatter);
  EXPECT_NE(error_of([&] { read_measurements(anonymous); }).find("needs the node and GPU-per-node counts"),
            std::string::npos);
}

TEST(CommMeasurements, NcclTestsMalformedLineHasLineNumber) {
  TempDir dir;
  std::string text = read_text(kAllReduceOutput);
  // Truncate the table row of 4 MiB (line 27 of the sample) after its out-of-place time.
  const std::string row = "     4194304       1048576     float     sum      -1  259.30";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos);
  const auto end = text.find('\n', at);
  text.replace(at, end - at, row);
  const auto truncated = dir.write("all_reduce_perf.txt", text);
  const std::string message = error_of([&] { read_nccl_tests_output(truncated, 2, 4); });
  EXPECT_NE(message.find("all_reduce_perf.txt:27:"), std::string::npos) << message;

  const auto bad_number = dir.write("all_reduce_perf_b.txt",
                                    "# Collective test starting: all_reduce_perf\n"
                                    "        1024           256     float     sum      -1    36.95    0.03    0.05"
                                    "       0    3x.17    0.03    0.06       0\n");
  EXPECT_NE(error_of([&] { read_nccl_tests_output(bad_number, 2, 4); }).find("all_reduce_perf_b.txt:2: in-place time"),
            std::string::npos);
}

TEST(CommMeasurements, ReadsManifest) {
  TempDir dir;
  fs::copy_file(kAllReduceOutput, dir.path() / "ar.txt");
  const auto manifest = dir.write("runs.yaml",
                                  "- {file: ar.txt, num_nodes: 2, gpus_per_node: 4}\n"
                                  "- {file: ar.txt, num_nodes: 3, gpus_per_node: 4, op: allreduce}\n");
  const auto rows = read_measurements(manifest);
  ASSERT_EQ(rows.size(), 32u);
  EXPECT_EQ(rows[16].num_nodes, 3);

  const auto unknown = dir.write("bad.yaml", "- {file: ar.txt, num_nodes: 2, gpus_per_nodes: 4}\n");
  EXPECT_NE(error_of([&] { read_manifest(unknown); }).find("entry 0: unknown key 'gpus_per_nodes'"),
            std::string::npos);
  const auto zero = dir.write("zero.yaml", "- {file: ar.txt, num_nodes: 0, gpus_per_node: 4}\n");
  EXPECT_NE(error_of([&] { read_manifest(zero); }).find("num_nodes must be a positive integer"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The fit

namespace {

// t = overhead + ring_steps * (latency + chunk / bandwidth) on every placement and node count.
struct AlphaBeta {
  double overhead_s = 20e-6;
  double latency_s = 6e-6;
  double bandwidth = 12e9;  // bytes/s per ring step

  double seconds(CommType op, std::int64_t n, double bytes) const {
    return overhead_s + ring_steps(op, n) * (latency_s + bytes / static_cast<double>(n) / bandwidth);
  }
};

std::vector<Measurement> synthetic(const AlphaBeta& truth, const std::vector<std::int64_t>& nodes) {
  std::vector<Measurement> rows;
  for (CommType op : {CommType::AllReduce, CommType::AllGather, CommType::ReduceScatter}) {
    for (std::int64_t g : {1, 4}) {
      for (std::int64_t n_nodes : nodes) {
        for (double bytes = 32768; bytes <= 8589934592.0; bytes *= 2) {
          const double t = truth.seconds(op, n_nodes * g, bytes);
          rows.push_back(Measurement{op, n_nodes, g, bytes, 1.01 * t, 0.99 * t});
        }
      }
    }
  }
  return rows;
}

}  // namespace

TEST(CommCalibration, RecoversSyntheticAlphaBeta) {
  const AlphaBeta truth;
  const Calibration cal = fit(synthetic(truth, {1, 2, 8, 32}));
  EXPECT_NEAR(cal.overhead_s, truth.overhead_s, 1e-9 * truth.overhead_s);
  ASSERT_EQ(cal.placements.size(), 6u);
  for (const auto& p : cal.placements) {
    SCOPED_TRACE(std::string(comm_type_name(p.op)) + " x " + std::to_string(p.gpus_per_node));
    EXPECT_NEAR(p.step_latency_s, truth.latency_s, 1e-8 * truth.latency_s);
    EXPECT_NEAR(p.step_bandwidth_GBps, truth.bandwidth / 1e9, 1e-8 * truth.bandwidth / 1e9);
    EXPECT_EQ(p.min_size_bytes, 32768);
    EXPECT_EQ(p.max_size_bytes, 8589934592.0);
  }
  // The model reproduces the measured points and, between measured node counts, the alpha-beta
  // law wherever the chunk lies inside both neighbours' tables.
  for (const auto& p : cal.placements) {
    for (std::int64_t nodes : {1, 2, 4, 8, 16, 32}) {
      const std::int64_t n = nodes * p.gpus_per_node;
      if (n < 2) continue;
      for (double bytes = 1 << 20; bytes <= 1 << 28; bytes *= 2) {
        const auto t = predict(cal, p.op, bytes, n, p.gpus_per_node);
        ASSERT_TRUE(t.has_value());
        EXPECT_NEAR(*t, truth.seconds(p.op, n, bytes), 1e-9 * *t) << nodes << " nodes, " << bytes << " bytes";
      }
    }
  }
  // Beyond the measured node counts a ring keeps its per-step cost (a tree is never slower here:
  // allreduce times grow faster than linearly in log(nodes) in the alpha-beta law).
  for (const auto& p : cal.placements) {
    const std::int64_t n = 128 * p.gpus_per_node;
    const auto t = predict(cal, p.op, 1 << 26, n, p.gpus_per_node);
    ASSERT_TRUE(t.has_value());
    if (p.op != CommType::AllReduce) {
      EXPECT_NEAR(*t, truth.seconds(p.op, n, 1 << 26), 1e-9 * *t);
    }
    EXPECT_LE(*t, truth.seconds(p.op, n, 1 << 26) * (1 + 1e-9));
  }
}

TEST(CommCalibration, RejectsUnusableMeasurements) {
  std::vector<Measurement> one_size = {{CommType::AllGather, 2, 4, 1024, 1e-5, 1e-5}};
  EXPECT_NE(error_of([&] { fit(one_size); }).find("need at least two message sizes"), std::string::npos);
  std::vector<Measurement> broadcast = {{CommType::Broadcast, 2, 4, 1024, 1e-5, 1e-5}};
  EXPECT_NE(error_of([&] { fit(broadcast); }).find("cannot calibrate broadcast"), std::string::npos);
  EXPECT_THROW(fit({}), InputError);
}

TEST(CommCalibration, PredictOutsideRangeIsNullopt) {
  const Calibration cal = fit(read_measurements_csv(kPerlmutterCsv));
  ASSERT_NE(cal.find(CommType::AllReduce, 4), nullptr);
  const double mib = 1 << 20;
  EXPECT_TRUE(predict(cal, CommType::AllReduce, 64 * mib, 64, 4).has_value());
  EXPECT_FALSE(predict(cal, CommType::Reduce, 64 * mib, 64, 4).has_value());      // collective not calibrated
  EXPECT_FALSE(predict(cal, CommType::Broadcast, 64 * mib, 64, 4).has_value());
  EXPECT_FALSE(predict(cal, CommType::AllReduce, 64 * mib, 64, 8).has_value());   // placement not measured
  EXPECT_FALSE(predict(cal, CommType::AllReduce, 64 * mib, 66, 4).has_value());   // not whole nodes
  EXPECT_TRUE(predict(cal, CommType::AllReduce, 64 * mib, 4 * 128 * 4, 4).has_value());   // 4 x 128 nodes
  EXPECT_FALSE(predict(cal, CommType::AllReduce, 64 * mib, 4 * 1024, 4).has_value());     // 1024 nodes
  EXPECT_TRUE(predict(cal, CommType::AllReduce, 2048, 64, 4).has_value());                // 32 KiB / 16
  EXPECT_FALSE(predict(cal, CommType::AllReduce, 1024, 64, 4).has_value());
  EXPECT_TRUE(predict(cal, CommType::AllReduce, 128.0 * 1024 * mib, 64, 4).has_value());  // 8 GiB x 16
  EXPECT_FALSE(predict(cal, CommType::AllReduce, 256.0 * 1024 * mib, 64, 4).has_value());
  EXPECT_FALSE(predict(cal, CommType::AllGather, 64 * mib, 1, 1).value_or(-1) != 0);      // one GPU: free
  EXPECT_EQ(predict(cal, CommType::AllGather, 0, 64, 4).value_or(-1), 0);
  EXPECT_FALSE(predict(cal, CommType::AllGather, -1, 64, 4).has_value());
  EXPECT_FALSE(predict(cal, CommType::AllGather, std::nan(""), 64, 4).has_value());
  // g = 1 was measured from 2 nodes on: a single-node pair of GPUs with fast domain 1 is a
  // 2-node placement; 1 node x 1 GPU is no collective at all.
  EXPECT_TRUE(predict(cal, CommType::AllGather, 64 * mib, 2, 1).has_value());
}

TEST(CommCalibration, YamlRoundTrip) {
  TempDir dir;
  Calibration cal = fit(select_nodes(read_measurements_csv(kPerlmutterCsv), kFitNodes));
  cal.source = "nccl_tests_perlmutter.csv: nodes 1,2,8,32,128";
  const fs::path file = dir.path() / "perlmutter.yaml";
  save_calibration(cal, file);
  EXPECT_FALSE(fs::exists(dir.path() / "perlmutter.yaml.tmp"));
  const Calibration back = load_calibration(file);
  EXPECT_EQ(back.source, cal.source);
  EXPECT_EQ(back.overhead_s, cal.overhead_s);
  EXPECT_EQ(back.node_extrapolation, cal.node_extrapolation);
  EXPECT_EQ(back.size_extrapolation, cal.size_extrapolation);
  ASSERT_EQ(back.placements.size(), cal.placements.size());
  for (std::size_t i = 0; i < cal.placements.size(); ++i) {
    const auto& a = cal.placements[i];
    const auto& b = back.placements[i];
    EXPECT_EQ(a.op, b.op);
    EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
    EXPECT_EQ(a.min_size_bytes, b.min_size_bytes);
    EXPECT_EQ(a.max_size_bytes, b.max_size_bytes);
    EXPECT_EQ(a.step_latency_s, b.step_latency_s);
    EXPECT_EQ(a.step_bandwidth_GBps, b.step_bandwidth_GBps);
    ASSERT_EQ(a.tables.size(), b.tables.size());
    for (std::size_t k = 0; k < a.tables.size(); ++k) {
      EXPECT_EQ(a.tables[k].num_nodes, b.tables[k].num_nodes);
      EXPECT_EQ(a.tables[k].overhead_s, b.tables[k].overhead_s);
      EXPECT_EQ(a.tables[k].chunk_bytes, b.tables[k].chunk_bytes);
      EXPECT_EQ(a.tables[k].step_s, b.tables[k].step_s);
    }
  }
  // Load errors name the file, the entry and the key.
  const std::string text = read_text(file);
  const auto broken = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return dir.write("broken.yaml", t);
  };
  EXPECT_NE(error_of([&] { load_calibration(broken("overhead_s:", "overhead:")); })
                .find("broken.yaml: unknown key 'overhead'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_calibration(broken("op: allreduce", "op: alltoall")); })
                .find("collectives[0]: op must be"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_calibration(broken("num_nodes: 8", "num_nodes: 1")); })
                .find("num_nodes must be strictly ascending"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_calibration(broken("version: 1", "version: 2")); }).find("version must be 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_calibration(dir.path() / "missing.yaml"); }).find("missing.yaml: no such file"),
            std::string::npos);
}

TEST(CommCalibration, CollectiveTimeFallsBackToAnalytical) {
  const System sys = a100();
  const Calibration cal = fit(read_measurements_csv(kPerlmutterCsv));
  const auto calibrated = collective_time(sys, &cal, CommType::AllReduce, 0.5, 64, 4);
  EXPECT_EQ(calibrated.model, CommModel::Calibrated);
  EXPECT_EQ(calibrated.seconds, predict(cal, CommType::AllReduce, 0.5e9, 64, 4).value());
  const auto outside = collective_time(sys, &cal, CommType::Reduce, 0.5, 64, 4);
  EXPECT_EQ(outside.model, CommModel::Analytical);
  EXPECT_EQ(outside.seconds, collective_seconds(sys, CommType::Reduce, 0.5, 64, 4));
  const auto without = collective_time(sys, nullptr, CommType::AllReduce, 0.5, 64, 4);
  EXPECT_EQ(without.model, CommModel::Analytical);
  EXPECT_EQ(without.seconds, collective_seconds(sys, CommType::AllReduce, 0.5, 64, 4));
  EXPECT_EQ(comm_model_name(CommModel::Calibrated), "calibrated");
}

// ---------------------------------------------------------------------------------------------
// Accuracy on Perlmutter

TEST(CommValidation, AnalyticalModelMatchesReferenceComparison) {
  // The reference's comm_validation: size is the collective's `vol`, A100 parameters.
  const System sys = a100();
  const auto rows = validate(read_measurements_csv(kPerlmutterCsv), &sys, nullptr);
  const ErrorStats all = error_stats(relative_errors(rows));
  EXPECT_EQ(all.count, 1329u);
  EXPECT_NEAR(all.median, 0.291, 0.0015);
  EXPECT_NEAR(all.p90, 0.718, 0.0015);
  std::vector<double> allreduce;
  for (const auto& r : rows) {
    EXPECT_EQ(r.model, "analytical");
    if (r.measurement.op == CommType::AllReduce) allreduce.push_back(r.relative_error().value());
  }
  EXPECT_NEAR(error_stats(allreduce).median, 0.487, 0.0015);
}

namespace {

// Baseline: per (op, placement, size), log time interpolated linearly in log node count between
// the fitted node counts (end segments extended).
double loglog_baseline(const std::vector<Measurement>& fit_rows, const Measurement& m) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& f : fit_rows) {
    if (f.op == m.op && f.gpus_per_node == m.gpus_per_node && f.size_bytes == m.size_bytes) {
      pts.emplace_back(std::log(static_cast<double>(f.num_nodes)), std::log(f.measured_s()));
    }
  }
  std::sort(pts.begin(), pts.end());
  const double x = std::log(static_cast<double>(m.num_nodes));
  std::size_t hi = 1;
  while (hi + 1 < pts.size() && pts[hi].first < x) ++hi;
  const auto& [x0, y0] = pts[hi - 1];
  const auto& [x1, y1] = pts[hi];
  return std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

}  // namespace

TEST(CommValidation, HeldOutNodeCountsAccuracy) {
  const auto all = read_measurements_csv(kPerlmutterCsv);
  const auto fit_rows = select_nodes(all, kFitNodes);
  const auto held_out = select_nodes(all, kHeldOutNodes);
  ASSERT_EQ(held_out.size(), 531u);
  const Calibration cal = fit(fit_rows);
  const auto rows = validate(held_out, nullptr, &cal);
  for (const auto& r : rows) ASSERT_EQ(r.model, "calibrated");
  const ErrorStats calibrated = error_stats(relative_errors(rows));
  std::printf("calibrated model, held-out rows: median %.2f%%, p90 %.2f%%\n", 100 * calibrated.median,
              100 * calibrated.p90);
  EXPECT_LT(calibrated.median, 0.05);
  EXPECT_LT(calibrated.p90, 0.15);

  std::vector<double> baseline_errors;
  for (const auto& m : held_out) baseline_errors.push_back(std::abs(loglog_baseline(fit_rows, m) / m.measured_s() - 1));
  const ErrorStats baseline = error_stats(baseline_errors);
  std::printf("log-log interpolation baseline, held-out rows: median %.2f%%, p90 %.2f%%\n", 100 * baseline.median,
              100 * baseline.p90);
  EXPECT_LT(calibrated.median, baseline.median);
  EXPECT_LT(calibrated.p90, baseline.p90);
}

TEST(CommValidation, SummaryAndCsv) {
  const Calibration cal = fit(select_nodes(read_measurements_csv(kPerlmutterCsv), kFitNodes));
  const auto rows = validate(read_nccl_tests_output(kAllReduceOutput, 2, 4), nullptr, &cal);
  const std::string csv = validation_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "op,num_nodes,gpus_per_node,size_bytes,measured_s,predicted_s,rel_error,model");
  EXPECT_NE(csv.find("\nallreduce,2,4,32768,4.558e-05,"), std::string::npos);
  const std::string summary = validation_summary(rows);
  EXPECT_NE(summary.find("by message size:"), std::string::npos);
  EXPECT_NE(summary.find("64MiB-1GiB"), std::string::npos);
  EXPECT_EQ(size_band(1 << 20), "1MiB-64MiB");

  const auto none = validate(read_nccl_tests_output(kAllReduceOutput, 2, 8), nullptr, &cal);  // 8 GPU/node: not fitted
  EXPECT_EQ(none.front().model, "none");
  EXPECT_NE(validation_summary(none).find("16 rows without a prediction"), std::string::npos);
}
