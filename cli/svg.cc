#include "cli/svg.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/formats/printable_text.h"

namespace rssaudit::cli::svg {
namespace {

constexpr double kWidth = 1100;
constexpr double kHeight = 420;
// The plot area inside the chart: room for tick labels left and below.
constexpr double kLeft = 90;
constexpr double kTop = 40;
constexpr double kBottom = kHeight - 50;

struct Axis {
  double lo = 0;
  double hi = 1;
  std::vector<double> ticks;
};

// Ticks at 1, 2 or 5 times a power of ten, about `count` of them, with the
// axis widened to whole ticks.
Axis nice_axis(double lo, double hi, int count) {
  if (hi <= lo) {
    lo -= 1;
    hi += 1;
  }
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  Axis a{std::floor(lo / step) * step, std::ceil(hi / step) * step, {}};
  for (double t = a.lo; t <= a.hi + step / 2; t += step)
    a.ticks.push_back(std::abs(t) < step / 1e6 ? 0 : t);
  return a;
}

std::string text(double x, double y, std::string_view s,
                 std::string_view anchor = "middle",
                 std::string_view extra = "") {
  return fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" {}>{}</text>\n", x, y,
      anchor, extra, escape(s));
}

std::string line(double x1, double y1, double x2, double y2,
                 std::string_view stroke, double width = 1) {
  return fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"{}\" stroke-width=\"{}\"/>\n",
      x1, y1, x2, y2, stroke, width);
}

std::string rect(double x, double y, double w, double h,
                 std::string_view fill) {
  return fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
      "fill=\"{}\"/>\n",
      x, y, w, h, fill);
}

std::string open_chart(std::string_view title, std::string_view y_label) {
  // Scales down with the page (the viewBox keeps the drawing): no
  // horizontal scrollbar on a narrow window.
  return fmt::format(
             "<svg viewBox=\"0 0 {0} {1}\" width=\"100%\" "
             "style=\"max-width:{0}px;height:auto\" role=\"img\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n"
             "<title>{2}</title>\n",
             kWidth, kHeight, escape(title)) +
         text(kLeft, 20, title, "start",
              "font-size=\"15\" font-weight=\"bold\"") +
         text(16, (kTop + kBottom) / 2, y_label, "middle",
              fmt::format("transform=\"rotate(-90 16 {:.1f})\"",
                          (kTop + kBottom) / 2));
}

// Horizontal grid lines and labels of a y axis mapped by `y_of`.
std::string y_grid(const std::vector<double>& ticks, double right,
                   const std::function<double(double)>& y_of,
                   const Format& label) {
  std::string out;
  for (double t : ticks) {
    const double y = y_of(t);
    out += line(kLeft, y, right, y, "#e3e3e3");
    out += text(kLeft - 6, y + 4, label(t), "end");
  }
  return out;
}

}  // namespace

std::string escape(std::string_view text) {
  // Controls and bytes that are not UTF-8 as '?' (core/formats/
  // printable_text.h), lines and tabs kept.
  const std::string s = printable(text, "\n\t");
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::pair<std::vector<double>, double> time_ticks(double lo, double hi,
                                                  int count) {
  static constexpr double kSteps[] = {
      1,   2,    5,    10,   15,    30,    60,    120,   300,    600,
      900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
  const double span = std::max(hi - lo, 1.0);
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps)
    if (span / s <= count) {
      step = s;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi; t += step)
    ticks.push_back(t);
  return {ticks, step};
}

std::string_view colour(size_t i) {
  static constexpr std::array<std::string_view, 10> kColours = {
      "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColours[i % kColours.size()];
}

std::string line_chart(const LineChart& c) {
  constexpr double kRight = kWidth - 260;  // the legend goes right of it
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = 0, y_hi = 0;
  for (const Series& s : c.series)
    for (const Point& p : s.points) {
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, p.y);
      y_hi = std::max(y_hi, p.y);
    }
  std::string out = open_chart(c.title, c.y_label);
  if (x_lo > x_hi) {
    out += text((kLeft + kRight) / 2, (kTop + kBottom) / 2,
                "no samples in the window");
    return out + "</svg>\n";
  }
  if (x_hi == x_lo) x_hi = x_lo + 1;
  if (c.band && *c.band > 0) {  // the band in view: drift against it
    y_lo = std::min(y_lo, -*c.band);
    y_hi = std::max(y_hi, *c.band);
  }
  const Axis y = nice_axis(y_lo, y_hi, 6);
  auto x_of = [&](double x) {
    return kLeft + (x - x_lo) / (x_hi - x_lo) * (kRight - kLeft);
  };
  auto y_of = [&](double v) {
    return kBottom - (v - y.lo) / (y.hi - y.lo) * (kBottom - kTop);
  };
  out += y_grid(y.ticks, kRight, y_of, c.y_text);
  const auto [ticks, step] = time_ticks(x_lo, x_hi, 6);
  for (double x : ticks) {
    out += line(x_of(x), kBottom, x_of(x), kBottom + 5, "#555");
    out += text(x_of(x), kBottom + 20, c.x_text(x, step));
  }
  out += text((kLeft + kRight) / 2, kBottom + 42, c.x_label);
  if (c.band && *c.band > 0) {
    for (double v : {*c.band, -*c.band}) {
      out += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
          "stroke=\"#888\" stroke-dasharray=\"6 4\"/>\n",
          kLeft, y_of(v), kRight, y_of(v));
    }
    out += text(kRight - 4, y_of(*c.band) - 4, c.band_label, "end",
                "fill=\"#555\"");
  }
  out += line(kLeft, kBottom, kRight, kBottom, "#555");
  out += line(kLeft, kTop, kLeft, kBottom, "#555");
  if (y.lo < 0 && y.hi > 0)
    out += line(kLeft, y_of(0), kRight, y_of(0), "#555", 1.5);
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    std::string points;
    for (const Point& p : s.points)
      points += fmt::format("{:.1f},{:.1f} ", x_of(p.x), y_of(p.y));
    out += fmt::format(
        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
        "points=\"{}\"/>\n",
        colour(i), points);
    if (s.points.size() == 1)  // a lone sample would draw nothing
      out += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" "
          "fill=\"{}\"/>\n",
          x_of(s.points[0].x), y_of(s.points[0].y), colour(i));
    const double ly = kTop + 10 + 20 * double(i);
    out += rect(kRight + 20, ly - 9, 14, 10, colour(i));
    out += text(kRight + 40, ly, s.label, "start");
  }
  return out + "</svg>\n";
}

std::string bar_chart(const BarChart& c) {
  constexpr double kRight = kWidth - 30;
  double top = 1;
  for (const BarGroup& g : c.groups)
    top = std::max({top, g.error, g.bound.value_or(0)});
  const int decades = std::max(1, int(std::ceil(std::log10(top))));
  auto y_of = [&](double v) {
    const double l = v < 1 ? 0 : std::log10(v);
    return kBottom - l / decades * (kBottom - kTop);
  };
  std::vector<double> ticks;
  for (int d = 0; d <= decades; ++d) ticks.push_back(std::pow(10, d));
  std::string out = open_chart(c.title, c.y_label);
  out += y_grid(ticks, kRight, y_of, c.y_text);
  out += line(kLeft, kBottom, kRight, kBottom, "#555");
  const double slot = (kRight - kLeft) / std::max<size_t>(1, c.groups.size());
  const double bar = std::min(60.0, slot / 3);
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const BarGroup& g = c.groups[i];
    const double x = kLeft + slot * double(i) + slot / 2;
    if (g.bound) {
      out += rect(x - bar, y_of(*g.bound), bar, kBottom - y_of(*g.bound),
                  "#b8c4d6");
      out += text(x - bar / 2, y_of(*g.bound) - 4, c.y_text(*g.bound));
    } else {
      out += text(x - bar / 2, kBottom - 6, "no bound");
    }
    out += rect(x, y_of(g.error), bar, kBottom - y_of(g.error), "#d62728");
    out += text(x + bar / 2, y_of(g.error) - 4, c.y_text(g.error));
    out += text(x, kBottom + 20, g.label);
    if (!g.sublabel.empty())
      out += text(x, kBottom + 35, g.sublabel, "middle",
                  "font-size=\"10\" fill=\"#555\"");
  }
  out += rect(kRight - 230, kTop - 30, 12, 10, "#b8c4d6");
  out += text(kRight - 212, kTop - 21, "bound", "start");
  out += rect(kRight - 150, kTop - 30, 12, 10, "#d62728");
  out += text(kRight - 132, kTop - 21, "largest error", "start");
  return out + "</svg>\n";
}

}  // namespace rssaudit::cli::svg
