// The per-mm audit of the reconstructed update stream: every mm's exact
// value, true peak and scheme models, and the fidelity of the model of the
// kernel's own scheme (upstream, or per_task before 6.2) against its
// count. Live capture and replay both feed it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "audit/delta_reconstructor.h"
#include "audit/loss_epochs.h"
#include "core/formats/record_format.h"
#include "core/schemes/mm_audit.h"
#include "core/schemes/topology.h"

namespace rssaudit {

// What the audit knows of one mm, alive or finished.
struct MmSummary {
  MmKey key;
  uint32_t tgid = 0;       // of the first owner update seen
  bool from_zero = false;  // seen from creation: values are absolute
  // exact_rss and peak_rss are absolute: seen from creation, or snapshot
  // from /proc since the capture started or since its last loss.
  bool absolute = false;
  bool alive = true;
  // The last thread of process `tgid` exited under the capture: at the
  // mm's end, a live process with that pid is another one (pid reused),
  // not this one after an exec.
  bool owner_ended = false;
  // Its start time (stat field 22) as its exit record gave it: who ended,
  // even when a process reusing the pid ended too before the exit was
  // handled. 0: unknown (not ended, or a recording from before).
  uint64_t owner_start_ticks = 0;
  // Counted by a kernel before 6.2 (atomics + per-task caches): every
  // reader, /proc/PID/status included, sees the atomics, so no /proc value
  // is precise; the exact stream and a page-table walk are.
  bool task_cache = false;
  uint64_t updates = 0;
  // Ambiguous, inconsistent or without baseline: the delta is not exact,
  // or the member's absolute value was unknown at the update.
  uint64_t flagged = 0;
  // Events at which the model of the kernel's own scheme (upstream; before
  // 6.2 per_task) was compared with the kernel's count, and how many
  // matched (model fidelity).
  uint64_t fidelity_checked = 0;
  uint64_t fidelity_matched = 0;
  // Before 6.2, of the exact updates of an mm seen from creation: those a
  // task cached, which leave the atomic as it was, and the folds of the
  // caches into it, where the model is checked instead. So there
  // fidelity_checked = updates - flagged - cached + folds.
  uint64_t cached = 0;
  uint64_t folds = 0;
  int64_t exact_rss = 0;   // pages, the sum of the stream (+ baseline)
  int64_t kernel_rss = 0;  // pages, the kernel's approximate count (members
                           // file + anon + shmem) at its last update
  // The kernel's count of each of those members is known: seen from
  // creation, or updated since the capture started (or since its last
  // loss). Else kernel_rss and drift() are unknown.
  bool kernel_known = false;
  int64_t peak_rss = 0;  // true peak (running maximum of exact_rss,
                         // since the baseline when not from_zero)
  std::array<int64_t, SchemeSet::kCount> largest_error{};

  bool drift_known() const { return absolute && kernel_known; }
  int64_t drift() const { return kernel_rss - exact_rss; }
  // The same, empty while unknown (for printing: never a made-up number).
  std::optional<int64_t> known_kernel_rss() const {
    return kernel_known ? std::optional(kernel_rss) : std::nullopt;
  }
  std::optional<int64_t> known_drift() const {
    return drift_known() ? std::optional(drift()) : std::nullopt;
  }
};

// A summary value as printed: the number, or "?" while unknown.
inline std::string known_text(std::optional<int64_t> v) {
  return v ? std::to_string(*v) : "?";
}

// Orders mms by how far the kernel's RSS was off, largest first: the
// largest error of the kernel's own scheme (upstream, or per_task before
// 6.2) over the audited life, or the drift now if larger and known; then
// by true peak, then activity. An ended mm's drift is left out: it is what its
// counter held at teardown, which nothing reads.
void rank_by_error(std::vector<MmSummary>& mms);

// The model topology a recording (or the live host, described the same
// way) was made on.
Topology topology_of(const RecordHeader& h);

class AuditPipeline : public ReconstructorSink {
 public:
  // An mm being audited: its summary (refreshed on demand), the kernel's
  // last count per member, and the models.
  struct LiveMm {
    MmSummary summary;
    std::array<int64_t, kMembers> kernel_count{};
    std::array<bool, kMembers> kernel_count_known{};
    MmAudit audit;
    // The member's exact value is audit.exact(m) + baseline[m], known when
    // exact_known[m] (from creation, or since a snapshot).
    std::array<int64_t, kMembers> baseline{};
    std::array<bool, kMembers> exact_known{};
    // The upstream model holds the kernel's state (from creation, no loss
    // since): fidelity is checked only then.
    bool model_synced = false;
    int64_t peak_since_baseline = 0;
    // The pipeline's loss count its state reflects (see on_loss()).
    uint64_t loss_epoch = 0;
    int64_t exact(int m) const { return audit.exact(m) + baseline[m]; }
    bool rss_known() const {
      return exact_known[kFilePages] && exact_known[kAnonPages] &&
             exact_known[kShmemPages];
    }
    explicit LiveMm(const Topology& t) : audit(t) {}
  };

  // `finished_kept`: summaries of ended mms kept for reports, newest first
  // (the oldest dropped beyond it); finished_mms() counts them all.
  static constexpr size_t kFinishedKept = 1024;
  explicit AuditPipeline(const Topology& t,
                         size_t finished_kept = kFinishedKept);

  void on_mm_created(const MmKey& mm, bool from_zero) override;
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override;
  void on_life(const MmKey& mm, const LifeEvent& e) override;
  void on_cache_fold(const MmKey& mm, const LifeEvent& sync,
                     const UpdateInfo& info) override;
  void on_mm_destroyed(const MmKey& mm) override;
  void on_baseline(const MmKey& mm, int member, std::optional<int64_t> pages,
                   std::optional<int64_t> kernel_count) override;
  // Every live mm's exact value and kernel counts become unknown, marked
  // on each mm when it is next looked at: O(1) per loss.
  void on_loss() override { losses_.lose(); }

  // Live mms then finished ones, each as of now.
  std::vector<MmSummary> summaries() const;
  size_t live_mms() const { return live_.size(); }
  // Every mm that ended, kept or not.
  uint64_t finished_mms() const { return finished_total_; }
  uint64_t fidelity_checked() const { return fidelity_checked_; }
  uint64_t fidelity_matched() const { return fidelity_matched_; }
  // The live mm `key` (its summary not refreshed), or null: not announced
  // yet, or destroyed. Lets a test see the models' state event by event.
  const LiveMm* live(const MmKey& key) const;

  // The live mm `key`, its summary refreshed, or null: destroyed since.
  LiveMm* refreshed(const MmKey& key) {
    LiveMm* mm = find(key);
    if (mm) refresh(*mm);
    return mm;
  }
  // f(LiveMm&) for every live mm, its summary refreshed.
  template <class F>
  void for_each_live(F&& f) {
    for (auto& [addr, mm] : live_) {
      refresh(*mm);
      f(*mm);
    }
  }
  // Losses seen (on_loss()).
  uint64_t losses() const { return losses_.now(); }
  // Called with an mm's final state just before it is forgotten.
  void set_exit_hook(std::function<void(LiveMm&)> hook) {
    exit_hook_ = std::move(hook);
  }

 private:
  LiveMm* find(const MmKey& key);
  // Applies the losses since `mm` was last looked at, then its summary.
  void refresh(LiveMm& mm) const;
  void catch_up(LiveMm& mm) const;
  // Whether the model of the kernel's own scheme (upstream; per_task
  // before 6.2) holds the kernel's count of `member` after an update.
  void check_fidelity(LiveMm& mm, int member, const UpdateInfo& info);

  Topology topology_;
  size_t finished_kept_;
  // Keyed by address; the generation is checked on lookup. Cached last hit:
  // consecutive records mostly concern the same mm.
  std::unordered_map<uint64_t, std::unique_ptr<LiveMm>> live_;
  LiveMm* last_ = nullptr;
  std::deque<MmSummary> finished_;
  uint64_t finished_total_ = 0;
  uint64_t fidelity_checked_ = 0;
  uint64_t fidelity_matched_ = 0;
  LossEpoch losses_;
  std::function<void(LiveMm&)> exit_hook_;
};

}  // namespace rssaudit
