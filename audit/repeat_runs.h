// Which update records repeat their CPU's previous one: the same task's
// identical update to the same (mm, member), one that moves neither the
// kernel's `count` nor anything a timed record would carry, so that a
// record with a repeat count could stand for the run and every model would
// still see every update exactly (#40 item 2). The capture applies this rule
// (bpf/rss_stat.bpf.c repeat_run(), bpf/rss_event.h) with two more
// conditions no record shows: the task was not switched out since, and it
// is its mm's only user. So bench/record_runs, which applies it to
// recordings made before the capture sent repeats, gives an upper bound of
// what the capture saves.
//
// A record r repeats its CPU's previous record p when both are updates
// (since 6.2 with a non-zero slot, or before 6.2 to a task's cache) by the
// same task with the same flags and preemption depth, r is untimed (a
// timed record may show a fold or another CPU's fold: it carries its own
// time), `count` (the atomic, before 6.2) is unchanged, and r moves the
// slot and the task's fault total by what p moved them.
#pragma once

#include <cstdint>
#include <vector>

#include "bpf/rss_event.h"

namespace rssaudit {

class RepeatRuns {
 public:
  explicit RepeatRuns(uint32_t nr_cpus) : last_(nr_cpus) {}

  // Feeds the next record of e.cpu's stream (out of range: not a repeat);
  // true when it repeats that CPU's previous record.
  bool repeats(const rss_event& e) {
    if (e.cpu >= last_.size()) return false;
    Last& p = last_[e.cpu];
    const bool update = e.kind == RSS_EV_UPDATE && !(e.flags & RSS_EVF_ATOMIC) &&
                        ((e.flags & RSS_EVF_CACHED) || e.slot != 0);
    // Before 6.2 a cached update's slot is its delta; since, the slot after.
    const bool cached = e.flags & RSS_EVF_CACHED;
    const int64_t slot_move =
        cached ? e.slot : int64_t{e.slot} - (p.same_counter(e) ? p.slot : 0);
    const auto fault_move = static_cast<uint16_t>(e.faults - p.faults);
    const bool repeat = update && p.update && p.same_counter(e) &&
                        e.tid == p.tid && e.flags == p.flags &&
                        e.preempt == p.preempt && e.start_ns == 0 &&
                        e.aux == p.aux && p.moves_known &&
                        slot_move == p.slot_move && fault_move == p.fault_move;
    p.moves_known = update && p.update && p.same_counter(e) && e.tid == p.tid;
    p.update = update;
    p.mm = e.mm;
    p.member = e.member;
    p.tid = e.tid;
    p.flags = e.flags;
    p.preempt = e.preempt;
    p.aux = e.aux;
    p.slot = e.slot;
    p.faults = e.faults;
    p.slot_move = slot_move;
    p.fault_move = fault_move;
    return repeat;
  }

 private:
  // A CPU's previous record, and what it moved from the one before it
  // (known when both were updates of one counter by one task).
  struct Last {
    bool update = false;
    bool moves_known = false;
    uint64_t mm = 0;
    uint8_t member = 0;
    uint32_t tid = 0;
    uint8_t flags = 0;
    uint8_t preempt = 0;
    int64_t aux = 0;
    int32_t slot = 0;
    uint16_t faults = 0;
    int64_t slot_move = 0;
    uint16_t fault_move = 0;
    bool same_counter(const rss_event& e) const {
      return mm == e.mm && member == e.member;
    }
  };
  std::vector<Last> last_;
};

}  // namespace rssaudit
