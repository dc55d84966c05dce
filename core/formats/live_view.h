// A snapshot of the running daemon's audit, built on request (a control
// socket query, a metrics scrape), never per event. One type for every
// consumer: the control socket serialises it as JSON, the metrics endpoint
// as OpenMetrics, the CLI reads it back. Memory amounts are in pages of
// `DaemonHealth::page_size`.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/capture_losses.h"
#include "core/schemes/scheme_set.h"

namespace rssaudit {

struct DaemonHealth {
  int64_t time_ns = 0;  // wall clock of the snapshot, ns since the epoch
  double uptime_s = 0;
  std::string host{};
  std::string kernel_release{};
  uint32_t nr_cpus = 0;
  int32_t batch = 0;  // the kernel's percpu_counter batch for rss_stat
  // How the kernel counts RSS: "percpu_counter" (6.2+) or "task_cache"
  // (before: every reader, status too, sees the atomics only).
  std::string counting{"percpu_counter"};
  // Whether status and statm read the precise RSS, measured at start;
  // empty: the probe could not tell.
  std::optional<bool> status_precise;
  int64_t page_size = 4096;
  uint64_t events = 0;      // capture records consumed since start
  double events_per_s = 0;  // over the last sampling interval
  CaptureLosses drops;      // records lost in capture, by cause
  uint64_t ambiguous = 0;   // updates flagged instead of guessed
  // Places in the stream where records were lost: each voids what was
  // known of every mm until re-established.
  uint64_t losses = 0;
  // How far behind the kernel the audit is: every record published
  // before this many seconds ago has been handed over.
  double lag_s = 0;
  // The longest the daemon's loop kept a query, scrape or signal waiting
  // over the last minute.
  double loop_delay_s = 0;
  // Kernel-side cost of the capture programs, when kernel.bpf_stats_enabled
  // is on (empty otherwise: never a made-up number).
  std::optional<double> bpf_ns_per_event{};
  uint64_t fidelity_checked = 0;  // events compared with the kernel's count
  uint64_t fidelity_matched = 0;
  uint64_t live_mms = 0;
  uint64_t quiet_processes = 0;  // audited from /proc: no update yet
  // The host: over the audited processes whose drift is known, the sum of
  // their RSS as the kernel's approximate readers see it and the exact
  // sum; and the worst case over every audited process, each off by its
  // RSS bound (0: no bound, before 6.2).
  uint64_t host_processes_known = 0;
  int64_t host_kernel_rss = 0;
  int64_t host_exact_rss = 0;
  int64_t host_worst_case = 0;
  // History samples since start whose drift is unknown although both of
  // its sources were read: the counters moved while /proc was read, the
  // process was exiting, or the drift lay beyond the kernel's bound (no
  // drift of one moment can: each is an anomaly row).
  uint64_t drift_unknown_moving = 0;
  uint64_t drift_unknown_exiting = 0;
  uint64_t drift_beyond_bound = 0;
  std::string store_error{};  // empty while the history is being written
  // History rows dropped since start (the oldest, while flushes failed),
  // and rows waiting for a flush.
  uint64_t store_dropped_rows = 0;
  uint64_t store_pending_rows = 0;
  // The database's files on disk (with its -wal), the bytes holding data,
  // and the size cap retention keeps the data under (0: none).
  uint64_t store_file_bytes = 0;
  uint64_t store_used_bytes = 0;
  uint64_t store_cap_bytes = 0;
  // What the flushes added to the data per second over the last hour (or
  // since start); empty before a minute of it was measured.
  std::optional<double> store_growth_bytes_per_s{};
  // Sampling ticks that came more than twice the interval late since start
  // (the daemon stopped or stalled), each a sampling_gaps row.
  uint64_t sampling_gaps = 0;

  // The history is written, and nothing of it was lost.
  bool store_ok() const {
    return store_error.empty() && store_dropped_rows == 0;
  }
};

// One audited process (one mm, the thread group's).
struct LiveProcess {
  uint32_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22; 0 if never sampled
  std::string comm{};
  std::string cgroup{};  // cgroup v2 path, "" if unknown
  // Exact values are absolute (seen from creation, or since a snapshot);
  // otherwise exact_rss, peak_rss and drift() are unknown.
  bool from_zero = false;
  // No update since the capture started (its mm is not in the audit): the
  // kernel's RSS is /proc/PID/stat's, the exact one /proc/PID/status's read
  // right after (precise since 6.2, and nothing moved), the peak unknown.
  bool quiet = false;
  uint64_t updates = 0;
  uint64_t flagged = 0;
  uint64_t fidelity_checked = 0;
  uint64_t fidelity_matched = 0;
  int64_t exact_rss = 0;   // the sum of the update stream
  int64_t kernel_rss = 0;  // the kernel's approximate count
  // The kernel's count of every RSS member was seen (from creation, or an
  // update since the capture started); else kernel_rss is partial.
  bool kernel_known = false;
  int64_t peak_rss = 0;  // true peak
  // The kernel's bound on |kernel_rss - exact_rss|, the RSS bound: three
  // counters (file, anon, shmem) of nr_cpus * (batch - 1) each under
  // percpu_counter; 0: none (before 6.2 a thread's cache is bounded by its
  // faults, not in time).
  int64_t rss_bound = 0;
  std::array<int64_t, SchemeSet::kCount> largest_error{};  // kNames order

  bool drift_known() const { return from_zero && kernel_known; }
  int64_t drift() const { return kernel_rss - exact_rss; }
};

// The processes of a view its reader names, and so needs labelled (pid's
// start time, comm, cgroup): a process not recorded yet costs a /proc read
// for them, which a health query of thousands of processes should not pay.
// Every process counts in the health's host totals either way.
struct LabelScope {
  size_t top = std::numeric_limits<size_t>::max();  // the first `top` by rank
  std::optional<uint32_t> pid{};                    // and each of this pid

  bool names(size_t rank, uint32_t p) const {
    return rank < top || (pid && *pid == p);
  }
};

struct LiveView {
  DaemonHealth health{};
  // Those with absolute values first, each part by |drift|, largest first;
  // labelled as far as the view's LabelScope named them.
  std::vector<LiveProcess> processes{};
};

}  // namespace rssaudit
