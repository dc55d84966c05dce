// The state both decoders of DeltaReconstructor share: every live mm and
// task, the queue of events held back for the grace period, the loss
// epochs, the stream's clocks, and the steps common to both kernels' records
// (an mm's creation and end, its owner's bookkeeping, snapshots). The
// decoders (audit/percpu_counter_decoder.h since Linux 6.2,
// audit/task_cache_decoder.h before) turn one kind of record each into
// queued updates here; DeltaReconstructor feeds them and emits the queue.
// Its members are public: it is the decoders' workspace, not an API.
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
#include "audit/reconstructor_types.h"
#include "bpf/rss_event.h"
#include "core/schemes/per_cpu_array.h"
#include "core/schemes/update.h"

namespace rssaudit {

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

class ReconstructionCore {
 public:
  explicit ReconstructionCore(const ReconstructorOptions& options);

  using MmMap = std::unordered_map<uint64_t, std::unique_ptr<MmState>>;

  // A record's window, and for an untimed one its bounds (the .cc says
  // why).
  uint64_t start_of(const rss_event& e) const;
  uint64_t end_of(const rss_event& e) const;
  uint64_t earliest_of(const rss_event& e) const;
  uint64_t untimed_floor() const;

  Pending& push(Pending::Type type, MmState& mm, uint64_t end_ns);
  Pending& push(Pending::Type type, uint64_t end_ns);  // of no mm
  void push_life(MmState& mm, LifeKind kind, const rss_event& e);

  // The state of e.mm; `from_zero`: the record shows a brand-new mm.
  MmState& mm_state(const rss_event& e, bool from_zero, uint64_t time_ns);
  // Ends an mm: no record of it follows.
  void retire(MmMap::iterator it, uint64_t end_ns);
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
  // For an mm joined mid-life: an owner update by a second task, whose
  // clone came before the capture, is its second user.
  void infer_second_user(MmState& st, const rss_event& e);
  // An owner update of `st` on e.cpu: that CPU runs `st` now.
  void note_running(MmState& st, const rss_event& e);

  // The state of task `tid`, brought up to date (created if new).
  TaskState& task_at(uint32_t tid);
  TaskState* find_task(uint32_t tid);
  // Drops a task's state at its exit.
  void forget_task(uint32_t tid);
  // The mm at `addr` if alive, brought up to date; else null.
  MmState* live_mm(uint64_t addr);
  // Applies the losses since the state was last looked at: every slot and
  // count unknown (an mm), the cache unknown (a task).
  void catch_up(MmState& st);
  void catch_up(TaskState& task) const;
  bool stale(const MmState& st) const { return losses.stale(st.loss_epoch); }
  // Records were lost here (DeltaReconstructor::on_loss()).
  void lose();

  // An RSS_EV_SNAPSHOT record (audit/snapshot_baseline.cc): the values
  // the iterator read there, since 6.2 of an mm's counters, before of one
  // task's cache; with no mm, the end of a pass.
  void on_snapshot(const rss_event& e);
  // Before 6.2: the members whose atomic and every task's cache are known
  // get their baseline here; `awaiting_caches` says whether one waits.
  void complete_task_snapshot(MmState& st, uint64_t time_ns);
  // The first record of a slot a snapshot set: flagged when it shows the
  // slot unmoved (its add may be in the snapshot already).
  void check_snapped(SlotState& slot, Pending& p, int32_t slot_after);
  std::vector<uint64_t> snapshot_candidates(uint64_t now_ns,
                                            size_t max) const;

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
    return options.preemptible && depth_known(e) &&
           depth(e) <= kTracepointDepth;
  }
  // The add and the record ran with the CPU held: a lock was held, or the
  // kernel never preempts kernel code.
  bool locked_add(const rss_event& e) const {
    return !options.preemptible ||
           (depth_known(e) && depth(e) > kTracepointDepth);
  }

  // How far before its record another task's fold may land (measured here:
  // up to ~0.3 us; an interrupt can take longer).
  static constexpr uint64_t kLateSlackNs = 2'000;
  // An mm a snapshot did not make wholly known is not asked for again
  // before this (a fold raced it; before 6.2 a task ran during it).
  static constexpr uint64_t kSnapshotRetryNs = 1'000'000'000;

  ReconstructorOptions options;
  ReconstructorStats stats;
  uint64_t next_generation = 1;
  uint64_t watermark_ns = 0;
  // The latest start of a fold record so far: a fold is timed before it
  // takes its sequence number, so every later record in the sequence was
  // reserved after this moment (an untimed record's task was past it).
  uint64_t fold_start_watermark_ns = 0;
  // The latest advance() time: it bounds untimed records.
  uint64_t last_advance_ns = 0;
  uint64_t max_span_ns = 0;  // longest record window seen
  MmMap mms;
  std::unordered_map<uint32_t, TaskState> tasks;  // by tid
  TaskState* last_task = nullptr;  // of the last owner update, tid below
  uint32_t last_tid = 0;
  MmState* last_mm = nullptr;  // the last looked up: records come in runs
  // Per CPU, the mm of its latest owner update: the mm it runs, as far as
  // the stream shows (the capture has no hook on context switches).
  std::vector<MmKey> cpu_mm;
  // Events waiting for grace_ns, oldest first; Pending::seq is their
  // number in it.
  PendingRing<Pending> pending;
  UnplacedDrops drops;
  LossEpoch losses;
  SnapshotQueue* snapshots = nullptr;
  // Before 6.2: the pass under way and the mms whose tasks it has read.
  uint64_t snapshot_pass = 1;
  std::vector<MmKey> pass_mms;

 private:
  void apply_percpu_snapshot(MmState& st, const CounterSnapshot& s,
                             const rss_event& e);
  void apply_task_snapshot(MmState& st, const CounterSnapshot& s,
                           const rss_event& e);
};

}  // namespace rssaudit
