// One round of the capture benchmarks' workload: mmap 64 MiB, touch every
// 4 KiB page, munmap (≈ one rss_stat update per page). Shared by
// fault_loop and attach_toggle so both time the very same work.
#ifndef RSSAUDIT_BENCH_FAULT_ROUND_H
#define RSSAUDIT_BENCH_FAULT_ROUND_H

#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <cstddef>

namespace rssaudit::bench {

inline double monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

inline bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// ns per page of one round, or a negative number when mmap fails.
inline double fault_round_ns_per_page() {
  constexpr size_t kBytes = size_t{64} << 20, kPage = 4096;
  const double t0 = monotonic_ns();
  char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return -1;
  madvise(p, kBytes, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < kBytes; i += kPage)
    static_cast<volatile char*>(p)[i] = 1;
  munmap(p, kBytes);
  return (monotonic_ns() - t0) / (kBytes / kPage);
}

}  // namespace rssaudit::bench

#endif
