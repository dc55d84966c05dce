#include "capture/live_audit.h"

#include <algorithm>

#include "os/clock.h"

namespace rssaudit {

LiveAudit::LiveAudit(std::unique_ptr<BpfCapture> capture, int32_t batch,
                     uint64_t max_poll_ns, ConsumerThreads threads)
    : capture_(std::move(capture)),
      reconstructor_(ReconstructorOptions{
          .nr_cpus = capture_->possible_cpus(),
          .batch = batch,
          .preemptible = capture_->support().preempts_in_kernel()}),
      // A drain should find at most a quarter of a stream.
      pacing_{1'000'000, max_poll_ns, capture_->stream_records() / 4},
      threads_(threads),
      last_drain_ns_(monotonic_ns()),
      window_ns_(last_drain_ns_),
      caught_up_ns_(last_drain_ns_),
      next_poll_ns_(max_poll_ns) {
  reconstructor_.read_snapshots_from(&passes_.queue());
  if (threads_ == ConsumerThreads::two) start_drain_thread();
}

void LiveAudit::start_drain_thread() {
  // The thread polls before a kernel stream or the queue could hold more
  // than a quarter of itself: a poll of more would find the queue full,
  // the audit not yet at it. It may poll more often than the loop: a poll
  // that finds little costs little, and it serves nothing else.
  PollPacing pacing = pacing_;
  pacing.min_ns = 200'000;
  pacing.batch_records = std::min<uint64_t>(pacing.batch_records,
                                            kQueueRecords / 4);
  drain_thread_ = std::make_unique<DrainThread>(
      capture_->streams(), kQueueRecords, pacing, &capture_->doorbell());
  at_watermark_ = false;
}

uint64_t LiveAudit::drain(ReconstructorSink& sink) {
  // Before the poll reads the streams' heads: every record published
  // before this time is handed over by the poll, so the reconstructor may
  // let out what it holds up to it. With the time after the poll, at 2 M
  // records/s its queue grew to a whole stream and records were lost.
  const uint64_t polled_ns = monotonic_ns();
  // Its records are in the streams before the poll below reads them (or
  // before the drain thread's next poll, which queues them).
  if (SnapshotIterator* iterator = capture_->snapshots())
    passes_.step(*iterator, reconstructor_, polled_ns, caught_up_);
  const auto [n, behind] =
      drain_thread_ ? take_queued(sink) : poll_streams(polled_ns, sink);
  reconstructor_.on_drops(capture_->drops());
  const uint64_t now = monotonic_ns();
  PollPacing pacing = pacing_;
  if (drain_thread_) pacing.batch_records = kQueueRecords / 4;
  next_poll_ns_ =
      behind ? 0 : rssaudit::next_poll_ns(pacing, n, now - last_drain_ns_);
  last_drain_ns_ = now;
  if (!drain_thread_ && threads_ == ConsumerThreads::automatic)
    watch_busy_share(polled_ns, now);
  return n;
}

std::pair<uint64_t, bool> LiveAudit::poll_streams(uint64_t polled_ns,
                                                  ReconstructorSink& sink) {
  // At most kMaxPerPoll records, and for no longer than kDrainBudgetNs:
  // on a loaded host a record takes tens of microseconds of wall time (42
  // in the soak's mass exit, the daemon a share of a CPU), and the loop
  // answers queries between drains. The clock is read once per chunk.
  uint64_t n = 0;
  bool full = false;
  const uint64_t repeats_before = capture_->repeats();
  do {
    const auto got = static_cast<uint64_t>(
        capture_->poll(polled_ns, kDrainChunk, [&](const rss_event& e) {
          reconstructor_.on_event(e, sink);
        }));
    n += got;
    full = got == kDrainChunk;
  } while (full && n < BpfCapture::kMaxPerPoll &&
           monotonic_ns() - polled_ns < kDrainBudgetNs);
  events_ += n + (capture_->repeats() - repeats_before);
  // Every record published before polled_ns has been handed over only if
  // the poll emptied the streams: not if it stopped at its slice's end,
  // nor at a record still being written (which may have started before
  // polled_ns, its CPU taken from it mid-program). Until then the
  // reconstructor waits, and no snapshot pass starts.
  caught_up_ = !full && !capture_->held_back();
  if (caught_up_) caught_up_to(polled_ns, sink);
  return {n, full};
}

std::pair<uint64_t, bool> LiveAudit::take_queued(ReconstructorSink& sink) {
  uint64_t watermark = 0;
  const uint64_t n = drain_thread_->take(
      BpfCapture::kMaxPerPoll,
      [&](const rss_event& e) {
        reconstructor_.on_event(e, sink);
        at_watermark_ = false;
      },
      [&](uint64_t ns) {
        watermark = ns;
        at_watermark_ = true;
      });
  events_ += n;  // the thread queued each repeat as a record
  // The watermark the thread queued after its last poll that emptied the
  // streams (DrainThread::take()).
  if (watermark) caught_up_to(watermark, sink);
  // Behind only after a whole slice: a queue the thread is filling is
  // rarely empty, and a slice per record or two cost the loop three
  // syscalls each (~4 000 a second at 2 M records/s here).
  caught_up_ = at_watermark_ && drain_thread_->empty();
  return {n, n >= BpfCapture::kMaxPerPoll};
}

// The streams get a thread of their own once draining them took more than
// kBusyShare of a window's wall time: one thread is then near its ceiling.
// Not at the first drain left behind, which any burst after a long sleep
// makes: on this 2-CPU host a second thread (sharing the CPUs with the
// producers) lost records from 4 M records/s where one lost none
// (bench/consumer_rate.sh).
void LiveAudit::watch_busy_share(uint64_t began_ns, uint64_t ended_ns) {
  busy_ns_ += ended_ns - began_ns;
  if (ended_ns - window_ns_ < kBusyWindowNs) return;
  if (double(busy_ns_) > kBusyShare * double(ended_ns - window_ns_))
    start_drain_thread();
  window_ns_ = ended_ns;
  busy_ns_ = 0;
}

void LiveAudit::caught_up_to(uint64_t ns, ReconstructorSink& sink) {
  reconstructor_.advance(ns, sink);
  caught_up_ns_ = ns;
  unseen_ends_.apply(
      ns, [this](const MmKey& key) { reconstructor_.end_unseen(key); });
}

void LiveAudit::flush(ReconstructorSink& sink) {
  if (drain_thread_) {
    drain_thread_->stop(
        [&](const rss_event& e) {
          reconstructor_.on_event(e, sink);
          ++events_;
        },
        [&](uint64_t ns) { caught_up_to(ns, sink); });
    // What was published after the thread's last poll.
    while (poll_streams(monotonic_ns(), sink).second) {
    }
  }
  reconstructor_.flush(sink);
}

}  // namespace rssaudit
