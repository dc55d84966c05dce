#include "core/schemes/reader_tolerance.h"

#include "core/schemes/per_task_cache.h"
#include "core/schemes/update.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {

std::vector<ReaderTolerance> reader_tolerance(bool percpu_counter,
                                              const Topology& host,
                                              uint32_t threads) {
  std::vector<ReaderTolerance> out = {
      {"stat", "/proc/PID/stat field 24 (rss)"},
      {"vm_hwm", "VmHWM in /proc/PID/status"},
      {"ru_maxrss", "ru_maxrss, time -v, taskstats"},
      {"status", "VmRSS, Rss* in status; statm"},
  };
  if (percpu_counter) {
    // The approximate readers read count, off by up to (batch - 1) per
    // CPU's slot whatever the threads; status and statm sum the slots.
    const int64_t per_counter = *UpstreamPercpu(host).bound(kAnonPages);
    for (ReaderTolerance& r : out) {
      if (r.reader == "status") continue;
      r.rss_pages = kRssCounters * per_counter;
      r.anon_pages = per_counter;
    }
    return out;
  }
  // Before 6.2 every reader reads the atomics, without what each thread
  // cached since its last sync: up to kMaxCachedFaults faults each.
  const int64_t faults = int64_t{threads} * PerTaskCache::kMaxCachedFaults;
  for (ReaderTolerance& r : out) {
    r.rss_pages = faults * kFaultAroundPages;
    r.anon_pages = faults;
    r.bounded_in_time = false;
  }
  return out;
}

}  // namespace rssaudit
