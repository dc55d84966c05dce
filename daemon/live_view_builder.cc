#include "daemon/live_view_builder.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "store/store_rows.h"

namespace rssaudit {

LiveView build_live_view(AuditPipeline& pipeline, DaemonHealth health,
                         const LabelLookup& labels, const QuietLookup& quiet) {
  LiveView view;
  // 0: none (before 6.2 a thread's cache is bounded by its faults, not in
  // time).
  const int64_t bound =
      kernel_rss_bound(health.counting, health.nr_cpus, health.batch)
          .value_or(0);
  view.health = std::move(health);
  pipeline.for_each_live([&](AuditPipeline::LiveMm& mm) {
    const MmSummary& s = mm.summary;
    LiveProcess p;
    p.pid = s.tgid;
    if (auto l = labels(s.key.addr, s.tgid)) {
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
    p.kernel_known = s.kernel_known;
    p.peak_rss = s.peak_rss;
    p.rss_bound = bound;
    p.largest_error = s.largest_error;
    view.processes.push_back(std::move(p));
  });
  std::vector<LiveProcess> idle = quiet(bound);
  view.health.quiet_processes = idle.size();
  std::move(idle.begin(), idle.end(), std::back_inserter(view.processes));
  DaemonHealth& h = view.health;
  for (const LiveProcess& p : view.processes) {
    h.host_worst_case += p.rss_bound;
    if (!p.drift_known()) continue;
    ++h.host_processes_known;
    h.host_kernel_rss += p.kernel_rss;
    h.host_exact_rss += p.exact_rss;
  }
  // Processes whose drift is known first.
  std::stable_sort(view.processes.begin(), view.processes.end(),
                   [](const LiveProcess& a, const LiveProcess& b) {
                     if (a.drift_known() != b.drift_known())
                       return a.drift_known();
                     if (!a.drift_known()) return false;
                     return std::llabs(a.drift()) > std::llabs(b.drift());
                   });
  return view;
}

}  // namespace rssaudit
