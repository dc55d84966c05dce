// The capture's streams drained on a thread of their own (issue 40 item 3):
// it only copies records out of the kernel's per-CPU streams (the merge,
// the repeats' expansion) into a queue in this process, while the audit
// (the reconstruction and all after it) runs on the caller's thread. The
// kernel's streams are then freed at the pace they fill, not at the audit's,
// and a burst waits in this process's memory, which grows only as far as a
// backlog reaches (the queue's pages are touched as it fills), instead of
// overflowing streams of a fixed size.
//
// The queue is Boost.Lockfree's single-producer single-consumer ring: no
// lock and no syscall per record on either side. Past the audit's ceiling
// the queue fills, the thread waits (counted: waits()) and the kernel's
// streams fill behind it, their losses counted as ever (drops_stream_full).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/lockfree/spsc_queue.hpp>
#include <chrono>
#include <cstdint>
#include <thread>

#include "audit/poll_pacing.h"
#include "capture/doorbell.h"
#include "capture/stream_reader.h"

namespace rssaudit {

class DrainThread {
 public:
  // Starts draining `streams`, which no other thread may consume from now
  // on, into a queue of `capacity` items, sleeping between polls as
  // `pacing` says for the kernel's streams, or until `doorbell` (if any,
  // answered by this thread alone from now on) rings.
  DrainThread(StreamReader& streams, size_t capacity, PollPacing pacing,
              Doorbell* doorbell = nullptr);
  DrainThread(const DrainThread&) = delete;
  DrainThread& operator=(const DrainThread&) = delete;
  // Stops the thread; records still queued are not handed over (stop()
  // hands them over).
  ~DrainThread();

  // Hands over at most `max` queued items: each record to
  // on_record(const rss_event&) in the streams' order, and each watermark
  // to on_caught_up(uint64_t ns): every record published before ns
  // (CLOCK_MONOTONIC) was queued before it. Returns the records.
  template <class OnRecord, class OnCaughtUp>
  size_t take(size_t max, OnRecord&& on_record, OnCaughtUp&& on_caught_up) {
    size_t records = 0, items = 0;
    while (items < max) {
      // A batch at a time: the queue's read index, a line the thread
      // reads, moves once per batch, not per record.
      const size_t got =
          queue_.pop(taken_.data(), std::min(max - items, taken_.size()));
      for (size_t i = 0; i < got; ++i) {
        const Item& item = taken_[i];
        if (item.caught_up_ns) {
          on_caught_up(item.caught_up_ns);
        } else {
          on_record(item.event);
          ++records;
        }
      }
      items += got;
      if (got < taken_.size()) break;
    }
    return records;
  }
  // Asks the thread to stop and hands over, as take() does, every item it
  // queues until it has.
  template <class OnRecord, class OnCaughtUp>
  void stop(OnRecord&& on_record, OnCaughtUp&& on_caught_up) {
    if (!thread_.joinable()) return;  // stopped already
    request_stop();
    while (!finished_.load(std::memory_order_acquire)) {
      take(kUnbounded, on_record, on_caught_up);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    thread_.join();
    take(kUnbounded, on_record, on_caught_up);
  }

  // Whether the queue was empty at the call.
  bool empty() const { return queue_.read_available() == 0; }
  // How often the thread found the queue full and waited for the audit.
  uint64_t waits() const { return waits_.load(std::memory_order_relaxed); }

 private:
  struct Item {
    rss_event event;
    uint64_t caught_up_ns;  // non-zero: a watermark, not a record
  };
  static constexpr size_t kUnbounded = ~size_t{0};
  static constexpr uint32_t kChunk = 1024;
  static constexpr size_t kBatch = 256;

  void run();
  // Queues `item` through the thread's batch; flush() hands the batch to
  // the queue, waiting while it is full.
  void push(const Item& item) {
    batch_[batched_++] = item;
    if (batched_ == kBatch) flush();
  }
  void flush();
  void request_stop();

  // Sleeps `ns` at most: woken by the doorbell or request_stop().
  void sleep(uint64_t ns);

  StreamReader& streams_;
  const PollPacing pacing_;
  Doorbell* const doorbell_;
  boost::lockfree::spsc_queue<Item> queue_;
  std::array<Item, kBatch> batch_;  // the thread's
  size_t batched_ = 0;
  std::array<Item, kBatch> taken_;  // the taker's
  std::atomic<uint64_t> waits_{0};
  std::atomic<bool> stop_{false}, abandon_{false}, finished_{false};
  // An eventfd request_stop() writes, to wake the thread's sleep.
  int wake_fd_;
  std::thread thread_;
};

}  // namespace rssaudit
