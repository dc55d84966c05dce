#include "daemon/live_view_builder.h"

#include <gtest/gtest.h>

#include <vector>

namespace rssaudit {
namespace {

// Three processes seen from creation, pid 10 * n with drift -n pages (the
// kernel's count lags n pages behind n * 10 faulted in).
void add_processes(AuditPipeline& p) {
  for (uint32_t n = 1; n <= 3; ++n) {
    const MmKey mm{0x1000 * n, n};
    p.on_mm_created(mm, true);
    Update u;
    u.delta = int32_t(10 * n);
    UpdateInfo info;
    info.tgid = 10 * n;
    info.kernel_count = 9 * n;
    p.on_update(mm, u, info);
  }
}

DaemonHealth health() {
  DaemonHealth h;
  h.nr_cpus = 2;
  h.batch = 32;
  return h;
}

struct Built {
  LiveView view;
  std::vector<uint32_t> labelled;  // the pids asked, in order
};

Built build(AuditPipeline& p, const LabelScope& scope) {
  Built b;
  b.view = build_live_view(
      p, health(),
      [&](uint64_t, uint32_t tgid) -> std::optional<ProcessLabels> {
        b.labelled.push_back(tgid);
        return ProcessLabels{tgid * 100ull, "comm" + std::to_string(tgid), {}};
      },
      [](int64_t) { return std::vector<LiveProcess>{}; }, scope);
  return b;
}

// A health query of thousands of processes must not read /proc for each
// (0.19 s under load): labels only for the ranked processes asked, after
// the ranking; the host totals count every process regardless.
TEST(LiveViewBuilder, LabelsOnlyTheRankedProcessesTheScopeNames) {
  AuditPipeline p(Topology::for_cpus(2));
  add_processes(p);

  const Built none = build(p, LabelScope{.top = 0});
  EXPECT_TRUE(none.labelled.empty());
  ASSERT_EQ(none.view.processes.size(), 3u);
  EXPECT_EQ(none.view.processes[0].pid, 30u);  // largest |drift| first
  EXPECT_TRUE(none.view.processes[0].comm.empty());
  EXPECT_EQ(none.view.health.host_processes_known, 3u);
  EXPECT_EQ(none.view.health.host_exact_rss, 60);
  EXPECT_EQ(none.view.health.host_kernel_rss, 54);

  const Built top = build(p, LabelScope{.top = 1});
  EXPECT_EQ(top.labelled, std::vector<uint32_t>{30});
  EXPECT_EQ(top.view.processes[0].comm, "comm30");
  EXPECT_EQ(top.view.processes[0].start_ticks, 3000u);
  EXPECT_TRUE(top.view.processes[1].comm.empty());

  const Built pid = build(p, LabelScope{.top = 0, .pid = 10});
  EXPECT_EQ(pid.labelled, std::vector<uint32_t>{10});
  EXPECT_EQ(pid.view.processes[2].comm, "comm10");

  const Built all = build(p, LabelScope{});
  EXPECT_EQ(all.labelled, (std::vector<uint32_t>{30, 20, 10}));
}

}  // namespace
}  // namespace rssaudit
