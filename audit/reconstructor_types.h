// The reconstruction's vocabulary, shared by DeltaReconstructor, its parts
// (audit/reconstruction_core.h and the two decoders) and its users: an mm's
// identity, an update's fidelity and facts, the sink that hears the
// reconstructed stream, the options and the figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/schemes/update.h"

namespace rssaudit {

// One mm while it lives: its kernel address and a sequence number given at
// creation, so an address reused after exit_mmap is another mm.
struct MmKey {
  uint64_t addr = 0;
  uint64_t generation = 0;
  bool operator==(const MmKey&) const = default;
};

enum class Fidelity : uint8_t {
  kExact,         // the kernel's own delta
  kAmbiguous,     // overlapping folds on two CPUs: the sum of the group is
                  // right, the split between its events is not known
  kNoBaseline,    // first update of this CPU to an mm that existed before
                  // the capture: slot before unknown, delta reported as 0
  kInconsistent,  // `count` moved by an amount no single fold can make,
                  // without a visible overlap; delta attributed as no fold
  kCountAhead,    // the delta is exact, but `count` already shows another
                  // CPU's fold whose record comes later in the stream (its
                  // task was held between its add and its tracepoint: an
                  // interrupt, a preemption, a descheduled vCPU): no model
                  // fed in stream order can match the kernel here
};

struct UpdateInfo {
  // The record's window is [update.time_ns, end]; end == time_ns when the
  // capture took no end (an update that left its slot non-zero). An update
  // the capture did not time (rss_event.h) gets the latest time the stream
  // had shown when it came, for both.
  uint64_t end_ns = 0;
  int64_t kernel_count = 0;  // rss_stat[member].count right after the add
  int32_t kernel_slot = 0;   // this CPU's slot right after the add
  uint32_t tgid = 0;         // of the updating task
  // Page faults of the task since its last update of its own mm, this one's
  // included (0 when unknown: the task's first update seen, not in a fault).
  uint16_t faults = 0;
  Fidelity fidelity = Fidelity::kExact;
  // The kernel counts with atomics and per-task caches (before Linux 6.2):
  // kernel_count is the atomic, which every reader sees and the per_task
  // model holds; else it is the percpu_counter's count (upstream model).
  bool task_cache = false;
};

// Marks an update ambiguous, unless it already says its value is unknown.
inline void flag_ambiguous(UpdateInfo& info) {
  if (info.fidelity != Fidelity::kNoBaseline)
    info.fidelity = Fidelity::kAmbiguous;
}

class ReconstructorSink {
 public:
  virtual ~ReconstructorSink() = default;
  // `from_zero`: seen from its creation (fork or exec), so every counter and
  // slot started at 0; otherwise it existed before the capture.
  virtual void on_mm_created(const MmKey& mm, bool from_zero) = 0;
  virtual void on_update(const MmKey& mm, const Update& update,
                         const UpdateInfo& info) = 0;
  virtual void on_life(const MmKey& mm, const LifeEvent& event) = 0;
  // After its last update and its kMmExit.
  virtual void on_mm_destroyed(const MmKey& mm) = 0;
  // Before 6.2: a task's cache of one member folded into the mm's atomic
  // (`sync`: kCacheSync, its count the member), which every reader sees
  // as info.kernel_count from here; the exact value did not move. Flagged
  // kAmbiguous when another add overtook it (the atomic then is not what
  // the stream so far adds up to).
  virtual void on_cache_fold(const MmKey& mm, const LifeEvent& sync,
                             const UpdateInfo& info) {
    (void)info;
    on_life(mm, sync);
  }
  // The exact value of `member` at this point of the stream: `pages` once
  // established from a precise source (a snapshot), nullopt when it stops
  // being known. An update flagged
  // kNoBaseline also means the member's value is unknown from there on.
  // `kernel_count`: what the kernel's approximate readers see of the
  // member here, when the source read it (a snapshot), for a member the
  // stream has not shown since the audit joined.
  virtual void on_baseline(const MmKey& mm, int member,
                           std::optional<int64_t> pages,
                           std::optional<int64_t> kernel_count) {
    (void)mm, (void)member, (void)pages, (void)kernel_count;
  }
  // Records were lost here: which mm lost an update is unknown, so from
  // this point no mm's exact value, nor the kernel's count of any of its
  // members, is known until a baseline or an update says so again. Once
  // per loss, however many mms live: a sink marks them lazily.
  virtual void on_loss() {}
};

struct ReconstructorOptions {
  uint32_t nr_cpus = 1;  // bound of rss_event::cpu (possible CPUs)
  int32_t batch = 32;    // percpu_counter batch of mm->rss_stat
  // Longest time a BPF program takes from its start to its reservation or
  // from its reservation to its end. Output waits this long after an event
  // ends, so any overlapping event has arrived before it is emitted.
  uint64_t grace_ns = 2'000'000;
  // The kernel may preempt a task in kernel code (full, lazy or RT
  // preemption), or that is not known. Then an update whose record shows
  // no lock held since its add (rss_event.preempt) may have added to
  // another CPU's slot than its record's, or let another task's record on
  // its CPU take its add: it is flagged, and so is what it may have upset.
  bool preemptible = true;
  // Most mms audited at once: past it, the records of any other mm are
  // skipped and counted (ReconstructorStats::over_mm_limit), so a hostile
  // recording of millions of mms that never end cannot take gigabytes
  // (~3 KiB an mm on 2 CPUs, more with more CPUs). A host has far fewer
  // processes at once.
  size_t max_mms = size_t{1} << 18;
  // Most events held back at once (see grace_ns): past it the oldest is
  // let out early (ReconstructorStats::forced_emits). Events wait for the
  // stream to show grace_ns more of its time, a few thousand records at
  // the rates measured here; the cap keeps the queue's memory (0.2 KiB an
  // event, 26 MiB at the cap) bounded whatever the records say.
  size_t max_pending = size_t{1} << 17;
};

struct ReconstructorStats {
  uint64_t events = 0;
  uint64_t updates = 0;
  uint64_t exact = 0;
  uint64_t ambiguous = 0;
  uint64_t no_baseline = 0;
  uint64_t inconsistent = 0;
  uint64_t count_ahead = 0;
  // An overlapping fold arrived after its partner was emitted as exact, or
  // an unlocked add after an update it may have upset: grace_ns is too
  // short (should stay 0).
  uint64_t late_overlaps = 0;
  // Updates whose add may have landed in another CPU's slot than the one
  // their record read (see ReconstructorOptions::preemptible), flagged.
  // One that came after grace_ns upset an emitted update: late_overlaps.
  uint64_t unlocked = 0;
  // Updates whose preemption depth the capture could not read: an older
  // recording, or a CPU where learn_preempt_count() failed (should be 0).
  uint64_t depth_unknown = 0;
  uint64_t bad_records = 0;  // cpu or member out of range, unknown kind
  // Before 6.2 (bpf/task_cache.bpf.c): syncs of a task's cache seen, those
  // whose cache was not what the task's cached updates in the stream add
  // up to (a cached update missed: should stay 0), and atomic adds another
  // add overtook between the add and the record (flagged, with the adds
  // they may have upset).
  uint64_t syncs = 0;
  uint64_t sync_mismatches = 0;
  uint64_t reordered = 0;
  // Folds whose sync's announcement did not come (its program skipped),
  // told by the cache the task still held at the add; flagged.
  uint64_t unannounced_folds = 0;
  uint64_t mms_created = 0;
  // Records skipped because their mm would have been one more than
  // ReconstructorOptions::max_mms.
  uint64_t over_mm_limit = 0;
  uint64_t mms_destroyed = 0;
  uint64_t ended_unseen = 0;  // of them, by end_unseen()
  uint64_t losses = 0;  // records flagged RSS_EVF_AFTER_LOSS, or on_loss()
  // Held-back events let out before their grace period because the queue
  // reached ReconstructorOptions::max_pending (a drain far behind): an
  // overlap that arrives later is then counted in late_overlaps.
  uint64_t forced_emits = 0;
  // Mms joined mid-life found to have a second user (two tasks updating).
  uint64_t inferred_second_users = 0;
  // Snapshots (bpf/snapshot.bpf.c): records placing one, of them those the
  // iterator wrote no values for (read again later, or never read: a
  // queue of snapshots is not attached, as in a replay), the members they
  // made known, those whose counters moved during the read (a fold or
  // an atomic add: tried again later), and the first update per CPU after
  // one whose add the snapshot may already hold (flagged ambiguous: its
  // delta is not known, the value after it is). Before 6.2, caches found
  // different from what the stream had tracked (should stay 0).
  uint64_t snapshots = 0;
  uint64_t snapshots_unread = 0;
  uint64_t snapshot_members = 0;
  uint64_t snapshot_raced = 0;
  uint64_t snapshot_absorbed = 0;
  uint64_t snapshot_mismatches = 0;
};

}  // namespace rssaudit
