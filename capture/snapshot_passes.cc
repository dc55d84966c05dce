#include "capture/snapshot_passes.h"

#include "os/clock.h"

namespace rssaudit {

void SnapshotPasses::fail(std::string why) {
  ++stats_.errors;
  stats_.last_error = std::move(why);
  decoder_.reset();
}

void SnapshotPasses::step(SnapshotIterator& iterator,
                          DeltaReconstructor& reconstructor, uint64_t now_ns,
                          bool caught_up) {
  if (!iterator.running()) {
    if (!caught_up || now_ns < next_pass_ns_) return;
    const std::vector<uint64_t> mms =
        reconstructor.snapshot_candidates(now_ns, kMaxMms);
    // An mm joined mid-life waits at most a drain or two for its first
    // pass; passes are at least period_ns_ apart.
    next_pass_ns_ = now_ns + (mms.empty() ? kIdleCheckNs : period_ns_);
    if (mms.empty()) return;
    if (Result<void> begun = iterator.begin(mms); !begun)
      return fail(begun.error().message);
    ++stats_.passes;
  }
  const uint64_t until = monotonic_ns() + kReadBudgetNs;
  do {
    chunk_.clear();
    const Result<bool> more = iterator.read(chunk_);
    if (!more) return fail(more.error().message);
    if (!*more) return;  // the pass is over
    stats_.bytes += chunk_.size();
    decoded_.clear();
    if (Result<void> fed = decoder_.feed(chunk_, decoded_); !fed)
      return fail(fed.error().message);
    for (CounterSnapshot& s : decoded_) queue_.push(std::move(s));
  } while (monotonic_ns() < until);
}

}  // namespace rssaudit
