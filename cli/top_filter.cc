#include "cli/top_filter.h"

#include <fmt/core.h>

#include "cli/errors.h"
#include "cli/units.h"

namespace rssaudit::cli {

void TopFilter::add_options(CLI::App& sub) {
  sub.add_option("--comm", comm, "Only processes with this name");
  sub.add_option("--cgroup", cgroup,
                 "Only processes in this cgroup v2 subtree, e.g. "
                 "/system.slice");
  sub.add_option("--min-rss", min_rss,
                 "Only processes with at least this RSS, e.g. 64M");
}

std::optional<int64_t> TopFilter::min_rss_bytes() const {
  if (min_rss.empty()) return std::nullopt;
  const std::optional<int64_t> bytes = parse_bytes(min_rss);
  if (!bytes)
    throw UsageError(fmt::format(
        "--min-rss takes a size such as 64M or 1.5GiB, got '{}'", min_rss));
  return bytes;
}

bool TopFilter::passes(std::string_view process_comm,
                       std::string_view process_cgroup,
                       std::optional<int64_t> rss_bytes) const {
  if (!comm.empty() && process_comm != comm) return false;
  if (!cgroup.empty()) {
    // The subtree: the path itself, or below it at a '/'.
    const std::string_view root =
        cgroup.size() > 1 && cgroup.back() == '/'
            ? std::string_view(cgroup).substr(0, cgroup.size() - 1)
            : std::string_view(cgroup);
    if (!process_cgroup.starts_with(root)) return false;
    if (process_cgroup.size() > root.size() && root != "/" &&
        process_cgroup[root.size()] != '/')
      return false;
  }
  if (const auto min = min_rss_bytes();
      min && (!rss_bytes || *rss_bytes < *min))
    return false;
  return true;
}

}  // namespace rssaudit::cli
