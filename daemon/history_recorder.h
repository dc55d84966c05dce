// Turns the live audit into history rows: on each sampling tick, every
// audited process's /proc sources side by side with the BPF-side values of
// the same moment, the model fidelity and each scheme's errors over the
// interval; at an mm's end, its exit row (and an anomaly when the exact
// tracker is not back to zero). A process that ends before any tick sampled
// it still gets its row at exit. Rows go to the Store's batch; flushing is
// the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "capture/audit_pipeline.h"
#include "capture/exited_lookup.h"
#include "sampler/sampler.h"
#include "store/store.h"

namespace rssaudit {

struct RecorderOptions {
  std::string comm;            // only processes with this comm ("": all)
  std::string cgroup;          // only this cgroup v2 subtree ("": all)
  uint64_t min_rss_pages = 0;  // smaller processes are tracked, not recorded
  // Processes whose mm made fewer RSS counter updates so far (the activity
  // the audit saw) are tracked, not recorded.
  uint64_t min_updates = 0;
};

struct RecorderStats {
  uint64_t samples_written = 0;
  // Samples, and exits of processes never sampled, not written: the RSS
  // (at exit: the true peak) was under --min-rss.
  uint64_t below_min_rss = 0;
  uint64_t exits = 0;     // exits recorded
  uint64_t residues = 0;  // mms whose exact value did not return to 0
  // Exits of processes no tick had sampled (recorded at exit), and how many
  // of them /proc could no longer name (start time 0, comm empty).
  uint64_t unsampled_exits = 0;
  uint64_t unnamed_exits = 0;
};

// Who an mm's process was, as recorded in the history.
struct RecordedIdentity {
  int64_t process_id = 0;  // processes.id
  uint32_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat field 22
  std::string comm;
  std::string cgroup;  // cgroup v2 path; empty: none or unreadable
};

class HistoryRecorder {
 public:
  HistoryRecorder(Store& store, ProcessSampler& sampler,
                  RecorderOptions options, int64_t page_size);

  // Samples every live mm's process. Call right after draining the
  // capture's streams so the BPF-side values are of this moment.
  void sample(AuditPipeline& pipeline, int64_t wall_ns);
  // The pipeline's exit hook.
  void on_exit(AuditPipeline::LiveMm& mm, int64_t wall_ns);
  // Where to ask who an ended process was when /proc no longer says (its
  // parent reaped it first): the capture keeps it (bpf/rss_event.h).
  void set_exited_lookup(ExitedLookup lookup) {
    exited_lookup_ = std::move(lookup);
  }

  const RecorderStats& stats() const { return stats_; }
  // The recorded identity of the live mm at `mm_addr`, for labelling live
  // views; null when the mm has not been recorded (filtered, not sampled
  // yet). One hash lookup; the pointer is valid until the next sample() or
  // on_exit().
  const RecordedIdentity* identity(uint64_t mm_addr) const;
  // On a configuration reload (SIGHUP): applies from the next sample.
  void set_options(RecorderOptions options) { options_ = std::move(options); }

 private:
  struct Tracked {
    uint64_t generation = 0;
    // who.process_id 0: not recorded (filtered or not yet seen).
    RecordedIdentity who;
    std::optional<uint64_t> last_walk_ns;
    int64_t interval_start_ns = 0;
    std::array<uint64_t, SchemeSet::kCount> shared_before{};
    uint64_t fidelity_checked_before = 0;
    uint64_t fidelity_matched_before = 0;
  };
  Tracked& tracked(const AuditPipeline::LiveMm& mm);
  // Whether a process so named, in that cgroup, whose mm made `updates`,
  // passes --comm, --cgroup and --min-updates.
  bool wanted(const std::string& comm, const std::string& cgroup,
              uint64_t updates) const;
  void write_sample(AuditPipeline::LiveMm& mm, Tracked& t, const Sample& s,
                    int64_t wall_ns);
  void write_model_errors(AuditPipeline::LiveMm& mm, Tracked& t,
                          int64_t wall_ns);
  // Records the process of an mm that ends unsampled; false when it is not
  // to be recorded (alive after an exec, filtered out).
  bool record_unsampled(const AuditPipeline::LiveMm& mm, Tracked& t,
                        int64_t wall_ns);
  void record_end(AuditPipeline::LiveMm& mm, Tracked& t, int64_t wall_ns);

  Store& store_;
  ProcessSampler& sampler_;
  RecorderOptions options_;
  int64_t page_size_;
  ExitedLookup exited_lookup_;
  std::unordered_map<uint64_t, Tracked> tracked_;  // by mm address
  RecorderStats stats_;
  int64_t last_tick_ns_ = 0;  // wall time of the previous sample()
};

}  // namespace rssaudit
