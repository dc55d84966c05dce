// The rows of the history database (schema/), as the daemon writes them and
// the CLI reads them back. Memory amounts are in pages of the run's page
// size; times are wall-clock nanoseconds since the Unix epoch. An empty
// optional is a source that was not read: stored as NULL, never as 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"
#include "core/schemes/update.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {

// runs.counting: how the audited kernel counted RSS (schema/006).
inline constexpr std::string_view kCountingPercpu = "percpu_counter";
inline constexpr std::string_view kCountingTaskCache = "task_cache";

struct RunInfo {
  std::string host{};
  std::string kernel_release{};
  uint32_t nr_cpus = 0;
  // The percpu_counter batch of rss_stat for these CPUs: the kernel's own
  // since 6.2; before, the one the upstream model uses.
  int32_t batch = 0;
  // kCountingPercpu, or kCountingTaskCache: a kernel before 6.2, whose
  // every reader (status and statm too) shows the atomics only.
  std::string counting{kCountingPercpu};
  // Whether status and statm read the precise RSS, as rssauditd measured
  // it at start (sampler/reader_probe.h); empty: not measured.
  std::optional<bool> status_precise{};
  int64_t page_size = 0;  // bytes
  std::string rssaudit_version{};
  int64_t started_ns = 0;
};

// The kernel's bound on one counter's drift: nr_cpus x (batch - 1) under
// percpu_counter; none before 6.2 (a thread's cache is bounded by its
// faults, not in time). An RSS is kRssCounters such counters.
// Unknown for CPUs or a batch no kernel has (a damaged run row).
inline std::optional<int64_t> kernel_bound_per_counter(
    std::string_view counting, int64_t nr_cpus, int64_t batch) {
  if (counting == kCountingTaskCache || nr_cpus < 1 || nr_cpus > UINT32_MAX ||
      batch < 1 || batch > INT32_MAX)
    return std::nullopt;
  Topology host;
  host.nr_cpus = static_cast<uint32_t>(nr_cpus);
  host.upstream_batch = static_cast<int32_t>(batch);
  return *UpstreamPercpu(host).bound(kAnonPages);
}

// The kernel's bound on an RSS's drift: kRssCounters counters' bounds.
inline std::optional<int64_t> kernel_rss_bound(std::string_view counting,
                                               int64_t nr_cpus, int64_t batch) {
  const auto per_counter = kernel_bound_per_counter(counting, nr_cpus, batch);
  if (!per_counter) return std::nullopt;
  return kRssCounters * *per_counter;
}

// Pids are reused; a pid with its start time is not (within one boot).
struct ProcessIdentity {
  uint32_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22

  bool operator==(const ProcessIdentity&) const = default;
};

// Why a sample's drift is unknown although both of its sources were read
// (samples.drift_unknown, schema/009): the values were not of one moment,
// or lie beyond the kernel's bound, which no drift of one moment can.
enum class DriftUnknown : uint8_t {
  kMoving,       // the counters moved between stat's and status's reads
  kExiting,      // the process was exiting: its counters being torn down
  kBeyondBound,  // |drift| over the run's RSS bound (an anomaly row says so)
};
inline constexpr size_t kDriftUnknownReasons = 3;
// As stored, in DriftUnknown order.
inline constexpr std::array<std::string_view, kDriftUnknownReasons>
    kDriftUnknownNames = {"moving", "exiting", "beyond_bound"};

inline std::string_view drift_unknown_name(DriftUnknown why) {
  return kDriftUnknownNames[static_cast<size_t>(why)];
}
// The reason stored as `name`; empty for a name this build does not know.
inline std::optional<DriftUnknown> drift_unknown_named(std::string_view name) {
  for (size_t i = 0; i < kDriftUnknownReasons; ++i)
    if (kDriftUnknownNames[i] == name) return static_cast<DriftUnknown>(i);
  return std::nullopt;
}
// In plain words, for people reading a report.
inline std::string_view drift_unknown_words(DriftUnknown why) {
  switch (why) {
    case DriftUnknown::kMoving:
      return "the counters moved while /proc was read";
    case DriftUnknown::kExiting:
      return "read while the process exited";
    case DriftUnknown::kBeyondBound:
      return "beyond the kernel's bound, which no drift of one moment can be";
  }
  return "?";
}

// Indexed by Member: file, anon, swap, shmem.
using MemberPages = std::array<std::optional<int64_t>, kMembers>;

struct SampleRow {
  int64_t process_id = 0;
  int64_t time_ns = 0;
  MemberPages approximate{};          // rss_stat counts read by BPF
  std::optional<int64_t> stat_rss{};  // /proc/PID/stat field 24
  MemberPages precise{};              // /proc/PID/status
  std::optional<int64_t> statm_resident{};
  MemberPages exact{};  // the sum of our update stream
  MemberPages walk{};   // smaps_rollup or pagemap walk
  std::optional<int64_t> walk_rss{};
  std::optional<int64_t> vm_hwm{};
  std::optional<int64_t> true_peak{};
  std::optional<int64_t> threads{};
  // Model fidelity over the interval ending here: events at which the
  // upstream model's count was compared with the kernel's, and how many
  // were equal. Empty: not measured (the mm was not seen from creation, or
  // a row from before schema version 2).
  std::optional<int64_t> fidelity_checked{};
  std::optional<int64_t> fidelity_matched{};
  // Set: the sources of the drift were read, yet it is unknown, for this
  // reason (drift_unknown_of()); rss_drift() is then empty.
  std::optional<DriftUnknown> drift_unknown{};

  bool operator==(const SampleRow&) const = default;
};

// file + anon + shmem, as VmRSS counts them, when all three were read.
inline std::optional<int64_t> rss_of(const MemberPages& m) {
  if (!m[kFilePages] || !m[kAnonPages] || !m[kShmemPages]) return {};
  return *m[kFilePages] + *m[kAnonPages] + *m[kShmemPages];
}

// The drift the row's values give, of one moment or not (drift_unknown
// says): the kernel's approximate RSS minus the true one (file + anon +
// shmem, as VmRSS). From the capture when every member of both is known:
// the kernel's count and the exact sum of the updates after the same
// record, as the live view computes it. Else from /proc: stat's rss and
// status's precise values, read back to back (of one moment only while
// stat's count held still: drift_unknown_of()).
// Never the capture against /proc: they are read a drain apart, and a
// process faulting meanwhile shows MiB of difference no counter holds (it
// ranked busy processes at 10x the kernel's bound).
inline std::optional<int64_t> source_drift(const SampleRow& r) {
  if (const auto approximate = rss_of(r.approximate), exact = rss_of(r.exact);
      approximate && exact)
    return *approximate - *exact;
  if (const auto precise = rss_of(r.precise); r.stat_rss && precise)
    return *r.stat_rss - *precise;
  return std::nullopt;
}

// The samples.drift column: source_drift() unless the row says why the
// drift is unknown.
inline std::optional<int64_t> rss_drift(const SampleRow& r) {
  if (r.drift_unknown) return std::nullopt;
  return source_drift(r);
}

// Why the drift of `r` is unknown although its sources were read, or empty
// when it is known (or has no source). `proc_reads`: why its /proc values
// are not of one moment (empty: they are), which matters only where the
// drift is from /proc; the capture's values are always of one moment.
// `rss_bound`: the kernel's bound on |drift| (empty: none, before 6.2). A
// drift beyond it was no drift of one moment, or the kernel is broken: it
// is never stored as drift.
inline std::optional<DriftUnknown> drift_unknown_of(
    const SampleRow& r, std::optional<DriftUnknown> proc_reads,
    std::optional<int64_t> rss_bound) {
  const bool from_capture = rss_of(r.approximate) && rss_of(r.exact);
  const std::optional<int64_t> drift = source_drift(r);
  if (!drift) return std::nullopt;
  if (!from_capture && proc_reads) return proc_reads;
  if (rss_bound && (*drift > *rss_bound || *drift < -*rss_bound))
    return DriftUnknown::kBeyondBound;
  return std::nullopt;
}

// The RSS the kernel's approximate readers showed at the moment rss_drift()
// measured: the capture's count when the drift is the capture's, else
// stat's. Its exact counterpart is readers_rss() - rss_drift().
inline std::optional<int64_t> readers_rss(const SampleRow& r) {
  if (const auto approximate = rss_of(r.approximate);
      approximate && rss_of(r.exact))
    return approximate;
  return r.stat_rss;
}

struct ModelErrorRow {
  int64_t process_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  size_t scheme = 0;  // index into SchemeSet::kNames
  int64_t largest_error = 0;
  std::optional<int64_t> bound{};  // empty: the scheme has no bound
  uint64_t shared_updates = 0;
  int64_t bytes_per_mm = 0;
  // Cache lines one read of a counter touches (schema/007); empty: a row
  // from before it, which did not measure it.
  std::optional<ReadCost> read_cost{};
};

struct AnomalyRow {
  std::optional<int64_t> process_id{};  // empty: not one process's
  int64_t time_ns = 0;
  std::string kind{};  // "exit_residue", ...
  std::string detail{};
};

// Time a run did not sample (schema/009): the tick at `end_ns` came more
// than twice the sample interval after the one at `start_ns` (the daemon
// was stopped, or stalled). No sample lies strictly between them.
struct SamplingGap {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Counts since the previous LossRow of the run.
struct LossRow {
  int64_t time_ns = 0;
  uint64_t capture_drops = 0;  // refused by a full stream, or never published
  uint64_t unreadable_files = 0;
  uint64_t ambiguous_events = 0;
};

}  // namespace rssaudit
