// Drives a scheme with a stream and checks, after every update, what
// docs/counters.md promises of every scheme: the approximate read stays within
// the bound of the exact sum, and the precise read equals the exact sum.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "core/schemes/scheme.h"
#include "core/schemes/update.h"

namespace rssaudit::testing {

inline constexpr uint32_t kFirstTid = 100;  // the mm's first thread
inline constexpr uint32_t kRemoteTid = 2;   // kswapd, khugepaged, ...

inline constexpr uint8_t kOwnerFault = kUpdateByOwner | kUpdateInFault;

// One update of `member` on `cpu`: by default the mm's first thread, in one
// of its own page faults.
inline Update update_on(uint32_t cpu, int32_t delta,
                        uint8_t member = kAnonPages,
                        uint8_t flags = kOwnerFault,
                        uint32_t task = kFirstTid) {
  return Update{.task = task,
                .cpu = cpu,
                .delta = delta,
                .member = member,
                .flags = flags};
}

// One update by a task outside the mm (reclaim, remote access): not the
// owner, not in a fault.
inline Update remote_update_on(uint32_t cpu, int32_t delta,
                               uint8_t member = kAnonPages) {
  return update_on(cpu, delta, member, 0, kRemoteTid);
}

// A seeded random stream: updates by one owner task on random CPUs, deltas in
// [-max_delta, max_delta], biased upwards so the counters grow as RSS does.
inline std::vector<Update> random_stream(uint64_t seed, size_t n,
                                         uint32_t nr_cpus, int32_t max_delta) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> cpu(0, nr_cpus - 1);
  std::uniform_int_distribution<int32_t> delta(-max_delta, max_delta + 1);
  std::uniform_int_distribution<int> member(0, kMembers - 1);
  std::vector<Update> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].time_ns = i;
    out[i].cpu = cpu(rng);
    out[i].delta = delta(rng);
    out[i].member = static_cast<uint8_t>(member(rng));
  }
  return out;
}

// Tracks the exact sums and checks the scheme against them.
template <CountingScheme S>
class InvariantChecker {
 public:
  explicit InvariantChecker(S& scheme) : s_(scheme) {}

  // Applies `u` and checks the bound on its member at once; the O(CPUs)
  // precise read is compared every `precise_every` updates and at the end.
  void apply(const Update& u) {
    s_.add(u);
    exact_[u.member] += u.delta;
    check_bound(u.member);
    if (++n_ % precise_every_ == 0) check_precise();
  }
  void apply_all(const std::vector<Update>& stream) {
    for (const Update& u : stream) apply(u);
    check_precise();
  }
  void event(const LifeEvent& e) {
    s_.on_event(e);
    for (int m = 0; m < kMembers; ++m) check_bound(m);
  }

  void check_bound(int m) {
    const int64_t err = s_.approximate(m) - exact_[m];
    largest_error_ = std::max(largest_error_, err < 0 ? -err : err);
    const Bound b = s_.bound(m);
    if (b) {
      ASSERT_LE(err < 0 ? -err : err, *b)
          << S::kName << " member " << m << " after update " << n_;
    }
  }
  void check_precise() {
    for (int m = 0; m < kMembers; ++m)
      ASSERT_EQ(s_.precise(m), exact_[m])
          << S::kName << " member " << m << " after update " << n_;
  }

  void set_precise_every(uint64_t n) { precise_every_ = n; }
  int64_t exact(int m) const { return exact_[m]; }
  int64_t largest_error() const { return largest_error_; }

 private:
  S& s_;
  std::array<int64_t, kMembers> exact_{};
  uint64_t n_ = 0;
  uint64_t precise_every_ = 1;
  int64_t largest_error_ = 0;
};

// The CPU counts every model is checked on (issue #2).
inline const std::vector<uint32_t> kCpuCounts = {
    1, 2, 3, 16, 32, 33, 64, 65, 128, 256, 384, 1024, 4096, 65536};

// Checking the precise sum costs O(CPUs): check it every update on small
// machines and proportionally less often on large ones.
inline uint64_t precise_interval(uint32_t nr_cpus) {
  return nr_cpus <= 64 ? 1 : nr_cpus / 16;
}

}  // namespace rssaudit::testing
