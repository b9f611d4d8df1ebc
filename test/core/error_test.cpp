// core/error.hpp: the two typed errors keep their message and are told apart by type, which is
// how apps/ choose an exit code and tests tell bad input from an inexpressible configuration.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/error.hpp"

namespace perfsweep {
namespace {

static_assert(std::is_base_of_v<std::runtime_error, InputError>);
static_assert(std::is_base_of_v<std::runtime_error, ConfigError>);
static_assert(!std::is_base_of_v<InputError, ConfigError> && !std::is_base_of_v<ConfigError, InputError>);

TEST(Errors, KeepTheirMessage) {
  const std::string message = "systems/A100.yaml: hbm_bandwidth must be > 0, got -5";
  EXPECT_EQ(std::string(InputError(message).what()), message);
  EXPECT_EQ(std::string(ConfigError("tp=3 does not divide the 16 heads").what()), "tp=3 does not divide the 16 heads");
}

TEST(Errors, AreCaughtByTheirOwnType) {
  EXPECT_THROW(throw InputError("x"), InputError);
  EXPECT_THROW(throw ConfigError("x"), ConfigError);
  // A handler for one kind lets the other through to an outer std::runtime_error handler.
  auto input_handler_sees = [](auto thrown) {
    try {
      try {
        throw thrown;
      } catch (const InputError&) {
        return true;
      }
    } catch (const std::runtime_error&) {
      return false;
    }
  };
  EXPECT_TRUE(input_handler_sees(InputError("bad file")));
  EXPECT_FALSE(input_handler_sees(ConfigError("bad layout")));
}

}  // namespace
}  // namespace perfsweep
