// Scheme 1: the kernel's struct percpu_counter as used by mm->rss_stat since
// f1a7941243c1 (Linux 6.2). Mirrors percpu_counter_add_batch() exactly.
#pragma once

#include <array>
#include <cstdlib>
#include <memory>

#include "core/schemes/per_cpu_array.h"
#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"

namespace rssaudit {

class UpstreamPercpu {
 public:
  static constexpr std::string_view kName = "upstream";

  explicit UpstreamPercpu(const Topology& t);

  void add(const Update& u) { add_batch(u.member, u.cpu, u.delta); }
  bool on_event(const LifeEvent&) { return false; }

  // lib/percpu_counter.c: v = slot + amount; if |v| >= batch, count += v
  // under the lock and the slot returns to 0, else the slot keeps v.
  void add_batch(int member, uint32_t cpu, int64_t amount) {
    int32_t& slot = slots_.at(cpu)[member];
    const int64_t v = slot + amount;
    if (std::llabs(v) >= batch_) {
      count_[member] += v;
      slot = 0;
      ++carries_;
    } else {
      slot = static_cast<int32_t>(v);
    }
  }

  // Adds straight into count, as percpu_counter_init(fbc, amount) seeds it.
  void add_to_count(int member, int64_t amount) { count_[member] += amount; }

  // Folds every slot into count (percpu_counter_sum + set, as a sync does).
  void fold_all();

  int64_t approximate(int member) const { return count_[member]; }
  int64_t precise(int member) const;
  Bound bound(int) const { return int64_t{nr_cpus_} * (batch_ - 1); }
  uint64_t shared_updates() const { return carries_; }
  size_t bytes_per_mm() const;
  // `count`; the sum adds every CPU's slot (its own line each).
  ReadCost read_cost() const { return {1, 1 + int64_t{nr_cpus_}}; }

  int32_t slot(int member, uint32_t cpu) const {
    return slots_.get(cpu)[member];
  }
  int32_t batch() const { return batch_; }
  uint32_t nr_cpus() const { return nr_cpus_; }

 private:
  uint32_t nr_cpus_;
  int32_t batch_;
  uint64_t carries_ = 0;
  std::array<int64_t, kMembers> count_{};
  // CPU-major so one CPU's four members share a cache line, as the kernel's
  // percpu_counter_init_many() lays them out.
  PerCpuArray<std::array<int32_t, kMembers>> slots_;
};

static_assert(CountingScheme<UpstreamPercpu>);

}  // namespace rssaudit
