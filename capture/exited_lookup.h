// Who an ended process was, as the capture's exit program kept it
// (bpf/rss_event.h exited_process): names a process its parent reaped
// before /proc could be read.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "bpf/rss_event.h"

namespace rssaudit {

using ExitedLookup =
    std::function<std::optional<exited_process>(uint32_t tgid)>;

// An exited_process's comm (NUL-terminated unless 16 bytes long).
inline std::string comm_of(const exited_process& who) {
  return std::string(who.comm, strnlen(who.comm, sizeof(who.comm)));
}

}  // namespace rssaudit
