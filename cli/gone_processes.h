// Query-time check of the processes a history says run. On the host of a
// run still running, a pid gone from /proc, a zombie with no thread left
// or a pid naming another process now (its start time changed) is a
// process that exited without its exit recorded: not yet (rssauditd ends
// such a process within two sampling ticks) or never (the daemon stalled).
// Such a process is no longer counted as running. Another host's pids say
// nothing, and a stopped run's processes are shown as of its stop.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "store/store_queries.h"

namespace rssaudit::cli {

// Sets `gone` on each window so found; returns how many. `proc_root` is
// "/proc" but in tests, `this_host` the host name (uname's nodename).
size_t mark_gone(std::vector<ProcessWindow>& windows, StoreReader& reader,
                 const std::string& this_host,
                 const std::string& proc_root = "/proc");
// uname(2)'s nodename, as rssauditd records its run's host.
std::string this_host_name();

}  // namespace rssaudit::cli
