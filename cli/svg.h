// Inline SVG charts for the HTML report. Drawn by hand in small functions:
// no C++ plotting library in Debian emits SVG we could inline in one
// self-contained file (no scripts, no fonts, no network).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
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
  std::vector<Series> series;
  Format x_text;  // tick labels
  Format y_text;
};

// Lines over a shared x axis, a zero line when y crosses it, and a legend.
std::string line_chart(const LineChart& chart);

struct BarGroup {
  std::string label;
  double error = 0;
  std::optional<double> bound;  // empty: the scheme has no bound
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
