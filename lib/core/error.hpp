#pragma once
// Typed errors thrown by the library. Only apps/ catch them, log, and exit non-zero.
#include <stdexcept>
#include <string>

namespace perfsweep {

// Bad user input: a file, a key and a value that do not make sense. Exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration the cost model cannot express (e.g. tp does not divide the heads). Exit code 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace perfsweep
