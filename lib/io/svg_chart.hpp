#pragma once
// Inline SVG charts for the HTML report (io/html_report.hpp): lines over categories, stacked bars
// with a limit per bar, and heatmaps with a diverging colour scale. Plain data in, SVG text out,
// the same bytes for the same data. Every mark carries its hover text twice: an SVG <title>
// (the browser's own tooltip, no script needed) and a data-tip attribute that the report's
// script shows beside the chart.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.hpp"

namespace perfsweep::svg {

// `&`, `<`, `>`, `"` and `'` as HTML entities: for text and attribute values alike.
inline std::string escape(std::string_view text) { return xml_escaped(text); }
// "%.{digits}g", with "-" for NaN or infinity.
std::string number(double v, int digits = 4);

// One line, or one part of every stacked bar; NaN values are gaps. tips: one per value, or none.
struct Series {
  std::string name;
  std::string colour;  // CSS colour
  std::vector<double> values;
  std::vector<std::string> tips;
};

// Values over categories (GPU counts) at equal spacing.
struct LineChart {
  std::string title, x_label, y_label;
  std::vector<std::string> x;
  std::vector<Series> series;
};
std::string line_chart(const LineChart& chart);

// One bar per category, its parts stacked bottom up; `limit`: a dashed mark per bar (NaN: none).
struct StackedBars {
  std::string title, x_label, y_label;
  std::vector<std::string> x;
  std::vector<Series> parts;
  std::vector<double> limit;
  std::string limit_name;
};
std::string stacked_bars(const StackedBars& chart);

// Cells [row][column] coloured on a diverging log scale around `centre` (blue above, red below,
// grey where NaN); row 0 at the bottom.
struct Heatmap {
  std::string title, x_label, y_label, value_label;
  std::vector<std::string> x, y;
  std::vector<double> values;
  std::vector<std::string> tips;
  double centre = 1;
  std::optional<std::size_t> marked;  // a cell outlined (the best)
};
std::string heatmap(const Heatmap& chart);

// The colour of the i-th series of a chart (a fixed palette, repeated).
std::string palette(std::size_t i);

}  // namespace perfsweep::svg
