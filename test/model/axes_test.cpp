// model/axes.hpp: the axes' table, the keys and placements generated from it, and each strategy
// as a preset of axes.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "model/plan.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

// The reference's configuration keys (its npy outputs' "config" and placement fields, in its
// order) with the context-parallel keys after them.
TEST(Axes, LayoutKeysAreTheReferences) {
  EXPECT_EQ(config_key_names(Strategy::OneD, KeyKind::Degree), "dp,tp,pp,mbs,cp");
  EXPECT_EQ(config_key_names(Strategy::TwoD, KeyKind::Degree), "dp,tp,tp1,tp2,pp,mbs,nb");
  EXPECT_EQ(config_key_names(Strategy::TwoDSeqp, KeyKind::Degree), "dp,tp,tp1,tp2,pp,mbs");
  EXPECT_EQ(config_key_names(Strategy::OneD, KeyKind::Placement), "nv_tp,nv_dp,nv_pp,nv_cp");
  EXPECT_EQ(config_key_names(Strategy::TwoD, KeyKind::Placement), "nv_tp1,nv_tp2,nv_dp,nv_pp");
  EXPECT_EQ(config_key_names(Strategy::TwoDSeqp, KeyKind::Placement), "nv_tp1,nv_tp2,nv_dp,nv_pp");
}

// The tie-break tuple (top_n.cpp): the reference's (dp, tp1, tp2, pp, mbs, nb, nv_tp1, nv_tp2,
// nv_dp, nv_pp), the context-parallel keys after each part, then the execution options.
TEST(Axes, TieBreakOrder) {
  std::vector<std::string> got;
  for (const ConfigKey& k : kLayoutKeys) {
    if (k.orders_ties) got.emplace_back(k.name);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"dp", "tp1", "tp2", "pp", "mbs", "nb", "cp", "nv_tp1", "nv_tp2", "nv_dp",
                                           "nv_pp", "nv_cp"}));
}

// The placement a rank order makes, by hand. 1d, placed axes tp, cp, dp, pp (placed_axes).
// Llama 3 70B on 8-GPU nodes, TP 4 PP 8 DP 2, Megatron-Core's tp-cp-ep-dp-pp: a node holds the
// tensor group and both data-parallel replicas, every stage its own node (nv_pp 1). With the
// pipeline inside the replicas (tp-cp-ep-pp-dp) a node holds two stages instead. TP 2 CP 2 on
// 4-GPU domains: the context group fills the rest. TP 16 on 8: the tensor group spans two
// domains, nothing else shares one. TP 3 on 8: one tensor group and 2 of its replicas, 6 of the
// 8 GPUs. TP 2 CP 4 DP 64 on an NVL72 rack: 8 replicas, 64 of its 72 GPUs (MLPerf's segments).
TEST(Axes, RankOrderShares) {
  Layout c;
  c.tensor.tp1 = 4;
  c.pp = 8;
  c.dp = 2;
  const auto shares = [&](std::int64_t nvs) {
    const std::array<std::int64_t, kMaxPlacedAxes> s = rank_order_shares(c, nvs);
    return std::vector<std::int64_t>(s.begin(), s.begin() + placed_axes(c.strategy).count);
  };
  EXPECT_EQ(shares(8), (std::vector<std::int64_t>{4, 1, 2, 1}));
  c.exec.rank_order = RankOrder::PipelineInnerDataOuter;
  EXPECT_EQ(shares(8), (std::vector<std::int64_t>{4, 1, 1, 2}));
  c.exec.rank_order = RankOrder::DataInnerPipelineOuter;
  c.tensor.tp1 = 2;
  c.tensor.cp = 2;
  EXPECT_EQ(shares(4), (std::vector<std::int64_t>{2, 2, 1, 1}));
  c.tensor.cp = 1;
  c.tensor.tp1 = 16;
  EXPECT_EQ(shares(8), (std::vector<std::int64_t>{8, 1, 1, 1}));
  c.tensor.tp1 = 3;
  EXPECT_EQ(shares(8), (std::vector<std::int64_t>{3, 1, 2, 1}));
  c.tensor.tp1 = 2;
  c.tensor.cp = 4;
  c.dp = 64;
  c.pp = 1;
  EXPECT_EQ(shares(72), (std::vector<std::int64_t>{2, 4, 8, 1}));
}

// Each axis reads back the degree and share it writes, into its own field alone.
TEST(Axes, EveryAxisReadsBackWhatItSets) {
  for (const LayoutAxis& a : kAxes) {
    Layout c;
    if (a.set_degree != nullptr) {
      a.set_degree(c, 6);
      EXPECT_EQ(a.degree(c), 6) << a.name;
      EXPECT_EQ(c.n_gpus(), a.gpus ? 6 : 1) << a.name;
    }
    if (a.placed()) {
      Layout d;
      a.set_nv(d, 3);
      EXPECT_EQ(a.nv(d), 3) << a.name;
      EXPECT_EQ(d.tensor.nv1 * d.tensor.nv2 * d.tensor.nv_cp * d.nv_dp * d.nv_pp, 3) << a.name;
    }
  }
  Layout moe;
  moe.exec.ep = 4;
  moe.exec.interleave = 2;
  EXPECT_EQ(kAxes[axis_index("ep")].degree(moe), 4);
  EXPECT_EQ(kAxes[axis_index("vp")].degree(moe), 2);
}

std::vector<std::string> placed_names(Strategy s) {
  std::vector<std::string> out;
  const PlacedAxes& p = placed_axes(s);
  for (std::size_t i = 0; i < p.count; ++i) out.emplace_back(kAxes[p.axis[i]].name);
  return out;
}

// A strategy is a preset of axes: the ones it places on NVLink domains, in the reference's order
// (context parallelism in the second tensor degree's place).
TEST(Axes, StrategiesArePresets) {
  using N = std::vector<std::string>;
  EXPECT_EQ(placed_names(Strategy::OneD), (N{"tp", "cp", "dp", "pp"}));
  EXPECT_EQ(placed_names(Strategy::TwoD), (N{"tp1", "tp2", "dp", "pp"}));
  EXPECT_EQ(placed_names(Strategy::TwoDSeqp), (N{"tp1", "tp2", "dp", "pp"}));
  EXPECT_TRUE(has_axis(plan_of(Strategy::TwoD), axis_index("nb")));
  EXPECT_FALSE(has_axis(plan_of(Strategy::TwoDSeqp), axis_index("nb")));
  EXPECT_FALSE(has_axis(plan_of(Strategy::TwoD), axis_index("ep")));  // no SUMMA rule for MoE blocks
  EXPECT_EQ(axis_strategies(axis_index("tp1")), "2d or 2d-seqp");
  EXPECT_EQ(axis_strategies(axis_index("cp")), "1d");
  EXPECT_EQ(axis_strategies(axis_index("dp")), "every strategy");
}

std::string layout_error(const Layout& c) {
  System s;
  s.nvlink_size = 8;
  Transformer m;
  m.e = 1024;
  m.h = 16;
  m.f = 4096;
  m.l = 2048;
  m.depth = 4;
  try {
    validate_layout(s, m, c, 64);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// validate_layout's checks of degrees and shares come from the table: each names its axis as the
// strategy spells it.
TEST(Axes, ValidationNamesTheAxis) {
  Layout c;
  c.tensor.tp1 = 0;
  EXPECT_EQ(layout_error(c), "tp must be a positive integer, got 0");
  c.strategy = Strategy::TwoDSeqp;
  EXPECT_EQ(layout_error(c), "tp1 must be a positive integer, got 0");
  c = Layout{};
  c.tensor.cp = 2;
  c.tensor.nv_cp = 4;
  EXPECT_EQ(layout_error(c), "nv_cp=4 does not divide cp=2");
  c = Layout{};
  c.strategy = Strategy::TwoDSeqp;
  c.tensor.nv_cp = 2;  // an axis the strategy lacks stays at 1
  EXPECT_EQ(layout_error(c), "nv_cp=2 does not divide cp=1");
  c = Layout{};
  c.dp = 8;
  c.pp = 2;
  c.nv_dp = 8;
  c.nv_pp = 2;
  EXPECT_EQ(layout_error(c), "the NVLink placement uses 16 GPUs per domain, more than nvs=8");
}

}  // namespace
}  // namespace perfsweep
