// The host-level answer: the sum of the audited processes' RSS as the
// kernel's approximate readers (stat, VmHWM, ru_maxrss) add it up, against
// the exact sum, and the host's worst case. The same figures live (from
// rssauditd's health) and over the database (top, the report).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/units.h"
#include "core/formats/live_view.h"
#include "store/store_queries.h"

namespace rssaudit::cli {

struct HostRss {
  int64_t page_size = 0;         // bytes; the amounts are pages of it
  uint64_t processes_known = 0;  // whose drift is known: the sums are theirs
  int64_t kernel_pages = 0;      // as the approximate readers show them
  int64_t exact_pages = 0;
  // Every audited process off by its RSS bound; empty when some process
  // has no bound (before 6.2, per-task caches).
  std::optional<int64_t> worst_case_pages;
};

HostRss host_rss(const DaemonHealth& h);

// Over the database: the newest sample in the window of each process of the
// window's newest run that had not exited by its end, nor is gone from
// /proc (an older run's processes were seen by a daemon that has stopped).
HostRss host_rss(const std::vector<ProcessWindow>& windows, int64_t until_ns);
// The processes of `windows` host_rss() counts.
std::vector<ProcessWindow> host_processes(
    const std::vector<ProcessWindow>& windows, int64_t until_ns);

// Two lines for the caller to indent: "readers' RSS …, exact …, drift …"
// and "(N processes with a known drift); worst case ±…".
std::array<std::string, 2> host_lines(const HostRss& h, SizeUnit unit);

// kernel_pages, exact_pages, drift_pages, processes_known,
// worst_case_pages (null: no bound), page_size.
nlohmann::json host_rss_json(const HostRss& h);

}  // namespace rssaudit::cli
