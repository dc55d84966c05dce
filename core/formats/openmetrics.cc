#include "core/formats/openmetrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace rssaudit {
namespace {

enum class Type { kGauge, kCounter, kInfo };

// One metric family, named as OpenMetrics names it: a counter's family lacks
// the `_total` its samples carry, an info family the `_info`.
struct Family {
  std::string_view name;
  Type type;
  std::string_view unit;  // the name's last component, or "" (a count)
  std::string_view help;  // no quotes or backslashes: same text in both formats
  std::vector<std::pair<std::string, std::string>> samples{};  // labels, value
};

// Replaces every byte that is not part of valid UTF-8 with U+FFFD: both
// formats are UTF-8, and a comm is whatever bytes a process chose.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80         ? 1
                 : (b >> 5) == 6  ? 2
                 : (b >> 4) == 14 ? 3
                 : (b >> 3) == 30 ? 4
                                  : 0;
    bool ok = len != 0 && i + len <= s.size();
    uint32_t cp = len == 1   ? b
                  : len == 2 ? b & 0x1f
                  : len == 3 ? b & 0x0f
                             : b & 0x07;
    for (size_t k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      ok = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10ffff && (cp >> 11) != 0x1b;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

std::string escape_label_value(std::string_view raw) {
  std::string out;
  for (char c : valid_utf8(raw)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

using Labels = std::vector<std::pair<std::string_view, std::string>>;

std::string render_labels(const Labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  for (const auto& [name, value] : labels) {
    if (out.size() > 1) out += ',';
    out += fmt::format("{}=\"{}\"", name, escape_label_value(value));
  }
  return out + "}";
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);  // shortest round-trip form, no locale
}
std::string number(int64_t v) { return fmt::format("{}", v); }
std::string number(uint64_t v) { return fmt::format("{}", v); }

uint64_t magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v)
               : static_cast<uint64_t>(v);
}

// Aggregates of one group of processes, in pages.
struct Group {
  std::string name;
  uint64_t known = 0;  // members whose drift is known: the sums are theirs
  int64_t drift = 0;
  int64_t kernel_rss = 0;
  int64_t exact_rss = 0;
  uint64_t largest = 0;           // largest |drift| of a member
  int64_t bound = 0;              // 0: no member has one (a kernel before 6.2)
  std::optional<double> ratio{};  // largest |drift| / bound of a member
  uint64_t checked = 0;
  uint64_t matched = 0;
  uint64_t processes = 0;

  void add(const LiveProcess& p) {
    checked += p.fidelity_checked;
    matched += p.fidelity_matched;
    ++processes;
    // Without absolute values (joined mid-life, no snapshot yet) the
    // drift is unknown: left out, never a made-up number.
    if (!p.drift_known()) return;
    ++known;
    drift += p.drift();
    kernel_rss += p.kernel_rss;
    exact_rss += p.exact_rss;
    largest = std::max(largest, magnitude(p.drift()));
    bound += p.rss_bound;
    if (p.rss_bound > 0) {
      const double r = static_cast<double>(magnitude(p.drift())) /
                       static_cast<double>(p.rss_bound);
      ratio = std::max(ratio.value_or(r), r);
    }
  }
  void fold(const Group& g) {
    known += g.known;
    drift += g.drift;
    kernel_rss += g.kernel_rss;
    exact_rss += g.exact_rss;
    largest = std::max(largest, g.largest);
    bound += g.bound;
    if (g.ratio) ratio = std::max(ratio.value_or(*g.ratio), *g.ratio);
    checked += g.checked;
    matched += g.matched;
    processes += g.processes;
  }
};

std::optional<double> fidelity(uint64_t checked, uint64_t matched) {
  if (checked == 0) return std::nullopt;
  return static_cast<double>(matched) / static_cast<double>(checked);
}

// The comm or cgroup a process is grouped under, as rendered; empty while
// the daemon has not read it (such a process is in no group).
std::string group_key(const LiveProcess& p, const MetricsOptions& options) {
  // Keyed as rendered: two names that differ only in invalid bytes are one
  // label value, so they must be one group.
  return valid_utf8(options.group_by == GroupBy::kComm ? p.comm : p.cgroup);
}

// The top_n groups by largest |drift| (ties by name, so scrapes are stable),
// then, if any group was left, their fold.
std::vector<Group> ranked_groups(const LiveView& view,
                                 const MetricsOptions& options) {
  std::map<std::string, Group> by_name;
  for (const auto& p : view.processes) {
    std::string key = group_key(p, options);
    if (key.empty()) continue;
    auto& g = by_name[key];
    g.name = std::move(key);
    g.add(p);
  }
  std::vector<Group> groups;
  for (auto& [_, g] : by_name) groups.push_back(std::move(g));
  std::stable_sort(
      groups.begin(), groups.end(),
      [](const Group& a, const Group& b) { return a.largest > b.largest; });
  if (groups.size() <= options.top_n) return groups;
  Group other{.name = "other"};
  for (size_t i = options.top_n; i < groups.size(); ++i) other.fold(groups[i]);
  groups.resize(options.top_n);
  groups.push_back(std::move(other));
  return groups;
}

// The process_series processes by |drift| among those with absolute values,
// one series set each; none unless asked (a pid label churns series). A
// (pid, comm) seen twice (an exec caught between its old and new mm) keeps
// its larger drift: two series with one label set would fail the scrape.
std::vector<const LiveProcess*> ranked_processes(
    const LiveView& view, const MetricsOptions& options) {
  std::vector<const LiveProcess*> all;
  for (const auto& p : view.processes)
    if (p.drift_known() && !p.comm.empty()) all.push_back(&p);
  std::stable_sort(all.begin(), all.end(), [](auto* a, auto* b) {
    return magnitude(a->drift()) > magnitude(b->drift());
  });
  std::vector<const LiveProcess*> top;
  std::set<std::pair<uint32_t, std::string_view>> seen;
  for (auto* p : all) {
    if (top.size() >= options.process_series) break;
    if (seen.emplace(p->pid, p->comm).second) top.push_back(p);
  }
  return top;
}

class Builder {
 public:
  Family& family(std::string_view name, Type type, std::string_view unit,
                 std::string_view help) {
    families_.push_back(Family{name, type, unit, help});
    return families_.back();
  }
  const std::deque<Family>& families() const { return families_; }

 private:
  std::deque<Family> families_;  // a deque: family() references stay valid
};

void add(Family& f, const Labels& labels, std::string value) {
  f.samples.emplace_back(render_labels(labels), std::move(value));
}

// Memory as Prometheus wants it, in bytes: `pages` of `page_size`.
std::string bytes(int64_t pages, int64_t page_size) {
  return number(pages * page_size);
}
std::string bytes(uint64_t pages, int64_t page_size) {
  return number(pages * static_cast<uint64_t>(page_size));
}

void add_groups(Builder& b, const LiveView& view,
                const MetricsOptions& options) {
  const int64_t page = view.health.page_size;
  const auto groups = ranked_groups(view, options);
  const std::string_view key =
      options.group_by == GroupBy::kComm ? "comm" : "cgroup";
  auto& drift = b.family("rssaudit_group_drift_bytes", Type::kGauge, "bytes",
                         "Summed approximate minus exact RSS of the group's "
                         "processes whose drift is known (absent if none).");
  auto& kernel =
      b.family("rssaudit_group_kernel_rss_bytes", Type::kGauge, "bytes",
               "Summed RSS of the same processes as the kernel's "
               "approximate readers (stat, ru_maxrss) show it.");
  auto& exact = b.family("rssaudit_group_exact_rss_bytes", Type::kGauge,
                         "bytes", "Summed exact RSS of the same processes.");
  auto& largest =
      b.family("rssaudit_group_largest_drift_bytes", Type::kGauge, "bytes",
               "Largest absolute drift of a process in the group.");
  auto& bound =
      b.family("rssaudit_group_rss_bound_bytes", Type::kGauge, "bytes",
               "Summed RSS bound of the same processes: 3 counters x CPUs x "
               "(batch - 1) pages each (absent before Linux 6.2: no bound).");
  auto& ratio =
      b.family("rssaudit_group_drift_to_rss_bound_ratio", Type::kGauge, "",
               "Largest absolute drift over its RSS bound of a "
               "process in the group.");
  auto& fid = b.family("rssaudit_group_fidelity_ratio", Type::kGauge, "",
                       "Share of checks at which the model of the kernel's "
                       "own scheme equalled the kernel count.");
  auto& count = b.family("rssaudit_group_processes", Type::kGauge, "",
                         "Audited processes in the group.");
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    Labels labels{{key, g.name}};
    // The fold is told apart from a real group that happens to be named
    // "other" by one more label; otherwise the two would collide.
    if (i >= options.top_n) labels.emplace_back("folded", "true");
    if (g.known > 0) {
      add(drift, labels, bytes(g.drift, page));
      add(kernel, labels, bytes(g.kernel_rss, page));
      add(exact, labels, bytes(g.exact_rss, page));
      add(largest, labels, bytes(g.largest, page));
    }
    if (g.bound > 0) add(bound, labels, bytes(g.bound, page));
    if (g.ratio) add(ratio, labels, number(*g.ratio));
    if (auto f = fidelity(g.checked, g.matched)) add(fid, labels, number(*f));
    add(count, labels, number(g.processes));
  }
}

void add_processes(Builder& b, const LiveView& view,
                   const MetricsOptions& options) {
  const int64_t page = view.health.page_size;
  auto& drift =
      b.family("rssaudit_process_drift_bytes", Type::kGauge, "bytes",
               "Approximate minus exact RSS, for the processes with the "
               "largest absolute drift (--metrics-processes).");
  auto& bound =
      b.family("rssaudit_process_rss_bound_bytes", Type::kGauge, "bytes",
               "The kernel's RSS bound on the drift: 3 counters x "
               "CPUs x (batch - 1) pages (absent before Linux 6.2: no "
               "bound).");
  auto& kernel =
      b.family("rssaudit_process_kernel_rss_bytes", Type::kGauge, "bytes",
               "RSS as the kernel's approximate readers show it.");
  auto& exact = b.family("rssaudit_process_exact_rss_bytes", Type::kGauge,
                         "bytes", "RSS from the audited update stream.");
  auto& fid = b.family("rssaudit_process_fidelity_ratio", Type::kGauge, "",
                       "Share of checks at which the model of the kernel's "
                       "own scheme equalled the kernel count.");
  for (const auto* p : ranked_processes(view, options)) {
    const Labels labels{{"pid", number(uint64_t{p->pid})}, {"comm", p->comm}};
    add(drift, labels, bytes(p->drift(), page));
    if (p->rss_bound > 0) add(bound, labels, bytes(p->rss_bound, page));
    add(kernel, labels, bytes(p->kernel_rss, page));
    add(exact, labels, bytes(p->exact_rss, page));
    if (auto f = fidelity(p->fidelity_checked, p->fidelity_matched)) {
      add(fid, labels, number(*f));
    }
  }
}

// Per counting scheme, the largest error of a counter any live audited
// process has seen: what each scheme's readers would have been off by.
void add_schemes(Builder& b, const LiveView& view) {
  auto& error = b.family(
      "rssaudit_scheme_largest_error_bytes", Type::kGauge, "bytes",
      "Largest |approximate - exact| of one counter under each counting "
      "scheme, over the audited processes (docs/counters.md).");
  std::array<std::optional<int64_t>, SchemeSet::kCount> largest{};
  for (const LiveProcess& p : view.processes) {
    if (p.quiet) continue;  // no model ran for it
    for (size_t i = 0; i < SchemeSet::kCount; ++i)
      largest[i] = std::max(largest[i].value_or(0), p.largest_error[i]);
  }
  for (size_t i = 0; i < SchemeSet::kCount; ++i)
    if (largest[i])
      add(error, {{"scheme", std::string(SchemeSet::kNames[i])}},
          bytes(*largest[i], view.health.page_size));
}

void add_health(Builder& b, const LiveView& view,
                const MetricsOptions& options) {
  const auto& h = view.health;
  const int64_t page = h.page_size;
  const Labels none;
  add(b.family("rssaudit_events", Type::kCounter, "",
               "Records consumed from the capture since the daemon started."),
      none, number(h.events));
  add(b.family("rssaudit_events_per_second", Type::kGauge, "",
               "Records consumed per second over the last sampling "
               "interval."),
      none, number(h.events_per_s));
  Family& drops = b.family(
      "rssaudit_capture_drops", Type::kCounter, "",
      "Records lost in capture, by cause: stream_full (a CPU's stream was "
      "full), unpublished (a number taken and never published), "
      "unexpanded (repeats of a record that could not be handed over), "
      "missed_runs (runs of an update program the kernel skipped).");
  for (const CaptureCause& cause : kCaptureCauses)
    add(drops, Labels{{"cause", cause.name}}, number(h.drops.*cause.count));
  add(b.family("rssaudit_ambiguous_updates", Type::kCounter, "",
               "Updates flagged as ambiguous instead of guessed."),
      none, number(h.ambiguous));
  add(b.family("rssaudit_capture_losses", Type::kCounter, "",
               "Places in the capture where records were lost: each makes "
               "every audited value unknown until re-established."),
      none, number(h.losses));
  add(b.family("rssaudit_lag_seconds", Type::kGauge, "seconds",
               "How far the audit is behind the kernel: every record "
               "published before this many seconds ago was consumed."),
      none, number(h.lag_s));
  add(b.family("rssaudit_loop_delay_seconds", Type::kGauge, "seconds",
               "The longest the daemon's loop kept a query, scrape or "
               "signal waiting over the last minute."),
      none, number(h.loop_delay_s));
  auto& cost =
      b.family("rssaudit_bpf_event_cost_seconds", Type::kGauge, "seconds",
               "Kernel-side run time of the capture programs per "
               "event (needs kernel.bpf_stats_enabled).");
  if (h.bpf_ns_per_event) add(cost, none, number(*h.bpf_ns_per_event / 1e9));
  add(b.family("rssaudit_fidelity_checks", Type::kCounter, "",
               "Updates at which the model of the kernel's own scheme "
               "(upstream; before Linux 6.2 per_task) was compared with the "
               "kernel count."),
      none, number(h.fidelity_checked));
  add(b.family("rssaudit_fidelity_matches", Type::kCounter, "",
               "Compared updates at which the model equalled the kernel "
               "count."),
      none, number(h.fidelity_matched));
  auto& fid = b.family("rssaudit_fidelity_ratio", Type::kGauge, "",
                       "Share of compared updates at which the model "
                       "equalled the kernel count.");
  if (auto f = fidelity(h.fidelity_checked, h.fidelity_matched)) {
    add(fid, none, number(*f));
  }
  add(b.family("rssaudit_live_mms", Type::kGauge, "",
               "Address spaces the audit tracks now."),
      none, number(h.live_mms));
  add(b.family("rssaudit_quiet_processes", Type::kGauge, "",
               "Processes audited from /proc alone: no RSS update since "
               "the capture started."),
      none, number(h.quiet_processes));
  uint64_t ungrouped = 0;
  for (const LiveProcess& p : view.processes)
    ungrouped += group_key(p, options).empty() ? 1 : 0;
  add(b.family("rssaudit_ungrouped_processes", Type::kGauge, "",
               "Audited processes in no group: their comm (or cgroup) not "
               "read yet."),
      none, number(ungrouped));
  add(b.family("rssaudit_host_kernel_rss_bytes", Type::kGauge, "bytes",
               "Summed RSS as the kernel's approximate readers see it, of "
               "the processes whose drift is known."),
      none, bytes(h.host_kernel_rss, page));
  add(b.family("rssaudit_host_exact_rss_bytes", Type::kGauge, "bytes",
               "Summed exact RSS of the same processes."),
      none, bytes(h.host_exact_rss, page));
  add(b.family("rssaudit_host_drift_known_processes", Type::kGauge, "",
               "Processes in those sums."),
      none, number(h.host_processes_known));
  if (h.host_worst_case > 0)
    add(b.family("rssaudit_host_worst_case_drift_bytes", Type::kGauge, "bytes",
                 "Summed RSS bound of every audited process: how far the "
                 "readers' host total could be off (absent before 6.2)."),
        none, bytes(h.host_worst_case, page));
  auto& unknown = b.family(
      "rssaudit_drift_unknown_samples", Type::kCounter, "",
      "History samples whose drift is unknown although both sources were "
      "read, by reason: moving (the counters moved while /proc was read), "
      "exiting (read during the process's exit), beyond_bound (beyond the "
      "kernel's bound, which no drift of one moment can be: an anomaly).");
  add(unknown, {{"reason", "moving"}}, number(h.drift_unknown_moving));
  add(unknown, {{"reason", "exiting"}}, number(h.drift_unknown_exiting));
  add(unknown, {{"reason", "beyond_bound"}}, number(h.drift_beyond_bound));
  add(b.family("rssaudit_audited_processes", Type::kGauge, "",
               "Processes in this snapshot, before the top-N cut."),
      none, number(uint64_t{view.processes.size()}));
  add(b.family("rssaudit_store_ok", Type::kGauge, "",
               "1 while the history database is written and no row of it "
               "was dropped, else 0."),
      none, number(int64_t{h.store_ok() ? 1 : 0}));
  add(b.family("rssaudit_store_dropped_rows", Type::kCounter, "",
               "History rows dropped, the oldest first, while flushes "
               "failed."),
      none, number(h.store_dropped_rows));
  add(b.family("rssaudit_store_pending_rows", Type::kGauge, "",
               "History rows waiting for a flush."),
      none, number(h.store_pending_rows));
  add(b.family("rssaudit_store_file_bytes", Type::kGauge, "bytes",
               "Size of the history database's files on disk (with its "
               "-wal)."),
      none, number(h.store_file_bytes));
  add(b.family("rssaudit_store_used_bytes", Type::kGauge, "bytes",
               "Bytes of the history database's pages that hold data."),
      none, number(h.store_used_bytes));
  if (h.store_cap_bytes > 0)
    add(b.family("rssaudit_store_cap_bytes", Type::kGauge, "bytes",
                 "The size retention keeps the history's data under."),
        none, number(h.store_cap_bytes));
  auto& growth = b.family(
      "rssaudit_store_growth_bytes_per_second", Type::kGauge, "",
      "Data the flushes added to the history per second, over the last "
      "hour (before retention deletes any).");
  if (h.store_growth_bytes_per_s)
    add(growth, none, number(*h.store_growth_bytes_per_s));
  add(b.family("rssaudit_sampling_gaps", Type::kCounter, "",
               "Sampling ticks more than twice the interval late (the "
               "daemon stopped or stalled), each recorded as a gap."),
      none, number(h.sampling_gaps));
  add(b.family("rssaudit_uptime_seconds", Type::kGauge, "seconds",
               "Time since the daemon started."),
      none, number(h.uptime_s));
  add(b.family("rssaudit_page_size_bytes", Type::kGauge, "bytes",
               "Bytes per page of the audited kernel."),
      none, number(h.page_size));
  add(b.family("rssaudit_cpus", Type::kGauge, "",
               "CPUs of the host, as the kernel counts them."),
      none, number(uint64_t{h.nr_cpus}));
  auto& batch = b.family("rssaudit_rss_stat_batch", Type::kGauge, "",
                         "The kernel's percpu_counter batch for rss_stat.");
  if (h.batch > 0) add(batch, none, number(int64_t{h.batch}));
  add(b.family("rssaudit_build", Type::kInfo, "", "rssaudit build."),
      {{"version", options.version}}, "1");
  add(b.family("rssaudit_host", Type::kInfo, "", "The audited host."),
      {{"host", h.host},
       {"kernel_release", h.kernel_release},
       {"counting", h.counting}},
      "1");
}

std::deque<Family> build(const LiveView& view, const MetricsOptions& options) {
  Builder b;
  add_health(b, view, options);
  add_groups(b, view, options);
  add_processes(b, view, options);
  add_schemes(b, view);
  return b.families();
}

std::string escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string_view type_name(Type t, ExpositionFormat format) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kInfo:
      // 0.0.4 has no info type: the usual stand-in is a gauge of 1.
      return format == ExpositionFormat::kOpenMetrics ? "info" : "gauge";
    case Type::kGauge:
      break;
  }
  return "gauge";
}

std::string_view sample_suffix(Type t) {
  return t == Type::kCounter ? "_total" : t == Type::kInfo ? "_info" : "";
}

std::string write(const std::deque<Family>& families, ExpositionFormat format) {
  const bool om = format == ExpositionFormat::kOpenMetrics;
  std::string out;
  for (const auto& f : families) {
    if (f.samples.empty()) continue;
    const std::string sample_name =
        fmt::format("{}{}", f.name, sample_suffix(f.type));
    // In 0.0.4 a family is named as its samples are.
    const std::string_view family_name = om ? f.name : sample_name;
    out += fmt::format("# HELP {} {}\n", family_name, escape_help(f.help));
    out +=
        fmt::format("# TYPE {} {}\n", family_name, type_name(f.type, format));
    if (om && !f.unit.empty()) {
      out += fmt::format("# UNIT {} {}\n", family_name, f.unit);
    }
    for (const auto& [labels, value] : f.samples) {
      out += fmt::format("{}{} {}\n", sample_name, labels, value);
    }
  }
  if (om) out += "# EOF\n";
  return out;
}

// Lower-cased, surrounding blanks removed: media types and parameter names
// are case-insensitive.
std::string trimmed_lower(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = s.find(sep);
    parts.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

}  // namespace

std::string_view content_type(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

ExpositionFormat negotiate_format(std::string_view accept) {
  // The q of the best explicit range for each format; wildcards alone mean
  // a generic client (curl, a browser), which gets the text format.
  double q_om = 0;
  double q_text = 0;
  for (std::string_view range : split(accept, ',')) {
    const auto parts = split(range, ';');
    const std::string type = trimmed_lower(parts.front());
    double q = 1;
    std::string version;
    for (size_t i = 1; i < parts.size(); ++i) {
      const std::string param = trimmed_lower(parts[i]);
      if (param.starts_with("q=")) {
        // A malformed q reads as 0: never throws.
        q = std::strtod(param.c_str() + 2, nullptr);
      } else if (param.starts_with("version=")) {
        version = param.substr(8);
      }
    }
    if (type == "application/openmetrics-text" &&
        (version.empty() || version == "1.0.0")) {
      q_om = std::max(q_om, q);
    } else if (type == "text/plain" &&
               (version.empty() || version == "0.0.4")) {
      q_text = std::max(q_text, q);
    }
  }
  return q_om > 0 && q_om >= q_text ? ExpositionFormat::kOpenMetrics
                                    : ExpositionFormat::kPrometheusText;
}

std::string render_openmetrics(const LiveView& view,
                               const MetricsOptions& options) {
  return write(build(view, options), ExpositionFormat::kOpenMetrics);
}

std::string render_prometheus_text(const LiveView& view,
                                   const MetricsOptions& options) {
  return write(build(view, options), ExpositionFormat::kPrometheusText);
}

std::string render_metrics(const LiveView& view, const MetricsOptions& options,
                           ExpositionFormat format) {
  return write(build(view, options), format);
}

}  // namespace rssaudit
