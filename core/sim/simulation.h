// Runs a synthetic workload through every scheme and summarises what each
// would have reported: `rssaudit simulate` and the benchmarks use this.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"
#include "core/sim/workload.h"

namespace rssaudit {

class MmAudit;

struct SchemeOutcome {
  std::string_view name;
  Bound bound;                // largest bound seen (pages per counter)
  int64_t largest_error = 0;  // largest |approximate - exact| reached
  int64_t final_error = 0;    // signed, at the end of the last mm
  uint64_t shared_updates = 0;
  size_t bytes_per_mm = 0;  // largest seen at the end of an mm's life
  ReadCost read_cost{};     // largest seen at the end of an mm's life
};

struct SimulationResult {
  uint64_t updates = 0;
  uint64_t mms = 0;
  int64_t peak_rss = 0;  // largest true RSS of any mm, pages
  std::vector<SchemeOutcome> schemes;
};

// One mm's figures per scheme, in SchemeSet::kNames order, as of now: the
// largest bound of any member, the final error of the member furthest off,
// and its own shared updates and bytes. Simulation and `whatif` both report
// through this, so an mm gets the same figures whatever fed it.
std::vector<SchemeOutcome> mm_outcomes(const MmAudit& mm);

// `progress(updates_done)` is called about every million updates.
SimulationResult simulate(const Topology& t, const WorkloadParams& p,
                          const std::function<void(uint64_t)>& progress = {});

}  // namespace rssaudit
