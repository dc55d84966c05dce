// The input every counting scheme consumes: counter updates and the life-cycle
// events of one mm. Live capture, replay and simulation all produce these.
#pragma once

#include <cstdint>

namespace rssaudit {

// mm->rss_stat members, in the kernel's order (include/linux/mm_types_task.h).
enum Member : uint8_t {
  kFilePages = 0,
  kAnonPages = 1,
  kSwapEnts = 2,
  kShmemPages = 3,
};
inline constexpr int kMembers = 4;
// RSS (VmRSS, statm resident) sums the file, anon and shmem counters, so
// its error bound is this many times one counter's.
inline constexpr int kRssCounters = 3;

// Update::flags bits.
inline constexpr uint8_t kUpdateByOwner = 1;  // current->mm == this mm
inline constexpr uint8_t kUpdateInFault = 2;  // from the owner's page fault

// One counter update of one mm, in pages.
struct Update {
  uint64_t time_ns = 0;
  uint32_t task = 0;  // tid of the updating task
  uint32_t cpu = 0;
  int32_t delta = 0;
  uint8_t member = kAnonPages;
  uint8_t flags = kUpdateByOwner | kUpdateInFault;

  bool by_owner() const { return flags & kUpdateByOwner; }
  bool in_fault() const { return flags & kUpdateInFault; }
};

enum class LifeKind : uint8_t {
  kFault,        // a task of the mm enters a user page fault (before updates)
  kSecondUser,   // clone(CLONE_VM) without CLONE_VFORK: a second thread
  kTaskExit,     // a task using the mm exits (or execs away from it)
  kCpuSwitch,    // `cpu` switched from this mm to another one
  kRusageQuery,  // a reader asks for rusage/taskstats of the mm's process
  kMmExit,       // the mm is torn down (exit_mmap)
  // A kernel before 6.2 folded `task`'s cache of member `count` into the
  // mm's atomic (sync_mm_rss(), seen by the capture). Such a stream carries
  // every sync and no kFault: the per_task scheme is the kernel's own there.
  kCacheSync,
};

struct LifeEvent {
  LifeKind kind = LifeKind::kFault;
  uint32_t task = 0;
  uint32_t cpu = 0;
  // kFault: this many faults in a row by `task`, with no update between
  // (a capture learns a task's faults only at its next update).
  // kCacheSync: the member.
  uint32_t count = 1;
  // kTaskExit: the task's process (tgid), and whether the task was its
  // last thread: the process ended (else a thread exited, or it exec'd).
  uint32_t process = 0;
  bool process_ended = false;
  // With process_ended: the process's start time (stat field 22) from its
  // exit record; 0 where the record has none (recordings before it).
  uint64_t start_ticks = 0;
};

}  // namespace rssaudit
