// Builds the LiveView the control socket and the metrics endpoint serve,
// from the audit pipeline's live mms and the quiet processes the history
// recorder sampled from /proc. Called per query or scrape, never per event.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "audit/audit_pipeline.h"
#include "core/formats/live_view.h"

namespace rssaudit {

// What identifies an mm's process to a human, when known.
struct ProcessLabels {
  uint64_t start_ticks = 0;
  std::string comm;
  std::string cgroup;
};

// Labels of the live mm at address `mm` whose first owner is `tgid`.
using LabelLookup =
    std::function<std::optional<ProcessLabels>(uint64_t mm, uint32_t tgid)>;

// The quiet processes (no update yet), given the kernel's bound.
using QuietLookup = std::function<std::vector<LiveProcess>(int64_t bound)>;

// Every live mm and quiet process, ranked by |drift|; `labels` is asked
// for each mm the scope names, after the ranking.
LiveView build_live_view(AuditPipeline& pipeline, DaemonHealth health,
                         const LabelLookup& labels, const QuietLookup& quiet,
                         const LabelScope& scope);

}  // namespace rssaudit
