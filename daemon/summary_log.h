// The daemon's summary as log lines (key=value, one line per mm) on
// request: SIGUSR1, a timer, or shutdown.
#pragma once

#include <cstdio>
#include <vector>

#include "capture/audit_pipeline.h"
#include "capture/delta_reconstructor.h"
#include "capture/exited_lookup.h"
#include "daemon/history_recorder.h"
#include "store/store.h"
#include "sampler/sampler.h"

namespace rssaudit {

// `exited`: who a process that ended was; `sampler` names a live one from
// /proc. `history`: what the history recorder wrote and skipped, so that a
// process without rows in the database can be accounted for; `store`, of
// those rows, how many wait for a flush or were dropped. `drops` and
// `hook_misses`: BpfCapture's.
void write_summary_log(FILE* out, std::vector<MmSummary> mms,
                       const ReconstructorStats& stats, uint64_t drops,
                       uint64_t hook_misses, const AuditPipeline& pipeline,
                       const RecorderStats& history, const Store& store,
                       size_t top, const ExitedLookup& exited,
                       ProcessSampler& sampler);

}  // namespace rssaudit
