#include "core/schemes/reader_tolerance.h"

#include "core/schemes/hpcc_tree.h"
#include "core/schemes/per_task_cache.h"
#include "core/schemes/update.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {
namespace {

std::vector<ReaderTolerance> all_readers() {
  return {
      {"stat", "/proc/PID/stat field 24 (rss)"},
      {"vm_hwm", "VmHWM in /proc/PID/status"},
      {"ru_maxrss", "ru_maxrss, time -v, taskstats"},
      {"status", "VmRSS, Rss* in status; statm"},
  };
}

// The approximate readers (stat, VmHWM, rusage) off by `per_counter` pages
// on each of the RSS counters; status and statm too unless precise.
std::vector<ReaderTolerance> approximate_readers_off_by(
    int64_t per_counter, bool status_precise = true) {
  std::vector<ReaderTolerance> out = all_readers();
  for (ReaderTolerance& r : out) {
    if (r.reader == "status" && status_precise) continue;
    r.rss_pages = kRssCounters * per_counter;
    r.anon_pages = per_counter;
  }
  return out;
}

}  // namespace

std::vector<ReaderTolerance> reader_tolerance(std::string_view scheme,
                                              const Topology& t,
                                              uint32_t threads,
                                              bool status_precise) {
  // count, off by up to (batch - 1) per CPU's slot whatever the threads
  // (a thread leaves its slot behind when it migrates).
  const int64_t upstream = *UpstreamPercpu(t).bound(kAnonPages);
  if (scheme == "upstream")
    return approximate_readers_off_by(upstream, status_precise);
  if (scheme == "sync_query") {
    // Folded before rusage and taskstats read it; stat and VmHWM read a
    // running process as upstream does.
    std::vector<ReaderTolerance> out = approximate_readers_off_by(upstream);
    for (ReaderTolerance& r : out)
      if (r.reader == "ru_maxrss") r.rss_pages = r.anon_pages = 0;
    return out;
  }
  // The lazy schemes are exact until a second thread activates them.
  if (scheme == "lazy_percpu")
    return approximate_readers_off_by(threads > 1 ? upstream : 0);
  if (scheme == "hpcc")
    return approximate_readers_off_by(threads > 1 ? hpcc_bound(t) : 0);
  // Every reader adds the atomics and the caches of the CPUs running the
  // mm: precise, up to lockless-read races, which are not modelled.
  if (scheme == "per_cpu") return all_readers();
  if (scheme == "per_task") {
    // Every reader reads the atomics, without what each thread cached
    // since its last sync: up to kMaxCachedFaults faults each.
    const int64_t faults = int64_t{threads} * PerTaskCache::kMaxCachedFaults;
    std::vector<ReaderTolerance> out = all_readers();
    for (ReaderTolerance& r : out) {
      r.rss_pages = faults * kFaultAroundPages;
      r.anon_pages = faults;
      r.bounded_in_time = false;
    }
    return out;
  }
  return {};
}

}  // namespace rssaudit
