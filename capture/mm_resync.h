// Establishes the absolute value of mms whose exact value the stream alone
// does not give (they existed before the capture, or records were lost):
// reads /proc/PID/status of their owner at a quiescent moment and offers
// the kernel's precise sums to the reconstructor, which keeps them only if
// no record shows the mm moving around the read (see
// capture/delta_reconstructor.h for why /proc rather than a BPF read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "capture/delta_reconstructor.h"
#include "sampler/proc_reader.h"

namespace rssaudit {

struct MmResyncOptions {
  std::string proc_root = "/proc";
  uint64_t page_size = 4096;
  // The owner must not have updated the mm for this long before the read:
  // a busy mm would most likely update it during the read.
  uint64_t quiet_ns = 20'000'000;
  size_t max_per_round = 32;  // /proc reads per call, ~15 us each
  // status gives the precise RSS on this kernel (sampler/reader_probe.h):
  // else there is nothing to resynchronise from, and run() does nothing.
  bool status_precise = true;
};

struct MmResyncStats {
  uint64_t reads = 0;
  uint64_t unreadable = 0;  // the process vanished or hid its status
  uint64_t offered = 0;     // handed to the reconstructor
};

class MmResync {
 public:
  explicit MmResync(MmResyncOptions options) : options_(std::move(options)) {}

  // Call right after a drain (every record started before `now_ns` has
  // been handed to `reconstructor`), before the next one.
  void run(DeltaReconstructor& reconstructor, uint64_t now_ns);

  const MmResyncStats& stats() const { return stats_; }

 private:
  MmResyncOptions options_;
  MmResyncStats stats_;
  ProcReader reader_;
};

}  // namespace rssaudit
