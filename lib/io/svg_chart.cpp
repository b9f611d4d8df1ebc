#include "io/svg_chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

namespace perfsweep::svg {
namespace {

// The frame every chart shares (px): the plot area, with room for axis labels and a legend.
constexpr double kWidth = 720, kHeight = 340, kLeft = 76, kRight = 178, kTop = 34, kBottom = 58;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;

std::string px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// <title> and data-tip of one mark: the same text.
std::string tip_attr(const std::string& tip) { return tip.empty() ? "" : " data-tip=\"" + escape(tip) + "\""; }
std::string tip_title(const std::string& tip) { return tip.empty() ? "" : "<title>" + escape(tip) + "</title>"; }

std::string open_svg(const std::string& title, double height = kHeight) {
  return "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + px(kWidth) + " " + px(height) +
         "\" width=\"" + px(kWidth) + "\" height=\"" + px(height) + "\" role=\"img\" aria-label=\"" + escape(title) +
         "\">\n<text class=\"title\" x=\"" + px(kLeft) + "\" y=\"20\">" + escape(title) + "</text>\n";
}

// Ticks from 0 to at least `top` at a step of 1, 2 or 5 times a power of ten, about five of them.
std::vector<double> ticks(double top) {
  if (!(top > 0) || !std::isfinite(top)) top = 1;
  const double raw = top / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double f : {1.0, 2.0, 5.0, 10.0}) {
    step = f * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> out;
  for (int i = 0; out.empty() || out.back() < top * (1 - 1e-9); ++i) out.push_back(step * i);
  return out;
}

// The axes: y ticks up to `y_ticks.back()`, one x label per category centred at x_at(i).
template <typename XAt>
std::string axes(const std::vector<double>& y_ticks, const std::vector<std::string>& x, XAt x_at,
                 const std::string& x_label, const std::string& y_label) {
  std::string o;
  const double top = y_ticks.back();
  for (const double t : y_ticks) {
    const double y = kTop + kPlotHeight * (1 - t / top);
    o += "<line class=\"grid\" x1=\"" + px(kLeft) + "\" x2=\"" + px(kLeft + kPlotWidth) + "\" y1=\"" + px(y) +
         "\" y2=\"" + px(y) + "\"/>";
    o += "<text class=\"tick\" x=\"" + px(kLeft - 6) + "\" y=\"" + px(y + 4) + "\" text-anchor=\"end\">" + number(t, 6) +
         "</text>\n";
  }
  // At most about 16 labels: every k-th category.
  const std::size_t every = std::max<std::size_t>(1, (x.size() + 15) / 16);
  for (std::size_t i = 0; i < x.size(); i += every) {
    o += "<text class=\"tick\" x=\"" + px(x_at(i)) + "\" y=\"" + px(kTop + kPlotHeight + 16) +
         "\" text-anchor=\"middle\">" + escape(x[i]) + "</text>";
  }
  o += "\n<line class=\"axis\" x1=\"" + px(kLeft) + "\" x2=\"" + px(kLeft + kPlotWidth) + "\" y1=\"" +
       px(kTop + kPlotHeight) + "\" y2=\"" + px(kTop + kPlotHeight) + "\"/>";
  o += "<line class=\"axis\" x1=\"" + px(kLeft) + "\" x2=\"" + px(kLeft) + "\" y1=\"" + px(kTop) + "\" y2=\"" +
       px(kTop + kPlotHeight) + "\"/>\n";
  o += "<text class=\"label\" x=\"" + px(kLeft + kPlotWidth / 2) + "\" y=\"" + px(kHeight - 14) +
       "\" text-anchor=\"middle\">" + escape(x_label) + "</text>";
  o += "<text class=\"label\" transform=\"translate(16 " + px(kTop + kPlotHeight / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label) + "</text>\n";
  return o;
}

std::string legend(const std::vector<Series>& series, bool reversed) {
  std::string o;
  const double x = kLeft + kPlotWidth + 14;
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[reversed ? series.size() - 1 - k : k];
    const double y = kTop + 4 + 17.0 * static_cast<double>(k);
    o += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"12\" height=\"12\" fill=\"" + escape(s.colour) +
         "\"/><text class=\"legend\" x=\"" + px(x + 18) + "\" y=\"" + px(y + 10) + "\">" + escape(s.name) + "</text>\n";
  }
  return o;
}

double max_finite(double a, double b) { return std::isfinite(b) ? std::max(a, b) : a; }

// A colour between white (t = 0) and `end` (t = 1), as #rrggbb.
std::string blend(std::array<int, 3> end, double t) {
  char buf[8];
  int c[3];
  for (int i = 0; i < 3; ++i) c[i] = static_cast<int>(std::lround(255 + (end[static_cast<std::size_t>(i)] - 255) * t));
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}
constexpr std::array<int, 3> kAbove{0x21, 0x66, 0xac}, kBelow{0xb2, 0x18, 0x2b};
constexpr const char* kNothing = "#c8c8c8";

}  // namespace

std::string number(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string palette(std::size_t i) {
  static constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                             "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kColours[i % std::size(kColours)];
}

std::string line_chart(const LineChart& c) {
  double top = 0;
  for (const Series& s : c.series) {
    for (const double v : s.values) top = max_finite(top, v);
  }
  const std::vector<double> y_ticks = ticks(top * 1.05);
  const double n = static_cast<double>(std::max<std::size_t>(c.x.size(), 1));
  auto x_at = [&](std::size_t i) { return kLeft + kPlotWidth * (static_cast<double>(i) + 0.5) / n; };
  auto y_at = [&](double v) { return kTop + kPlotHeight * (1 - v / y_ticks.back()); };
  std::string o = open_svg(c.title) + axes(y_ticks, c.x, x_at, c.x_label, c.y_label);
  for (const Series& s : c.series) {
    o += "<g class=\"series\">";
    std::string points;
    auto flush = [&] {
      if (!points.empty()) {
        o += "<polyline fill=\"none\" stroke=\"" + escape(s.colour) + "\" stroke-width=\"2\" points=\"" + points + "\"/>";
      }
      points.clear();
    };
    for (std::size_t i = 0; i < s.values.size() && i < c.x.size(); ++i) {
      if (!std::isfinite(s.values[i])) {
        flush();
        continue;
      }
      if (!points.empty()) points += ' ';
      points += px(x_at(i));
      points += ',';
      points += px(y_at(s.values[i]));
    }
    flush();
    for (std::size_t i = 0; i < s.values.size() && i < c.x.size(); ++i) {
      if (!std::isfinite(s.values[i])) continue;
      const std::string tip = i < s.tips.size() ? s.tips[i] : "";
      o += "\n<circle cx=\"" + px(x_at(i)) + "\" cy=\"" + px(y_at(s.values[i])) + "\" r=\"4\" fill=\"" +
           escape(s.colour) + "\"" + tip_attr(tip) + ">" + tip_title(tip) + "</circle>";
    }
    o += "</g>\n";
  }
  return o + legend(c.series, false) + "</svg>\n";
}

std::string stacked_bars(const StackedBars& c) {
  double top = 0;
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    double sum = 0;
    for (const Series& s : c.parts) {
      if (i < s.values.size() && std::isfinite(s.values[i]) && s.values[i] > 0) sum += s.values[i];
    }
    top = std::max(top, sum);
    if (i < c.limit.size()) top = max_finite(top, c.limit[i]);
  }
  const std::vector<double> y_ticks = ticks(top * 1.05);
  const double n = static_cast<double>(std::max<std::size_t>(c.x.size(), 1));
  const double slot = kPlotWidth / n, bar = std::min(slot * 0.7, 48.0);
  auto x_at = [&](std::size_t i) { return kLeft + slot * (static_cast<double>(i) + 0.5); };
  auto height = [&](double v) { return kPlotHeight * v / y_ticks.back(); };
  std::string o = open_svg(c.title) + axes(y_ticks, c.x, x_at, c.x_label, c.y_label);
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    double base = 0;
    o += "<g class=\"bar\">";
    for (const Series& s : c.parts) {
      if (i >= s.values.size() || !std::isfinite(s.values[i]) || s.values[i] <= 0) continue;
      const double h = height(s.values[i]);
      const std::string tip = i < s.tips.size() ? s.tips[i] : "";
      o += "<rect x=\"" + px(x_at(i) - bar / 2) + "\" y=\"" + px(kTop + kPlotHeight - height(base) - h) +
           "\" width=\"" + px(bar) + "\" height=\"" + px(h) + "\" fill=\"" + escape(s.colour) + "\"" + tip_attr(tip) +
           ">" + tip_title(tip) + "</rect>";
      base += s.values[i];
    }
    if (i < c.limit.size() && std::isfinite(c.limit[i])) {
      const double y = kTop + kPlotHeight - height(c.limit[i]);
      const std::string tip = c.limit_name + ": " + number(c.limit[i]);
      o += "<line class=\"limit\" x1=\"" + px(x_at(i) - slot / 2 + 2) + "\" x2=\"" + px(x_at(i) + slot / 2 - 2) +
           "\" y1=\"" + px(y) + "\" y2=\"" + px(y) + "\"" + tip_attr(tip) + ">" + tip_title(tip) + "</line>";
    }
    o += "</g>\n";
  }
  std::string o_legend = legend(c.parts, true);
  if (!c.limit.empty()) {
    const double x = kLeft + kPlotWidth + 14, y = kTop + 4 + 17.0 * static_cast<double>(c.parts.size());
    o_legend += "<line class=\"limit\" x1=\"" + px(x) + "\" x2=\"" + px(x + 12) + "\" y1=\"" + px(y + 6) + "\" y2=\"" +
                px(y + 6) + "\"/><text class=\"legend\" x=\"" + px(x + 18) + "\" y=\"" + px(y + 10) + "\">" +
                escape(c.limit_name) + "</text>\n";
  }
  return o + o_legend + "</svg>\n";
}

std::string heatmap(const Heatmap& c) {
  const std::size_t nx = std::max<std::size_t>(c.x.size(), 1), ny = std::max<std::size_t>(c.y.size(), 1);
  constexpr double height = 420, plot_height = height - kTop - kBottom;
  const double w = kPlotWidth / static_cast<double>(nx), h = plot_height / static_cast<double>(ny);
  // The scale reaches the farthest value from the centre, in log terms, either way.
  double reach = std::log(1.01);
  for (const double v : c.values) {
    if (std::isfinite(v) && v > 0) reach = std::max(reach, std::abs(std::log(v / c.centre)));
  }
  auto colour = [&](double v) {
    if (!std::isfinite(v) || v <= 0) return std::string(kNothing);
    const double t = std::clamp(std::log(v / c.centre) / reach, -1.0, 1.0);
    return t >= 0 ? blend(kAbove, t) : blend(kBelow, -t);
  };
  std::string o = open_svg(c.title, height);
  for (std::size_t r = 0; r < c.y.size(); ++r) {
    for (std::size_t k = 0; k < c.x.size(); ++k) {
      const std::size_t i = r * c.x.size() + k;
      const double v = i < c.values.size() ? c.values[i] : std::numeric_limits<double>::quiet_NaN();
      const std::string tip = i < c.tips.size() ? c.tips[i] : "";
      o += "<rect x=\"" + px(kLeft + w * static_cast<double>(k)) + "\" y=\"" +
           px(kTop + plot_height - h * static_cast<double>(r + 1)) + "\" width=\"" + px(w) + "\" height=\"" + px(h) +
           "\" fill=\"" + colour(v) + "\"" + (c.marked == i ? " class=\"marked\"" : "") + tip_attr(tip) + ">" +
           tip_title(tip) + "</rect>";
    }
    o += "\n";
  }
  // Axis labels: as many as fit side by side (about 6.5 px per character), at most about 16 up the side.
  std::size_t longest = 1;
  for (const std::string& label : c.x) longest = std::max(longest, label.size());
  const auto fit = std::max<std::size_t>(1, static_cast<std::size_t>(kPlotWidth / (6.5 * static_cast<double>(longest) + 10)));
  const std::size_t every_x = std::max<std::size_t>(1, (c.x.size() + fit - 1) / fit);
  for (std::size_t k = 0; k < c.x.size(); k += every_x) {
    o += "<text class=\"tick\" x=\"" + px(kLeft + w * (static_cast<double>(k) + 0.5)) + "\" y=\"" +
         px(kTop + plot_height + 16) + "\" text-anchor=\"middle\">" + escape(c.x[k]) + "</text>";
  }
  const std::size_t every_y = std::max<std::size_t>(1, (c.y.size() + 15) / 16);
  for (std::size_t r = 0; r < c.y.size(); r += every_y) {
    o += "<text class=\"tick\" x=\"" + px(kLeft - 6) + "\" y=\"" +
         px(kTop + plot_height - h * (static_cast<double>(r) + 0.5) + 4) + "\" text-anchor=\"end\">" + escape(c.y[r]) +
         "</text>";
  }
  o += "\n<text class=\"label\" x=\"" + px(kLeft + kPlotWidth / 2) + "\" y=\"" + px(height - 14) +
       "\" text-anchor=\"middle\">" + escape(c.x_label) + "</text>";
  o += "<text class=\"label\" transform=\"translate(16 " + px(kTop + plot_height / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape(c.y_label) + "</text>\n";
  // The colour scale: 21 steps from the lowest to the highest value it shows, and "nothing fits".
  const double bar_x = kLeft + kPlotWidth + 24, step = plot_height / 21;
  for (int s = 0; s < 21; ++s) {
    const double t = (s - 10) / 10.0;
    const double y = kTop + plot_height - step * (s + 1);
    o += "<rect x=\"" + px(bar_x) + "\" y=\"" + px(y) + "\" width=\"16\" height=\"" + px(step + 0.5) + "\" fill=\"" +
         colour(c.centre * std::exp(t * reach)) + "\"/>";
    if (s % 5 == 0) {
      o += "<text class=\"tick\" x=\"" + px(bar_x + 22) + "\" y=\"" + px(y + step / 2 + 4) + "\">" +
           number(c.centre * std::exp(t * reach), 3) + "</text>";
    }
  }
  o += "\n<text class=\"legend\" x=\"" + px(bar_x) + "\" y=\"" + px(kTop - 8) + "\">" + escape(c.value_label) +
       "</text>";
  o += "<rect x=\"" + px(bar_x) + "\" y=\"" + px(kTop + plot_height + 8) + "\" width=\"16\" height=\"12\" fill=\"" +
       kNothing + "\"/><text class=\"legend\" x=\"" + px(bar_x + 22) + "\" y=\"" + px(kTop + plot_height + 18) +
       "\">nothing fits</text>\n";
  return o + "</svg>\n";
}

}  // namespace perfsweep::svg
