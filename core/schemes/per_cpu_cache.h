// Scheme 4: Kairui Song's per-CPU RSS cache RFC (2022). Each CPU caches the
// deltas of the mm it is running; the cache is folded into the mm's atomics
// when the CPU switches to another mm. Every reader (get_mm_counter(), so
// stat, statm, status, VmHWM alike) adds to the atomics the caches of every
// possible CPU whose cached mm is this one: precise, up to lockless-read
// races the model does not play, at O(possible CPUs) per read.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/schemes/per_cpu_array.h"
#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"

namespace rssaudit {

class PerCpuCache {
 public:
  static constexpr std::string_view kName = "per_cpu";

  explicit PerCpuCache(const Topology& t);

  // The owner runs on u.cpu, so that CPU's cached mm is this one and the
  // delta stays in its cache; other tasks' updates (reclaim, remote access)
  // target an mm their CPU does not cache and go to the atomics.
  void add(const Update& u) {
    if (u.by_owner()) {
      CpuCache& c = cpus_.at(u.cpu);
      if (c.live_at == kNotLive) [[unlikely]] {
        c.live_at = static_cast<uint32_t>(live_.size());
        live_.push_back(u.cpu);
      }
      c.count[u.member] += u.delta;
    } else {
      atomic_[u.member] += u.delta;
      ++shared_updates_;
    }
    read_[u.member] += u.delta;
  }
  bool on_event(const LifeEvent& e);

  // What its readers return: the atomics plus the matching caches, kept
  // as a running sum so the audit's read per update stays O(1).
  int64_t approximate(int member) const { return read_[member]; }
  // The same, summed as the reader does.
  int64_t precise(int member) const;
  Bound bound(int) const { return std::nullopt; }
  uint64_t shared_updates() const { return shared_updates_; }
  // The caches belong to the CPUs, not to the mm: only the atomics count.
  size_t bytes_per_mm() const { return kMembers * sizeof(int64_t); }
  // The atomics and every possible CPU's cache (patch 4/7; 7/7 narrows it
  // to the CPUs of mm_cpumask).
  ReadCost read_cost() const { return {1 + nr_cpus_, 1 + nr_cpus_}; }

  // The atomics alone, which no reader returns.
  int64_t atomics(int member) const { return atomic_[member]; }

  int64_t cached(int member, uint32_t cpu) const {
    return cpus_.get(cpu).count[member];
  }
  // CPUs whose cache holds this mm (switched in and not yet out).
  size_t live_cpus() const { return live_.size(); }

 private:
  static constexpr uint32_t kNotLive = std::numeric_limits<uint32_t>::max();

  struct CpuCache {
    std::array<int64_t, kMembers> count{};
    uint32_t live_at = kNotLive;  // index in live_
  };

  bool flush(uint32_t cpu);  // whether any value moved

  int64_t nr_cpus_;
  std::array<int64_t, kMembers> atomic_{};
  std::array<int64_t, kMembers> read_{};
  uint64_t shared_updates_ = 0;
  PerCpuArray<CpuCache> cpus_;
  // The CPUs caching this mm, so reads and the exit flush cost O(live CPUs).
  std::vector<uint32_t> live_;
};

static_assert(CountingScheme<PerCpuCache>);

}  // namespace rssaudit
