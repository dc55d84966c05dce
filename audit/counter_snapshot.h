// Snapshots of RSS counters taken by the snapshot iterator
// (bpf/snapshot.bpf.c): the values it read, decoded from its output, and
// the queue they wait in until the reconstruction reaches the
// RSS_EV_SNAPSHOT record that places each in the capture's sequence. Pure:
// bytes in, values out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "bpf/rss_event.h"
#include "core/result.h"

namespace rssaudit {

struct CounterSnapshot {
  rss_snapshot head{};
  std::vector<rss_snapshot_slot> slots;  // head.slots of them
};

// Splits the iterator's output into snapshots. The kernel writes whole
// entries per read (a task whose entry does not fit is read again in the
// next one), but an entry cut by the caller's buffer is kept for the next
// chunk.
class SnapshotDecoder {
 public:
  // Appends every whole entry of `bytes` (after what an earlier call kept)
  // to `out`. An entry claiming more slots than the iterator ever writes
  // is an error naming its offset in the output; the decoder is then
  // reset.
  Result<void> feed(std::span<const uint8_t> bytes,
                    std::vector<CounterSnapshot>& out);
  // Bytes of an entry not yet whole.
  size_t pending() const { return carry_.size(); }
  void reset() {
    carry_.clear();
    offset_ = 0;
  }

 private:
  std::vector<uint8_t> carry_;
  uint64_t offset_ = 0;  // of carry_'s first byte in the output
};

// Snapshots waiting for their records, in id order (the iterator numbers
// them as it takes their records' sequence numbers, so ids and sequence
// agree).
class SnapshotQueue {
 public:
  void push(CounterSnapshot s) { queue_.push_back(std::move(s)); }
  // The snapshot of record `id`, if read: older ones, whose records were
  // lost, are dropped (and counted). Empty when the iterator wrote nothing
  // for the record (its output overflowed and the task was read again).
  std::optional<CounterSnapshot> take(uint64_t id);
  size_t size() const { return queue_.size(); }
  uint64_t orphans() const { return orphans_; }

 private:
  std::deque<CounterSnapshot> queue_;
  uint64_t orphans_ = 0;
};

}  // namespace rssaudit
