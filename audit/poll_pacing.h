// When the daemon drains the capture's streams next. It sleeps between drains
// (the BPF side never wakes it), and a drain that follows a long sleep is cheap
// per record: on a CPU that idled, the first records of a drain run ~2x
// slower (rssauditd on an otherwise idle CPU, 1 M records/s: 124 ns/record
// polled every 10 ms, 78 every 100 ms, 68-71 on a CPU kept busy; see
// bench/consumer_rate.sh). So the daemon sleeps as long as it is allowed,
// unless at the last drain's rate a stream could by then hold more than
// `batch_records`: a margin that absorbs a rate rising fourfold in one sleep.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rssaudit {

struct PollPacing {
  uint64_t min_ns = 1'000'000;   // shortest sleep
  uint64_t max_ns = 50'000'000;  // longest sleep (--poll-ms)
  uint64_t batch_records = 0;    // records a drain should at most find
};

// The sleep after a drain that found `records` in the `elapsed_ns` since
// the previous drain.
inline uint64_t next_poll_ns(const PollPacing& p, uint64_t records,
                             uint64_t elapsed_ns) {
  if (records == 0 || elapsed_ns == 0) return p.max_ns;
  const double fill_ns =
      double(p.batch_records) * double(elapsed_ns) / double(records);
  if (fill_ns >= double(p.max_ns)) return p.max_ns;
  return std::max(p.min_ns, static_cast<uint64_t>(fill_ns));
}

}  // namespace rssaudit
