#include "cli/units.h"

#include <fmt/core.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/schemes/topology.h"

namespace rssaudit::cli {

std::string pages_as_mib(int64_t pages) {
  return fmt::format("{:.1f}", pages * double(kPageSize) / (1 << 20));
}

std::optional<int64_t> parse_bytes(std::string_view text) {
  double value = 0;
  const auto [end, err] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (err != std::errc() || end == text.data() || !std::isfinite(value) ||
      value < 0)
    return std::nullopt;
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = static_cast<char>(std::toupper(c));
  if (unit.ends_with("IB"))
    unit.resize(unit.size() - 2);
  else if (unit.ends_with("B"))
    unit.pop_back();
  constexpr std::string_view kUnits = "KMGT";
  double scale = 1;
  if (unit.size() > 1) return std::nullopt;
  if (unit.size() == 1) {
    const size_t at = kUnits.find(unit[0]);
    if (at == std::string_view::npos) return std::nullopt;
    scale = std::ldexp(1.0, 10 * static_cast<int>(at + 1));
  }
  const double bytes = value * scale;
  if (bytes >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(bytes));
}

std::string format_size(int64_t pages, int64_t page_size, SizeUnit unit,
                        bool show_plus) {
  const std::string sign = pages < 0 ? "-" : (show_plus && pages ? "+" : "");
  const int64_t magnitude = std::llabs(pages);
  switch (unit) {
    case SizeUnit::kPages:
      return fmt::format("{}{} pg", sign, magnitude);
    case SizeUnit::kBytes:
      return fmt::format("{}{} B", sign, magnitude * page_size);
    case SizeUnit::kHuman:
      break;
  }
  // The largest binary unit whose figure, as printed, is below 1024: never
  // "1024.0 MiB" or "32767.8 GiB".
  static constexpr std::string_view kUnits[] = {"KiB", "MiB", "GiB", "TiB",
                                                "PiB"};
  double value = double(magnitude) * double(page_size) / 1024;
  size_t i = 0;
  for (; i + 1 < std::size(kUnits); ++i) {
    const double shown =
        i == 0 ? std::round(value) : std::round(value * 10) / 10;
    if (shown < 1024) break;
    value /= 1024;
  }
  return i == 0 ? fmt::format("{}{:.0f} {}", sign, value, kUnits[i])
                : fmt::format("{}{:.1f} {}", sign, value, kUnits[i]);
}

void add_unit_options(CLI::App& sub, UnitOptions& o) {
  CLI::Option* pages =
      sub.add_flag("--pages", o.pages, "Memory amounts in pages");
  sub.add_flag("--bytes", o.bytes, "Memory amounts in bytes")->excludes(pages);
}

std::string fidelity_text(uint64_t matched, uint64_t checked) {
  if (checked == 0) return "not measured (no update compared with the kernel)";
  const double percent =
      std::floor(10000.0 * double(matched) / double(checked)) / 100.0;
  return fmt::format("{:.2f}% ({} of {} checked updates)", percent, matched,
                     checked);
}

}  // namespace rssaudit::cli
