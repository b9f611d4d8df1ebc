#pragma once
// Recursive comparison of two parsed JSON documents (yaml-cpp nodes): same keys, same list
// lengths, equal strings, numbers equal (bit for bit by default: both sides print doubles that
// read back exactly, the reference with Python's shortest round-trip repr and perfsweep with
// %.17g). Returns the mismatches found, each with its path, so a failing golden test says
// exactly where.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace perfsweep::test {

struct CompareOptions {
  double rel_tol = 0;  // |x - y| <= rel_tol max(|x|, |y|); 0: equal doubles (0 == -0, NaN == NaN)
  std::size_t max_reports = 20;
};

std::vector<std::string> compare_json(const YAML::Node& expected, const YAML::Node& actual, const std::string& path,
                                      const CompareOptions& opt = {});

// Number of numeric leaves compared by the last calls, and the largest relative difference
// |x - y| / max(|x|, |y|) among them (for the closing counts tests print); reset by assigning 0.
std::size_t& compared_numbers();
double& largest_relative_difference();

}  // namespace perfsweep::test
