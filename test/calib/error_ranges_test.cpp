#include "calib/error_ranges.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.hpp"

namespace perfsweep {
namespace {

Residual row(std::string set, std::string source, std::string system, std::string precision, std::int64_t gpus,
             double error, int id, std::string model = "dense") {
  std::string name = "r";
  name += std::to_string(id);
  return {std::move(set), std::move(name), std::move(source), std::move(system), std::move(precision), gpus,
          error, std::move(model)};
}

// numpy.quantile's default (linear between order statistics), worked by hand: for 1..5 the 10th
// percentile sits 0.4 of the way from the first to the second value, the 90th 0.6 from the 4th.
TEST(ErrorRanges, QuantileInterpolatesBetweenOrderStatistics) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(quantile(v, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(quantile(v, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(quantile(v, 0.5), 3);
  const std::vector<double> one = {0.25};
  EXPECT_DOUBLE_EQ(quantile(one, 0.9), 0.25);
}

// Ten H100 fp8 rows at 64..32,768 GPUs (a factor 2 apart) and errors -0.10..+0.08: a query at
// 1,024 GPUs finds seven rows within a factor 8 (128..8,192), fewer than 8, so the 8 nearest are
// drawn: those seven and one of 64 and 16,384 (both 16x away; the tie goes by id, r0 before r8).
TEST(ErrorRanges, NearestRowsOfTheSameSystemAndPrecision) {
  std::vector<Residual> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(row("mlperf", "mlperf v4.0", "H100-calibrated", "fp8", 64 << i, -0.10 + 0.02 * i, i));
  rows.push_back(row("other", "other", "B200-calibrated", "fp8", 1024, 0.5, 99));  // another system: not drawn
  const std::optional<ErrorRange> r = expected_error(rows, {"H100-calibrated", "fp8", 1024});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->tier, RangeTier::SystemAndPrecision);
  EXPECT_EQ(r->rows, 8u);
  EXPECT_EQ(r->gpus_lo, 64);
  EXPECT_EQ(r->gpus_hi, 8192);
  // drawn: r0..r7, errors -0.10..+0.04 by 0.02; p10 at 0.7 between -0.10 and -0.08, p90 at 6.3
  EXPECT_NEAR(r->p10, -0.086, 1e-12);
  EXPECT_NEAR(r->p90, 0.026, 1e-12);
  EXPECT_EQ(describe(*r, {"H100-calibrated", "fp8", 1024}),
            "-9% / +3% (an 80% range, from 8 H100-calibrated fp8 runs at 64-8K GPUs: mlperf)");
  // widened x2 about the median (-0.03): -0.03 - 2 x 0.056, -0.03 + 2 x 0.056
  const std::optional<ErrorRange> wide = expected_error(rows, {"H100-calibrated", "fp8", 1024}, 2);
  ASSERT_TRUE(wide.has_value());
  EXPECT_NEAR(wide->p10, -0.142, 1e-12);
  EXPECT_NEAR(wide->p90, 0.082, 1e-12);
}

// Five fp8 rows of the system are too few: the system's rows of any precision (5 + 5) are drawn.
TEST(ErrorRanges, FallsBackToTheSystemThenThePrecision) {
  std::vector<Residual> rows;
  for (int i = 0; i < 5; ++i) rows.push_back(row("a", "a", "H100-calibrated", "fp8", 512, 0.01 * i, i));
  for (int i = 0; i < 5; ++i) rows.push_back(row("b", "b", "H100-calibrated", "bf16", 512, -0.01 * i, 10 + i));
  std::optional<ErrorRange> r = expected_error(rows, {"H100-calibrated", "fp8", 512});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->tier, RangeTier::System);
  EXPECT_EQ(r->rows, 10u);
  EXPECT_EQ(r->sets, (std::vector<std::string>{"a", "b"}));
  // a system with no rows: the 5 fp8 rows are too few, so every row is drawn
  r = expected_error(rows, {"my-gpu", "fp8", 512});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->tier, RangeTier::Any);
  EXPECT_EQ(r->rows, 10u);
  EXPECT_FALSE(expected_error(std::span<const Residual>(rows).first(7), {"my-gpu", "fp8", 512}).has_value());
}

// Each source held out in turn: two sources of ten rows with errors 0..0.09, drawn from each other,
// cover their own rows 0.009..0.081: 0.01..0.08 inside (8), 0 below, 0.09 above.
// Eight MoE rows (errors +0.20..+0.48) beside ten dense rows of the same system and precision
// (-0.10..+0.08): an MoE query draws the MoE rows alone, so its median is their +0.34, and says so;
// a dense query the dense rows alone. With seven MoE rows, fewer than 8, an MoE query draws from
// every row as before.
TEST(ErrorRanges, MoeRowsAreDrawnApart) {
  std::vector<Residual> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(row("dense", "dense", "H100-calibrated", "fp8", 1024, -0.10 + 0.02 * i, i));
  for (int i = 0; i < 8; ++i) rows.push_back(row("moe", "moe", "H100-calibrated", "fp8", 1024, 0.20 + 0.04 * i, 20 + i, "moe"));
  const std::optional<ErrorRange> moe = expected_error(rows, {"H100-calibrated", "fp8", 1024, "moe"});
  ASSERT_TRUE(moe.has_value());
  EXPECT_TRUE(moe->same_model);
  EXPECT_EQ(moe->rows, 8u);
  EXPECT_EQ(moe->sets, std::vector<std::string>{"moe"});
  // the 10th percentile of 0.20..0.48 (step 0.04): 0.7 of the way from 0.20 to 0.24
  EXPECT_NEAR(moe->p10, 0.228, 1e-12);
  EXPECT_NEAR(moe->p90, 0.452, 1e-12);
  EXPECT_NE(describe(*moe, {"H100-calibrated", "fp8", 1024, "moe"}).find("from 8 MoE H100-calibrated fp8 runs"),
            std::string::npos);
  const std::optional<ErrorRange> dense = expected_error(rows, {"H100-calibrated", "fp8", 1024});
  ASSERT_TRUE(dense.has_value());
  EXPECT_EQ(dense->rows, 10u);
  EXPECT_EQ(dense->sets, std::vector<std::string>{"dense"});
  rows.pop_back();
  const std::optional<ErrorRange> few = expected_error(rows, {"H100-calibrated", "fp8", 1024, "moe"});
  ASSERT_TRUE(few.has_value());
  EXPECT_FALSE(few->same_model);
  EXPECT_EQ(few->rows, 17u);
}

TEST(ErrorRanges, CoverageHoldsEachSourceOut) {
  std::vector<Residual> rows;
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < 10; ++i) rows.push_back(row("set", s == 0 ? "set v1" : "set v2", "X", "bf16", 8, 0.01 * i, 10 * s + i));
  }
  const RangeCoverage c = held_out_coverage(rows);
  EXPECT_EQ(c.rows, 20u);
  EXPECT_EQ(c.inside, 16u);
  EXPECT_EQ(c.below, 2u);
  EXPECT_EQ(c.above, 2u);
  EXPECT_EQ(c.without, 0u);
}

class ResidualFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const std::string path = ::testing::TempDir() + "residuals_" + std::to_string(::getpid()) + ".csv";
    std::ofstream(path) << text;
    return path;
  }
  std::string refusal(const std::string& text) {
    try {
      read_residuals(write(text));
    } catch (const InputError& e) {
      return e.what();
    }
    return "read";
  }
};

TEST_F(ResidualFile, RoundTrip) {
  const std::vector<Residual> rows = {row("mlperf", "mlperf v4.1", "H100-calibrated", "fp8", 11616, -0.123456789012345, 1),
                                      row("vtrain", "vtrain", "vtrain_a100", "bf16", 512, 0.1, 2, "moe")};
  const std::vector<Residual> back = read_residuals(write(residuals_csv(rows)));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].source, "mlperf v4.1");
  EXPECT_EQ(back[0].gpus, 11616);
  EXPECT_EQ(back[0].error, rows[0].error);  // bit for bit
  EXPECT_EQ(back[1].system, "vtrain_a100");
  EXPECT_EQ(back[0].model, "dense");
  EXPECT_EQ(back[1].model, "moe");
}

TEST_F(ResidualFile, RefusesWhatIsNotAResidual) {
  const std::string header = "set,id,source,system,precision,gpus,error,model\n";
  EXPECT_NE(refusal("set,id\n").find(":1: header 'set,id', expected set,id,source,system,precision,gpus,error,model"),
            std::string::npos);
  EXPECT_NE(refusal(header + "a,b,c,d,fp8,0.5,0.1,dense\n").find(":2: field gpus must be a whole count of GPUs, got '0.5'"),
            std::string::npos);
  EXPECT_NE(refusal(header + "a,b,c,d,fp8,8,nan,dense\n").find(":2: field error must be a signed fraction"),
            std::string::npos);
  EXPECT_NE(refusal(header + "a,b,c,d,fp8,8,42,dense\n").find("got '42'"), std::string::npos);
  EXPECT_NE(refusal(header + "a,,c,d,fp8,8,0.1,dense\n").find(":2: field id is empty"), std::string::npos);
  EXPECT_NE(refusal(header + "a,b,c,d,fp8,8,0.1\n").find(":2: expected 8 fields, got 7"), std::string::npos);
  EXPECT_NE(refusal(header + "a,b,c,d,fp8,8,0.1,mixed\n").find(":2: field model must be dense or moe, got 'mixed'"),
            std::string::npos);
  EXPECT_NE(refusal(header).find("no rows"), std::string::npos);
}

}  // namespace
}  // namespace perfsweep
