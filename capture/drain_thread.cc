#include "capture/drain_thread.h"

#include "os/clock.h"

namespace rssaudit {

DrainThread::DrainThread(StreamReader& streams, size_t capacity,
                         PollPacing pacing)
    : streams_(streams), pacing_(pacing), queue_(capacity) {
  thread_ = std::thread([this] { run(); });
}

DrainThread::~DrainThread() {
  if (!thread_.joinable()) return;
  abandon_.store(true, std::memory_order_relaxed);
  request_stop();
  thread_.join();
}

void DrainThread::request_stop() {
  {
    std::lock_guard lock(sleep_mutex_);
    stop_.store(true, std::memory_order_relaxed);
  }
  wake_.notify_one();
}

// Waits while the queue is full: the audit is past its ceiling, and the
// kernel's streams hold what comes meanwhile (and count what they cannot).
// Gives up only when abandoned: the destructor hands nothing over.
void DrainThread::flush() {
  size_t done = queue_.push(batch_.data(), batched_);
  if (done < batched_)
    waits_.store(waits_.load(std::memory_order_relaxed) + 1,
                 std::memory_order_relaxed);
  while (done < batched_) {
    if (abandon_.load(std::memory_order_relaxed)) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    done += queue_.push(batch_.data() + done, batched_ - done);
  }
  batched_ = 0;
}

void DrainThread::run() {
  uint64_t last_ns = monotonic_ns();
  while (!stop_.load(std::memory_order_relaxed)) {
    // As LiveAudit's own drain: the time before the poll reads the heads.
    const uint64_t polled_ns = monotonic_ns();
    uint64_t n = 0;
    bool full;
    do {
      const auto got = static_cast<uint64_t>(streams_.consume(
          kChunk, polled_ns, [this](const rss_event& e) { push({e, 0}); }));
      n += got;
      full = got == kChunk;
    } while (full && !stop_.load(std::memory_order_relaxed));
    // Emptied, and not at a record still being written: every record
    // published before polled_ns is in the queue.
    if (!full && !streams_.held_back()) push({{}, polled_ns});
    flush();
    const uint64_t now = monotonic_ns();
    const uint64_t sleep_ns = next_poll_ns(pacing_, n, now - last_ns);
    last_ns = now;
    std::unique_lock lock(sleep_mutex_);
    wake_.wait_for(lock, std::chrono::nanoseconds(sleep_ns), [this] {
      return stop_.load(std::memory_order_relaxed);
    });
  }
  finished_.store(true, std::memory_order_release);
}

}  // namespace rssaudit
