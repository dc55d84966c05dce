// Inline SVG charts for the HTML report. Drawn by hand in small functions:
// no C++ plotting library in Debian emits SVG we could inline in one
// self-contained file (no scripts, no fonts, no network).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rssaudit::cli::svg {

// `text` with &, <, >, " and ' escaped, for HTML and SVG.
std::string escape(std::string_view text);

struct Point {
  double x = 0;
  double y = 0;
};

struct Series {
  std::string label;
  std::vector<Point> points;
};

using Format = std::function<std::string(double)>;

struct LineChart {
  std::string title;
  std::string y_label;
  std::string x_label;
  std::vector<Series> series;
  // x is seconds since the epoch: ticks at whole seconds, minutes, hours or
  // days; the label of tick x, given the step between ticks (so that a
  // label shows what tells the ticks apart).
  std::function<std::string(double x, double step)> x_text;
  Format y_text;
  // Drawn as dashed lines at +band and -band, labelled band_label.
  std::optional<double> band;
  std::string band_label;
};

// Lines over a time axis, a zero line when y crosses it, the band, and a
// legend.
std::string line_chart(const LineChart& chart);

// Tick positions for [lo, hi] seconds: multiples of a step among 1, 2, 5,
// 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, 1, 2, 7 days,
// about `count` of them, each distinct; the step is returned too.
std::pair<std::vector<double>, double> time_ticks(double lo, double hi,
                                                  int count);

struct BarGroup {
  std::string label;
  double error = 0;
  std::optional<double> bound;  // empty: the scheme has no bound
  std::string sublabel{};       // under the label, smaller: whose it is
};

struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<BarGroup> groups;
  Format y_text;
};

// Bound and error side by side per group, on a log scale: bounds are often
// thousands of times the errors reached.
std::string bar_chart(const BarChart& chart);

// The colour of series i, distinct for the first ten.
std::string_view colour(size_t i);

}  // namespace rssaudit::cli::svg
