#include "core/schemes/per_cpu_cache.h"

namespace rssaudit {

PerCpuCache::PerCpuCache(const Topology& t)
    : nr_cpus_(t.nr_cpus), cpus_(t.nr_cpus) {}

bool PerCpuCache::on_event(const LifeEvent& e) {
  bool moved = false;
  switch (e.kind) {
    case LifeKind::kCpuSwitch:
      moved = flush(e.cpu);
      break;
    case LifeKind::kMmExit:
      while (!live_.empty()) moved |= flush(live_.back());
      break;
    case LifeKind::kFault:
    case LifeKind::kSecondUser:
    case LifeKind::kTaskExit:
    case LifeKind::kRusageQuery:
    case LifeKind::kCacheSync:
      break;
  }
  return moved;
}

int64_t PerCpuCache::precise(int member) const {
  int64_t sum = atomic_[member];
  for (uint32_t cpu : live_) sum += cpus_.get(cpu).count[member];
  return sum;
}

// The switch-out path folds the outgoing mm's cache: one atomic add per
// non-zero member. The CPU then caches another mm.
bool PerCpuCache::flush(uint32_t cpu) {
  // Only live CPUs hold this mm; the others need no chunk allocated.
  if (cpus_.get(cpu).live_at == kNotLive) return false;
  CpuCache& c = cpus_.at(cpu);
  bool moved = false;
  for (int m = 0; m < kMembers; ++m) {
    if (c.count[m] == 0) continue;
    moved = true;
    atomic_[m] += c.count[m];
    c.count[m] = 0;
    ++shared_updates_;
  }
  // Swap-remove from live_.
  const uint32_t last = live_.back();
  live_[c.live_at] = last;
  cpus_.at(last).live_at = c.live_at;
  live_.pop_back();
  c.live_at = kNotLive;
  return moved;
}

}  // namespace rssaudit
