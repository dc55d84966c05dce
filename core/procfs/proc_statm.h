// /proc/PID/statm: the sizes task_statm() reports, in pages.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/procfs/proc_parse_error.h"

namespace rssaudit {

struct ProcStatm {
  uint64_t size = 0;      // total VM
  uint64_t resident = 0;  // file + anon + shmem
  uint64_t shared = 0;    // file + shmem
  uint64_t text = 0;
  uint64_t lib = 0;  // always 0 since Linux 2.6
  uint64_t data = 0;
  uint64_t dt = 0;  // always 0 since Linux 2.6

  bool operator==(const ProcStatm&) const = default;
};

// Exactly seven numbers on one line; the line must end in '\n'.
Result<ProcStatm, ParseError> parse_proc_statm(std::string_view text);

}  // namespace rssaudit
