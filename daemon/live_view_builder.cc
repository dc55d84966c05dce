#include "daemon/live_view_builder.h"

#include <algorithm>
#include <cstdlib>

namespace rssaudit {

LiveView build_live_view(AuditPipeline& pipeline, DaemonHealth health,
                         const LabelLookup& labels) {
  LiveView view;
  // The upstream bound on an RSS sum: file, anon and shmem counters, each
  // off by at most nr_cpus * (batch - 1) pages.
  const int64_t bound =
      3 * int64_t{health.nr_cpus} * std::max<int64_t>(0, health.batch - 1);
  view.health = std::move(health);
  pipeline.for_each_live([&](AuditPipeline::LiveMm& mm) {
    const MmSummary& s = mm.summary;
    LiveProcess p;
    p.pid = s.tgid;
    if (auto l = labels(s.key.addr)) {
      p.start_ticks = l->start_ticks;
      p.comm = std::move(l->comm);
      p.cgroup = std::move(l->cgroup);
    }
    p.from_zero = s.absolute;
    p.updates = s.updates;
    p.flagged = s.flagged;
    p.fidelity_checked = s.fidelity_checked;
    p.fidelity_matched = s.fidelity_matched;
    p.exact_rss = s.exact_rss;
    p.kernel_rss = s.kernel_rss;
    p.peak_rss = s.peak_rss;
    p.bound = bound;
    p.largest_error = s.largest_error;
    view.processes.push_back(std::move(p));
  });
  // Processes with absolute values first: the others' drift is unknown.
  std::stable_sort(view.processes.begin(), view.processes.end(),
                   [](const LiveProcess& a, const LiveProcess& b) {
                     if (a.from_zero != b.from_zero) return a.from_zero;
                     return std::llabs(a.drift()) > std::llabs(b.drift());
                   });
  return view;
}

}  // namespace rssaudit
