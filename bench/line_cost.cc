// What one atomic add costs on a cache line every CPU writes, against one
// on the CPU's own line, with one CPU adding and with every CPU adding at
// once (bench/bpf/line_cost.bpf.c under BPF_PROG_TEST_RUN, a bpf_loop of
// ADDS adds per run, one thread pinned per CPU). The capture's global
// `sequence` is such a shared line, written on every RSS update: with
// every CPU faulting, each add waits for the line to come from the CPU
// that wrote it last. The difference "shared, all CPUs" minus "own, all
// CPUs" is that wait on this host; docs/kernel.md argues from it what the
// line costs with hundreds of CPUs faulting.
// Prints the median over ROUNDS of ns per add for each case.
// Usage (root): line_cost [ROUNDS [ADDS]]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "line_cost.skel.h"
#include "os/clock.h"
#include "pin_to_cpu.h"

namespace {

struct LineArgs {
  uint32_t adds;
  uint32_t shared;
};

// ns per add of one run of `adds` adds on the calling thread's CPU, or a
// negative number when the run failed.
double run_once(int prog_fd, uint32_t adds, bool shared) {
  LineArgs args{adds, shared ? 1u : 0u};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args,
              .ctx_size_in = sizeof(args));
  const uint64_t t0 = rssaudit::monotonic_ns();
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) return -1;
  return double(rssaudit::monotonic_ns() - t0) / adds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// One run on each of CPUs 0..cpus-1 at once: the mean ns per add.
double run_on(int prog_fd, uint32_t adds, bool shared, int cpus) {
  std::vector<double> ns(cpus);
  std::vector<std::thread> threads;
  for (int c = 0; c < cpus; ++c)
    threads.emplace_back([&, c] {
      ns[c] =
          rssaudit::bench::pin_to_cpu(c) ? run_once(prog_fd, adds, shared) : -1;
    });
  for (auto& t : threads) t.join();
  double sum = 0;
  for (const double x : ns) {
    if (x < 0) return -1;
    sum += x;
  }
  return sum / cpus;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const uint32_t adds =
      argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 1u << 22;
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  line_cost_bpf* skel = line_cost_bpf__open_and_load();
  if (!skel) {
    fmt::print(stderr, "line_cost: loading bench/bpf/line_cost.bpf.c: {}\n",
               std::strerror(errno));
    return 1;
  }
  const int prog = bpf_program__fd(skel->progs.line_add);
  // Interleaved, so that each case sees the host's speed of the moment.
  std::vector<double> own1, own_all, shared1, shared_all;
  for (int r = 0; r < rounds; ++r) {
    own1.push_back(run_on(prog, adds, false, 1));
    shared1.push_back(run_on(prog, adds, true, 1));
    own_all.push_back(run_on(prog, adds, false, cpus));
    shared_all.push_back(run_on(prog, adds, true, cpus));
  }
  line_cost_bpf__destroy(skel);
  const double o1 = median(own1), s1 = median(shared1), oa = median(own_all),
               sa = median(shared_all);
  if (o1 < 0 || s1 < 0 || oa < 0 || sa < 0) {
    fmt::print(stderr, "line_cost: a test run failed: {}\n",
               std::strerror(errno));
    return 1;
  }
  fmt::print("ns per atomic add, median of {} rounds of {} adds\n", rounds,
             adds);
  fmt::print("  own line     1 CPU {:6.1f}   {} CPUs {:6.1f}\n", o1, cpus, oa);
  fmt::print("  shared line  1 CPU {:6.1f}   {} CPUs {:6.1f}\n", s1, cpus, sa);
  fmt::print(
      "  the shared line's wait with {} CPUs adding: {:+.1f} ns per add\n",
      cpus, sa - oa);
}
