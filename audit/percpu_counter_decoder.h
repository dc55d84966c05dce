// The update records of a kernel since Linux 6.2, whose RSS counters are
// percpu_counters (bpf/rss_stat.bpf.c): each gives the exact delta of its
// update from its CPU's slot, or, back at zero, from `count`, ordering folds
// of different CPUs by their windows and the sequence.
#pragma once

#include <cstdint>

#include "audit/reconstruction_core.h"
#include "bpf/rss_event.h"

namespace rssaudit {

class PercpuCounterDecoder {
 public:
  explicit PercpuCounterDecoder(ReconstructionCore& core) : core_(core) {}

  // An RSS_EV_UPDATE record with neither RSS_EVF_CACHED nor
  // RSS_EVF_ATOMIC: queued in the core as one update.
  void on_update(const rss_event& e);

 private:
  void mark_overlaps(Pending& fold, uint64_t since_ns,
                     uint64_t other_task_since_ns, uint64_t add_after_seq);
  // Whether the fold `p`, before the add of a record whose add came after
  // the record at `add_after_seq` (Pending::seq + 1), read a `count` that
  // cannot hold that add: ordered by the sequence, not by time.
  static bool read_before_add(const Pending& p, uint64_t add_after_seq) {
    return p.count_steady && p.seq + 1 < add_after_seq;
  }
  // An update whose add took no lock to its record (see
  // ReconstructorOptions::preemptible): flags it, the held-back updates
  // of its counter since its task's previous record, and the next record
  // of every other CPU's slot.
  void on_unlocked_add(Pending& p, MmState& st, uint64_t since_ns);

  ReconstructionCore& core_;
};

}  // namespace rssaudit
