// Pins the calling thread to one CPU: the capture benchmarks put the
// workload on CPU 0 and the consumer on CPU 1.
#ifndef RSSAUDIT_BENCH_PIN_TO_CPU_H
#define RSSAUDIT_BENCH_PIN_TO_CPU_H

#include <sched.h>

namespace rssaudit::bench {

inline bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace rssaudit::bench

#endif
