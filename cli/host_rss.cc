#include "cli/host_rss.h"

#include <fmt/core.h>

#include <algorithm>

#include "cli/query_support.h"

namespace rssaudit::cli {

HostRss host_rss(const DaemonHealth& h) {
  return HostRss{.page_size = h.page_size,
                 .processes_known = h.host_processes_known,
                 .kernel_pages = h.host_kernel_rss,
                 .exact_pages = h.host_exact_rss,
                 .worst_case_pages = h.host_worst_case > 0
                                         ? std::optional(h.host_worst_case)
                                         : std::nullopt};
}

namespace {

// The window of the newest run, or null when there is none.
const ProcessWindow* newest_run(const std::vector<ProcessWindow>& windows) {
  const auto newest = std::ranges::max_element(
      windows, {}, [](const ProcessWindow& w) { return w.process.run_id; });
  return newest == windows.end() ? nullptr : &*newest;
}

}  // namespace

std::vector<ProcessWindow> host_processes(
    const std::vector<ProcessWindow>& windows, int64_t until_ns) {
  std::vector<ProcessWindow> out;
  const ProcessWindow* newest = newest_run(windows);
  if (!newest) return out;
  for (const ProcessWindow& w : windows)
    if (w.process.run_id == newest->process.run_id && !w.gone &&
        !(w.process.exit_ns && *w.process.exit_ns < until_ns))
      out.push_back(w);
  return out;
}

HostRss host_rss(const std::vector<ProcessWindow>& windows, int64_t until_ns) {
  HostRss h;
  const ProcessWindow* newest = newest_run(windows);
  if (!newest) return h;
  h.page_size = newest->page_size;
  h.worst_case_pages = 0;
  for (const ProcessWindow& w : host_processes(windows, until_ns)) {
    const std::optional<int64_t> bound = rss_bound(w.bound_per_counter);
    h.worst_case_pages = bound && h.worst_case_pages
                             ? std::optional(*h.worst_case_pages + *bound)
                             : std::nullopt;
    const std::optional<int64_t> kernel = readers_rss(w.latest.row);
    if (!kernel || !w.latest.drift) continue;
    ++h.processes_known;
    h.kernel_pages += *kernel;
    h.exact_pages += *kernel - *w.latest.drift;
  }
  return h;
}

std::array<std::string, 2> host_lines(const HostRss& h, SizeUnit unit) {
  auto size = [&](int64_t pages, bool sign = false) {
    return format_size(pages, h.page_size, unit, sign);
  };
  return {
      fmt::format("readers' RSS {}, exact {}, drift {}", size(h.kernel_pages),
                  size(h.exact_pages),
                  size(h.kernel_pages - h.exact_pages, true)),
      fmt::format("({} processes with a known drift); worst case {}",
                  h.processes_known,
                  h.worst_case_pages ? "\u00b1" + size(*h.worst_case_pages)
                                     : std::string("unbounded (before 6.2)"))};
}

nlohmann::json host_rss_json(const HostRss& h) {
  return {{"page_size", h.page_size},
          {"kernel_pages", h.kernel_pages},
          {"exact_pages", h.exact_pages},
          {"drift_pages", h.kernel_pages - h.exact_pages},
          {"processes_known", h.processes_known},
          {"worst_case_pages", json_or_null(h.worst_case_pages)}};
}

}  // namespace rssaudit::cli
