// The daemon's summary as log lines (key=value, one line per mm) on
// request: SIGUSR1, a timer, or shutdown.
#pragma once

#include <cstdio>
#include <vector>

#include "daemon/audit_pipeline.h"
#include "daemon/delta_reconstructor.h"
#include "daemon/exited_lookup.h"

namespace rssaudit {

// `exited`: who a process that ended was (a live one's name comes from
// /proc).
void write_summary_log(FILE* out, std::vector<MmSummary> mms,
                       const ReconstructorStats& stats, uint64_t drops,
                       const AuditPipeline& pipeline, size_t top,
                       const ExitedLookup& exited);

}  // namespace rssaudit
