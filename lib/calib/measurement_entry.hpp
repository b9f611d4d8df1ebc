#pragma once
// Reading one entry of a GPU measurement file (validation/gpu/*.json, read as YAML): the entry's
// name for messages, and checked scalars. Every failure is an InputError naming the file, the
// entry and the field.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "model/transformer.hpp"

namespace perfsweep::calib {

// How a node reads in a message: its scalar in quotes, or what it is.
std::string shown(const YAML::Node& n);

struct Entry {
  std::string file;
  std::string name;  // "configs[3] (c04)"
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(file + ": " + name + ": " + field + " " + what);
  }
};

// The node as a number: NaN when absent, not a scalar or not numeric.
double number_or_nan(const YAML::Node& n);

// cfg[key] as an integer in [1, kMaxGpuCount] (batches, shapes, degrees; a model's keys are
// checked again by check_model).
std::int64_t positive_integer(const Entry& at, const YAML::Node& cfg, const char* key,
                              std::int64_t max = kMaxGpuCount);
// cfg[key] as an integer in [0, max], `fallback` when absent.
std::int64_t count_or(const Entry& at, const YAML::Node& cfg, const char* key, std::int64_t fallback,
                      std::int64_t max = kMaxGpuCount);
// A finite time in seconds: at least kMinMeasured, or >= 0 with allow_zero.
// Fails at `cfg` unless every key of the entry's model is within kModelKeyLimits.
void check_model(const Entry& at, const Transformer& m);
double seconds(const Entry& at, const YAML::Node& n, const std::string& field, bool allow_zero = false);
// cfg[key] as true or false, `fallback` when absent.
bool flag_or(const Entry& at, const YAML::Node& cfg, const char* key, bool fallback);
// cfg[key] as one of `allowed` strings, `fallback` when absent.
std::string choice_or(const Entry& at, const YAML::Node& cfg, const char* key, std::initializer_list<const char*> allowed,
                      const char* fallback);

// The comma-separated ids of `ids`.
std::set<std::string> id_set(const std::string& ids);

// The items whose id is (keep = true) or is not (keep = false) in the comma-separated `ids`;
// every listed id must exist, and something must be left.
template <typename T>
std::vector<T> select_by_id(const std::vector<T>& items, const std::string& ids, bool keep) {
  const std::set<std::string> wanted = id_set(ids);
  for (const std::string& id : wanted) {
    if (std::none_of(items.begin(), items.end(), [&](const T& c) { return c.id == id; })) {
      throw InputError("no measured configuration with id '" + id + "'");
    }
  }
  std::vector<T> out;
  for (const T& c : items) {
    if (wanted.contains(c.id) == keep) out.push_back(c);
  }
  if (out.empty()) throw InputError("no measurement left after selecting ids '" + ids + "'");
  return out;
}

}  // namespace perfsweep::calib
