// Scheme 2: the Hierarchical Per-CPU Counter tree with lazy activation (HPCC,
// v23 RFC), docs/counters.md scheme 2. Per-CPU slots carry with hysteresis into
// a tree of intermediate items and a root; a single-threaded mm keeps only
// two exact biases until a second thread activates the tree.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/schemes/per_cpu_array.h"
#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"

namespace rssaudit {

// Fan-outs from the per-CPU level to the root: `t.hpcc_shape` when set, else
// derived from nr_cpus rounded up to a power of two (docs/counters.md).
std::vector<uint32_t> hpcc_shape(const Topology& t);

// Largest |approximate - precise| of an activated tree, per member, in pages:
//   nr_cpus (B - 1) + sum over levels l >= 1 of
//   min(items(l), nr_cpus) (T(l) - T(l-1)),
// saturated at INT64_MAX for absurd --shape/--batch overrides.
int64_t hpcc_bound(const Topology& t);

class HpccTree {
 public:
  static constexpr std::string_view kName = "hpcc";

  // `t` must pass validate().
  explicit HpccTree(const Topology& t);

  void add(const Update& u) {
    const int m = u.member;
    if (!active_) [[unlikely]] {
      if (u.by_owner()) {
        bias_[m] += u.delta;
      } else {
        atomic_bias_[m] += u.delta;
        ++shared_;
      }
      return;
    }
    int32_t& slot = slots_.at(u.cpu)[m];
    const int64_t v = int64_t{slot} + u.delta;
    if (v > -batch_ && v < batch_) [[likely]] {
      slot = static_cast<int32_t>(v);
      return;
    }
    carry(m, u.cpu, v);
  }
  // kSecondUser activates the tree; every other event leaves it alone.
  bool on_event(const LifeEvent& e);

  int64_t approximate(int member) const {
    return root_[member] + bias_[member] + atomic_bias_[member];
  }
  int64_t precise(int member) const;
  Bound bound(int) const { return active_ ? bound_ : 0; }
  uint64_t shared_updates() const { return shared_; }
  size_t bytes_per_mm() const;
  // The root and biases; the precise read adds the items and every CPU's
  // slots. Before activation the biases alone, exact.
  ReadCost read_cost() const {
    if (!active_) return {1, 1};
    return {1, 1 + static_cast<int64_t>(nr_items_ + nr_cpus_)};
  }

  bool activated() const { return active_; }
  // Levels below the root: 0 holds the per-CPU slots, 1.. the items.
  int depth() const { return static_cast<int>(levels_.size()); }
  int64_t threshold(int level) const { return levels_[level].threshold; }
  uint64_t items(int level) const { return levels_[level].items; }
  // Carries sent up from `level` (into level + 1, or the root from the top).
  uint64_t carries_at_level(int level) const { return carries_[level]; }
  // Residual at `level` on the path of `cpu` (its slot at level 0); only
  // meaningful once activated.
  int64_t residual(int level, uint32_t cpu, int member) const;
  // First broken tree invariant, empty when none: every residual within its
  // threshold, item residuals multiples of the level below's threshold.
  // O(CPUs x depth).
  std::string check_invariants() const;

 private:
  struct Level {
    int64_t threshold;
    size_t base;      // first item of this level in items_ (unused at level 0)
    uint64_t items;   // a --shape product may reach 2^32
    uint64_t fed;     // items some CPU feeds: min(items, nr_cpus)
    bool items_pow2;  // index by mask instead of modulo
    bool threshold_pow2;  // round carries by mask instead of division
  };

  size_t item_index(const Level& lv, uint32_t cpu) const {
    const uint64_t i = lv.items_pow2 ? cpu & (lv.items - 1) : cpu % lv.items;
    return (lv.base + i) * kMembers;
  }
  // The slot value v left (-batch, batch): send it up the tree.
  void carry(int member, uint32_t cpu, int64_t v);

  uint32_t nr_cpus_;
  int32_t batch_;
  bool active_ = false;
  uint64_t shared_ = 0;
  int64_t bound_;
  size_t nr_items_ = 0;      // intermediate items of the kernel's tree
  size_t stored_items_ = 0;  // those some CPU feeds: the others stay 0
  // The geometry is per machine in the kernel (set up once at boot); only
  // the counters below are per mm.
  std::vector<Level> levels_;
  std::vector<uint64_t> carries_;
  std::array<int64_t, kMembers> bias_{};         // owner, plain adds
  std::array<int64_t, kMembers> atomic_bias_{};  // other tasks, atomic adds
  std::array<int64_t, kMembers> root_{};
  // Allocated at activation, the slots per 64 CPUs as they are used.
  // CPU-major / item-major so one CPU's (item's) four members share a cache
  // line. Only fed items are stored: CPU c < nr feeds item c mod items <
  // min(items, nr), so a --shape whose product dwarfs the CPU count costs
  // no more than depth x CPUs.
  PerCpuArray<std::array<int32_t, kMembers>> slots_;
  std::unique_ptr<int64_t[]> items_;
};

static_assert(CountingScheme<HpccTree>);

}  // namespace rssaudit
