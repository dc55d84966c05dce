// The workload of the capture benchmarks: fault_round.h's round, repeated,
// pinned to one CPU. Prints the median ns per page fault (≈ one rss_stat
// update per page) over the rounds.
// Usage: fault_loop [ROUNDS [CPU]]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fault_round.h"
#include "pin_to_cpu.h"

int main(int argc, char** argv) {
  using namespace rssaudit::bench;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  pin_to_cpu(argc > 2 ? std::atoi(argv[2]) : 0);
  std::vector<double> per_page;
  for (int r = 0; r < rounds; ++r) {
    const double ns = fault_round_ns_per_page();
    if (ns < 0) return 1;
    per_page.push_back(ns);
  }
  std::sort(per_page.begin(), per_page.end());
  std::printf("%.1f\n", per_page[per_page.size() / 2]);
}
