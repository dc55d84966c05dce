// How long the daemon's loop kept a handler waiting: a probe timer fires
// every kPeriodNs and its lateness is the wait any query, scrape or
// signal had then. Kept as the largest per second over the last minute
// (for status and the metrics) and since it was last taken (for the
// summary line).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace rssaudit {

class LoopDelay {
 public:
  static constexpr uint64_t kPeriodNs = 100'000'000;

  // The probe was due at `due_ns` and ran at `now_ns` (CLOCK_MONOTONIC).
  void note(uint64_t due_ns, uint64_t now_ns) {
    const uint64_t late = now_ns > due_ns ? now_ns - due_ns : 0;
    const uint64_t second = now_ns / 1'000'000'000;
    uint64_t& slot = seconds_[second % seconds_.size()];
    if (stamps_[second % stamps_.size()] != second) {
      stamps_[second % stamps_.size()] = second;
      slot = 0;
    }
    slot = std::max(slot, late);
    since_taken_ = std::max(since_taken_, late);
  }
  // The largest over the minute up to `now_ns`.
  uint64_t last_minute_ns(uint64_t now_ns) const {
    const uint64_t second = now_ns / 1'000'000'000;
    uint64_t worst = 0;
    for (size_t i = 0; i < seconds_.size(); ++i)
      if (stamps_[i] + seconds_.size() > second)
        worst = std::max(worst, seconds_[i]);
    return worst;
  }
  // The largest since the previous call.
  uint64_t take() { return std::exchange(since_taken_, 0); }

 private:
  std::array<uint64_t, 60> seconds_{};
  std::array<uint64_t, 60> stamps_{};
  uint64_t since_taken_ = 0;
};

}  // namespace rssaudit
