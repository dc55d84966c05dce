#include "core/schemes/hpcc_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>

namespace rssaudit {

std::vector<uint32_t> hpcc_shape(const Topology& t) {
  if (!t.hpcc_shape.empty()) return t.hpcc_shape;
  const uint32_t p = std::bit_ceil(t.nr_cpus);
  int bits = std::countr_zero(p);
  if (bits <= 5) return {p};  // flat: the slots carry straight into the root
  if (bits == 6) return {16, 4};
  std::vector<uint32_t> shape;
  for (; bits > 4; bits -= 3) shape.push_back(8);
  shape.push_back(uint32_t{1} << bits);  // 2..4 bits left: root fan-out 4..16
  return shape;
}

namespace {

// The multiple of t in v rounded toward zero, for |v| >= t. Default shapes
// and batches make every threshold a power of two: mask, don't divide.
int64_t carried(int64_t v, int64_t t, bool pow2) {
  if (pow2) return (v + ((v >> 63) & (t - 1))) & -t;
  if (v >= 0) return v - t < t ? t : v / t * t;
  return v + t > -t ? -t : v / t * t;
}

// Saturating, for shapes and batches so large the bound leaves int64.
int64_t add_mul(int64_t acc, int64_t a, int64_t b) {
  int64_t prod;
  if (__builtin_mul_overflow(a, b, &prod) ||
      __builtin_add_overflow(acc, prod, &acc))
    return std::numeric_limits<int64_t>::max();
  return acc;
}

}  // namespace

// approximate - precise = -(sum of every slot and item residual). A slot
// receives arbitrary deltas and keeps |r| <= B - 1. A level-l item (l >= 1)
// only ever receives multiples of T(l-1), so its residual is such a multiple
// below T(l) in magnitude: |r| <= T(l) - T(l-1). Items no CPU feeds stay 0.
// Every fed residual reaches its extreme with the same sign at once (fill the
// top level first with amounts that pass whole through the empty levels
// below, then the slots), so the bound is reached.
int64_t hpcc_bound(const Topology& t) {
  const std::vector<uint32_t> shape = hpcc_shape(t);
  uint64_t items = 1;
  for (uint32_t f : shape) items *= f;
  int64_t threshold = t.hpcc_batch;
  int64_t bound = add_mul(0, t.nr_cpus, threshold - 1);
  for (size_t l = 1; l < shape.size(); ++l) {
    items /= shape[l - 1];
    const int64_t fed =
        static_cast<int64_t>(std::min<uint64_t>(items, t.nr_cpus));
    bound = add_mul(bound, fed, threshold * (shape[l - 1] - 1));
    threshold *= shape[l - 1];
  }
  return bound;
}

HpccTree::HpccTree(const Topology& t)
    : nr_cpus_(t.nr_cpus), batch_(t.hpcc_batch), bound_(hpcc_bound(t)) {
  const std::vector<uint32_t> shape = hpcc_shape(t);
  uint64_t p = 1;
  for (uint32_t f : shape) p *= f;
  levels_.push_back({batch_, 0, p, std::min<uint64_t>(p, nr_cpus_), false,
                     std::has_single_bit(static_cast<uint32_t>(batch_))});
  for (size_t l = 1; l < shape.size(); ++l) {
    const Level& below = levels_.back();
    Level lv;
    lv.threshold = below.threshold * shape[l - 1];
    lv.base = stored_items_;
    lv.items = below.items / shape[l - 1];
    lv.fed = std::min<uint64_t>(lv.items, nr_cpus_);
    lv.items_pow2 = std::has_single_bit(lv.items);
    lv.threshold_pow2 =
        std::has_single_bit(static_cast<uint64_t>(lv.threshold));
    nr_items_ += lv.items;
    stored_items_ += lv.fed;
    levels_.push_back(lv);
  }
  carries_.assign(levels_.size(), 0);
}

bool HpccTree::on_event(const LifeEvent& e) {
  // Activation moves no value: the biases stay as the exact part.
  if (e.kind != LifeKind::kSecondUser || active_) return false;
  slots_ = PerCpuArray<std::array<int32_t, kMembers>>(nr_cpus_);
  items_ = std::make_unique<int64_t[]>(stored_items_ * kMembers);
  active_ = true;
  return false;
}

void HpccTree::carry(int member, uint32_t cpu, int64_t v) {
  int64_t up = carried(v, batch_, levels_[0].threshold_pow2);
  slots_.at(cpu)[member] = static_cast<int32_t>(v - up);
  ++carries_[0];
  ++shared_;
  for (size_t l = 1; l < levels_.size(); ++l) {
    const Level& lv = levels_[l];
    int64_t& r = items_[item_index(lv, cpu) + member];
    const int64_t w = r + up;
    if (w > -lv.threshold && w < lv.threshold) {
      r = w;
      return;
    }
    up = carried(w, lv.threshold, lv.threshold_pow2);
    r = w - up;
    ++carries_[l];
    ++shared_;
  }
  root_[member] += up;
}

int64_t HpccTree::precise(int member) const {
  int64_t sum = approximate(member);
  if (!active_) return sum;
  for (uint32_t c = 0; c < nr_cpus_; ++c)
    sum += slots_.get(c)[member];
  for (size_t i = 0; i < stored_items_; ++i)
    sum += items_[i * kMembers + member];
  return sum;
}

size_t HpccTree::bytes_per_mm() const {
  constexpr size_t kBiases = 2 * kMembers * sizeof(int64_t);
  if (!active_) return kBiases;
  // A slot is a signed byte while the residual fits one, else an s32.
  const size_t slot_bytes = batch_ <= 127 ? 1 : 4;
  return kBiases + kMembers * sizeof(int64_t) +  // root
         nr_items_ * kMembers * sizeof(int64_t) +
         size_t{nr_cpus_} * kMembers * slot_bytes;
}

int64_t HpccTree::residual(int level, uint32_t cpu, int member) const {
  if (level == 0) return slots_.get(cpu)[member];
  return items_[item_index(levels_[level], cpu) + member];
}

std::string HpccTree::check_invariants() const {
  if (!active_) return {};
  for (uint32_t c = 0; c < nr_cpus_; ++c) {
    for (int m = 0; m < kMembers; ++m) {
      const int32_t r = slots_.get(c)[m];
      if (std::abs(r) >= batch_)
        return fmt::format("slot of cpu {} member {} = {} escaped (-{}, {})", c,
                           m, r, batch_, batch_);
    }
  }
  for (size_t l = 1; l < levels_.size(); ++l) {
    const Level& lv = levels_[l];
    const int64_t step = levels_[l - 1].threshold;
    for (uint64_t i = 0; i < lv.fed; ++i) {
      for (int m = 0; m < kMembers; ++m) {
        const int64_t r = items_[(lv.base + i) * kMembers + m];
        if (std::llabs(r) >= lv.threshold)
          return fmt::format(
              "level {} item {} member {} = {} escaped (-{}, {})", l, i, m, r,
              lv.threshold, lv.threshold);
        if (r % step != 0)
          return fmt::format(
              "level {} item {} member {} = {} not a multiple "
              "of {}",
              l, i, m, r, step);
      }
    }
  }
  return {};
}

}  // namespace rssaudit
