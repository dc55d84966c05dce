// Tells a sampling gap: a stretch in which the daemon sampled nothing
// because it was stopped (SIGSTOP, a frozen cgroup) or stalled. Each step
// of sampling (a tick begun, a slice begun or done) is a sign of progress;
// two signs further apart than the threshold bound a gap. A stop lands
// anywhere: between ticks, between the slices of a tick, or inside a slice
// (at 10 000 processes the loop spends most of a tick in slices), and a
// check only at the start of a tick misses all but the first.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "store/store_rows.h"

namespace rssaudit {

// Signs further apart than this are a gap: a tick's spacing is its
// interval, so twice it (at least 1 s) is no tick's ordinary pace.
inline uint64_t sampling_gap_threshold_ns(double sample_interval_s) {
  return static_cast<uint64_t>(std::max(2e9 * sample_interval_s, 1e9));
}

class SamplingProgress {
 public:
  // A sign of progress at (`mono_ns`, CLOCK_MONOTONIC; `wall_ns`,
  // CLOCK_REALTIME): the gap since the previous sign, if they are more
  // than `threshold_ns` apart.
  std::optional<SamplingGap> step(uint64_t mono_ns, int64_t wall_ns,
                                  uint64_t threshold_ns) {
    std::optional<SamplingGap> gap;
    if (mono_ns_ != 0 && mono_ns - mono_ns_ > threshold_ns)
      gap = SamplingGap{wall_ns_, wall_ns};
    mono_ns_ = mono_ns;
    wall_ns_ = wall_ns;
    return gap;
  }

 private:
  uint64_t mono_ns_ = 0;  // the last sign; 0: none yet
  int64_t wall_ns_ = 0;
};

}  // namespace rssaudit
