// The daemon's summary as log lines (key=value, one line per mm) on
// request: SIGUSR1, a timer, or shutdown.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "daemon/audit_pipeline.h"
#include "daemon/delta_reconstructor.h"

namespace rssaudit {

// `ended_comm(tgid)`: the name of a process that ended ("" if unknown);
// a live one's comes from /proc.
void write_summary_log(FILE* out, std::vector<MmSummary> mms,
                       const ReconstructorStats& stats, uint64_t drops,
                       const AuditPipeline& pipeline, size_t top,
                       const std::function<std::string(uint32_t)>& ended_comm);

}  // namespace rssaudit
