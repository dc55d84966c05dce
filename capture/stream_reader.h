// Reads the capture's per-CPU record streams (bpf/rss_event.h: the `slots`
// and `positions` maps, mapped into this process) in the order of their
// global sequence numbers.
//
// Hand-written: no library reads this layout. Each CPU's stream is already
// in sequence order, so the reader merges them: it follows one stream while
// the next number is there (runs are long: a process faults on one CPU)
// and otherwise takes the lowest front from a heap of the streams' fronts.
// A number not yet published (its program is still writing, on another
// CPU) holds back every later record until a later drain; one still missing
// kStallNs after it was first seen missing is skipped and counted as lost,
// so a stream the BPF side left inconsistent can never stall the audit.
// A record some repeats joined (bpf/rss_event.h) is handed over as itself
// followed by each repeat, so the audit sees one record per update.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bpf/rss_event.h"
#include "core/capture_losses.h"
#include "core/result.h"

namespace rssaudit {

class StreamReader {
 public:
  // Maps the two maps (BPF_F_MMAPABLE arrays of `cpus` * `slots_per_cpu`
  // rss_slot and `cpus` rss_stream_position), or says which call failed.
  // Both writable: the reader closes records to repeats and frees slots.
  static Result<std::unique_ptr<StreamReader>> map(int slots_fd,
                                                   int positions_fd,
                                                   uint32_t cpus,
                                                   uint32_t slots_per_cpu);
  // Over memory the caller owns and keeps: the same layout (tests).
  StreamReader(rss_slot* slots, rss_stream_position* positions,
               uint32_t cpus, uint32_t slots_per_cpu);
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;
  ~StreamReader();

  // Calls fn(const rss_event&) for each published record in sequence
  // order, at most `max` of them, without blocking or allocating; stops at
  // the first number not yet published (held_back() then says so). `now_ns`
  // (CLOCK_MONOTONIC) times how long a number has been missing. Returns how
  // many were handed over.
  template <class Fn>
  size_t consume(size_t max, uint64_t now_ns, Fn&& fn) {
    heap_.clear();
    bool held_back = false;
    for (uint32_t c = 0; c < cpus_; ++c) {
      heads_[c] = __atomic_load_n(&positions_[c].head, __ATOMIC_ACQUIRE);
      if (tails_[c] != heads_[c]) heap_.emplace_back(front(c).seq, c);
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>{});
    if (!heap_.empty() && heap_.front().first > next_seq_) {
      hole_seen(now_ns);
      if (now_ns < missing_since_ns_ + kStallNs) {
        held_back_.store(true, std::memory_order_relaxed);
        return 0;
      }
      add(unpublished_, heap_.front().first - next_seq_);
      next_seq_ = heap_.front().first;
    }
    hole_closed(now_ns);
    size_t n = 0;
    while (n < max && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
      const auto [seq, c] = heap_.back();
      heap_.pop_back();
      if (seq > next_seq_) {  // a hole: its record is still being written
        heap_.emplace_back(seq, c);
        held_back = true;
        hole_seen(now_ns);
        break;
      }
      // This stream's run of consecutive numbers.
      for (;;) {
        rss_slot& s = front(c);
        next_seq_ = std::max<uint64_t>(next_seq_, s.seq + 1);
        hand_over(c, s, fn);
        ++n;
        if (++tails_[c] % kPublishEvery == 0) publish(c);
        if (tails_[c] == heads_[c] || n == max) break;
        if (front(c).seq != next_seq_) {
          heap_.emplace_back(front(c).seq, c);
          std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
          break;
        }
      }
    }
    for (uint32_t c = 0; c < cpus_; ++c) publish(c);
    held_back_.store(held_back, std::memory_order_relaxed);
    return n;
  }

  // Sequence numbers skipped because no record came for them.
  uint64_t unpublished() const {
    return unpublished_.load(std::memory_order_relaxed);
  }
  // Repeats that could not be handed over (their record did not follow an
  // update of the same counter by the same task: no stream the BPF side
  // writes).
  uint64_t unexpanded() const {
    return unexpanded_.load(std::memory_order_relaxed);
  }
  // Updates that travelled as repeats of a record (bpf/rss_event.h) and
  // were handed over as records of their own.
  uint64_t repeats() const { return repeats_.load(std::memory_order_relaxed); }
  // Records the programs could not write (a full or busy stream), as the
  // BPF side counts them in each CPU's position: a read of shared memory,
  // no syscall.
  uint64_t dropped() const {
    uint64_t sum = 0;
    for (uint32_t c = 0; c < cpus_; ++c)
      sum += __atomic_load_n(&positions_[c].drops, __ATOMIC_RELAXED);
    return sum;
  }
  // The last consume() stopped at a number not yet published: a record
  // that may have started long before (its CPU was interrupted, or its
  // vCPU descheduled, while writing it) has not been handed over.
  bool held_back() const { return held_back_.load(std::memory_order_relaxed); }
  // Numbers that held the streams back (each seen missing at a drain), and
  // the time they did, summed and at most: while one does, every CPU's
  // stream fills behind it.
  StreamHolds holds() const {
    return {holds_.load(std::memory_order_relaxed),
            held_ns_.load(std::memory_order_relaxed),
            held_max_ns_.load(std::memory_order_relaxed)};
  }
  // Records one CPU's stream holds when full.
  uint32_t slots_per_cpu() const { return slots_per_cpu_; }

  // How long a number stays missing before it is skipped. A program holds
  // its number for a microsecond or so, unless its CPU is taken from it:
  // a vCPU the hypervisor deschedules (qemu's TCG threads on an
  // oversubscribed host did for more than 4 ms) holds it for as long.
  static constexpr uint64_t kStallNs = 200'000'000;

 private:
  rss_slot& front(uint32_t c) {
    return slots_[size_t(c) * slots_per_cpu_ + (tails_[c] & mask_)];
  }
  // Hands over the record in `s` and the repeats that joined it, after
  // closing it to more (bpf/rss_event.h, RSS_REPEATS_CLOSED): each repeat
  // is the record moved on by what the record moved the slot and the
  // task's faults since the CPU's update record before it.
  template <class Fn>
  void hand_over(uint32_t c, rss_slot& s, Fn& fn) {
    if (s.event.kind != RSS_EV_UPDATE) {
      fn(s.event);
      return;
    }
    rss_event e = s.event;
    uint32_t repeats = 0;
    if (e.slot != 0 && !(e.flags & (RSS_EVF_CACHED | RSS_EVF_ATOMIC))) {
      auto* word = reinterpret_cast<uint64_t*>(&s.event.slot);
      repeats = static_cast<uint32_t>(
                    __atomic_fetch_or(word, RSS_REPEATS_CLOSED_WORD,
                                      __ATOMIC_ACQ_REL) >>
                    32) &
                ~RSS_REPEATS_CLOSED;
      e.span_ns = 0;
    }
    PreviousUpdate& prev = previous_[c];
    if (repeats && !prev.of(e)) {
      add(unexpanded_, repeats);
      repeats = 0;
    }
    const int32_t slot_move = e.slot - prev.slot;
    const auto fault_move = static_cast<uint16_t>(e.faults - prev.faults);
    fn(e);
    if (repeats) {
      e.start_ns = 0;  // a repeat is untimed
      e.flags &= static_cast<uint8_t>(~RSS_EVF_AFTER_LOSS);
      for (uint32_t i = 0; i < repeats; ++i) {
        e.slot += slot_move;
        e.faults = static_cast<uint16_t>(e.faults + fault_move);
        fn(e);
      }
      add(repeats_, repeats);
    }
    prev = PreviousUpdate{true, e.mm, e.tid, e.slot, e.faults, e.member};
  }
  // A CPU's latest update record handed over.
  struct PreviousUpdate {
    bool known = false;
    uint64_t mm = 0;
    uint32_t tid = 0;
    int32_t slot = 0;
    uint16_t faults = 0;
    uint8_t member = 0;
    bool of(const rss_event& e) const {
      return known && mm == e.mm && member == e.member && tid == e.tid;
    }
  };
  void hole_seen(uint64_t now_ns) {
    if (missing_since_ns_) return;
    missing_since_ns_ = std::max<uint64_t>(now_ns, 1);
    add(holds_, 1);
  }
  void hole_closed(uint64_t now_ns) {
    if (!missing_since_ns_) return;
    const uint64_t held =
        now_ns > missing_since_ns_ ? now_ns - missing_since_ns_ : 0;
    add(held_ns_, held);
    if (held > held_max_ns_.load(std::memory_order_relaxed))
      held_max_ns_.store(held, std::memory_order_relaxed);
    missing_since_ns_ = 0;
  }
  // Adds on the one thread that writes `counter`: no locked instruction.
  static void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n,
                  std::memory_order_relaxed);
  }
  // Frees the slots consumed so far for the producers.
  void publish(uint32_t c) {
    __atomic_store_n(&positions_[c].tail, tails_[c], __ATOMIC_RELEASE);
  }

  // Frees producer slots often enough during a long drain.
  static constexpr uint64_t kPublishEvery = 1024;

  rss_slot* slots_;
  rss_stream_position* positions_;
  uint32_t cpus_, slots_per_cpu_;
  uint64_t mask_;
  std::vector<uint64_t> heads_, tails_;
  std::vector<std::pair<uint64_t, uint32_t>> heap_;  // (front seq, cpu)
  std::vector<PreviousUpdate> previous_;
  uint64_t next_seq_ = 0;
  uint64_t missing_since_ns_ = 0;  // 0: nothing missing
  // Written by the thread that consumes, read by any (capture/
  // drain_thread.h): relaxed, a plain store on the writer's side.
  std::atomic<uint64_t> unpublished_{0}, unexpanded_{0}, repeats_{0};
  std::atomic<uint64_t> holds_{0}, held_ns_{0}, held_max_ns_{0};
  std::atomic<bool> held_back_{false};
  bool mapped_ = false;  // by map(): the destructor unmaps
};

}  // namespace rssaudit
