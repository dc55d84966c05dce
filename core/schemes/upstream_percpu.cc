#include "core/schemes/upstream_percpu.h"

namespace rssaudit {

UpstreamPercpu::UpstreamPercpu(const Topology& t)
    : nr_cpus_(t.nr_cpus),
      batch_(t.upstream_batch),
      slots_(t.nr_cpus) {}

int64_t UpstreamPercpu::precise(int member) const {
  int64_t sum = count_[member];
  slots_.for_each_allocated(
      [&](uint32_t, const std::array<int32_t, kMembers>& s) {
        sum += s[member];
      });
  return sum;
}

void UpstreamPercpu::fold_all() {
  std::array<int64_t, kMembers> folded{};
  std::array<bool, kMembers> moved{};
  slots_.for_each_allocated(
      [&](uint32_t, const std::array<int32_t, kMembers>& s) {
        for (int m = 0; m < kMembers; ++m) {
          folded[m] += s[m];
          moved[m] |= s[m] != 0;
        }
      });
  slots_.fill({});
  for (int m = 0; m < kMembers; ++m) {
    count_[m] += folded[m];
    carries_ += moved[m];  // one lock acquisition per counter folded
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
