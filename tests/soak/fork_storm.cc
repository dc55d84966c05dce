// The fork storm: short-lived processes at a steady rate, each with an mm
// of its own (a fork, no exec) that faults a page and exits at once. The
// storm counts what it forked and reaped; the history should hold each.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "workload.h"

namespace rssaudit::soak {
namespace {

volatile sig_atomic_t stop_requested = 0;

void request_stop(int) { stop_requested = 1; }

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

timespec at(int64_t ns) { return {ns / 1000000000, ns % 1000000000}; }

}  // namespace

int run_storm(int rate, int seconds, const std::string& status_path) {
  set_comm("soak-stormer");
  struct sigaction stop {};
  stop.sa_handler = request_stop;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  const int64_t interval = 1000000000 / rate;
  const int64_t start = now_ns(), end = start + int64_t{seconds} * 1000000000;
  int64_t next = start;
  uint64_t reaped = 0;
  std::vector<pid_t> forked;
  forked.reserve(static_cast<size_t>(rate) * seconds);
  std::string fork_error;
  while (!stop_requested && next < end) {
    const timespec wake = at(next);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      set_comm("soak-storm");
      _exit(touch_pages(1, MAP_PRIVATE | MAP_ANONYMOUS) ? 0 : 1);
    }
    if (pid < 0) {
      fork_error = std::strerror(errno);
      break;
    }
    forked.push_back(pid);
    while (waitpid(-1, nullptr, WNOHANG) > 0) ++reaped;
    // Behind by more than a second (the host is saturated): the rate is
    // what the host gives, not a burst to catch up.
    next += interval;
    if (now_ns() - next > 1000000000) next = now_ns();
  }
  for (;;) {
    const pid_t pid = waitpid(-1, nullptr, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    ++reaped;
  }
  const double took = double(now_ns() - start) / 1e9;
  write_pids(status_path, forked);
  std::string line = "done forked=" + std::to_string(forked.size()) +
                     " reaped=" + std::to_string(reaped) +
                     " seconds=" + std::to_string(took);
  if (!fork_error.empty()) line += " error='fork: " + fork_error + "'";
  write_status(status_path, line);
  return fork_error.empty() ? 0 : 1;
}

}  // namespace rssaudit::soak
