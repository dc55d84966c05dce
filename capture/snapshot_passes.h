// When the snapshot iterator runs, and where its output goes: a pass over
// the mms whose values are unknown (DeltaReconstructor::snapshot_candidates)
// starts at most every `period_ns`, only while the drain keeps up (behind
// the kernel, its records would wait behind the backlog and a loss would
// void them), and is read a few chunks per call so that the caller's
// loop is never held long; the decoded snapshots wait in the queue the
// reconstructor takes them from at their records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "audit/counter_snapshot.h"
#include "audit/delta_reconstructor.h"
#include "capture/snapshot_iterator.h"

namespace rssaudit {

struct SnapshotPassStats {
  uint64_t passes = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;  // a pass that failed (the last error is kept)
  std::string last_error;
};

class SnapshotPasses {
 public:
  explicit SnapshotPasses(uint64_t period_ns = 500'000'000)
      : period_ns_(period_ns) {}
  SnapshotPasses(const SnapshotPasses&) = delete;
  SnapshotPasses& operator=(const SnapshotPasses&) = delete;

  // Call before each drain (the records a read places are then drained
  // with it). `caught_up`: the last drain emptied the streams.
  void step(SnapshotIterator& iterator, DeltaReconstructor& reconstructor,
            uint64_t now_ns, bool caught_up);

  SnapshotQueue& queue() { return queue_; }
  const SnapshotPassStats& stats() const { return stats_; }

 private:
  void fail(std::string why);

  static constexpr uint64_t kReadBudgetNs = 5'000'000;  // per step
  // With no candidate: each check walks every mm (~7% of the daemon's CPU
  // with 3 000 processes at 20 ms); an mm joined mid-life waits a tenth of
  // a second more.
  static constexpr uint64_t kIdleCheckNs = 100'000'000;
  static constexpr size_t kMaxMms = size_t{1} << 18;  // the map's size
  const uint64_t period_ns_;
  uint64_t next_pass_ns_ = 0;
  SnapshotDecoder decoder_;
  SnapshotQueue queue_;
  std::vector<uint8_t> chunk_;
  std::vector<CounterSnapshot> decoded_;
  SnapshotPassStats stats_;
};

}  // namespace rssaudit
