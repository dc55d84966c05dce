// The live side of an audit: the BPF capture, the reconstruction of its
// records into exact updates, and the baselines from /proc, drained into a
// sink. The one drain of rssauditd and of `rssaudit whatif --pid`: they
// differ only in the sink (the daemon's AuditPipeline, whatif's per-scheme
// report) and in who calls drain() when.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "audit/delta_reconstructor.h"
#include "audit/poll_pacing.h"
#include "audit/unseen_ends.h"
#include "capture/bpf_capture.h"
#include "capture/consumer_threads.h"
#include "capture/drain_thread.h"
#include "capture/snapshot_passes.h"

namespace rssaudit {

class LiveAudit {
 public:
  // `batch`: the kernel's percpu_counter batch of mm->rss_stat. `max_poll_ns`:
  // the longest sleep between drains next_poll_ns() advises.
  LiveAudit(std::unique_ptr<BpfCapture> capture, int32_t batch,
            uint64_t max_poll_ns,
            ConsumerThreads threads = ConsumerThreads::automatic);

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
  // The end of the stream: the drain thread stopped, every record
  // published so far handed over, and every update still held back goes to
  // `sink`.
  void flush(ReconstructorSink& sink);
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
  uint64_t events() const { return events_; }

  // 2 once a drain thread has read the streams in this run
  // (ConsumerThreads), else 1.
  int consumer_threads() const { return drain_thread_ ? 2 : 1; }
  // How often it found its queue full, the audit behind it.
  uint64_t drain_waits() const {
    return drain_thread_ ? drain_thread_->waits() : 0;
  }

  const BpfCapture& capture() const { return *capture_; }
  // Rung when a stream is a quarter full: the caller's loop waits on it while
  // it drains (consumer_threads() 1), the drain thread once it runs.
  Doorbell& doorbell() { return capture_->doorbell(); }
  const ReconstructorStats& stats() const { return reconstructor_.stats(); }
  const SnapshotPassStats& snapshot_stats() const { return passes_.stats(); }

 private:
  static constexpr uint32_t kDrainChunk = 1024;
  static constexpr uint64_t kDrainBudgetNs = 50'000'000;
  // The drain thread's queue: 3.5 MiB, all of it resident once the ring
  // has gone round, so no larger; 65 ms of 1 M records/s, where the loop
  // drains every few (a quarter of it, PollPacing).
  static constexpr size_t kQueueRecords = size_t{1} << 16;

  // One slice from the streams, or from the drain thread's queue; each
  // returns the records and whether it left some behind.
  std::pair<uint64_t, bool> poll_streams(uint64_t polled_ns,
                                         ReconstructorSink& sink);
  std::pair<uint64_t, bool> take_queued(ReconstructorSink& sink);
  void start_drain_thread();
  void watch_busy_share(uint64_t began_ns, uint64_t ended_ns);
  static constexpr uint64_t kBusyWindowNs = 1'000'000'000;
  static constexpr double kBusyShare = 0.5;
  // Every record published before `ns` has been handed over.
  void caught_up_to(uint64_t ns, ReconstructorSink& sink);

  std::unique_ptr<BpfCapture> capture_;
  DeltaReconstructor reconstructor_;
  UnseenEnds unseen_ends_;
  SnapshotPasses passes_;
  const PollPacing pacing_;
  const ConsumerThreads threads_;
  // Kept, stopped, after flush(): the run's figures stay readable.
  std::unique_ptr<DrainThread> drain_thread_;
  // The latest item the drain thread's queue handed over was a watermark.
  bool at_watermark_ = false;
  // Counted per drain, not per event: a poll's records and the repeats the
  // reader expanded meanwhile, or the events taken from the queue.
  uint64_t events_ = 0;
  uint64_t last_drain_ns_;
  // ConsumerThreads::automatic: the drains' time in the current window.
  uint64_t window_ns_, busy_ns_ = 0;
  uint64_t caught_up_ns_;  // when the last drain that emptied the streams
                           // began (or construction)
  bool caught_up_ = true;  // the last drain emptied them (or the queue up
                           // to a watermark)
  uint64_t next_poll_ns_;
};

}  // namespace rssaudit
