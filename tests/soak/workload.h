// The soak test's workload (run.sh): a busy process, a pool of mostly idle
// processes, a fork storm. Each mode reports what it did in a status file,
// one line of `key=value` words the script reads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace rssaudit::soak {

// THREADS threads that map, touch and unmap anonymous, file and shmem pages
// in a loop, PAUSE_US between rounds, until SIGTERM or SIGINT. Writes
// `ready threads=T` once every thread runs.
int run_busy(int threads, int pause_us, const std::string& status_path);

// N processes that each map and touch a page every PERIOD_MS (at a phase of
// their own), alive at once. Writes `ready created=N`; on SIGUSR1 (the mass
// exit) or SIGTERM kills them all at once and writes
// `exited created=N reaped=R killed=K`. Their pids: write_pids().
int run_pool(int processes, int period_ms, const std::string& status_path);

// RATE short-lived processes a second for SECONDS, each touching a page and
// exiting. Writes `done forked=F reaped=R seconds=S`, and their pids.
int run_storm(int rate, int seconds, const std::string& status_path);

// Shared by the modes.
void set_comm(const char* name);
// Maps `pages` pages as `flags` says (MAP_PRIVATE | MAP_ANONYMOUS, ...),
// writes or reads each, unmaps them: one fault and one unmap per page.
// False when the map failed.
bool touch_pages(int pages, int flags, int fd = -1, bool write = true);
// Replaces the status file's content with `line` (written beside it, then
// renamed: a reader never sees half a line).
bool write_status(const std::string& path, const std::string& line);
// Writes the pids of the processes a mode created to STATUS_PATH.pids, one
// a line: the script names those whose exit the history lacks.
bool write_pids(const std::string& status_path, const std::vector<pid_t>& pids);

}  // namespace rssaudit::soak
