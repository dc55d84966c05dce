#include "cli/units.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>

#include "core/schemes/topology.h"

namespace rssaudit::cli {

std::string pages_as_mib(int64_t pages) {
  return fmt::format("{:.1f}", pages * double(kPageSize) / (1 << 20));
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
  const double bytes = double(magnitude) * double(page_size);
  if (bytes < 1 << 20) return fmt::format("{}{:.0f} KiB", sign, bytes / 1024);
  if (bytes < 1 << 30)
    return fmt::format("{}{:.1f} MiB", sign, bytes / (1 << 20));
  return fmt::format("{}{:.1f} GiB", sign, bytes / (1 << 30));
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
