// Mms whose process the daemon's sampling found gone though no exit_mmap
// record of theirs has come (DeltaReconstructor::end_unseen()). Such a
// record may be lost, or only late: under a mass exit the drain runs
// behind the capture by seconds, and an mm ended before its teardown's
// records were read came back as a new mm of the same process, recorded
// as a second exit. So an end waits for the drain to catch up with the
// moment the process was found gone: every record published before it
// has then been handed over, and an exit_mmap record not among them was
// lost (the teardown comes before a process leaves /proc, or in the
// sampler's own read of it, which ended before that moment).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "audit/delta_reconstructor.h"

namespace rssaudit {

class UnseenEnds {
 public:
  // `key`'s process was found gone at `gone_ns` (CLOCK_MONOTONIC).
  void add(const MmKey& key, uint64_t gone_ns) {
    waiting_.push_back({key, gone_ns});
  }
  // The drain has handed over every record published before
  // `caught_up_ns`: `end(key)` for each mm found gone before then.
  template <class End>
  void apply(uint64_t caught_up_ns, End&& end) {
    std::erase_if(waiting_, [&](const Waiting& w) {
      if (w.gone_ns >= caught_up_ns) return false;
      end(w.key);
      return true;
    });
  }
  size_t waiting() const { return waiting_.size(); }

 private:
  struct Waiting {
    MmKey key;
    uint64_t gone_ns = 0;
  };
  std::vector<Waiting> waiting_;
};

}  // namespace rssaudit
