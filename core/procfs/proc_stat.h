// /proc/PID/stat: identity (pid, start time), state, whether the process is
// exiting, and the approximate RSS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/procfs/proc_parse_error.h"

namespace rssaudit {

// Field numbers are those of proc(5).
struct ProcStat {
  uint32_t pid = 0;          // 1
  std::string comm;          // 2, without the parentheses
  char state = '?';          // 3
  uint32_t ppid = 0;         // 4
  uint32_t flags = 0;        // 9, the task's PF_* flags
  uint32_t num_threads = 0;  // 20
  uint64_t start_time = 0;   // 22, clock ticks after boot
  uint64_t vsize = 0;        // 23, bytes
  uint64_t rss = 0;          // 24, pages: the kernel's approximate counters

  // Its exit has begun (PF_EXITING, set before the mm is torn down), or it
  // is a zombie or dead: its RSS counters are being, or were, torn down.
  bool exiting() const {
    return (flags & kPfExiting) != 0 || state == 'Z' || state == 'X';
  }

  bool operator==(const ProcStat&) const = default;

  static constexpr uint32_t kPfExiting = 0x4;  // include/linux/sched.h
};

// What two reads of stat, one before and one after the other files of a
// sample, say of the RSS counters in between (docs/kernel.md, "Drift of one
// moment").
enum class RssReads : uint8_t {
  kStill,    // field 24 the same at both reads, no exit under way
  kMoving,   // field 24 (the counters' central counts) moved in between
  kExiting,  // the exit had begun at one read or both: a teardown
};
RssReads rss_reads_between(const ProcStat& before, const ProcStat& after);

// The comm runs from the first '(' to the last ')': it may hold spaces,
// parentheses and newlines. Fields past 24 are not read; a text that ends
// before field 24's terminating space is an error naming the field.
Result<ProcStat, ParseError> parse_proc_stat(std::string_view text);

}  // namespace rssaudit
