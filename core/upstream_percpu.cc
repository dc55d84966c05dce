#include "core/upstream_percpu.h"

namespace rssaudit {

UpstreamPercpu::UpstreamPercpu(const Topology& t)
    : nr_cpus_(t.nr_cpus),
      batch_(t.upstream_batch),
      slots_(new int32_t[size_t{t.nr_cpus} * kMembers]()) {}

int64_t UpstreamPercpu::precise(int member) const {
  int64_t sum = count_[member];
  for (uint32_t c = 0; c < nr_cpus_; ++c) sum += slots_[c * kMembers + member];
  return sum;
}

void UpstreamPercpu::fold_all() {
  for (int m = 0; m < kMembers; ++m) {
    bool moved = false;
    for (uint32_t c = 0; c < nr_cpus_; ++c) {
      int32_t& slot = slots_[c * kMembers + m];
      moved |= slot != 0;
      count_[m] += slot;
      slot = 0;
    }
    carries_ += moved;  // one lock acquisition per counter folded
  }
}

size_t UpstreamPercpu::bytes_per_mm() const {
  // struct percpu_counter (lock, s64 count, list_head, counters pointer) per
  // member, plus one s32 per member on every possible CPU.
  constexpr size_t kPercpuCounterStruct = 40;
  return kMembers * kPercpuCounterStruct +
         size_t{nr_cpus_} * kMembers * sizeof(int32_t);
}

}  // namespace rssaudit
