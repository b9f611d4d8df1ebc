// The JSON writer refuses a negative, infinite or NaN number as it writes it, naming its key path.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/error.hpp"
#include "io/json_writer.hpp"

namespace perfsweep {
namespace {

std::string refusal(double v) {
  JsonWriter w;
  w.begin_object().key("modules").begin_object().key("mlp").begin_array().begin_object();
  w.key("name").value(std::string_view("fc1")).key("flops_fwd").value(1.5);
  try {
    w.key("t").value(v);
  } catch (const InputError& e) {
    return e.what();
  }
  return "not refused";
}

TEST(JsonWriter, NonsensicalNumbersAreRefusedByKeyPath) {
  EXPECT_EQ(refusal(0.25), "not refused");
  EXPECT_EQ(refusal(0.0), "not refused");
  EXPECT_EQ(refusal(-1e-3),
            "refusing to publish modules.mlp.t = -0.001: negative (an overflow, or an input that cancels what it "
            "should add to); nothing was written (check the inputs' values)");
  EXPECT_NE(refusal(std::numeric_limits<double>::quiet_NaN()).find("modules.mlp.t = nan: not a number"),
            std::string::npos);
  EXPECT_NE(refusal(std::numeric_limits<double>::infinity()).find("modules.mlp.t = inf: infinite"), std::string::npos);
  JsonWriter w;
  w.begin_object().key("totals").begin_object();
  EXPECT_THROW(w.key("collectives").value(std::int64_t{-3}), InputError);
}

}  // namespace
}  // namespace perfsweep
