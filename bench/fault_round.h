// One round of the capture benchmarks' workload: mmap 64 MiB, touch every
// 4 KiB page, munmap (≈ one rss_stat update per page). Shared by
// fault_loop and attach_toggle so both time the very same work.
#ifndef RSSAUDIT_BENCH_FAULT_ROUND_H
#define RSSAUDIT_BENCH_FAULT_ROUND_H

#include <sys/mman.h>

#include <cstddef>

#include "os/clock.h"

namespace rssaudit::bench {

// ns per page of one round, or a negative number when mmap fails.
inline double fault_round_ns_per_page() {
  constexpr size_t kBytes = size_t{64} << 20, kPage = 4096;
  const uint64_t t0 = monotonic_ns();
  char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return -1;
  madvise(p, kBytes, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < kBytes; i += kPage)
    static_cast<volatile char*>(p)[i] = 1;
  munmap(p, kBytes);
  return double(monotonic_ns() - t0) / (kBytes / kPage);
}

}  // namespace rssaudit::bench

#endif
