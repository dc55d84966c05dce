#include "capture/drain_thread.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdlib>

#include "os/clock.h"

namespace rssaudit {

DrainThread::DrainThread(StreamReader& streams, size_t capacity,
                         PollPacing pacing, Doorbell* doorbell)
    : streams_(streams),
      pacing_(pacing),
      doorbell_(doorbell),
      queue_(capacity),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  // Without it the thread could not be stopped: nothing to go on with.
  if (wake_fd_ < 0) std::abort();
  thread_ = std::thread([this] { run(); });
}

DrainThread::~DrainThread() {
  if (thread_.joinable()) {
    abandon_.store(true, std::memory_order_relaxed);
    request_stop();
    thread_.join();
  }
  close(wake_fd_);
}

void DrainThread::request_stop() {
  stop_.store(true, std::memory_order_relaxed);
  const uint64_t one = 1;
  // A full counter already wakes the thread: nothing else can fail here.
  (void)!write(wake_fd_, &one, sizeof(one));
}

void DrainThread::sleep(uint64_t ns) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0},
                   {doorbell_ ? doorbell_->fd() : -1, POLLIN, 0}};
  const timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                         static_cast<long>(ns % 1'000'000'000)};
  if (ppoll(fds, 2, &timeout, nullptr) > 0 && (fds[1].revents & POLLIN))
    doorbell_->answer();
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
    if (!stop_.load(std::memory_order_relaxed)) sleep(sleep_ns);
  }
  finished_.store(true, std::memory_order_release);
}

}  // namespace rssaudit
