// The pool: thousands of processes alive at once, each mapping and touching
// a page every period, as a host's many small services and workers do.
// The mass exit kills them all in one pass, then reaps them: every exit the
// pool counts is one the history should hold.
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "workload.h"

namespace rssaudit::soak {
namespace {

void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

[[noreturn]] void page_every(int period_ms, pid_t parent) {
  // Dies with the pool, whatever kills it.
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) _exit(0);
  set_comm("soak-pool");
  // A phase of its own: the pool's faults spread over the period.
  sleep_ms(getpid() % period_ms);
  for (;;) {
    const long page = sysconf(_SC_PAGESIZE);
    void* map = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) _exit(1);
    *static_cast<volatile char*>(map) = 1;
    sleep_ms(period_ms);
    munmap(map, page);
  }
}

}  // namespace

int run_pool(int processes, int period_ms, const std::string& status_path) {
  set_comm("soak-pooler");
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGUSR1);
  sigaddset(&wake, SIGTERM);
  sigaddset(&wake, SIGINT);
  sigset_t before;
  sigprocmask(SIG_BLOCK, &wake, &before);
  const pid_t self = getpid();
  std::vector<pid_t> children;
  children.reserve(processes);
  std::string fork_error;
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      sigprocmask(SIG_SETMASK, &before, nullptr);
      page_every(period_ms, self);
    }
    if (pid < 0) {
      fork_error = std::strerror(errno);
      break;
    }
    children.push_back(pid);
  }
  const std::string created = "created=" + std::to_string(children.size());
  write_pids(status_path, children);
  if (fork_error.empty())
    write_status(status_path, "ready " + created);
  else
    write_status(status_path,
                 "failed " + created + " error='fork: " + fork_error + "'");
  int signal = 0;
  if (fork_error.empty()) sigwait(&wake, &signal);
  // All at once: no reaping until every child has its SIGKILL.
  for (const pid_t pid : children) kill(pid, SIGKILL);
  size_t reaped = 0, killed = 0;
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;
    ++reaped;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++killed;
  }
  write_status(status_path, "exited " + created +
                                " reaped=" + std::to_string(reaped) +
                                " killed=" + std::to_string(killed));
  return fork_error.empty() ? 0 : 1;
}

}  // namespace rssaudit::soak
