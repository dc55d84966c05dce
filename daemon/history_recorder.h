// Turns the live audit into history rows: on each sampling tick, every
// audited process's /proc sources side by side with the BPF-side values of
// the same moment, the model fidelity and each scheme's errors over the
// interval; at an mm's end, its exit row (and an anomaly when the exact
// tracker is not back to zero). A process that ends before any tick sampled
// it still gets its row at exit. A quiet process (no update since the
// capture started, so no mm in the audit: started before the daemon and
// idle since) is found in /proc and sampled from /proc alone, less often:
// its values cannot change until it updates. Rows go to the Store's batch;
// flushing is the caller's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/audit_pipeline.h"
#include "capture/exited_lookup.h"
#include "core/formats/live_view.h"
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
  uint32_t pid = 0;  // only this process (0: all); --pid, fixed at start
  // Seconds between /proc samples of a quiet process; 0: quiet processes
  // are not audited. Its values cannot move while it stays quiet, so a
  // sample only keeps it in the history's windows: 1 000 idle processes
  // cost 12 000 rows an hour at 300 s (~33 us each, measured here).
  double quiet_interval_s = 300;
};

// Quiet processes sampled per tick at most: a host of 10 000 idle processes
// is covered over several ticks rather than stalling one (~15 us each).
inline constexpr size_t kQuietSamplesPerTick = 256;

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
  uint64_t quiet_samples = 0;  // of those written, of quiet processes
  // Samples written whose sources were read but whose drift is unknown, by
  // DriftUnknown; those beyond the bound are also anomaly rows.
  std::array<uint64_t, kDriftUnknownReasons> drift_unknown{};
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
  // `status_precise`: /proc/PID/status gives the precise RSS on this kernel,
  // as measured at start (sampler/reader_probe.h); not before 6.2, nor on
  // 6.2-6.15 kernels without the change that made it sum the slots.
  // `rss_bound`: the kernel's bound on an RSS's drift (kernel_rss_bound());
  // empty: none (before 6.2).
  HistoryRecorder(Store& store, ProcessSampler& sampler,
                  RecorderOptions options, int64_t page_size,
                  bool status_precise, std::optional<int64_t> rss_bound);

  // Samples every live mm's process, then the quiet processes due. Call
  // right after draining the capture's streams so the BPF-side values are
  // of this moment (and a process that updated has its mm in the audit).
  void sample(AuditPipeline& pipeline, int64_t wall_ns);
  // The recorded quiet processes as last sampled: kernel RSS from
  // /proc/PID/stat, exact from /proc/PID/status read right after (since
  // 6.2 its sums are precise, and nothing moved), for live views.
  std::vector<LiveProcess> quiet_processes(int64_t bound) const;
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
  // A quiet process, by pid.
  struct Quiet {
    RecordedIdentity who;  // process_id 0: not recorded (filtered out)
    std::optional<uint64_t> last_walk_ns;
    std::optional<int64_t> sampled_ns;   // wall time of its last sample
    uint64_t seen_tick = 0;              // the last tick /proc listed it
    int64_t kernel_rss = 0;              // stat field 24
    std::optional<int64_t> precise_rss;  // status: VmRSS's members
  };
  void sample_quiet(const std::unordered_set<uint32_t>& live_tgids,
                    int64_t wall_ns);
  // Samples one quiet process due for it; false when it is gone.
  bool sample_quiet(uint32_t pid, Quiet& q, int64_t wall_ns);
  // The row's /proc part, and the one written when no mm is audited;
  // status's values are precise ones only when `status_precise`.
  SampleRow proc_row(const Sample& s, int64_t process_id, int64_t wall_ns,
                     bool status_precise) const;
  void write_sample(AuditPipeline::LiveMm& mm, Tracked& t, const Sample& s,
                    int64_t wall_ns);
  // Says in `row` why its drift is unknown, if it is, and counts it; a
  // drift beyond the kernel's bound is an anomaly too, and said on stderr.
  void judge_drift(SampleRow& row, std::optional<RssReads> proc_reads,
                   const RecordedIdentity& who);
  // The stderr line of a drift beyond the bound: at most one a minute, so
  // a broken kernel does not flood the log.
  void say_beyond_bound(const RecordedIdentity& who, int64_t time_ns,
                        const std::string& detail);
  static constexpr int64_t kBeyondBoundSaidEveryNs = 60'000'000'000;
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
  bool status_precise_;
  std::optional<int64_t> rss_bound_;
  uint32_t self_pid_;
  std::unordered_map<uint64_t, Tracked> tracked_;  // by mm address
  std::unordered_map<uint32_t, Quiet> quiet_;      // by pid
  RecorderStats stats_;
  int64_t last_tick_ns_ = 0;  // wall time of the previous sample()
  uint64_t ticks_ = 0;
  std::optional<int64_t> beyond_bound_said_ns_;  // the last stderr line
  uint64_t beyond_bound_unsaid_ = 0;             // anomalies since, unsaid
};

}  // namespace rssaudit
