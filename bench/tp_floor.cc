// Loads bench/bpf/tp_floor.bpf.c and attaches one of its programs until SIGINT
// or SIGTERM, for bench/attach_toggle to take over (capture_overhead.sh, modes
// `floor`, `ring` and `pcpu`); attach_toggle also drains the records.
//   tp_floor        the empty program: the hook's dispatch into BPF
//   tp_floor ring   one record per update through a ring buffer
//   tp_floor pcpu   one record per update into rssauditd's per-CPU streams
// Usage (root): tp_floor [ring|pcpu]
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "capture/bpf_capture.h"
#include "tp_floor.skel.h"

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  // The transport's streams, sized as rssauditd sizes them.
  const int cpus = libbpf_num_possible_cpus();
  const uint32_t per_cpu =
      cpus > 0
          ? rssaudit::slots_per_cpu_for(rssaudit::CaptureOptions{}.stream_bytes,
                                        static_cast<uint32_t>(cpus))
          : 0;
  tp_floor_bpf* skel = tp_floor_bpf__open();
  if (skel) skel->rodata->slots_per_cpu = per_cpu;
  if (skel && (cpus <= 0 ||
               bpf_map__set_max_entries(skel->maps.slots, cpus * per_cpu) ||
               bpf_map__set_max_entries(skel->maps.positions, cpus) ||
               tp_floor_bpf__load(skel))) {
    tp_floor_bpf__destroy(skel);
    skel = nullptr;
  }
  bpf_program* program = !skel            ? nullptr
                         : mode == "ring" ? skel->progs.tp_ring_floor
                         : mode == "pcpu" ? skel->progs.tp_pcpu_floor
                                          : skel->progs.tp_floor;
  bpf_link* link = program ? bpf_program__attach(program) : nullptr;
  if (!link) {
    fmt::print(stderr, "tp_floor: loading bench/bpf/tp_floor.bpf.c: {}\n",
               std::strerror(errno));
    return 1;
  }
  int sig = 0;
  sigwait(&stop, &sig);
  bpf_link__destroy(link);
  tp_floor_bpf__destroy(skel);
}
