// How the audit resynchronises after the capture lost records. Which mm a
// lost record concerned is unknown, so a loss voids what is known of every
// mm (and, before 6.2, of every task's cache). Voiding them all at once
// would cost O(live mms) per loss, and a drain far behind is flagged loss
// after loss: instead each holder stamps its state with the epoch it last
// caught up with, and voids it when it is next looked at. A loss costs O(1)
// however many mms live.
#pragma once

#include <cstdint>

namespace rssaudit {

class LossEpoch {
 public:
  // Losses so far.
  uint64_t now() const { return epoch_; }
  void lose() { ++epoch_; }
  // Whether state stamped `stamp` predates a loss.
  bool stale(uint64_t stamp) const { return stamp != epoch_; }
  // Brings `stamp` up to now; true when a loss came since, and the state
  // it stamps is to be voided.
  bool catch_up(uint64_t& stamp) const {
    if (stamp == epoch_) return false;
    stamp = epoch_;
    return true;
  }

 private:
  uint64_t epoch_ = 0;
};

// The capture's drop counter against the records flagged after a loss
// (RSS_EVF_AFTER_LOSS), which place each loss in the stream. A rise of the
// counter with no flagged record since the previous drain is a loss whose
// flagged record has not come yet: it is to be placed at once. A rise
// whose flagged record came in the drain was placed by it already; placing
// it again would void what the records after it re-established.
class UnplacedDrops {
 public:
  // A record flagged after a loss came.
  void placed() { placed_ = true; }
  // After a drain, the drop counter at `total`: whether a loss is unplaced.
  bool after_drain(uint64_t total) {
    const bool unplaced = total != seen_ && !placed_;
    seen_ = total;
    placed_ = false;
    return unplaced;
  }

 private:
  uint64_t seen_ = 0;
  bool placed_ = false;
};

}  // namespace rssaudit
