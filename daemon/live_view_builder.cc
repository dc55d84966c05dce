#include "daemon/live_view_builder.h"

#include <algorithm>
#include <cstdlib>

#include "store/store_rows.h"

namespace rssaudit {

LiveView build_live_view(AuditPipeline& pipeline, DaemonHealth health,
                         const LabelLookup& labels, const QuietLookup& quiet,
                         const LabelScope& scope) {
  // 0: none (before 6.2 a thread's cache is bounded by its faults, not in
  // time).
  const int64_t bound =
      kernel_rss_bound(health.counting, health.nr_cpus, health.batch)
          .value_or(0);
  // Each process with its mm's address (0: a quiet one, labelled already),
  // so that only the ranked ones the scope names are labelled.
  struct Ranked {
    LiveProcess p;
    uint64_t mm = 0;
  };
  std::vector<Ranked> all;
  all.reserve(pipeline.live_mms());
  pipeline.for_each_live([&](AuditPipeline::LiveMm& mm) {
    const MmSummary& s = mm.summary;
    LiveProcess p;
    p.pid = s.tgid;
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
    all.push_back({std::move(p), s.key.addr});
  });
  std::vector<LiveProcess> idle = quiet(bound);
  health.quiet_processes = idle.size();
  for (LiveProcess& p : idle) all.push_back({std::move(p), 0});
  for (const Ranked& r : all) {
    const LiveProcess& p = r.p;
    health.host_worst_case += p.rss_bound;
    if (!p.drift_known()) continue;
    ++health.host_processes_known;
    health.host_kernel_rss += p.kernel_rss;
    health.host_exact_rss += p.exact_rss;
  }
  // Processes whose drift is known first.
  std::stable_sort(all.begin(), all.end(),
                   [](const Ranked& ra, const Ranked& rb) {
                     const LiveProcess& a = ra.p;
                     const LiveProcess& b = rb.p;
                     if (a.drift_known() != b.drift_known())
                       return a.drift_known();
                     if (!a.drift_known()) return false;
                     return std::llabs(a.drift()) > std::llabs(b.drift());
                   });
  LiveView view;
  view.health = std::move(health);
  view.processes.reserve(all.size());
  for (size_t rank = 0; rank < all.size(); ++rank) {
    Ranked& r = all[rank];
    if (r.mm != 0 && scope.names(rank, r.p.pid))
      if (auto l = labels(r.mm, r.p.pid)) {
        r.p.start_ticks = l->start_ticks;
        r.p.comm = std::move(l->comm);
        r.p.cgroup = std::move(l->cgroup);
      }
    view.processes.push_back(std::move(r.p));
  }
  return view;
}

}  // namespace rssaudit
