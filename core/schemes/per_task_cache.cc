#include "core/schemes/per_task_cache.h"

#include <algorithm>

namespace rssaudit {

bool PerTaskCache::on_event(const LifeEvent& e) {
  bool moved = false;
  switch (e.kind) {
    case LifeKind::kFault: {
      // mm/memory.c check_sync_rss_stat(), at the start of handle_mm_fault():
      // `if (task->rss_stat.events++ > TASK_RSS_EVENTS_THRESH) sync_mm_rss()`,
      // so the 66th fault of a fresh task syncs, and sync resets events to 0.
      // In a run of faults with no update between, only the first sync can
      // move a value (the cache is empty after it): O(1) for any run.
      TaskCache& t = task(e.task);
      const uint32_t counting_only =
          t.events > kEventsThresh ? 0 : kEventsThresh + 1 - t.events;
      if (e.count <= counting_only) {
        t.events += static_cast<int32_t>(e.count);
        break;
      }
      moved = sync(t);
      t.events = static_cast<int32_t>((e.count - counting_only - 1) %
                                      (kEventsThresh + 2));
      break;
    }
    case LifeKind::kTaskExit: {
      // do_exit() and exec_mmap() call sync_mm_rss(); the task_struct (and
      // its cache) then stops counting against this mm.
      const auto it =
          std::find_if(tasks_.begin(), tasks_.end(),
                       [&](const TaskCache& t) { return t.tid == e.task; });
      if (it == tasks_.end()) break;
      moved = sync(*it);
      *it = tasks_.back();
      tasks_.pop_back();
      break;
    }
    case LifeKind::kMmExit:
      // Every user synced on its way out before exit_mmap() runs.
      for (TaskCache& t : tasks_) moved |= sync(t);
      tasks_.clear();
      break;
    case LifeKind::kCacheSync: {
      // The kernel's own fold of one member (a stream from a kernel before
      // 6.2 carries every sync, and no kFault to infer them from).
      const int m = static_cast<int>(e.count);
      TaskCache* t = m < kMembers ? find(e.task) : nullptr;
      if (!t || t->count[m] == 0) break;
      atomic_[m] += t->count[m];
      t->count[m] = 0;
      ++shared_updates_;
      moved = true;
      break;
    }
    case LifeKind::kSecondUser:
    case LifeKind::kCpuSwitch:
    case LifeKind::kRusageQuery:
      break;
  }
  return moved;
}

int64_t PerTaskCache::precise(int member) const {
  int64_t sum = atomic_[member];
  for (const TaskCache& t : tasks_) sum += t.count[member];
  return sum;
}

size_t PerTaskCache::bytes_per_mm() const {
  // The mm's atomic_long_t per member, plus each user's task_rss_stat
  // (int events, int count[NR_MM_COUNTERS]) inside its task_struct.
  return kMembers * sizeof(int64_t) +
         tasks_.size() * (sizeof(int32_t) + kMembers * sizeof(int32_t));
}

int64_t PerTaskCache::cached(uint32_t tid, int member) const {
  const TaskCache* t = find(tid);
  return t ? t->count[member] : 0;
}

int32_t PerTaskCache::events(uint32_t tid) const {
  const TaskCache* t = find(tid);
  return t ? t->events : 0;
}

PerTaskCache::TaskCache& PerTaskCache::find_or_add(uint32_t tid) {
  for (last_ = 0; last_ < tasks_.size(); ++last_)
    if (tasks_[last_].tid == tid) return tasks_[last_];
  tasks_.push_back(TaskCache{.tid = tid});
  return tasks_.back();
}

const PerTaskCache::TaskCache* PerTaskCache::find(uint32_t tid) const {
  for (const TaskCache& t : tasks_)
    if (t.tid == tid) return &t;
  return nullptr;
}

// mm/memory.c sync_mm_rss(): one atomic add per non-zero member.
bool PerTaskCache::sync(TaskCache& t) {
  bool moved = false;
  for (int m = 0; m < kMembers; ++m) {
    if (t.count[m] == 0) continue;
    moved = true;
    atomic_[m] += t.count[m];
    t.count[m] = 0;
    ++shared_updates_;
  }
  t.events = 0;
  return moved;
}

}  // namespace rssaudit
