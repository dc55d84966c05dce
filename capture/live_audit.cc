#include "capture/live_audit.h"

#include "os/clock.h"

namespace rssaudit {

LiveAudit::LiveAudit(std::unique_ptr<BpfCapture> capture, int32_t batch,
                     uint64_t max_poll_ns)
    : capture_(std::move(capture)),
      reconstructor_(ReconstructorOptions{
          .nr_cpus = capture_->possible_cpus(),
          .batch = batch,
          .preemptible = capture_->support().preempts_in_kernel()}),
      // A drain should find at most a quarter of a stream.
      pacing_{1'000'000, max_poll_ns, capture_->stream_records() / 4},
      last_drain_ns_(monotonic_ns()),
      caught_up_ns_(last_drain_ns_),
      next_poll_ns_(max_poll_ns) {
  reconstructor_.read_snapshots_from(&passes_.queue());
}

uint64_t LiveAudit::drain(ReconstructorSink& sink) {
  // Before the poll reads the streams' heads: every record published
  // before this time is handed over by the poll, so the reconstructor may
  // let out what it holds up to it. With the time after the poll, at 2 M
  // records/s its queue grew to a whole stream and records were lost.
  const uint64_t polled_ns = monotonic_ns();
  // Its records are in the streams before the poll below reads them.
  if (SnapshotIterator* iterator = capture_->snapshots())
    passes_.step(*iterator, reconstructor_, polled_ns, caught_up_);
  // At most kMaxPerPoll records, and for no longer than kDrainBudgetNs:
  // on a loaded host a record takes tens of microseconds of wall time (42
  // in the soak's mass exit, the daemon a share of a CPU), and the loop
  // answers queries between drains. The clock is read once per chunk.
  uint64_t n = 0;
  bool full = false;
  do {
    const auto got = static_cast<uint64_t>(
        capture_->poll(polled_ns, kDrainChunk, [&](const rss_event& e) {
          reconstructor_.on_event(e, sink);
        }));
    n += got;
    full = got == kDrainChunk;
  } while (full && n < BpfCapture::kMaxPerPoll &&
           monotonic_ns() - polled_ns < kDrainBudgetNs);
  records_ += n;
  reconstructor_.on_drops(capture_->drops());
  // Every record published before polled_ns has been handed over only if
  // the poll emptied the streams: not if it stopped at its slice's end,
  // nor at a record still being written (which may have started before
  // polled_ns, its CPU taken from it mid-program). Until then the
  // reconstructor waits, and no snapshot pass starts.
  const bool behind = full;
  caught_up_ = !behind && !capture_->held_back();
  if (caught_up_) {
    reconstructor_.advance(polled_ns, sink);
    caught_up_ns_ = polled_ns;
    unseen_ends_.apply(polled_ns, [this](const MmKey& key) {
      reconstructor_.end_unseen(key);
    });
  }
  const uint64_t now = monotonic_ns();
  next_poll_ns_ =
      behind ? 0 : rssaudit::next_poll_ns(pacing_, n, now - last_drain_ns_);
  last_drain_ns_ = now;
  return n;
}

}  // namespace rssaudit
