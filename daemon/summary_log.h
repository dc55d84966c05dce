// The daemon's summary as log lines (key=value, one line per mm) on
// request: SIGUSR1, a timer, or shutdown.
#pragma once

#include <cstdio>
#include <vector>

#include "daemon/audit_pipeline.h"
#include "daemon/delta_reconstructor.h"
#include "daemon/exited_lookup.h"
#include "daemon/history_recorder.h"

namespace rssaudit {

// `exited`: who a process that ended was (a live one's name comes from
// /proc). `history`: what the history recorder wrote and skipped, so that a
// process without rows in the database can be accounted for.
void write_summary_log(FILE* out, std::vector<MmSummary> mms,
                       const ReconstructorStats& stats, uint64_t drops,
                       const AuditPipeline& pipeline,
                       const RecorderStats& history, size_t top,
                       const ExitedLookup& exited);

}  // namespace rssaudit
