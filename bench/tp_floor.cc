// Attaches bpf/tp_floor.bpf.c, the empty tp_btf/rss_stat program, until
// SIGINT or SIGTERM: what the fault loop pays with it attached is the floor
// of any capture on that hook (bench/capture_overhead.sh, mode `floor`).
// Usage (root): tp_floor
#include <fmt/core.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "tp_floor.skel.h"

int main() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  tp_floor_bpf* skel = tp_floor_bpf__open_and_load();
  if (!skel || tp_floor_bpf__attach(skel)) {
    fmt::print(stderr, "tp_floor: loading bpf/tp_floor.bpf.c: {}\n",
               std::strerror(errno));
    return 1;
  }
  int sig = 0;
  sigwait(&stop, &sig);
  tp_floor_bpf__destroy(skel);
}
