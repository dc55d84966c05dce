// The workload of the capture benchmarks: mmap 64 MiB, touch every 4 KiB
// page, munmap; repeated, pinned to one CPU. Prints the median ns per page
// fault (≈ one rss_stat update per page) over the rounds.
#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  const int cpu = argc > 2 ? std::atoi(argv[2]) : 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
  constexpr size_t kBytes = size_t{64} << 20, kPage = 4096;
  std::vector<double> per_page;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = now_ns();
    char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return 1;
    madvise(p, kBytes, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < kBytes; i += kPage)
      static_cast<volatile char*>(p)[i] = 1;
    munmap(p, kBytes);
    per_page.push_back((now_ns() - t0) / (kBytes / kPage));
  }
  std::sort(per_page.begin(), per_page.end());
  std::printf("%.1f\n", per_page[per_page.size() / 2]);
}
