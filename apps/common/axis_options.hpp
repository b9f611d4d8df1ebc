#pragma once
// The parallel axes' flags of `estimate` and `configs`, from the axes' table (model/axes.hpp): a
// degree flag --name for each axis that has one (LayoutAxis::has_degree_flag: tp, tp1, tp2, dp, pp)
// and an NVLink share --nv-name for each placed axis (nv_tp, nv_tp1, nv_tp2, nv_cp, nv_dp, nv_pp).
// `estimate` takes one value of each (T = std::int64_t, default 1), `configs` lists (T = std::string).
#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "model/axes.hpp"

namespace perfsweep {

template <typename T>
struct AxisFlags {
  std::array<T, kAxisCount> degree{};
  std::array<std::optional<std::int64_t>, kAxisCount> nv;
  std::array<CLI::Option*, kAxisCount> degree_option{};
  // Whether --name (--nv-name) was given.
  bool given(std::size_t axis) const { return degree_option[axis] != nullptr && degree_option[axis]->count() > 0; }
  bool nv_given(std::size_t axis) const { return nv[axis].has_value(); }
};

// degree_help(axis): the help of its degree flag (after the axis's own words).
template <typename T, typename Help>
void add_axis_options(CLI::App& app, AxisFlags<T>& f, Help&& degree_help, const std::string& nv_help) {
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    const LayoutAxis& a = kAxes[i];
    if (!a.has_degree_flag()) continue;
    if constexpr (std::is_same_v<T, std::int64_t>) f.degree[i] = 1;
    f.degree_option[i] = app.add_option(key_flag(a.name), f.degree[i], std::string(a.what) + degree_help(i));
    if constexpr (std::is_same_v<T, std::int64_t>) f.degree_option[i]->capture_default_str();
  }
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    const LayoutAxis& a = kAxes[i];
    if (!a.placed()) continue;
    const std::string where = axis_strategies(i);
    app.add_option(key_flag(a.nv_key), f.nv[i],
                   "GPUs of the " + std::string(a.name) + " group in the NVLink domain" +
                       (where == "every strategy" ? "" : " (" + where + ")") + nv_help);
  }
}

// InputError where a degree or NVLink share was given for an axis that none of `strategies` has:
// "--tp1 goes with --strat 2d or 2d-seqp".
template <typename T>
void check_axes_given(const AxisFlags<T>& f, std::uint32_t strategies_axes) {
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    if ((strategies_axes >> i & 1u) != 0) continue;
    const LayoutAxis& a = kAxes[i];
    const bool degree = f.given(i), nv = f.nv_given(i);
    if (!degree && !nv) continue;
    throw InputError((degree ? key_flag(a.name) : key_flag(a.nv_key)) + " goes with --strat " + axis_strategies(i));
  }
}

}  // namespace perfsweep
