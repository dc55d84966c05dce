#include "audit/delta_reconstructor.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

namespace rssaudit {

DeltaReconstructor::DeltaReconstructor(const ReconstructorOptions& options)
    : options_(options), cpu_mm_(options.nr_cpus) {}

DeltaReconstructor::~DeltaReconstructor() = default;

// An update the capture did not time (rss_event.h) happened before the
// latest time the stream has shown, and its record was reserved after
// untimed_floor() and after the start of every fold earlier in the
// sequence (a fold is timed before it takes its number); emission and the
// models take the former, checks that need its earliest moment the latter.
uint64_t DeltaReconstructor::start_of(const rss_event& e) const {
  return e.start_ns ? e.start_ns : watermark_ns_;
}

uint64_t DeltaReconstructor::end_of(const rss_event& e) const {
  return e.start_ns ? e.start_ns + e.span_ns : watermark_ns_;
}

uint64_t DeltaReconstructor::earliest_of(const rss_event& e) const {
  return e.start_ns ? e.start_ns
                    : std::max(untimed_floor(), fold_start_watermark_ns_);
}

// A record that was not in the streams when the previous drain read them was
// reserved after that read, or was being written then (programs take less
// than grace_ns); its add came at most the slack before. The time the
// drain gave advance() was read before that read.
uint64_t DeltaReconstructor::untimed_floor() const {
  const uint64_t margin = 2 * options_.grace_ns + kLateSlackNs;
  return last_advance_ns_ > margin ? last_advance_ns_ - margin : 1;
}

DeltaReconstructor::Pending& DeltaReconstructor::push(Pending::Type type,
                                                      MmState& mm,
                                                      uint64_t end_ns) {
  Pending& p = push(type, end_ns);
  p.mm = &mm;
  return p;
}

DeltaReconstructor::Pending& DeltaReconstructor::push(Pending::Type type,
                                                      uint64_t end_ns) {
  Pending& p = pending_.push();
  p.type = type;
  p.seq = pending_.pushed() - 1;
  p.fold = false;
  p.count_steady = false;
  p.prev_fold = 0;
  p.chained = false;
  p.mm = nullptr;
  p.end_ns = end_ns;
  p.info = UpdateInfo{};
  return p;
}

DeltaReconstructor::MmState& DeltaReconstructor::mm_state(const rss_event& e,
                                                          bool from_zero,
                                                          uint64_t time_ns) {
  const uint64_t addr = e.mm;
  // Consecutive records mostly concern one mm: skip the hash lookup.
  if (last_mm_ && last_mm_->key.addr == addr &&
      (!from_zero || last_mm_->from_zero)) {
    catch_up(*last_mm_);
    return *last_mm_;
  }
  auto it = mms_.find(addr);
  if (it != mms_.end() && (!from_zero || it->second->from_zero)) {
    catch_up(*it->second);
    return *(last_mm_ = it->second.get());
  }
  if (it != mms_.end()) {
    // A brand-new mm where one from before the capture was: that one
    // ended unseen (its exit_mmap ran while the programs attached).
    push_life(*it->second, LifeKind::kMmExit, e);
    retire(it, time_ns);
  }
  std::unique_ptr<MmState>& slot = mms_[addr];
  slot = std::make_unique<MmState>();
  MmState& st = *slot;
  st.key = MmKey{addr, next_generation_++};
  st.loss_epoch = losses_.now();
  st.from_zero = from_zero;
  st.count_known.fill(from_zero);
  st.synced.fill(from_zero);
  std::array<SlotState, kMembers> initial;
  initial.fill(SlotState{0, from_zero});
  st.slots =
      PerCpuArray<std::array<SlotState, kMembers>>(options_.nr_cpus, initial);
  ++stats_.mms_created;
  push(Pending::Type::kCreated, st, time_ns);
  return *(last_mm_ = &st);
}

void DeltaReconstructor::retire(MmMap::iterator it, uint64_t end_ns) {
  Pending& p = push(Pending::Type::kDestroyed, *it->second, end_ns);
  p.dead = std::move(it->second);
  if (last_mm_ == p.dead.get()) last_mm_ = nullptr;
  mms_.erase(it);
  ++stats_.mms_destroyed;
}

void DeltaReconstructor::push_life(MmState& mm, LifeKind kind,
                                   const rss_event& e) {
  Pending& p = push(Pending::Type::kLife, mm, end_of(e));
  p.life = LifeEvent{kind, e.tid, e.cpu};
  p.life.process = e.tgid;
  p.life.process_ended = kind == LifeKind::kTaskExit && e.kind == RSS_EV_EXIT &&
                         e.flags & RSS_EVF_GROUP_DEAD;
  if (p.life.process_ended && e.aux > 0)
    p.life.start_ticks = static_cast<uint64_t>(e.aux);
}

void DeltaReconstructor::note_running(MmState& st, const rss_event& e) {
  // The per_cpu scheme folds a CPU's cache when the CPU switches to another
  // mm. An owner update of another mm on that CPU shows such a switch (late
  // when the CPU ran processes that updated no counter in between).
  MmKey& running = cpu_mm_[e.cpu];
  if (running == st.key) return;
  if (running.addr) {
    const auto it = mms_.find(running.addr);
    if (it != mms_.end() && it->second->key == running)
      push_life(*it->second, LifeKind::kCpuSwitch, e);
  }
  running = st.key;
}

void DeltaReconstructor::on_event(const rss_event& e, ReconstructorSink& sink) {
  ++stats_.events;
  if (e.flags & RSS_EVF_AFTER_LOSS) {
    on_loss();
    drops_.placed();
  }
  // Capped at the grace period: one odd record must not make every later
  // overlap scan walk the whole queue.
  if (e.span_ns > max_span_ns_)
    max_span_ns_ = std::min<uint64_t>(e.span_ns, options_.grace_ns);
  const bool has_member =
      e.kind == RSS_EV_UPDATE || e.kind == RSS_EV_CACHE_SYNC;
  // Also what no kernel writes, so that the arithmetic on it cannot
  // overflow: a count past 2^40 pages (4 EiB), a task cache (an int) past
  // an int's range.
  constexpr int64_t kMaxPages = int64_t{1} << 40;
  const int64_t max_aux = e.kind == RSS_EV_CACHE_SYNC
                              ? std::numeric_limits<int32_t>::max()
                              : kMaxPages;
  if (e.cpu >= options_.nr_cpus || (has_member && e.member >= kMembers) ||
      (has_member && (e.aux > max_aux || e.aux < -max_aux))) {
    ++stats_.bad_records;
    return;
  }
  if (mms_.size() >= options_.max_mms && e.kind != RSS_EV_EXIT_MMAP &&
      !mms_.contains(e.mm)) {
    ++stats_.over_mm_limit;
    return;
  }
  switch (e.kind) {
    case RSS_EV_UPDATE:
      on_update(e);
      break;
    case RSS_EV_NEW_TASK: {
      // A reused tid is another task: its mm is the new one, its faults
      // not yet known.
      TaskState& task = tasks_[e.tid];
      task = TaskState{.mm = e.mm, .since_ns = e.start_ns, .cache_known = true};
      task.clone_seen = true;
      task.loss_epoch = losses_.now();
      const auto flags = static_cast<uint64_t>(e.aux);
      // Without CLONE_VM the child got a brand-new mm.
      MmState& st = mm_state(e, !(flags & CLONE_VM), e.start_ns);
      if ((flags & CLONE_VM) && !(flags & CLONE_VFORK)) {
        push_life(st, LifeKind::kSecondUser, e);
        st.second_user = true;
      }
      // Before 6.2 a snapshot's value adds up every task's cache: this
      // one's from its birth (0).
      if ((flags & CLONE_VM) && !st.snapshot_tasks.empty())
        st.snapshot_tasks.push_back(e.tid);
      break;
    }
    case RSS_EV_EXEC: {
      mm_state(e, true, e.start_ns);
      // The old mm: from the task's NEW_TASK record or its updates (older
      // recordings carry it in aux). Unknown for a task from before the
      // capture that has not updated its own mm since.
      uint64_t old_mm = static_cast<uint64_t>(e.aux);
      TaskState& task = task_at(e.tid);
      if (!old_mm) old_mm = task.mm;
      task.mm = e.mm;
      const auto old = mms_.find(old_mm);
      if (old_mm && old_mm != e.mm && old != mms_.end())
        push_life(*old->second, LifeKind::kTaskExit, e);
      break;
    }
    case RSS_EV_EXIT:
      if (last_task_ && last_tid_ == e.tid) last_task_ = nullptr;
      forget_task(e.tid);
      push_life(mm_state(e, false, e.start_ns), LifeKind::kTaskExit, e);
      break;
    case RSS_EV_CACHE_SYNC:
      on_cache_sync(e);
      break;
    case RSS_EV_SNAPSHOT:
      on_snapshot(e);
      break;
    case RSS_EV_EXIT_MMAP: {
      const auto it = mms_.find(e.mm);
      if (it == mms_.end()) break;  // never updated under the capture
      push_life(*it->second, LifeKind::kMmExit, e);
      retire(it, end_of(e));
      break;
    }
    default:
      ++stats_.bad_records;
      return;
  }
  if (e.start_ns > watermark_ns_) watermark_ns_ = e.start_ns;
  emit_ready(sink, false);
  while (pending_.size() > options_.max_pending) {
    ++stats_.forced_emits;
    emit_oldest(sink);
  }
}

DeltaReconstructor::MmState& DeltaReconstructor::update_mm(const rss_event& e) {
  MmState& st = mm_state(e, e.flags & RSS_EVF_CREATING, start_of(e));
  if (e.flags & RSS_EVF_OWNER) {
    note_running(st, e);
    infer_second_user(st, e);
  }
  return st;
}

void DeltaReconstructor::infer_second_user(MmState& st, const rss_event& e) {
  // An mm seen from its creation had its clones recorded.
  if (st.from_zero || st.second_user) return;
  if (!st.first_user_tid) {
    st.first_user_tid = e.tid;
    return;
  }
  if (e.tid == st.first_user_tid) return;
  // A task whose clone was seen was judged then (a vfork child is no
  // second user).
  if (const TaskState* task = find_task(e.tid); task && task->clone_seen)
    return;
  ++stats_.inferred_second_users;
  push_life(st, LifeKind::kSecondUser, e);
  st.second_user = true;
}

DeltaReconstructor::OwnerUpdate DeltaReconstructor::owner_update(
    const rss_event& e, Pending& p) {
  // Records come in runs of one task: skip the hash lookup. Element
  // references survive rehashing; only the erase at EXIT drops one.
  if (!last_task_ || last_tid_ != e.tid) {
    last_task_ = &task_at(e.tid);
    last_tid_ = e.tid;
  }
  TaskState& task = *last_task_;
  catch_up(task);
  const uint64_t since = task.since_ns, since_seq = task.since_seq;
  task.since_seq = p.seq + 1;
  // This record's program ran before the task's next add: after its own
  // start, or when untimed, after the folds reserved before it started;
  // and after every earlier record of the task.
  task.since_ns = std::max(since, earliest_of(e));
  // The fault total wraps at 2^16: the difference is right below that.
  p.info.faults = task.faults_known
                      ? static_cast<uint16_t>(e.faults - task.faults)
                      : uint16_t{(e.flags & RSS_EVF_IN_FAULT) != 0};
  task.faults = e.faults;
  task.faults_known = true;
  // Only when unknown: between exec_mmap() and its EXEC record a task
  // already updates its new mm, and the old one is what the exec leaves.
  if (!task.mm) task.mm = e.mm;
  return {task, since, since_seq};
}

void DeltaReconstructor::on_update(const rss_event& e) {
  if (e.flags & (RSS_EVF_CACHED | RSS_EVF_ATOMIC)) {
    on_task_cache_update(e);
    return;
  }
  ++stats_.updates;
  if (!depth_known(e)) ++stats_.depth_unknown;
  const uint64_t start = start_of(e), end = end_of(e);
  MmState& st = update_mm(e);
  const int m = e.member;
  SlotState& slot = st.slots.at(e.cpu)[m];

  Pending& p = push(Pending::Type::kUpdate, st, end);
  p.update.time_ns = start;
  p.update.task = e.tid;
  p.update.cpu = e.cpu;
  p.update.member = static_cast<uint8_t>(m);
  const bool in_fault = e.flags & RSS_EVF_IN_FAULT;
  p.update.flags = ((e.flags & RSS_EVF_OWNER) ? kUpdateByOwner : 0) |
                   (in_fault ? kUpdateInFault : 0);
  p.info.end_ns = end;
  p.info.kernel_count = e.aux;
  p.info.kernel_slot = e.slot;
  p.info.tgid = e.tgid;
  uint64_t task_since = 0;  // this add came after it
  // And after the record at this place in the stream (seq + 1; 0: none).
  uint64_t add_after_seq = locked_add(e) ? slot.after_seq : 0;
  if (e.flags & RSS_EVF_OWNER) {
    const OwnerUpdate owner = owner_update(e, p);
    task_since = owner.since;
    add_after_seq = std::max(add_after_seq, owner.since_seq);
  } else if (unlocked_add(e)) {
    // As for an owner's task above, for the one other task an mm keeps.
    task_since = st.other_tid == e.tid ? st.other_since_ns : 0;
    st.other_tid = e.tid;
    st.other_since_ns = std::max(task_since, earliest_of(e));
  }

  int64_t delta = 0;
  if (!slot.known || !st.count_known[m]) {
    // Joined mid-life: this event only sets the baseline of its slot; the
    // member's value is unknown until a snapshot.
    p.info.fidelity = Fidelity::kNoBaseline;
    st.synced[m] = false;
    if (!st.count_known[m] || e.slot == 0) st.count[m] = e.aux;
    st.count_known[m] = true;
  } else if (e.slot != 0) {
    // No fold (a fold leaves the slot at zero): the slot moved by delta.
    delta = int64_t{e.slot} - slot.value;
    if (e.aux != st.count[m]) p.info.fidelity = Fidelity::kCountAhead;
  } else {
    // Back to zero: `count` moved by slot_before + delta (a fold, at least
    // batch away from zero) or not at all.
    p.fold = true;
    p.count_steady = e.flags & RSS_EVF_COUNT_STEADY;
    p.prev_fold = st.last_fold[m];
    st.last_fold[m] = p.seq + 1;
    int64_t moved = e.aux - st.count[m];
    if (moved != 0 && std::llabs(moved) < options_.batch) {
      p.info.fidelity = Fidelity::kInconsistent;
      moved = 0;  // the rest stays unexplained for the next fold
    }
    st.count[m] += moved;
    delta = moved - slot.value;
    // The capture times every fold; one without a window (a malformed
    // record) cannot be ordered against the others.
    if (!e.start_ns) p.info.fidelity = Fidelity::kAmbiguous;
    // A fold emitted before that read `count` before this add is ordered.
    const bool emitted_before =
        st.emitted_fold_seq[m] && st.emitted_fold_seq[m] < add_after_seq;
    if (st.emitted_fold_end[m] >= start && st.emitted_fold_cpu[m] != e.cpu &&
        !emitted_before) {
      ++stats_.late_overlaps;
      p.info.fidelity = Fidelity::kAmbiguous;
    }
    const bool late = st.unexplained_end[m] && st.unexplained_cpu[m] != e.cpu;
    const uint64_t since =
        late ? std::min<uint64_t>(st.unexplained_end[m], start) : start;
    // Back to zero with `count` unmoved may be a fold of ours that another
    // task's fold record already took into its own delta: it read `count`
    // after our add, which may lead our record by any time (a descheduled
    // vCPU, a preemption), back to our CPU's previous record of the
    // counter or our task's previous record, whichever came later. (A
    // task's own earlier fold read `count` before this add.) Only for a
    // task in its own mm: an exec's or a vfork's teardown of an mm other
    // tasks filled would otherwise flag ~1% of a fork storm's updates here,
    // where no add leads its record by more than an interrupt.
    uint64_t absorbed_since = since;
    if (moved == 0 && slot.value != 0 && (e.flags & RSS_EVF_OWNER)) {
      absorbed_since = std::min(since, std::max(slot.after_ns, task_since));
      if (st.emitted_fold_end[m] >= absorbed_since &&
          st.emitted_fold_cpu[m] != e.cpu && st.emitted_fold_task[m] != e.tid &&
          !emitted_before)
        p.info.fidelity = Fidelity::kAmbiguous;
    }
    mark_overlaps(p, since, absorbed_since, add_after_seq);
    if (late && e.aux == st.count[m]) st.unexplained_end[m] = 0;
  }
  if (e.aux != st.count[m] && !st.unexplained_end[m]) {
    // The capture times the first record of a CPU that shows a `count` its
    // previous one did not; were this one untimed, its earliest moment
    // only widens the late fold's window.
    st.unexplained_end[m] = e.start_ns ? end : earliest_of(e);
    st.unexplained_cpu[m] = e.cpu;
  }
  if (e.slot == 0 && e.start_ns > fold_start_watermark_ns_)
    fold_start_watermark_ns_ = e.start_ns;
  if (slot.suspect) {
    slot.suspect = false;
    flag_ambiguous(p.info);
  }
  check_snapped(slot, p, e.slot);
  if (unlocked_add(e)) on_unlocked_add(p, st, task_since);
  slot.value = e.slot;
  slot.known = true;
  slot.after_ns = earliest_of(e);
  slot.after_seq = p.seq + 1;
  p.update.delta = static_cast<int32_t>(delta);
}

void DeltaReconstructor::forget_task(uint32_t tid) {
  const auto it = tasks_.find(tid);
  if (it == tasks_.end()) return;
  catch_up(it->second);
  // A fold announced and never seen (its record lost) holds no counter.
  if (const uint8_t syncing = it->second.syncing) {
    MmState* mm = live_mm(it->second.syncing_mm);
    for (int m = 0; m < kMembers && mm; ++m)
      if (syncing >> m & 1 && mm->folds_announced[m]) --mm->folds_announced[m];
  }
  tasks_.erase(it);
}

DeltaReconstructor::TaskState& DeltaReconstructor::task_at(uint32_t tid) {
  const auto [it, created] = tasks_.try_emplace(tid);
  if (created)
    it->second.loss_epoch = losses_.now();
  else
    catch_up(it->second);
  return it->second;
}

DeltaReconstructor::TaskState* DeltaReconstructor::find_task(uint32_t tid) {
  const auto it = tasks_.find(tid);
  if (it == tasks_.end()) return nullptr;
  catch_up(it->second);
  return &it->second;
}

DeltaReconstructor::MmState* DeltaReconstructor::live_mm(uint64_t addr) {
  const auto it = mms_.find(addr);
  if (it == mms_.end()) return nullptr;
  catch_up(*it->second);
  return it->second.get();
}

void DeltaReconstructor::catch_up(TaskState& task) const {
  if (!losses_.catch_up(task.loss_epoch)) return;
  // Before 6.2 a lost record may be a cached update or a fold.
  task.cache_known = false;
  task.syncing = 0;
}

void DeltaReconstructor::catch_up(MmState& st) {
  if (!losses_.catch_up(st.loss_epoch)) return;
  st.folds_announced.fill(0);
  st.suspect_next.fill(false);
  st.slots.fill({});  // every slot unknown
  st.count_known.fill(false);
  st.synced.fill(false);
  st.unexplained_end.fill(0);
  st.next_snapshot_ns = 0;
  st.snapshot_tasks.clear();
  st.awaiting_caches = false;
}

void DeltaReconstructor::on_loss() {
  ++stats_.losses;
  // Every mm is voided when next looked at (catch_up()), and the sink
  // hears of the loss once.
  losses_.lose();
  push(Pending::Type::kLoss, watermark_ns_);
}

bool DeltaReconstructor::end_unseen(const MmKey& key) {
  const auto it = mms_.find(key.addr);
  if (it == mms_.end() || !(it->second->key == key)) return false;
  Pending& p = push(Pending::Type::kLife, *it->second, watermark_ns_);
  p.life = LifeEvent{LifeKind::kMmExit, 0, 0};
  retire(it, watermark_ns_);
  ++stats_.ended_unseen;
  return true;
}

void DeltaReconstructor::on_drops(uint64_t total) {
  if (drops_.after_drain(total)) on_loss();
}

void DeltaReconstructor::on_unlocked_add(Pending& p, MmState& st,
                                         uint64_t since_ns) {
  ++stats_.unlocked;
  const int m = p.update.member;
  flag_ambiguous(p.info);
  // Newest first (p is the newest); records are in reservation order, as
  // in mark_overlaps(). since_ns 0 (the task's first record of the mm)
  // bounds nothing: every held-back update of the counter is flagged.
  for (size_t i = pending_.size(); i-- > 0;) {
    Pending& q = pending_.at(i);
    if (q.end_ns + max_span_ns_ + kLateSlackNs < since_ns) break;
    // The task's own earlier records came before this add.
    if (q.type == Pending::Type::kUpdate && q.mm == &st &&
        q.update.member == m && q.update.task != p.update.task)
      flag_ambiguous(q.info);
  }
  if (since_ns && st.emitted_update_task[m] != p.update.task &&
      st.emitted_update_end[m] + kLateSlackNs >= since_ns)
    ++stats_.late_overlaps;
  SlotState& own = st.slots.at(p.update.cpu)[m];
  const bool own_suspect = own.suspect;
  st.slots.update_all([m](auto& slots) { slots[m].suspect = true; });
  own.suspect = own_suspect;
}

// Flags `fold` and every held-back fold of the same counter on another CPU
// whose window overlaps its own, [since_ns, end], or for another task's
// fold [other_task_since_ns, end]: which of them moved `count` first is
// unknown. Unless the sequence orders them: a fold that read `count` before
// taking its number, earlier than the record at `add_after_seq` that came
// before `fold`'s add, holds no part of that add, and `fold`'s record,
// later, reads all of it. Walks the counter's chain of held-back folds,
// newest first, and stops at one that ended more than grace_ns before:
// older ones cannot overlap (they ended before their successors reserved).
void DeltaReconstructor::mark_overlaps(Pending& fold, uint64_t since_ns,
                                       uint64_t other_task_since_ns,
                                       uint64_t add_after_seq) {
  for (uint64_t next = fold.prev_fold; next && pending_.holds(next - 1);) {
    Pending& p = pending_.by_seq(next - 1);
    next = p.prev_fold;
    // Records are in reservation order and each spans at most max_span_ns_,
    // so every record before one that ended max_span_ns_ before `since`
    // ended before it too.
    if (p.end_ns + max_span_ns_ + kLateSlackNs < other_task_since_ns) break;
    if (p.update.cpu == fold.update.cpu || read_before_add(p, add_after_seq))
      continue;
    // Another task's fold may have landed before its record started by up
    // to an interrupt's length (the add re-enables interrupts before the
    // tracepoint): near misses between tasks are flagged too. One task's
    // records cannot overlap its own.
    const bool same_task = p.update.task == fold.update.task;
    if (same_task ? p.end_ns < since_ns
                  : p.end_ns + kLateSlackNs < other_task_since_ns)
      continue;
    // p reserved before fold, so p started before fold ended: overlap.
    flag_ambiguous(p.info);
    flag_ambiguous(fold.info);
  }
}

void DeltaReconstructor::advance(uint64_t now_ns, ReconstructorSink& sink) {
  if (now_ns > last_advance_ns_) last_advance_ns_ = now_ns;
  if (now_ns > watermark_ns_) watermark_ns_ = now_ns;
  emit_ready(sink, false);
}

void DeltaReconstructor::flush(ReconstructorSink& sink) {
  emit_ready(sink, true);
}

void DeltaReconstructor::emit_ready(ReconstructorSink& sink, bool all) {
  while (!pending_.empty()) {
    if (!all && pending_.front().end_ns + options_.grace_ns >= watermark_ns_)
      break;
    emit_oldest(sink);
  }
}

void DeltaReconstructor::emit_oldest(ReconstructorSink& sink) {
  Pending& p = pending_.front();
  emit(p, sink);
  p.dead.reset();
  pending_.pop_front();
}

void DeltaReconstructor::emit(Pending& p, ReconstructorSink& sink) {
  if (p.type == Pending::Type::kLoss) {
    sink.on_loss();
    return;
  }
  MmState& st = *p.mm;
  switch (p.type) {
    case Pending::Type::kLoss:
      break;
    case Pending::Type::kCreated:
      sink.on_mm_created(st.key, st.from_zero);
      break;
    case Pending::Type::kUpdate: {
      switch (p.info.fidelity) {
        case Fidelity::kExact:
          ++stats_.exact;
          break;
        case Fidelity::kAmbiguous:
          ++stats_.ambiguous;
          break;
        case Fidelity::kNoBaseline:
          ++stats_.no_baseline;
          break;
        case Fidelity::kInconsistent:
          ++stats_.inconsistent;
          break;
        case Fidelity::kCountAhead:
          ++stats_.count_ahead;
          break;
      }
      st.emitted_update_end[p.update.member] = p.end_ns;
      st.emitted_update_task[p.update.member] = p.update.task;
      if (p.fold) {
        const int m = p.update.member;
        st.emitted_fold_end[m] = p.end_ns;
        st.emitted_fold_cpu[m] = p.update.cpu;
        st.emitted_fold_task[m] = p.update.task;
        st.emitted_fold_seq[m] = p.count_steady ? p.seq + 1 : 0;
      }
      // A stream from before 6.2 carries the kernel's own syncs instead.
      if (p.update.by_owner() && p.info.faults && !p.info.task_cache) {
        // The task's faults since its last update came before this one.
        sink.on_life(st.key, LifeEvent{LifeKind::kFault, p.update.task,
                                       p.update.cpu, p.info.faults});
      }
      sink.on_update(st.key, p.update, p.info);
      break;
    }
    case Pending::Type::kLife:
      sink.on_life(st.key, p.life);
      break;
    case Pending::Type::kCacheFold:
      st.emitted_update_end[p.update.member] = p.end_ns;
      st.emitted_update_task[p.update.member] = p.update.task;
      sink.on_cache_fold(st.key, p.life, p.info);
      break;
    case Pending::Type::kDestroyed:
      sink.on_mm_destroyed(st.key);
      break;
    case Pending::Type::kBaseline:
      for (int m = 0; m < kMembers; ++m)
        if (p.baseline_members >> m & 1)
          sink.on_baseline(st.key, m, p.baseline[m], p.baseline_count[m]);
      break;
  }
}

}  // namespace rssaudit
