#include "core/schemes/topology.h"

#include <algorithm>
#include <string>

namespace rssaudit {

int32_t upstream_rss_batch(uint32_t nr_cpus) {
  return std::max<int32_t>(32, 2 * static_cast<int32_t>(nr_cpus));
}

Topology Topology::for_cpus(uint32_t nr_cpus) {
  Topology t;
  t.nr_cpus = nr_cpus;
  t.upstream_batch = upstream_rss_batch(nr_cpus);
  return t;
}

std::string validate(const Topology& t) {
  if (t.nr_cpus < 1 || t.nr_cpus > kMaxCpus)
    return "cpus must be in 1.." + std::to_string(kMaxCpus) + ", got " +
           std::to_string(t.nr_cpus);
  if (t.upstream_batch < 1)
    return "upstream batch must be positive, got " +
           std::to_string(t.upstream_batch);
  if (t.hpcc_batch < 1)
    return "batch must be positive, got " + std::to_string(t.hpcc_batch);
  if (t.hpcc_shape.empty()) return {};
  uint64_t product = 1;
  for (uint32_t f : t.hpcc_shape) {
    if (f < 2) return "every shape fan-out must be at least 2";
    product *= f;
    if (product > (uint64_t{1} << 32)) return "shape product is too large";
  }
  if (product < t.nr_cpus)
    return "shape product " + std::to_string(product) +
           " is below the CPU count " + std::to_string(t.nr_cpus);
  return {};
}

}  // namespace rssaudit
