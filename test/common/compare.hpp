#pragma once
// Recursive comparison of two parsed JSON documents (yaml-cpp nodes): same keys, same list
// lengths, equal strings, numbers equal to a relative tolerance. Returns the mismatches found,
// each with its path, so a failing golden test says exactly where.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace perfsweep::test {

struct CompareOptions {
  double rel_tol = 1e-9;
  double abs_tol = 1e-300;  // below this magnitude two numbers are equal (0 vs 0.0)
  std::size_t max_reports = 20;
};

std::vector<std::string> compare_json(const YAML::Node& expected, const YAML::Node& actual, const std::string& path,
                                      const CompareOptions& opt = {});

// Number of numeric leaves compared by the last calls (for the closing counts tests print).
std::size_t& compared_numbers();

}  // namespace perfsweep::test
