// Turns the raw rss_event records of the capture into the exact update
// stream of core/schemes/update.h: (mm, member, cpu, delta) per counter update,
// plus life-cycle events. Pure logic: no syscalls, no clock, so synthetic
// record sequences test it.
//
// The method (docs/kernel.md): a slot changes only on its own CPU, right before
// the record of that change. Per (mm, member, cpu) the last slot is known,
// so a non-zero slot gives delta = slot_after - slot_before. A slot back at
// zero either folded into `count` or returned to zero; the change of `count`
// not yet explained by earlier folds says which, and by how much. Two such
// events on different CPUs whose [start, end] windows overlap cannot be told
// apart: both are flagged kAmbiguous, never presented as exact.
//
// Absolute values. An mm seen from its creation starts with every counter
// and slot at 0, so the sum of its deltas is its exact value. An mm that
// existed before the capture (or any mm after a capture loss) does not:
// the slots of CPUs it has not updated on since are unknown (before 6.2,
// its tasks' caches), and so is its value. The snapshot iterator
// (bpf/snapshot.bpf.c, audit/snapshot_baseline.cc) reads them all at a
// place in the record sequence; from there the stream keeps the value
// exact, even while the mm's threads update it during the read
// (docs/kernel.md, "Baselines of mms older than the capture"). Why not a
// read at the mm's first update in the update program: a per-mm "seen"
// lookup and a loop over every CPU in the hot path, paid by every update.
//
// Its parts: ReconstructionCore (the mms, tasks, held-back queue, losses
// and snapshots), PercpuCounterDecoder (update records since 6.2) and
// TaskCacheDecoder (before 6.2). This class checks each record, hands it to
// its part, keeps the life cycle, and emits what the grace period frees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "audit/counter_snapshot.h"
#include "audit/percpu_counter_decoder.h"
#include "audit/reconstruction_core.h"
#include "audit/reconstructor_types.h"
#include "audit/task_cache_decoder.h"
#include "bpf/rss_event.h"

namespace rssaudit {

class DeltaReconstructor {
 public:
  explicit DeltaReconstructor(const ReconstructorOptions& options);
  ~DeltaReconstructor();

  // Feeds one record, in the capture's sequence order. Emits to `sink` the
  // events that can no longer be affected by a later record (see grace_ns).
  void on_event(const rss_event& e, ReconstructorSink& sink);
  // After a poll that drained the capture's streams: every record that started
  // before `now_ns` (bpf_ktime_get_ns, i.e. CLOCK_MONOTONIC) has arrived.
  // Read the time before the poll reads the streams: a later one would hold
  // back every record published during the poll until the next drain ends.
  void advance(uint64_t now_ns, ReconstructorSink& sink);
  // Emits everything held back (end of a recording, shutdown).
  void flush(ReconstructorSink& sink);

  // The mm `key` ended unseen: its process is gone (the daemon's sampling
  // found it so twice) though no exit_mmap record came, lost with other
  // records. Ended here as that record would have ended it; false when
  // it is not live (its record came after all).
  bool end_unseen(const MmKey& key);
  // Records were lost here: nothing about any mm is known any more (which
  // mm lost an update is unknown). Records flagged RSS_EVF_AFTER_LOSS call
  // it, and on_drops() when no such record says where the loss was.
  void on_loss();
  // After a drain: the capture's drop counter is `total`. A rise with no
  // record flagged since the previous call is a loss whose flagged record
  // has not arrived yet: on_loss() now. A rise whose flagged record came
  // in the drain was placed by it already; voiding again would throw away
  // what the records after it re-established.
  void on_drops(uint64_t total);

  // Where the values of RSS_EV_SNAPSHOT records are (null: none, and such
  // records are counted and skipped). Not owned.
  void read_snapshots_from(SnapshotQueue* queue) { core_.snapshots = queue; }
  // Up to `max` live mms with a member of unknown value, for the snapshot
  // iterator to read: not retried before `retry_ns` after a snapshot of
  // them that did not make every member known.
  std::vector<uint64_t> snapshot_candidates(uint64_t now_ns,
                                            size_t max) const {
    return core_.snapshot_candidates(now_ns, max);
  }

  const ReconstructorStats& stats() const { return core_.stats; }
  size_t live_mms() const { return core_.mms.size(); }

 private:
  void emit_ready(ReconstructorSink& sink, bool all);
  void emit_oldest(ReconstructorSink& sink);
  void emit(Pending& p, ReconstructorSink& sink);

  // Its parts (declared in this order: the decoders hold the core).
  ReconstructionCore core_;
  PercpuCounterDecoder percpu_;
  TaskCacheDecoder task_cache_;
};

}  // namespace rssaudit
