// Turns the live audit into history rows: on each sampling tick, every
// audited process's /proc sources side by side with the BPF-side values of
// the same moment and the model fidelity; each scheme's errors over an
// interval of ticks (a row per scheme when the interval ends: see
// RecorderOptions::model_error_interval_s); at an mm's end, its last
// errors and its exit row (and an anomaly when the exact tracker is not
// back to zero). A process that ends before any tick sampled
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

#include "audit/audit_pipeline.h"
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
  // Seconds one model-error row of a process covers: each scheme's largest
  // error over them, its shared updates summed. A row set is written when
  // the interval is this long, when a scheme's bound, bytes or read cost
  // change (no maximum or sum of those), or when the mm ends; 0: a row set
  // per sample. At the default a process writes its six rows once a minute
  // where it wrote them every tick, as many as its samples' bytes and
  // more (docs/rssauditd.md).
  double model_error_interval_s = 60;

  bool operator==(const RecorderOptions&) const = default;
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
  // Exits whose exit_mmap record was lost (records dropped): the process
  // was found gone at two ticks while its mm still lived in the audit,
  // and its end recorded then, with an `exit_unseen` anomaly.
  uint64_t exits_unseen = 0;
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

  // A tick: samples every live mm's process, then the quiet processes
  // due. Call right after draining the capture's streams so the BPF-side
  // values are of this moment (and a process that updated has its mm in
  // the audit).
  void sample(AuditPipeline& pipeline, int64_t wall_ns);
  // The same tick in slices, so that the daemon's loop answers queries,
  // scrapes and signals between them (thousands of processes take a
  // second): begin_tick() lists the live mms; each continue_tick(),
  // called right after a drain, samples them until CLOCK_MONOTONIC passes
  // `until_ns`, its rows at `wall_ns`; true when the tick is done. An mm
  // that ends between slices is not sampled (its exit is recorded).
  void begin_tick(AuditPipeline& pipeline, int64_t wall_ns);
  bool continue_tick(AuditPipeline& pipeline, int64_t wall_ns,
                     uint64_t until_ns);
  bool tick_open() const { return tick_open_; }
  // The recorded quiet processes as last sampled: kernel RSS from
  // /proc/PID/stat, exact from /proc/PID/status read right after (since
  // 6.2 its sums are precise, and nothing moved), for live views. One
  // whose exit the capture recorded since (its pid's exited slot holds its
  // start time) is left out: it is no longer running.
  std::vector<LiveProcess> quiet_processes(int64_t bound) const;
  // The pipeline's exit hook.
  void on_exit(AuditPipeline::LiveMm& mm, int64_t wall_ns);
  // The mms whose process sample() found gone at two ticks in a row (or
  // an exec of it since: a newer mm of the same process) while they still
  // live in the audit: their exit_mmap records were lost. The caller ends
  // them (LiveAudit::end_unseen()); on_exit() then records them as such.
  std::vector<MmKey> take_ended_unseen() { return std::move(ended_unseen_); }
  // Writes every process's model-error interval still open, as it stands
  // (at the stop: an interval is otherwise written when it ends).
  void write_open_model_errors();
  // Where to ask who an ended process was when /proc no longer says (its
  // parent reaped it first): the capture keeps it (bpf/rss_event.h).
  void set_exited_lookup(ExitedLookup lookup) {
    exited_lookup_ = std::move(lookup);
  }

  const RecorderStats& stats() const { return stats_; }
  // The recorded identity of the live mm at `mm_addr`, for labelling live
  // views; null when the mm has not been recorded (filtered, not sampled
  // yet). One hash lookup; the pointer is valid until the next sample,
  // slice or on_exit().
  const RecordedIdentity* identity(uint64_t mm_addr) const;
  // On a configuration reload (SIGHUP): applies from the next sample.
  void set_options(RecorderOptions options) { options_ = std::move(options); }

 private:
  struct Tracked {
    uint64_t generation = 0;
    // who.process_id 0: not recorded (filtered or not yet seen).
    RecordedIdentity who;
    std::optional<uint64_t> last_walk_ns;
    // The model-error interval: from interval_start_ns to errors_end_ns
    // (the tick that last extended it), each scheme's row in `errors`;
    // written when it ends.
    int64_t interval_start_ns = 0;
    bool errors_open = false;
    int64_t errors_end_ns = 0;
    std::array<ModelErrorRow, SchemeSet::kCount> errors{};
    std::array<uint64_t, SchemeSet::kCount> shared_before{};
    uint64_t fidelity_checked_before = 0;
    uint64_t fidelity_matched_before = 0;
    // The tick its process was first found gone at (0: found), and
    // whether it was then ended unseen.
    uint64_t gone_tick = 0;
    bool ended_unseen = false;
  };
  // Whether the process of `mm`, which sampled as `r`, is gone: exited,
  // a zombie with no thread left, its pid another process's now, or
  // `superseded` (an exec gave the process a newer mm).
  bool owner_gone(const AuditPipeline::LiveMm& mm, const SampleResult& r,
                  bool superseded);
  Tracked& tracked(const AuditPipeline::LiveMm& mm);
  // One live mm's sample in the open tick.
  void sample_mm(AuditPipeline::LiveMm& mm, int64_t wall_ns);
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
  // Adds the errors since the previous call to the open interval (after
  // writing it first where a scheme's state changed); writes it when it
  // has lasted the interval, or `ending` (the mm ends).
  void note_model_errors(AuditPipeline::LiveMm& mm, Tracked& t, int64_t wall_ns,
                         bool ending);
  void write_open_errors(Tracked& t);
  // Says in `row` why its drift is unknown, if it is, and counts it; a
  // drift beyond the kernel's bound is an anomaly too, and said on stderr.
  void judge_drift(SampleRow& row, std::optional<RssReads> proc_reads,
                   const RecordedIdentity& who);
  // The stderr line of a drift beyond the bound: at most one a minute, so
  // a broken kernel does not flood the log.
  void say_beyond_bound(const RecordedIdentity& who, int64_t time_ns,
                        const std::string& detail);
  static constexpr int64_t kBeyondBoundSaidEveryNs = 60'000'000'000;
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
  // The exited slot of `pid`, when a lookup is set and holds one.
  std::optional<exited_process> exited_slot(uint32_t pid) const {
    return exited_lookup_ ? exited_lookup_(pid) : std::nullopt;
  }
  bool status_precise_;
  std::optional<int64_t> rss_bound_;
  uint32_t self_pid_;
  std::unordered_map<uint64_t, Tracked> tracked_;  // by mm address
  std::unordered_map<uint32_t, Quiet> quiet_;      // by pid
  RecorderStats stats_;
  int64_t last_tick_ns_ = 0;  // wall time the previous tick began
  uint64_t ticks_ = 0;
  // The open tick: the mms it samples (those with an owner when it began),
  // the next of them, the newest mm of each process then, and the
  // processes sampled so far (not quiet ones).
  bool tick_open_ = false;
  std::vector<MmKey> tick_mms_;
  size_t tick_next_ = 0;
  std::unordered_map<uint32_t, uint64_t> tick_newest_;
  std::unordered_set<uint32_t> tick_tgids_;
  std::vector<MmKey> ended_unseen_;
  std::optional<int64_t> beyond_bound_said_ns_;  // the last stderr line
  uint64_t beyond_bound_unsaid_ = 0;             // anomalies since, unsaid
};

}  // namespace rssaudit
