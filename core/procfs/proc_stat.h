// /proc/PID/stat: identity (pid, start time), state and the approximate RSS.
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
  uint32_t num_threads = 0;  // 20
  uint64_t start_time = 0;   // 22, clock ticks after boot
  uint64_t vsize = 0;        // 23, bytes
  uint64_t rss = 0;          // 24, pages: the kernel's approximate counters

  bool operator==(const ProcStat&) const = default;
};

// The comm runs from the first '(' to the last ')': it may hold spaces,
// parentheses and newlines. Fields past 24 are not read; a text that ends
// before field 24's terminating space is an error naming the field.
Result<ProcStat, ParseError> parse_proc_stat(std::string_view text);

}  // namespace rssaudit
