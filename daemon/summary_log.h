// The daemon's summary as log lines (key=value, one line per mm) on
// request: SIGUSR1, a timer, or shutdown.
#pragma once

#include <cstdio>
#include <optional>
#include <vector>

#include "audit/audit_pipeline.h"
#include "audit/delta_reconstructor.h"
#include "core/capture_losses.h"
#include "capture/exited_lookup.h"
#include "capture/snapshot_passes.h"
#include "daemon/control_server.h"
#include "daemon/history_recorder.h"
#include "daemon/metrics_server.h"
#include "sampler/sampler.h"
#include "store/store.h"

namespace rssaudit {

// `exited`: who a process that ended was; `sampler` names a live one from
// /proc. `history`: what the history recorder wrote and skipped, so that a
// process without rows in the database can be accounted for; `store`, of
// those rows, how many wait for a flush or were dropped. `losses` and
// `hook_misses`: BpfCapture's. `consumer_threads`, `drain_waits`: LiveAudit's
// (whether a drain thread runs, how often the audit kept it waiting);
// `holds`: the streams', how long unpublished numbers held them back;
// `doorbells`: how often a stream a quarter full woke the drain.
void write_summary_log(FILE* out, std::vector<MmSummary> mms,
                       const ReconstructorStats& stats,
                       const CaptureLosses& losses,
                       uint64_t hook_misses, int consumer_threads,
                       uint64_t drain_waits, const StreamHolds& holds,
                       uint64_t doorbells,
                       double lag_s, double loop_delay_s,
                       const AuditPipeline& pipeline,
                       const RecorderStats& history, const Store& store,
                       size_t top, const ExitedLookup& exited,
                       ProcessSampler& sampler);

// How the snapshots of mms joined mid-life went (bpf/snapshot.bpf.c): the
// passes run and what their records gave.
void write_snapshot_log(FILE* out, const ReconstructorStats& stats,
                        const SnapshotPassStats& passes);

// How the control socket and the metrics endpoint dealt with their
// clients: the limits they hit and whom they cut off. A line per server
// running (none given: not running).
void write_server_log(FILE* out,
                      const std::optional<ControlServerStats>& control,
                      const std::optional<MetricsServerStats>& metrics);

}  // namespace rssaudit
