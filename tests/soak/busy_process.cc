// The busy process: started before rssauditd, it never stops faulting, so
// the stream never shows its mm quiet. Each round touches anonymous, file
// (the program's own executable) and shmem pages, so every RSS counter the
// audit needs a `count` of moves.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "workload.h"

namespace rssaudit::soak {
namespace {

[[noreturn]] void fault_forever(int exe_fd, int pause_us) {
  for (;;) {
    touch_pages(4, MAP_PRIVATE | MAP_ANONYMOUS);
    touch_pages(1, MAP_PRIVATE, exe_fd, false);
    touch_pages(1, MAP_SHARED | MAP_ANONYMOUS);
    if (pause_us > 0) usleep(pause_us);
  }
}

}  // namespace

int run_busy(int threads, int pause_us, const std::string& status_path) {
  set_comm("soak-busy");
  const int exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (exe_fd < 0) {
    std::perror("soak_workload busy: /proc/self/exe");
    return 1;
  }
  // Blocked before the threads exist, so that they inherit the mask and
  // only sigwait() below takes the stop.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  for (int t = 0; t < threads; ++t)
    std::thread(fault_forever, exe_fd, pause_us).detach();
  if (!write_status(status_path, "ready threads=" + std::to_string(threads))) {
    std::perror(("soak_workload busy: " + status_path).c_str());
    return 1;
  }
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}

}  // namespace rssaudit::soak
