// How fast the history grows: what the flushes added to its data
// (Store::grown_bytes(), a running total), per second, over the last hour.
// Retention's deletes do not count: this is what a size cap has to absorb.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace rssaudit {

class GrowthRate {
 public:
  static constexpr uint64_t kWindowNs = 3600'000'000'000;
  // Shorter than this, a few flushes of a busy minute would be a day's rate.
  static constexpr uint64_t kMinSpanNs = 60'000'000'000;

  // The running total `grown_bytes` at monotonic time `now_ns` (a flush).
  void add(uint64_t now_ns, uint64_t grown_bytes) {
    points_.emplace_back(now_ns, grown_bytes);
    // Keeps one point at least kWindowNs old, so the span is the window.
    while (points_.size() > 1 && points_[1].first + kWindowNs <= now_ns)
      points_.pop_front();
  }
  // Bytes per second over the window; empty until it spans a minute.
  std::optional<double> bytes_per_s() const {
    if (points_.empty()) return std::nullopt;
    const uint64_t span = points_.back().first - points_.front().first;
    if (span < kMinSpanNs) return std::nullopt;
    return double(points_.back().second - points_.front().second) * 1e9 /
           double(span);
  }

 private:
  std::deque<std::pair<uint64_t, uint64_t>> points_;  // (time, total)
};

}  // namespace rssaudit
