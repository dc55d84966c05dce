// Audit state of one mm: the exact value (sum of the update stream), the true
// peak RSS, and every scheme's model with the largest error it reached.
#pragma once

#include <array>
#include <cstdint>

#include "core/schemes/scheme_set.h"

namespace rssaudit {

class MmAudit {
 public:
  explicit MmAudit(const Topology& t) : schemes_(t) {}

  void add(const Update& u) {
    schemes_.add(u);
    exact_[u.member] += u.delta;
    const int64_t rss = exact_rss();
    if (rss > peak_rss_) peak_rss_ = rss;
    ++updates_;
    track_error(u.member, ~0u);
  }
  void on_event(const LifeEvent& e) {
    // Only a scheme that moved a value can have a new error.
    if (const uint32_t moved = schemes_.on_event(e))
      for (int m = 0; m < kMembers; ++m) track_error(m, moved);
  }

  int64_t exact(int member) const { return exact_[member]; }
  int64_t exact_rss() const {
    return exact_[kFilePages] + exact_[kAnonPages] + exact_[kShmemPages];
  }
  int64_t peak_rss() const { return peak_rss_; }
  uint64_t updates() const { return updates_; }
  // Largest |approximate - exact| of any member, per scheme (kNames order).
  const std::array<int64_t, SchemeSet::kCount>& largest_error() const {
    return largest_error_;
  }
  // The same since the previous call (history rows cover one interval).
  std::array<int64_t, SchemeSet::kCount> take_interval_error() {
    const auto out = interval_error_;
    interval_error_ = {};
    return out;
  }
  const SchemeSet& schemes() const { return schemes_; }

 private:
  void track_error(int member, uint32_t schemes) {
    schemes_.for_each([&](size_t i, const auto& s) {
      if (!(schemes >> i & 1)) return;
      int64_t err = s.approximate(member) - exact_[member];
      if (err < 0) err = -err;
      if (err > largest_error_[i]) largest_error_[i] = err;
      if (err > interval_error_[i]) interval_error_[i] = err;
    });
  }

  SchemeSet schemes_;
  std::array<int64_t, kMembers> exact_{};
  int64_t peak_rss_ = 0;
  uint64_t updates_ = 0;
  std::array<int64_t, SchemeSet::kCount> largest_error_{};
  std::array<int64_t, SchemeSet::kCount> interval_error_{};
};

}  // namespace rssaudit
