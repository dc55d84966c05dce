// A LiveView with every field set to something recognisable, for the
// control protocol, control server and live CLI tests.
#pragma once

#include <cstdint>
#include <limits>

#include "core/formats/live_view.h"
#include "core/schemes/scheme_set.h"

namespace rssaudit::testing {

inline LiveProcess sample_process(uint32_t pid, const char* comm, int64_t exact,
                                  int64_t kernel, bool from_zero) {
  LiveProcess p;
  p.pid = pid;
  p.start_ticks = 1000 + pid;
  p.comm = comm;
  p.cgroup = "/system.slice/test.service";
  p.from_zero = from_zero;
  p.updates = 10'000 + pid;
  p.flagged = pid % 3;
  p.fidelity_checked = 5000;
  p.fidelity_matched = 4999;
  p.exact_rss = exact;
  p.kernel_rss = kernel;
  p.kernel_known = true;
  p.peak_rss = exact + 100;
  p.rss_bound = 3 * 8 * 63;  // 8 CPUs, batch 64
  for (size_t i = 0; i < SchemeSet::kCount; ++i)
    p.largest_error[i] = static_cast<int64_t>(10 * i + pid % 7);
  return p;
}

// Ranked by |drift| as the daemon ranks it; "joined" was audited from
// mid-life (its exact values are not absolute); two processes are "worker",
// one of them quiet.
inline LiveView sample_live_view() {
  LiveView v;
  DaemonHealth& h = v.health;
  h.time_ns = 1'767'225'600'123'456'789;
  h.uptime_s = 3723.25;
  h.host = "testhost";
  h.kernel_release = "6.12.0-test";
  h.nr_cpus = 8;
  h.batch = 64;
  h.page_size = 4096;
  h.events = 123'456'789;
  h.events_per_s = 4321.5;
  h.drops = {.stream_full = 4, .unpublished = 1, .missed_runs = 2};
  h.ambiguous = 3;
  h.losses = 2;
  h.lag_s = 0.012;
  h.loop_delay_s = 0.25;
  h.bpf_ns_per_event = 95.25;
  h.fidelity_checked = 1'000'000;
  h.fidelity_matched = 999'990;
  h.live_mms = 3;
  h.quiet_processes = 1;
  // The three processes with a known drift (not "joined"), all four bounds.
  h.host_processes_known = 3;
  h.host_kernel_rss = 26000 + 2540 + 1034;
  h.host_exact_rss = 25600 + 2560 + 1024;
  h.host_worst_case = 4 * 3 * 8 * 63;
  h.store_dropped_rows = 11;
  h.store_pending_rows = 4097;
  h.store_file_bytes = 3 << 20;
  h.store_used_bytes = 2 << 20;
  h.store_cap_bytes = 1024 << 20;
  h.store_growth_bytes_per_s = 512.25;
  h.sampling_gaps = 2;
  // History samples whose drift is unknown, by why.
  h.drift_unknown_moving = 12;
  h.drift_unknown_exiting = 3;
  h.drift_beyond_bound = 1;
  v.processes = {sample_process(100, "big drifter", 25600, 26000, true),
                 sample_process(200, "worker", 2560, 2540, true),
                 sample_process(400, "worker", 1024, 1034, true),
                 sample_process(300, "joined", 50, 9000, false)};
  // Sampled from /proc alone: no update since the capture started.
  LiveProcess& quiet = v.processes[2];
  quiet.quiet = true;
  quiet.updates = quiet.flagged = 0;
  quiet.fidelity_checked = quiet.fidelity_matched = 0;
  quiet.peak_rss = 0;
  quiet.largest_error = {};
  return v;
}

}  // namespace rssaudit::testing
