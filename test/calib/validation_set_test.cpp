// The validation sets' reader (set.yaml, runs.csv), the rows' flags as estimate gets them, and the
// summary and targets on predictions given by hand (test/data/validation_sets/tiny: five made-up
// runs; every expected figure below is worked from the numbers in this file).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "calib/set_validation.hpp"
#include "calib/validation_set.hpp"
#include "core/error.hpp"

namespace perfsweep::calib {
namespace {

const std::filesystem::path kTiny = PERFSWEEP_TEST_DATA_DIR "/validation_sets/tiny";

TEST(ValidationSet, ReadsTheFolder) {
  const ValidationSet set = read_validation_set(kTiny);
  EXPECT_EQ(set.name, "tiny");
  ASSERT_EQ(set.rows.size(), 5u);
  ASSERT_EQ(set.variants.size(), 2u);
  const Variant& own = set.variants[0];
  EXPECT_EQ(own.name, "default");
  EXPECT_EQ(own.quantity, SetQuantity::StepSeconds);
  ASSERT_EQ(own.measured.size(), 5u);
  EXPECT_EQ(own.measured[0], 1.0);
  EXPECT_EQ(own.measured[2], 4.0);
  EXPECT_TRUE(std::isnan(own.measured[3]));  // ran out of memory: no step
  EXPECT_TRUE(std::isnan(own.measured[4]));  // not expressed
  EXPECT_TRUE(set.rows[0].fit);
  EXPECT_FALSE(set.rows[1].fit);
  EXPECT_EQ(set.rows[3].outcome, Outcome::OutOfMemory);
  EXPECT_EQ(set.rows[4].outcome, Outcome::Trained);
  EXPECT_TRUE(set.rows[4].args.empty());
  EXPECT_EQ(set.rows[4].reason, "no system file for this GPU");
  ASSERT_EQ(own.targets.size(), 3u);
  EXPECT_EQ(own.targets[1].where, (std::vector<std::pair<std::string, std::string>>{{"gpu", "A100"}}));
  ASSERT_NE(own.known_oom_of("r3"), nullptr);
  EXPECT_EQ(own.known_oom_of("r2"), nullptr);
  const Variant& ref = set.variants[1];
  EXPECT_EQ(ref.quantity, SetQuantity::TokensPerSecondPerGpu);
  EXPECT_EQ(ref.measured[1], 1000.0);
  EXPECT_TRUE(ref.targets.empty());
}

TEST(ValidationSet, RowArgumentsAsEstimateGetsThem) {
  const ValidationSet set = read_validation_set(kTiny);
  const std::string small = (kTiny / "models/small.yaml").lexically_normal().string();
  // The set's own model file by its path; a shipped name stays a name.
  EXPECT_EQ(row_arguments(set, set.rows[0], set.variants[0]),
            (std::vector<std::string>{"--model", small, "--system", "A100", "--tp", "2", "--dp", "4",
                                      "--global-batch-size", "32"}));
  // The variant's flags where the row does not give them: r2 keeps its --runtime megatron.
  const std::vector<std::string> r2 = row_arguments(set, set.rows[1], set.variants[1]);
  EXPECT_EQ(std::count(r2.begin(), r2.end(), "--runtime"), 1);
  EXPECT_EQ(*(std::find(r2.begin(), r2.end(), "--runtime") + 1), "megatron");
  EXPECT_EQ(r2.back(), "8");
  EXPECT_EQ(*(r2.end() - 2), "--nvs");
  const std::vector<std::string> r3 = row_arguments(set, set.rows[2], set.variants[1]);
  EXPECT_EQ(r3[1], "gpt3");
  EXPECT_EQ(*(std::find(r3.begin(), r3.end(), "--runtime") + 1), "reference");
  EXPECT_EQ(estimate_command({"--model", "gpt3", "--tp", "8"}), "estimate --model gpt3 --tp 8");
}

TEST(ValidationSet, GpuBuckets) {
  EXPECT_EQ(gpu_bucket(1), "1-8");
  EXPECT_EQ(gpu_bucket(8), "1-8");
  EXPECT_EQ(gpu_bucket(9), "9-64");
  EXPECT_EQ(gpu_bucket(512), "65-512");
  EXPECT_EQ(gpu_bucket(513), "513-4096");
  EXPECT_EQ(gpu_bucket(10752), "4097-32768");
  EXPECT_EQ(gpu_bucket(32769), "32769+");
}

// Predictions by hand: r1 (fit) 1.1 s of 1 (+10%), r2 2.2 s of 2 (+10%), r3 3.0 s of 4 (-25%,
// predicted not to fit at 120% of usable memory: known out of memory below 150%), r4 (ran out of
// memory) predicted not to fit, r5 without flags.
std::vector<RowPrediction> by_hand(const ValidationSet& set) {
  std::vector<RowPrediction> p(5);
  const double value[] = {1.1, 2.2, 3.0, 0.5};
  const bool fits[] = {true, true, false, false};
  for (std::size_t i = 0; i < 4; ++i) {
    p[i].run = p[i].predicted = true;
    p[i].value = value[i];
    p[i].fits = fits[i];
    p[i].memory_fraction = fits[i] ? 0.5 : 1.2;
    p[i].measured = set.variants[0].measured[i];
  }
  p[4].run = true;
  p[4].note = "not expressed";
  return p;
}

TEST(ValidationSet, SummaryOfAPart) {
  const ValidationSet set = read_validation_set(kTiny);
  const std::vector<RowPrediction> p = by_hand(set);
  const std::vector<Summary> held = summaries(set, set.variants[0], p, Part::HeldOut);
  const Summary& all = held.front();
  EXPECT_EQ(all.group, "all");
  EXPECT_EQ(all.rows, 4u);           // r2 to r5
  EXPECT_EQ(all.count, 2u);          // r2, r3: a measured and a predicted value
  EXPECT_EQ(all.not_predicted, 1u);  // r5
  // signed errors +0.1 and -0.25: |.| median 0.175, max 0.25 (r3); signed median -0.075,
  // p10 = -0.25 + 0.1 x 0.35 = -0.215, p90 = -0.25 + 0.9 x 0.35 = 0.065
  EXPECT_NEAR(all.median_abs, 0.175, 1e-12);
  EXPECT_NEAR(all.mean_abs, 0.175, 1e-12);
  EXPECT_NEAR(all.max_abs, 0.25, 1e-12);
  EXPECT_EQ(all.worst, "r3");
  EXPECT_NEAR(all.median_signed, -0.075, 1e-12);
  EXPECT_NEAR(all.p10_signed, -0.215, 1e-12);
  EXPECT_NEAR(all.p90_signed, 0.065, 1e-12);
  // verdicts: r2 trained and fits (right), r3 trained and does not (wrong), r4 out of memory and
  // does not (right); r3 is known out of memory, so of the runs that trained only r2 counts.
  EXPECT_EQ(all.judged, 3u);
  EXPECT_EQ(all.judged_right, 2u);
  EXPECT_EQ(all.trained, 1u);
  EXPECT_EQ(all.trained_fit, 1u);
  // groups: gpu A100 (r2), H100 (r3, r4; r5 has no flags), buckets 9-64 (r2) and 1-8, and the pairs
  std::vector<std::string> groups;
  for (const Summary& s : held) groups.push_back(s.group);
  EXPECT_EQ(groups, (std::vector<std::string>{"all", "gpu=A100", "gpu=H100", "gpus=1-8", "gpus=9-64",
                                              "gpu+gpus=A100+9-64", "gpu+gpus=H100+1-8"}));
  const Summary fit = summaries(set, set.variants[0], p, Part::Fit).front();  // a copy: the vector is a temporary
  EXPECT_EQ(fit.count, 1u);
  EXPECT_NEAR(fit.median_signed, 0.1, 1e-12);
}

TEST(ValidationSet, Targets) {
  const ValidationSet set = read_validation_set(kTiny);
  std::vector<RowPrediction> p = by_hand(set);
  // median |error| 17.5% < 12%: missed; A100's worst 10% <= 20%: met; verdicts 2 of 3 >= 100%:
  // missed; r3's 120% of usable memory < 150%: met.
  TargetReport r = check_targets(set, set.variants[0], p);
  ASSERT_EQ(r.lines.size(), 4u);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.lines[0].starts_with("FAIL  held-out median_abs_error 17.50% < 12.00%")) << r.lines[0];
  EXPECT_TRUE(r.lines[1].starts_with("ok    held-out gpu=A100 max_abs_error 10.00% <= 20.00%")) << r.lines[1];
  EXPECT_TRUE(r.lines[2].starts_with("FAIL  held-out fit_accuracy 66.67% >= 100.00%")) << r.lines[2];
  EXPECT_TRUE(r.lines[3].starts_with("ok    known out of memory (made up)")) << r.lines[3];
  // r3 now fits at 160% of usable memory: over the bound, and noted
  p[2].fits = true;
  p[2].memory_fraction = 1.6;
  r = check_targets(set, set.variants[0], p);
  EXPECT_TRUE(r.lines[3].starts_with("FAIL  known out of memory")) << r.lines[3];
  EXPECT_TRUE(r.lines.back().starts_with("note  now predicted to fit")) << r.lines.back();
  // Only the fit part run: the held-out targets are not checked.
  for (std::size_t i = 1; i < 5; ++i) p[i].run = false;
  r = check_targets(set, set.variants[0], p);
  EXPECT_TRUE(r.lines[0].starts_with("skip  held-out median_abs_error")) << r.lines[0];
}

TEST(ValidationSet, BadFolders) {
  const std::filesystem::path bad = PERFSWEEP_TEST_DATA_DIR "/validation_sets/bad";
  const auto message = [](const std::filesystem::path& dir) {
    try {
      read_validation_set(dir);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(bad / "unknown_key").find("set.yaml: unknown key 'targetz' (line 11)"), std::string::npos);
  EXPECT_NE(message(bad / "bad_measured").find("runs.csv:3: column 'step_s': expected a positive number"),
            std::string::npos);
  EXPECT_NE(message(bad / "duplicate_id").find("runs.csv:4: column 'id': 'r2' is the id of an earlier row too"),
            std::string::npos);
  EXPECT_NE(message(bad / "bad_statistic").find("targets[2].statistic must be one of"), std::string::npos);
  EXPECT_NE(message(bad / "missing_column").find("no column 'nodes'"), std::string::npos);
  EXPECT_NE(message(bad / "bad_part").find("runs.csv:3: column 'part': expected fit or held-out, got 'heldout'"),
            std::string::npos);
  EXPECT_NE(message(bad / "absent").find("not a folder"), std::string::npos);
}

}  // namespace
}  // namespace perfsweep::calib
