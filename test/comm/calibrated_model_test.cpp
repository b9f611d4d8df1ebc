// The cost model with a calibrated system (systems/A100-calibrated.yaml: systems/A100.yaml plus the
// Perlmutter calibration): compute, memory and capacity are those of the analytical system; the
// collectives the calibration covers take its times, the others keep the analytical ones exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <tuple>

#include "config/inputs.hpp"
#include "core/error.hpp"
#include "model/comm_calibration.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kSystems = std::filesystem::path(PERFSWEEP_SOURCE_DIR) / "systems";

struct Case {
  const char* name;
  Layout layout;
  std::int64_t nvs;
  std::int64_t global_batch;
  bool tp_calibrated;  // the tensor-parallel collectives fall in the calibrated range
  bool dp_calibrated;  // the data-parallel ones do
};

Layout one_d(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t nv_tp, std::int64_t nv_dp) {
  Layout l;
  l.strategy = Strategy::OneD;
  l.dp = dp;
  l.pp = pp;
  l.mbs = 1;
  l.tensor.tp1 = tp;
  l.tensor.nv1 = nv_tp;
  l.nv_dp = nv_dp;
  return l;
}

Layout seqp(std::int64_t dp, std::int64_t tp1, std::int64_t tp2, std::int64_t pp, std::int64_t nv_tp1) {
  Layout l;
  l.strategy = Strategy::TwoDSeqp;
  l.dp = dp;
  l.pp = pp;
  l.mbs = 1;
  l.tensor.tp1 = tp1;
  l.tensor.tp2 = tp2;
  l.tensor.nv1 = nv_tp1;
  return l;
}

int calibrated(const LayerResult& r) { return r.calibrated_fwd + r.calibrated_bwd; }

// The one collective of a serial pass, timed by the calibration directly.
double predicted(const System& s, const CommSet& set) {
  const Collective& c = set.items[0];
  return comm::predict(*s.calibration, c.type, c.volume_gb * 1e9, c.group, c.fast_domain).value();
}

TEST(CalibratedModel, DiffersFromTheAnalyticalOnlyThroughCoveredCollectives) {
  const System analytical_base = load_system(kSystems / "A100.yaml");
  const System calibrated_base = load_system(kSystems / "A100-calibrated.yaml");
  ASSERT_NE(calibrated_base.calibration, nullptr);
  ASSERT_EQ(analytical_base.calibration, nullptr);
  const Transformer gpt3 = load_model_named("gpt3");

  const Case cases[] = {
      // TP inside one 4-GPU node, DP across 16 nodes at one GPU each: both measured placements.
      {"1d tp4 in node, dp16 across nodes", one_d(16, 4, 4, 4, 1), 4, 512, true, true},
      // TP over 2 nodes x 4 GPUs; DP 8 nodes x 1 GPU.
      {"1d tp8 over two nodes", one_d(8, 8, 4, 4, 1), 4, 512, true, true},
      // Context parallelism: tp1 inside the node, tp2 and DP across nodes.
      {"2d-seqp 4x4", seqp(4, 4, 4, 4, 4), 4, 512, true, true},
      // An 8-GPU NVLink domain was never measured: TP stays analytical, DP (1 GPU/node) does not.
      {"1d tp8 in an 8-GPU domain", one_d(8, 8, 4, 8, 1), 8, 512, false, true},
      // DP over 1024 nodes: past 4x the largest measured allgather (128 nodes); no TP.
      {"1d dp1024 beyond the measured nodes", one_d(1024, 1, 1, 1, 1), 4, 2048, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    System analytical = analytical_base, with_calibration = calibrated_base;
    analytical.nvlink_size = with_calibration.nvlink_size = c.nvs;
    const Evaluation a = evaluate(analytical, gpt3, c.layout, c.global_batch);
    const Evaluation b = evaluate(with_calibration, gpt3, c.layout, c.global_batch);

    // Compute, memory traffic and capacity do not depend on the collective model.
    for (double Totals::*field : {&Totals::t_comp, &Totals::t_mem, &Totals::mem, &Totals::flops_per_gpu,
                                  &Totals::wts_mem, &Totals::wts_grad_mem, &Totals::wts_optimizer_states_mem,
                                  &Totals::acts_mem}) {
      EXPECT_EQ(a.totals.*field, b.totals.*field);
    }
    EXPECT_EQ(a.fits, b.fits);
    // P2P transfers between stages are never calibrated.
    EXPECT_EQ(a.totals.t_pp_comm, b.totals.t_pp_comm);
    EXPECT_EQ(calibrated(b.pp_row), 0);

    int tp_calibrated = 0;
    for (const auto& [ma, mb] : {std::pair{&a.mlp, &b.mlp}, {&a.sa, &b.sa}}) {
      ASSERT_EQ(ma->count, mb->count);
      for (int i = 0; i < ma->count; ++i) {
        const LayerResult& ra = ma->layers[static_cast<std::size_t>(i)];
        const LayerResult& rb = mb->layers[static_cast<std::size_t>(i)];
        SCOPED_TRACE(rb.cost.name);
        EXPECT_EQ(calibrated(ra), 0);
        for (const auto& [pa, pb, n_calibrated] :
             {std::tuple{&ra.fwd, &rb.fwd, rb.calibrated_fwd}, {&ra.bwd, &rb.bwd, rb.calibrated_bwd}}) {
          EXPECT_EQ(pa->comp, pb->comp);
          EXPECT_EQ(pa->mem, pb->mem);
          EXPECT_EQ(pa->intensity, pb->intensity);
          if (n_calibrated == 0) {
            EXPECT_EQ(pa->comm, pb->comm);
          }
        }
        if (calibrated(rb) == 0) {
          EXPECT_EQ(ra.t, rb.t);
          continue;
        }
        tp_calibrated += calibrated(rb);
        EXPECT_NE(ra.fwd.comm + ra.bwd.comm, rb.fwd.comm + rb.bwd.comm);
        // A serial pass with a single calibrated collective exposes exactly its calibrated time.
        for (const auto& [pass, set, n_calibrated] : {std::tuple{&rb.fwd, &rb.cost.comm_fwd, rb.calibrated_fwd},
                                                      {&rb.bwd, &rb.cost.comm_bwd, rb.calibrated_bwd}}) {
          if (rb.cost.overlap == Overlap::Serial && set->count == 1 && n_calibrated == 1) {
            EXPECT_EQ(pass->comm, predicted(with_calibration, *set));
          }
        }
      }
    }
    EXPECT_EQ(tp_calibrated > 0, c.tp_calibrated);
    if (c.tp_calibrated) {
      EXPECT_NE(a.totals.t_tp_comm, b.totals.t_tp_comm);
    } else {
      EXPECT_EQ(a.totals.t_tp_comm, b.totals.t_tp_comm);
    }

    EXPECT_EQ(calibrated(b.dp_row) == 2, c.dp_calibrated);
    if (c.dp_calibrated) {
      EXPECT_NE(a.totals.t_dp_comm, b.totals.t_dp_comm);
    } else {
      EXPECT_EQ(a.totals.t_dp_comm, b.totals.t_dp_comm);
    }
    if (!c.tp_calibrated && !c.dp_calibrated) {
      // Nothing in range: the calibrated system is the analytical one, bit for bit.
      EXPECT_EQ(a.totals.t, b.totals.t);
      EXPECT_EQ(a.throughput, b.throughput);
    }
  }
}

TEST(CalibratedModel, CollectivesOutsideTheCalibrationUseTheAnalyticalModelAndItsChecks) {
  System s = load_system(kSystems / "A100-calibrated.yaml");
  const comm::Calibration& cal = *s.calibration;
  // Measured: allreduce on 16 nodes x 4 GPUs.
  const CollectiveTime in_range = collective_time(s, CommType::AllReduce, 0.5, 64, 4);
  EXPECT_EQ(in_range.model, CommModel::Calibrated);
  EXPECT_EQ(in_range.seconds, comm::predict(cal, CommType::AllReduce, 0.5e9, 64, 4).value());
  EXPECT_EQ(collective_seconds(s, CommType::AllReduce, 0.5, 64, 4), in_range.seconds);
  // Not measured: broadcast, p2p, 8 GPUs per domain, 4096 nodes, 1 TB, nothing to move.
  struct Outside {
    CommType type;
    double volume_gb;
    std::int64_t n_gpus, fast_domain, nvs;
  };
  for (const Outside& o : {Outside{CommType::Broadcast, 0.5, 64, 4, 4}, Outside{CommType::P2P, 0.5, 2, 1, 4},
                           Outside{CommType::AllReduce, 0.5, 64, 8, 8}, Outside{CommType::AllGather, 0.5, 4096, 1, 4},
                           Outside{CommType::AllGather, 1000.0, 64, 4, 4}, Outside{CommType::AllReduce, 0.0, 64, 4, 4},
                           Outside{CommType::AllReduce, 0.5, 1, 1, 4}}) {
    s.nvlink_size = o.nvs;
    const CollectiveTime t = collective_time(s, o.type, o.volume_gb, o.n_gpus, o.fast_domain);
    EXPECT_EQ(t.model, CommModel::Analytical) << comm_type_name(o.type) << " " << o.n_gpus << "/" << o.fast_domain;
    EXPECT_EQ(t.seconds, analytical_collective_seconds(s, o.type, o.volume_gb, o.n_gpus, o.fast_domain));
  }
  // A fast domain larger than the NVLink domain is an error with or without a calibration.
  s.nvlink_size = 2;
  EXPECT_THROW(collective_time(s, CommType::AllReduce, 0.5, 64, 4), ConfigError);
}

}  // namespace
}  // namespace perfsweep
