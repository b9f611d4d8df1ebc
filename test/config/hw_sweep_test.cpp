// Hardware sweep files: the paper's two grids equal the reference's sweep_utils values
// (test/data/hw_sweeps/grids.json, made by running the reference), and malformed sweep files are
// refused with a message that names the file, the field and the value.
#include "config/hw_sweep.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = PERFSWEEP_SOURCE_DIR;
const fs::path kTestDataDir = PERFSWEEP_TEST_DATA_DIR;

std::vector<double> numbers(const YAML::Node& n) {
  std::vector<double> out;
  for (const auto& v : n) out.push_back(v.as<double>());
  return out;
}

const YAML::Node& reference_grids() {
  static const YAML::Node grids = YAML::LoadFile((kTestDataDir / "hw_sweeps" / "grids.json").string());
  return grids;
}

const std::vector<double>& axis_values(const HardwareSweep& sw, std::size_t axis, const std::string& name) {
  for (const SweepParameter& p : sw.axes.at(axis).parameters) {
    if (p.name == name) return p.values;
  }
  throw std::runtime_error("no parameter " + name + " on axis " + std::to_string(axis));
}

TEST(HardwareSweep, LinspaceIsNumpyExact) {
  const YAML::Node bw = reference_grids()["bw_capacity"];
  EXPECT_EQ(linspace(80, 1000, 32), numbers(bw["hbm_capacity"]));
  EXPECT_EQ(linspace(500, 16000, 28), numbers(bw["hbm_bandwidth"]));
  EXPECT_EQ(linspace(3, 7, 1), std::vector<double>{3});
}

// Every point of both paper sweeps, in the reference's order, bit for bit.
void expect_points(const std::string& sweep, const std::vector<std::string>& keys) {
  const HardwareSweep sw = load_hardware_sweep(kSourceDir / "sweeps" / (sweep + ".yaml"));
  const YAML::Node points = reference_grids()[sweep]["points"];
  ASSERT_EQ(sw.n_points(), points.size());
  EXPECT_EQ(sw.base.name, "B200");
  EXPECT_EQ(sw.base.nvlink_size, 8);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < sw.n_points(); ++i) {
    const System s = sw.point(i);
    const std::vector<double> want = numbers(points[i]);  // (bw, cap[, matrix, vector])
    const double got[] = {s.hbm_bandwidth, s.hbm_capacity, s.matrix_flops_fp16, s.vector_flops_fp16};
    for (std::size_t k = 0; k < want.size(); ++k) {
      if (got[k] != want[k]) {
        ++mismatches;
        ADD_FAILURE() << sweep << " point " << i << " " << keys[k] << ": " << got[k] << " vs " << want[k];
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(HardwareSweep, BandwidthCapacityGridEqualsTheReference) {
  const HardwareSweep sw = load_hardware_sweep(kSourceDir / "sweeps" / "bw_capacity.yaml");
  const YAML::Node ref = reference_grids()["bw_capacity"];
  ASSERT_EQ(sw.axes.size(), 2u);
  EXPECT_EQ(axis_values(sw, 0, "hbm_capacity"), numbers(ref["hbm_capacity"]));
  EXPECT_EQ(axis_values(sw, 1, "hbm_bandwidth"), numbers(ref["hbm_bandwidth"]));
  expect_points("bw_capacity", {"hbm_bandwidth", "hbm_capacity"});
}

TEST(HardwareSweep, FlopsCapacityGridEqualsTheReference) {
  const HardwareSweep sw = load_hardware_sweep(kSourceDir / "sweeps" / "flops_capacity.yaml");
  const YAML::Node ref = reference_grids()["flops_capacity"];
  ASSERT_EQ(sw.axes.size(), 2u);
  EXPECT_EQ(axis_values(sw, 0, "hbm_bandwidth"), numbers(ref["hbm_bandwidth"]));
  EXPECT_EQ(axis_values(sw, 0, "hbm_capacity"), numbers(ref["hbm_capacity"]));
  EXPECT_EQ(axis_values(sw, 1, "matrix_flops_fp16"), numbers(ref["matrix_flops_fp16"]));
  EXPECT_EQ(axis_values(sw, 1, "vector_flops_fp16"), numbers(ref["vector_flops_fp16"]));
  expect_points("flops_capacity", {"hbm_bandwidth", "hbm_capacity", "matrix_flops_fp16", "vector_flops_fp16"});
}

class HardwareSweepErrors : public ::testing::Test {
 protected:
  // The InputError message of loading a sweep file with `text`; fails if it loads.
  std::string error_of(const std::string& text) {
    const fs::path file = fs::temp_directory_path() / ("perfsweep_hw_sweep_" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(file) << text;
    std::string message;
    try {
      load_hardware_sweep(file);
      ADD_FAILURE() << "loaded without error:\n" << text;
    } catch (const InputError& e) {
      message = e.what();
    }
    fs::remove(file);
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;
    return message;
  }
};

TEST_F(HardwareSweepErrors, NameTheFieldAndValue) {
  const std::string base = "base: {system: B200, nvs: 8}\n";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"base: {system: B200, nvs: 8}\naxes: [{hbm_capacity: [80, 100]}]\nextra: 1\n", "unknown key 'extra'"},
      {"axes: [{hbm_capacity: [80]}]\n", "missing key 'base'"},
      {"base: {system: B200, nvs: 0}\naxes: [{hbm_capacity: [80]}]\n", "base.nvs must be a positive integer, got 0"},
      {"base: {system: B200, nvs: 2.5}\naxes: [{hbm_capacity: [80]}]\n", "got 2.5"},
      {"base: {system: B200, nvs: 8, colour: red}\naxes: [{hbm_capacity: [80]}]\n", "unknown key 'colour'"},
      {"base: {system: NoSuchGPU, nvs: 8}\naxes: [{hbm_capacity: [80]}]\n", "NoSuchGPU"},
      {base + "axes: [{hbm_capacty: [80]}]\n", "'hbm_capacty' is not a numeric system parameter"},
      {base + "axes: [{hbm_capacity: [80, abc]}]\n", "must be a number, got 'abc'"},
      {base + "axes: [{hbm_capacity: [80, -1]}]\n", "hbm_capacity value out of range, got -1"},
      {base + "axes: [{hbm_capacity: {linspace: [80, 1000]}}]\n", "linspace must be [start, stop, num]"},
      {base + "axes: [{hbm_capacity: {linspace: [80, 1000, 2.5]}}]\n", "num must be a positive integer, got 2.5"},
      {base + "axes: [{hbm_capacity: [80, 100], hbm_bandwidth: [1, 2, 3]}]\n", "zipped parameters need equal lengths"},
      {base + "axes: [{hbm_capacity: [80]}, {hbm_capacity: [90]}]\n", "'hbm_capacity' is swept on two axes"},
      {base + "axes: [{a: [1]}, {b: [2]}, {c: [3]}]\n", "'axes' must be a list of one or two axes"},
      {base + "axes: [{hbm_capacity: []}]\n", "has no values"},
      {base + "axes: [{nvlink_eff: [0.5, 1.5]}]\n", "nvlink_eff value out of range, got 1.5"},
      {base + "axes: [{hbm_capacity: {interpolate: {systems: [A100], points_per_segment: 4}}}]\n",
       "at least two systems"},
      {base + "axes: [{hbm_capacity: {interpolate: {systems: [A100, H200]}}}]\n", "missing key 'points_per_segment'"},
      {base + "axes: [{hbm_capacity: [80, 100]\n", "line"},  // malformed YAML: where it broke
      // a calibrated system's collectives do not follow its network parameters
      {"base: {system: A100-calibrated, nvs: 4}\naxes: [{ib_bandwidth: [25, 50]}]\n",
       "'ib_bandwidth' cannot be swept on A100-calibrated"},
  };
  for (const Case& c : cases) {
    const std::string message = error_of(c.text);
    EXPECT_NE(message.find(c.expect), std::string::npos) << "input:\n" << c.text << "message: " << message;
  }
}

}  // namespace
}  // namespace perfsweep
