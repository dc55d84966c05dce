// Scheme 3: SPLIT_RSS_COUNTING before Linux 6.2 (removed by f1a7941243c1).
// The owner's fault-path updates stay in a per-task cache (task_rss_stat)
// that is folded into the mm's atomics every TASK_RSS_EVENTS_THRESH faults
// and at exit; every other update goes to the atomics directly.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"

namespace rssaudit {

class PerTaskCache {
 public:
  static constexpr std::string_view kName = "per_task";
  // include/linux/mm_types_task.h
  static constexpr int32_t kEventsThresh = 64;
  // The most faults whose updates one cache holds: a sync at a fault's
  // entry leaves events at 0 and caches that fault's updates; the next
  // 65 see events 0..64, not above the threshold; the one after syncs.
  static constexpr int32_t kMaxCachedFaults = kEventsThresh + 2;

  explicit PerTaskCache(const Topology&) {}

  // mm/memory.c add_mm_counter_fast(): the fault path of a task whose
  // current->mm is this mm caches the delta; the rest is add_mm_counter().
  void add(const Update& u) {
    if (u.by_owner() && u.in_fault()) {
      task(u.task).count[u.member] += u.delta;
    } else {
      atomic_[u.member] += u.delta;
      ++shared_updates_;
    }
  }
  bool on_event(const LifeEvent& e);

  int64_t approximate(int member) const { return atomic_[member]; }
  // The atomics plus every task's cache (the kernel's readers only had the
  // atomics; the model can see the caches too).
  int64_t precise(int member) const;
  Bound bound(int) const { return std::nullopt; }
  uint64_t shared_updates() const { return shared_updates_; }
  size_t bytes_per_mm() const;
  // The atomics; the threads' caches are out of a reader's reach.
  ReadCost read_cost() const { return {1, std::nullopt}; }

  // The cache and event count of task `tid` (0 when it has none).
  int64_t cached(uint32_t tid, int member) const;
  int32_t events(uint32_t tid) const;
  size_t tasks() const { return tasks_.size(); }

 private:
  // struct task_rss_stat, keyed by tid.
  struct TaskCache {
    uint32_t tid = 0;
    int32_t events = 0;
    // The kernel's is an int; 64 bits here, so that a recording's
    // impossible deltas cannot overflow the model (bytes_per_mm counts the
    // kernel's size).
    std::array<int64_t, kMembers> count{};
  };

  // Tries the task found last, then scans: few tasks share an mm and
  // consecutive updates mostly come from the same one.
  TaskCache& task(uint32_t tid) {
    if (last_ < tasks_.size() && tasks_[last_].tid == tid) return tasks_[last_];
    return find_or_add(tid);
  }
  TaskCache& find_or_add(uint32_t tid);
  const TaskCache* find(uint32_t tid) const;
  TaskCache* find(uint32_t tid) {
    return const_cast<TaskCache*>(std::as_const(*this).find(tid));
  }
  bool sync(TaskCache& t);  // whether any value moved

  std::array<int64_t, kMembers> atomic_{};  // mm->rss_stat.count[]
  uint64_t shared_updates_ = 0;
  std::vector<TaskCache> tasks_;
  size_t last_ = 0;
};

static_assert(CountingScheme<PerTaskCache>);

}  // namespace rssaudit
