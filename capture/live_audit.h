// The live side of an audit: the BPF capture, the reconstruction of its
// records into exact updates, and the baselines from /proc, drained into a
// sink. The one drain of rssauditd and of `rssaudit whatif --pid`: they
// differ only in the sink (the daemon's AuditPipeline, whatif's per-scheme
// report) and in who calls drain() when.
#pragma once

#include <cstdint>
#include <memory>

#include "audit/delta_reconstructor.h"
#include "audit/poll_pacing.h"
#include "audit/unseen_ends.h"
#include "capture/bpf_capture.h"
#include "capture/snapshot_passes.h"

namespace rssaudit {

class LiveAudit {
 public:
  // `batch`: the kernel's percpu_counter batch of mm->rss_stat. `max_poll_ns`:
  // the longest sleep between drains next_poll_ns() advises.
  LiveAudit(std::unique_ptr<BpfCapture> capture, int32_t batch,
            uint64_t max_poll_ns);

  // Hands the records published so far, at most one slice
  // (BpfCapture::kMaxPerPoll records, kDrainBudgetNs), through the
  // reconstructor to `sink`, lets out what every CPU has shown to be
  // complete, and runs a part of a
  // snapshot pass (SnapshotPasses) for the mms whose values are unknown,
  // placed before the poll. No allocation per record; returns the records
  // taken. A drain that left records behind asks to be called again at
  // once (next_poll_ns() 0): the caller's loop serves its other work
  // between slices, however far behind the capture is.
  uint64_t drain(ReconstructorSink& sink);
  // The end of the stream: every update still held back goes to `sink`.
  void flush(ReconstructorSink& sink) { reconstructor_.flush(sink); }
  // An mm whose process was found gone at `gone_ns` (CLOCK_MONOTONIC)
  // though its exit_mmap record has not come: ended unseen
  // (DeltaReconstructor::end_unseen()) by the first drain that has handed
  // over every record published before then (UnseenEnds), unless that
  // record came; its end reaches the sink with the events held back
  // before it.
  void end_unseen(const MmKey& key, uint64_t gone_ns) {
    unseen_ends_.add(key, gone_ns);
  }

  // How long to sleep before the next drain, from the last drain's rate;
  // 0 while behind.
  uint64_t next_poll_ns() const { return next_poll_ns_; }
  // How far behind the kernel the audit may be at `now_ns`: every record
  // published before now_ns - lag has been handed over. The time since the
  // last drain that found the streams empty (one that took a full slice,
  // or stopped at a record still being written, did not).
  uint64_t lag_ns(uint64_t now_ns) const {
    return now_ns > caught_up_ns_ ? now_ns - caught_up_ns_ : 0;
  }
  // Events handed to the audit: the records, and each repeat a record
  // carried (bpf/rss_event.h).
  uint64_t events() const { return records_ + capture_->repeats(); }

  const BpfCapture& capture() const { return *capture_; }
  const ReconstructorStats& stats() const { return reconstructor_.stats(); }
  const SnapshotPassStats& snapshot_stats() const { return passes_.stats(); }

 private:
  static constexpr uint32_t kDrainChunk = 1024;
  static constexpr uint64_t kDrainBudgetNs = 50'000'000;

  std::unique_ptr<BpfCapture> capture_;
  DeltaReconstructor reconstructor_;
  UnseenEnds unseen_ends_;
  SnapshotPasses passes_;
  const PollPacing pacing_;
  uint64_t records_ = 0;
  uint64_t last_drain_ns_;
  uint64_t caught_up_ns_;  // when the last drain that emptied the streams
                           // began (or construction)
  bool caught_up_ = true;  // the last drain emptied them
  uint64_t next_poll_ns_;
};

}  // namespace rssaudit
