// The machine a scheme runs on: CPU count and the batch/shape parameters.
// Shared by live capture (read from the host) and simulation (from flags).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rssaudit {

inline constexpr uint32_t kMaxCpus = 65536;
inline constexpr int32_t kHpccDefaultBatch = 32;
inline constexpr int64_t kPageSize = 4096;

// percpu_counter batch for mm->rss_stat: max(32, 2 * online CPUs)
// (mm/init-mm + lib/percpu_counter.c compute_batch_value()).
int32_t upstream_rss_batch(uint32_t nr_cpus);

struct Topology {
  uint32_t nr_cpus = 1;
  int32_t upstream_batch = 32;
  int32_t hpcc_batch = kHpccDefaultBatch;
  // HPCC fan-outs from the per-CPU level to the root; empty = derived from
  // nr_cpus by the rules of docs/counters.md.
  std::vector<uint32_t> hpcc_shape;

  static Topology for_cpus(uint32_t nr_cpus);
};

// Empty when usable, else a message naming the bad parameter.
std::string validate(const Topology& t);

}  // namespace rssaudit
