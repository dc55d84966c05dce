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
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "audit/counter_snapshot.h"
#include "audit/loss_epochs.h"
#include "audit/pending_ring.h"
#include "bpf/rss_event.h"
#include "core/schemes/per_cpu_array.h"
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
  void read_snapshots_from(SnapshotQueue* queue) { snapshots_ = queue; }
  // Up to `max` live mms with a member of unknown value, for the snapshot
  // iterator to read: not retried before `retry_ns` after a snapshot of
  // them that did not make every member known.
  std::vector<uint64_t> snapshot_candidates(uint64_t now_ns, size_t max) const;

  const ReconstructorStats& stats() const { return stats_; }
  size_t live_mms() const { return mms_.size(); }

 private:
  // A task's mm (from its NEW_TASK or EXEC record, else from its first
  // update of its own mm): the old mm at its next exec. And its fault total
  // (rss_event.faults) at its last update of its own mm, once one was seen.
  struct TaskState {
    uint16_t faults = 0;
    uint64_t mm = 0;
    bool faults_known = false;
    // No later than the end of its latest update of its own mm (or its
    // birth): its next add comes after. (Only owner updates need it, so
    // only those pay the lookup.) And that update's place in the stream
    // (Pending::seq + 1; 0: none).
    uint64_t since_ns = 0;
    uint64_t since_seq = 0;
    // Before 6.2: its rss_stat cache of its own mm, known since its birth,
    // exec or sync; the members whose sync record came and whose fold into
    // the atomic has not, and how much each folds.
    bool cache_known = false;
    bool clone_seen = false;  // its NEW_TASK record came
    std::array<int32_t, kMembers> cache{};
    uint8_t syncing = 0;
    uint64_t syncing_mm = 0;
    std::array<int32_t, kMembers> sync_pages{};
    // The loss epoch its cache state was last brought up to (catch_up()).
    uint64_t loss_epoch = 0;
  };
  struct SlotState {
    int32_t value = 0;
    bool known = false;
    // No later than the start of this CPU's last record of the counter:
    // its next add comes after.
    uint64_t after_ns = 0;
    // That record's place in the stream (Pending::seq + 1; 0: none). A
    // locked add runs to its record with its CPU held: every earlier
    // record of the CPU came before the add.
    uint64_t after_seq = 0;
    // An unlocked add may have gone into this slot since its CPU's last
    // record: its next record is flagged.
    bool suspect = false;
    // Set by a snapshot, which may hold this CPU's next add already: its
    // next record is flagged if it shows the slot unmoved.
    bool snapped = false;
  };
  struct MmState {
    MmKey key;
    // The loss epoch its state was last brought up to (loss_epochs.h).
    uint64_t loss_epoch = 0;
    bool from_zero = false;
    // A second user (a thread) was seen: its clone, or, for an mm joined
    // mid-life whose clones came before the capture, owner updates by a
    // second task (the lazy schemes activate on it). `first_user_tid`: the
    // task of its first owner update.
    bool second_user = false;
    uint32_t first_user_tid = 0;
    // Counted by a kernel before 6.2 (atomics and per-task caches).
    bool task_cache = false;
    // Per member, before 6.2: an atomic add was overtaken, so the delta of
    // the next one of the member is not known to follow it; and how many
    // tasks announced a fold whose record has not come.
    std::array<bool, kMembers> suspect_next{};
    std::array<uint8_t, kMembers> folds_announced{};
    // Per member: the value is known (seen from zero, or since a
    // snapshot, and no unknown delta since).
    std::array<bool, kMembers> synced{};
    // Per member: the sum of the folds attributed so far, i.e. the kernel's
    // `count` once every fold before now has arrived.
    std::array<int64_t, kMembers> count{};
    std::array<bool, kMembers> count_known{};
    // Per member: end of the first record whose `count` showed a fold not
    // yet arrived (0: none), and its CPU. That fold, of another CPU, landed
    // before this time even if its record starts later (an interrupt
    // between the add and the tracepoint): its window starts here.
    std::array<uint64_t, kMembers> unexplained_end{};
    std::array<uint32_t, kMembers> unexplained_cpu{};
    // The last emitted fold per member, to detect a late overlap.
    std::array<uint64_t, kMembers> emitted_fold_end{};
    std::array<uint32_t, kMembers> emitted_fold_cpu{};
    std::array<uint32_t, kMembers> emitted_fold_task{};
    std::array<uint64_t, kMembers> emitted_fold_seq{};  // seq + 1 if steady
    // The end of the last emitted update per member, to count an unlocked
    // add that came too late to flag what it upset.
    std::array<uint64_t, kMembers> emitted_update_end{};
    std::array<uint32_t, kMembers> emitted_update_task{};
    // Snapshots: not asked for again before this time; before 6.2, the
    // pass that last read the mm's tasks, those tasks and the ones cloned
    // into it since (whose caches add up to the value), and whether the
    // value waits for one of their caches to become known (a sync).
    uint64_t next_snapshot_ns = 0;
    uint64_t snapshot_pass = 0;
    std::vector<uint32_t> snapshot_tasks;
    bool awaiting_caches = false;
    // The last task updating the mm that is not its owner (khugepaged, a
    // fork's parent) and when its next add may start: as TaskState's.
    uint32_t other_tid = 0;
    uint64_t other_since_ns = 0;
    // Per member: seq + 1 of its latest fold pushed (0: none), the head of
    // the chain mark_overlaps() walks instead of every held-back record.
    std::array<uint64_t, kMembers> last_fold{};
    PerCpuArray<std::array<SlotState, kMembers>> slots;
  };
  struct Pending {
    enum class Type : uint8_t {
      kCreated,
      kUpdate,
      kLife,
      kDestroyed,
      kBaseline,
      kCacheFold,  // before 6.2: life (kCacheSync), info.kernel_count
      kLoss,       // records were lost here; `mm` is null
    };
    Type type = Type::kUpdate;
    bool fold = false;  // kUpdate whose slot came back to zero
    // A fold whose `count` was read before its sequence number was taken
    // (RSS_EVF_COUNT_STEADY): no add after a later record is in it.
    bool count_steady = false;
    // A fold: seq + 1 of the previous fold of its mm and member (0: none).
    uint64_t prev_fold = 0;
    // Before 6.2, a kUpdate or kCacheFold that moved its atomic: its
    // delta (or the fold's check) is the atomic's move since the previous
    // one in the stream.
    bool chained = false;
    uint8_t baseline_members = 0;  // kBaseline: members it sets
    uint64_t seq = 0;
    std::array<std::optional<int64_t>, kMembers> baseline{};
    // kBaseline from a snapshot: the kernel's count of each member.
    std::array<std::optional<int64_t>, kMembers> baseline_count{};
    MmState* mm = nullptr;
    uint64_t end_ns = 0;
    Update update;
    UpdateInfo info;
    LifeEvent life;
    std::unique_ptr<MmState> dead;  // kDestroyed: freed once emitted
  };

  using MmMap = std::unordered_map<uint64_t, std::unique_ptr<MmState>>;
  // The state of e.mm; `from_zero`: the record shows a brand-new mm.
  MmState& mm_state(const rss_event& e, bool from_zero, uint64_t time_ns);
  // Ends an mm: no record of it follows.
  void retire(MmMap::iterator it, uint64_t end_ns);
  uint64_t start_of(const rss_event& e) const;
  uint64_t end_of(const rss_event& e) const;
  uint64_t earliest_of(const rss_event& e) const;
  uint64_t untimed_floor() const;
  void on_update(const rss_event& e);
  // The state of an UPDATE record's mm, with its timing and owner noted.
  MmState& update_mm(const rss_event& e);
  // An update by the mm's owner: its task (faults since its last update
  // into p.info.faults) and the bound its previous record set.
  struct OwnerUpdate {
    TaskState& task;
    uint64_t since;
    uint64_t since_seq;
  };
  OwnerUpdate owner_update(const rss_event& e, Pending& p);
  // Before 6.2 (audit/task_cache_update.cc): a cached or atomic update,
  // a sync's announcement, and an atomic add overtaken by another.
  void on_task_cache_update(const rss_event& e);
  void on_cache_sync(const rss_event& e);
  void on_overtaken_add(Pending& p, MmState& st);
  void push_correction(const rss_event& e, MmState& st, int64_t rest);
  void push_cache_correction(const rss_event& e, MmState& st, int m,
                             int64_t delta);
  // An RSS_EV_SNAPSHOT record (audit/snapshot_baseline.cc): the values
  // the iterator read there, since 6.2 of an mm's counters, before of one
  // task's cache; with no mm, the end of a pass.
  void on_snapshot(const rss_event& e);
  void apply_percpu_snapshot(MmState& st, const CounterSnapshot& s,
                             const rss_event& e);
  void apply_task_snapshot(MmState& st, const CounterSnapshot& s,
                           const rss_event& e);
  // Before 6.2: the members whose atomic and every task's cache are known
  // get their baseline here; `awaiting_caches` says whether one waits.
  void complete_task_snapshot(MmState& st, uint64_t time_ns);
  // The first record of a slot a snapshot set: flagged when it shows the
  // slot unmoved (its add may be in the snapshot already).
  void check_snapped(SlotState& slot, Pending& p, int32_t slot_after);
  // Drops a task's state at its exit.
  void forget_task(uint32_t tid);
  // Applies the losses since the state was last looked at: every slot and
  // count unknown (an mm), the cache unknown (a task).
  void catch_up(MmState& st);
  void catch_up(TaskState& task) const;
  // The state of task `tid`, brought up to date (created if new), or null
  // when none is kept.
  TaskState& task_at(uint32_t tid);
  TaskState* find_task(uint32_t tid);
  bool stale(const MmState& st) const { return losses_.stale(st.loss_epoch); }
  // The mm at `addr` if alive, brought up to date; else null.
  MmState* live_mm(uint64_t addr);
  void push_life(MmState& mm, LifeKind kind, const rss_event& e);
  // For an mm joined mid-life: an owner update by a second task, whose
  // clone came before the capture, is its second user.
  void infer_second_user(MmState& st, const rss_event& e);
  // An owner update of `st` on e.cpu: that CPU runs `st` now.
  void note_running(MmState& st, const rss_event& e);
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
  // A tracepoint runs its probes with preemption disabled once
  // (__DO_TRACE, include/linux/tracepoint.h): a depth above that is a
  // lock (a page-table lock on every fault path) held since before the
  // add. Unknown (0): neither locked nor unlocked on a preemptible kernel.
  static constexpr uint8_t kTracepointDepth = 1;
  static bool depth_known(const rss_event& e) {
    return e.preempt & RSS_PREEMPT_KNOWN;
  }
  static uint8_t depth(const rss_event& e) {
    return e.preempt & ~RSS_PREEMPT_KNOWN;
  }
  // The record's add took no lock to it, on a kernel that may preempt
  // there.
  bool unlocked_add(const rss_event& e) const {
    return options_.preemptible && depth_known(e) &&
           depth(e) <= kTracepointDepth;
  }
  // The add and the record ran with the CPU held: a lock was held, or the
  // kernel never preempts kernel code.
  bool locked_add(const rss_event& e) const {
    return !options_.preemptible ||
           (depth_known(e) && depth(e) > kTracepointDepth);
  }
  void emit_ready(ReconstructorSink& sink, bool all);
  void emit_oldest(ReconstructorSink& sink);
  void emit(Pending& p, ReconstructorSink& sink);
  Pending& push(Pending::Type type, MmState& mm, uint64_t end_ns);
  Pending& push(Pending::Type type, uint64_t end_ns);  // of no mm

  ReconstructorOptions options_;
  ReconstructorStats stats_;
  uint64_t next_generation_ = 1;
  uint64_t watermark_ns_ = 0;
  // The latest start of a fold record so far: a fold is timed before it
  // takes its sequence number, so every later record in the sequence was
  // reserved after this moment (an untimed record's task was past it).
  uint64_t fold_start_watermark_ns_ = 0;
  // The latest advance() time: it bounds untimed records.
  uint64_t last_advance_ns_ = 0;
  uint64_t max_span_ns_ = 0;  // longest record window seen
  // How far before its record another task's fold may land (measured here:
  // up to ~0.3 us; an interrupt can take longer).
  static constexpr uint64_t kLateSlackNs = 2'000;
  // An mm a snapshot did not make wholly known is not asked for again
  // before this (a fold raced it; before 6.2 a task ran during it).
  static constexpr uint64_t kSnapshotRetryNs = 1'000'000'000;
  MmMap mms_;
  std::unordered_map<uint32_t, TaskState> tasks_;  // by tid
  TaskState* last_task_ = nullptr;  // of the last owner update, tid below
  uint32_t last_tid_ = 0;
  MmState* last_mm_ = nullptr;  // the last looked up: records come in runs
  // Per CPU, the mm of its latest owner update: the mm it runs, as far as
  // the stream shows (the capture has no hook on context switches).
  std::vector<MmKey> cpu_mm_;
  // Events waiting for grace_ns, oldest first; Pending::seq is their
  // number in it.
  PendingRing<Pending> pending_;
  UnplacedDrops drops_;
  LossEpoch losses_;
  SnapshotQueue* snapshots_ = nullptr;
  // Before 6.2: the pass under way and the mms whose tasks it has read.
  uint64_t snapshot_pass_ = 1;
  std::vector<MmKey> pass_mms_;
};

}  // namespace rssaudit
