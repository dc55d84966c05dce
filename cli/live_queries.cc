#include "cli/live_queries.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <vector>

#include "cli/daemon_client.h"
#include "cli/errors.h"
#include "cli/host_rss.h"
#include "cli/time_args.h"
#include "cli/units.h"
#include "core/schemes/scheme_set.h"

namespace rssaudit::cli {
namespace {

using nlohmann::json;

// Values that are absolute only for a process seen from its creation (or
// since a snapshot of its counters): for one the daemon joined mid-life the
// sum of the
// updates it saw is not the RSS, and showing it would be a made-up number.
std::optional<int64_t> exact_of(const LiveProcess& p) {
  return p.from_zero ? std::optional(p.exact_rss) : std::nullopt;
}
std::optional<int64_t> drift_of(const LiveProcess& p) {
  return p.drift_known() ? std::optional(p.drift()) : std::nullopt;
}
std::optional<int64_t> kernel_of(const LiveProcess& p) {
  return p.kernel_known ? std::optional(p.kernel_rss) : std::nullopt;
}
std::optional<int64_t> peak_of(const LiveProcess& p) {
  return p.from_zero && !p.quiet ? std::optional(p.peak_rss) : std::nullopt;
}
// |drift| over the RSS bound.
std::optional<double> ratio_of(const LiveProcess& p) {
  if (!p.drift_known() || p.rss_bound <= 0) return std::nullopt;
  return std::abs(double(p.drift())) / double(p.rss_bound);
}

std::string ratio_text(const std::optional<double>& r) {
  return r ? fmt::format("{:.1f}%", 100 * *r) : "-";
}

json process_json(const LiveProcess& p, int64_t page_size) {
  auto bytes = [&](const std::optional<int64_t>& pages) {
    return pages ? json(*pages * page_size) : json(nullptr);
  };
  const std::optional<double> ratio = ratio_of(p);
  // A quiet process ran no model: its errors are unknown, not 0.
  json errors = p.quiet ? json(nullptr) : json::object();
  for (size_t i = 0; i < SchemeSet::kCount && !p.quiet; ++i)
    errors[std::string(SchemeSet::kNames[i])] = p.largest_error[i];
  return {
      {"pid", p.pid},
      {"start_ticks", p.start_ticks},
      {"comm", p.comm},
      {"cgroup", p.cgroup},
      {"from_zero", p.from_zero},
      {"quiet", p.quiet},
      {"kernel_rss_pages", json_or_null(kernel_of(p))},
      {"kernel_rss_bytes", bytes(kernel_of(p))},
      {"exact_rss_pages", json_or_null(exact_of(p))},
      {"exact_rss_bytes", bytes(exact_of(p))},
      {"drift_pages", json_or_null(drift_of(p))},
      {"drift_bytes", bytes(drift_of(p))},
      {"true_peak_pages", json_or_null(peak_of(p))},
      {"rss_bound_pages", p.rss_bound > 0 ? json(p.rss_bound) : json(nullptr)},
      {"drift_to_rss_bound", ratio ? json(*ratio) : json(nullptr)},
      {"updates", p.updates},
      {"flagged", p.flagged},
      {"fidelity_checked", p.fidelity_checked},
      {"fidelity_matched", p.fidelity_matched},
      {"largest_error_pages", std::move(errors)}};
}

json source_json(const LiveOptions& live, const DaemonHealth& h) {
  return {{"source", "rssauditd"},  {"socket", live.socket},
          {"host", h.host},         {"time_ns", h.time_ns},
          {"nr_cpus", h.nr_cpus},   {"batch", h.batch},
          {"counting", h.counting}, {"page_size", h.page_size}};
}

void rank(std::vector<LiveProcess>& ps, const std::string& sort) {
  auto key = [&](const LiveProcess& p) -> std::optional<double> {
    if (sort == "ratio") return ratio_of(p);
    if (sort == "rss") return double(p.kernel_rss);
    if (!p.drift_known()) return std::nullopt;
    return std::abs(double(p.drift()));
  };
  std::ranges::stable_sort(ps, [&](const LiveProcess& a, const LiveProcess& b) {
    const std::optional<double> ka = key(a), kb = key(b);
    if (ka.has_value() != kb.has_value()) return ka.has_value();
    if (ka && *ka != *kb) return *ka > *kb;
    return a.pid < b.pid;
  });
}

}  // namespace

void add_live_options(CLI::App& sub, LiveOptions& o) {
  CLI::Option* live = sub.add_flag(
      "--live", o.enabled,
      "Ask the running rssauditd (control socket) instead of the database");
  add_socket_option(sub, o.socket);
  // Live values are the daemon's now: a database or a window means nothing.
  for (const char* name : {"--db", "--since", "--until", "--run"})
    if (CLI::Option* other = sub.get_option_no_throw(name))
      live->excludes(other);
}

void run_top_live(const LiveOptions& live, const QueryOptions& query,
                  const std::string& sort, size_t limit,
                  const TopFilter& filter) {
  const bool filtered = !filter.comm.empty() || !filter.cgroup.empty() ||
                        filter.min_rss_bytes().has_value();
  ProcessesRequest request;
  // The daemon ranks by |drift|: only another order, or a filter, needs
  // every process.
  if (sort == "drift" && !filtered) request.top = limit;
  const json response = ask_daemon(live.socket, Request{request, {}});
  const DaemonHealth h = health_of(response);
  auto list = response.find("processes");
  if (list == response.end() || !list->is_array())
    throw std::runtime_error(
        "rssauditd's response is malformed: processes: expected an array");
  std::vector<LiveProcess> ps;
  size_t nameless = 0;
  for (size_t i = 0; i < list->size(); ++i) {
    LiveProcess p = process_of((*list)[i], fmt::format("processes[{}]", i));
    if (TopFilter::nameless(p.pid, p.comm)) {
      ++nameless;
      continue;
    }
    if (filter.passes(p.comm, p.cgroup,
                      p.kernel_known ? std::optional(p.kernel_rss * h.page_size)
                                     : std::nullopt))
      ps.push_back(std::move(p));
  }
  const auto total = response.find("total");
  const uint64_t audited =
      total != response.end() && total->is_number_unsigned()
          ? total->get<uint64_t>()
          : ps.size();
  rank(ps, sort);
  if (ps.size() > limit) ps.resize(limit);

  if (query.json) {
    json j = source_json(live, h);
    j["total"] = audited;
    j["nameless_processes"] = nameless;
    j["host_rss"] = host_rss_json(host_rss(h));
    j["processes"] = json::array();
    for (const LiveProcess& p : ps)
      j["processes"].push_back(process_json(p, h.page_size));
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("live from rssauditd on {} at {}: {} of {} audited processes\n",
             printable(h.host), local_time_text(h.time_ns), ps.size(), audited);
  const auto host = host_lines(host_rss(h), query.unit());
  fmt::print("host: {}\n      {}\n", host[0], host[1]);
  if (ps.empty()) return;
  if (const std::string note = counting_note(h.counting); !note.empty())
    fmt::print("{}\n", note);
  constexpr std::string_view kRow =
      "{:>7} {:<15} {:>11} {:>11} {:>11} {:>6} {:>10}\n";
  fmt::print(kRow, "PID", "COMM", "KERNEL RSS", "EXACT RSS", "DRIFT", "/BOUND",
             "UPDATES");
  const SizeUnit unit = query.unit();
  bool joined = false, quiet = false;
  for (const LiveProcess& p : ps) {
    auto size = [&](const std::optional<int64_t>& pages, bool sign) {
      return pages ? format_size(*pages, h.page_size, unit, sign) : "-";
    };
    joined |= !p.drift_known();
    quiet |= p.quiet;
    fmt::print(kRow, p.pid, printable(p.comm).substr(0, 15),
               size(kernel_of(p), false), size(exact_of(p), false),
               size(drift_of(p), true), ratio_text(ratio_of(p)),
               p.quiet ? "quiet" : std::to_string(p.updates));
  }
  if (quiet)
    fmt::print(
        "quiet: no update since rssauditd started; kernel RSS from "
        "/proc/PID/stat,\n       exact from /proc/PID/status read right "
        "after\n");
  if (joined)
    fmt::print(
        "-: exact RSS unknown until a snapshot, or a counter not updated "
        "yet\n");
  if (nameless > 0)
    fmt::print("({} processes without a name yet not listed)\n", nameless);
}

void run_show_live(const LiveOptions& live, const QueryOptions& query,
                   const std::string& which) {
  ProcessRequest request;
  const bool is_pid = !which.empty() && which.size() <= 10 &&
                      which.find_first_not_of("0123456789") == which.npos;
  const uint64_t pid = is_pid ? std::stoull(which) : 0;
  if (is_pid && pid >= 1 && pid <= UINT32_MAX)
    request.pid = static_cast<uint32_t>(pid);
  else if (is_pid)
    throw UsageError(fmt::format("'{}' is not a pid", which));
  else
    request.comm = which;
  const json response = ask_daemon(live.socket, Request{request, {}});
  const DaemonHealth h = health_of(response);
  auto it = response.find("process");
  if (it == response.end())
    throw std::runtime_error(
        "rssauditd's response is malformed: process: missing");
  const LiveProcess p = process_of(*it, "process");

  if (query.json) {
    json j = source_json(live, h);
    j.update(process_json(p, h.page_size));
    fmt::print("{}\n", json_text(j));
    return;
  }
  const SizeUnit unit = query.unit();
  auto size = [&](const std::optional<int64_t>& pages, bool sign = false) {
    return pages ? format_size(*pages, h.page_size, unit, sign) : "-";
  };
  fmt::print("pid {} '{}', live from rssauditd on {}, start ticks {}\n", p.pid,
             printable(p.comm), printable(h.host), p.start_ticks);
  if (!p.cgroup.empty()) fmt::print("cgroup {}\n", printable(p.cgroup));
  if (const std::string note = counting_note(h.counting); !note.empty())
    fmt::print("{}\n", note);
  if (p.quiet)
    fmt::print(
        "quiet: no update since rssauditd started; kernel RSS from "
        "/proc/PID/stat,\nexact from /proc/PID/status read right after{}\n",
        p.from_zero ? "" : " (not precise on this kernel: exact unknown)");
  else if (!p.from_zero)
    fmt::print(
        "joined mid-life, no snapshot of its counters yet: exact RSS "
        "unknown\n");
  fmt::print("{} updates, {} flagged; fidelity {}\n\n", p.updates, p.flagged,
             fidelity_text(p.fidelity_matched, p.fidelity_checked));
  const std::optional<double> ratio = ratio_of(p);
  if (p.from_zero && !p.kernel_known)
    fmt::print(
        "a counter not updated since the audit joined: the kernel's "
        "count unknown\n");
  fmt::print("kernel (approximate) RSS:  {}\n", size(kernel_of(p)));
  fmt::print("exact RSS:                 {}\n", size(exact_of(p)));
  fmt::print("drift (kernel - exact):    {}{}\n", size(drift_of(p), true),
             ratio ? fmt::format(" ({:.1f}% of the kernel's RSS bound {})",
                                 100 * *ratio, size(p.rss_bound))
                   : "");
  fmt::print("true peak:                 {}\n", size(peak_of(p)));
  if (p.quiet) {
    fmt::print("\nmodels: none ran, no update was seen\n");
    return;
  }
  fmt::print(
      "\nmodels, largest error of a counter since rssauditd saw the "
      "process:\n");
  constexpr std::string_view kModelRow = "{:<12}{:>14}{:>14}{:>12}\n";
  fmt::print(kModelRow, "scheme", "largest error", "bound/counter",
             "error/bound");
  // Only the kernel's own scheme's bound travels with the live view.
  const int64_t per_counter = p.rss_bound / kRssCounters;
  for (size_t i = 0; i < SchemeSet::kCount; ++i) {
    const bool own = i == kernel_scheme(h.counting == kCountingTaskCache);
    const int64_t e = p.largest_error[i];
    fmt::print(
        kModelRow, SchemeSet::kNames[i], size(e),
        own && per_counter > 0 ? size(per_counter) : "-",
        own && per_counter > 0
            ? fmt::format("{:.1f}%", 100.0 * double(e) / double(per_counter))
            : "-");
  }
}

}  // namespace rssaudit::cli
