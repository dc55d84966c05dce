#include "audit/reconstruction_core.h"

#include <algorithm>
#include <utility>

namespace rssaudit {

ReconstructionCore::ReconstructionCore(const ReconstructorOptions& options)
    : options(options), cpu_mm(options.nr_cpus) {}

// An update the capture did not time (rss_event.h) happened before the
// latest time the stream has shown, and its record was reserved after
// untimed_floor() and after the start of every fold earlier in the
// sequence (a fold is timed before it takes its number); emission and the
// models take the former, checks that need its earliest moment the latter.
uint64_t ReconstructionCore::start_of(const rss_event& e) const {
  return e.start_ns ? e.start_ns : watermark_ns;
}

uint64_t ReconstructionCore::end_of(const rss_event& e) const {
  return e.start_ns ? e.start_ns + e.span_ns : watermark_ns;
}

uint64_t ReconstructionCore::earliest_of(const rss_event& e) const {
  return e.start_ns ? e.start_ns
                    : std::max(untimed_floor(), fold_start_watermark_ns);
}

// A record that was not in the streams when the previous drain read them was
// reserved after that read, or was being written then (programs take less
// than grace_ns); its add came at most the slack before. The time the
// drain gave advance() was read before that read.
uint64_t ReconstructionCore::untimed_floor() const {
  const uint64_t margin = 2 * options.grace_ns + kLateSlackNs;
  return last_advance_ns > margin ? last_advance_ns - margin : 1;
}

Pending& ReconstructionCore::push(Pending::Type type,
                                                      MmState& mm,
                                                      uint64_t end_ns) {
  Pending& p = push(type, end_ns);
  p.mm = &mm;
  return p;
}

Pending& ReconstructionCore::push(Pending::Type type,
                                                      uint64_t end_ns) {
  Pending& p = pending.push();
  p.type = type;
  p.seq = pending.pushed() - 1;
  p.fold = false;
  p.count_steady = false;
  p.prev_fold = 0;
  p.chained = false;
  p.mm = nullptr;
  p.end_ns = end_ns;
  p.info = UpdateInfo{};
  return p;
}

MmState& ReconstructionCore::mm_state(const rss_event& e,
                                                          bool from_zero,
                                                          uint64_t time_ns) {
  const uint64_t addr = e.mm;
  // Consecutive records mostly concern one mm: skip the hash lookup.
  if (last_mm && last_mm->key.addr == addr &&
      (!from_zero || last_mm->from_zero)) {
    catch_up(*last_mm);
    return *last_mm;
  }
  auto it = mms.find(addr);
  if (it != mms.end() && (!from_zero || it->second->from_zero)) {
    catch_up(*it->second);
    return *(last_mm = it->second.get());
  }
  if (it != mms.end()) {
    // A brand-new mm where one from before the capture was: that one
    // ended unseen (its exit_mmap ran while the programs attached).
    push_life(*it->second, LifeKind::kMmExit, e);
    retire(it, time_ns);
  }
  std::unique_ptr<MmState>& slot = mms[addr];
  slot = std::make_unique<MmState>();
  MmState& st = *slot;
  st.key = MmKey{addr, next_generation++};
  st.loss_epoch = losses.now();
  st.from_zero = from_zero;
  st.count_known.fill(from_zero);
  st.synced.fill(from_zero);
  std::array<SlotState, kMembers> initial;
  initial.fill(SlotState{0, from_zero});
  st.slots =
      PerCpuArray<std::array<SlotState, kMembers>>(options.nr_cpus, initial);
  ++stats.mms_created;
  push(Pending::Type::kCreated, st, time_ns);
  return *(last_mm = &st);
}

void ReconstructionCore::retire(MmMap::iterator it, uint64_t end_ns) {
  Pending& p = push(Pending::Type::kDestroyed, *it->second, end_ns);
  p.dead = std::move(it->second);
  if (last_mm == p.dead.get()) last_mm = nullptr;
  mms.erase(it);
  ++stats.mms_destroyed;
}

void ReconstructionCore::push_life(MmState& mm, LifeKind kind,
                                   const rss_event& e) {
  Pending& p = push(Pending::Type::kLife, mm, end_of(e));
  p.life = LifeEvent{kind, e.tid, e.cpu};
  p.life.process = e.tgid;
  p.life.process_ended = kind == LifeKind::kTaskExit && e.kind == RSS_EV_EXIT &&
                         e.flags & RSS_EVF_GROUP_DEAD;
  if (p.life.process_ended && e.aux > 0)
    p.life.start_ticks = static_cast<uint64_t>(e.aux);
}

void ReconstructionCore::note_running(MmState& st, const rss_event& e) {
  // The per_cpu scheme folds a CPU's cache when the CPU switches to another
  // mm. An owner update of another mm on that CPU shows such a switch (late
  // when the CPU ran processes that updated no counter in between).
  MmKey& running = cpu_mm[e.cpu];
  if (running == st.key) return;
  if (running.addr) {
    const auto it = mms.find(running.addr);
    if (it != mms.end() && it->second->key == running)
      push_life(*it->second, LifeKind::kCpuSwitch, e);
  }
  running = st.key;
}

MmState& ReconstructionCore::update_mm(const rss_event& e) {
  MmState& st = mm_state(e, e.flags & RSS_EVF_CREATING, start_of(e));
  if (e.flags & RSS_EVF_OWNER) {
    note_running(st, e);
    infer_second_user(st, e);
  }
  return st;
}

void ReconstructionCore::infer_second_user(MmState& st, const rss_event& e) {
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
  ++stats.inferred_second_users;
  push_life(st, LifeKind::kSecondUser, e);
  st.second_user = true;
}

ReconstructionCore::OwnerUpdate ReconstructionCore::owner_update(
    const rss_event& e, Pending& p) {
  // Records come in runs of one task: skip the hash lookup. Element
  // references survive rehashing; only the erase at EXIT drops one.
  if (!last_task || last_tid != e.tid) {
    last_task = &task_at(e.tid);
    last_tid = e.tid;
  }
  TaskState& task = *last_task;
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

void ReconstructionCore::forget_task(uint32_t tid) {
  const auto it = tasks.find(tid);
  if (it == tasks.end()) return;
  catch_up(it->second);
  // A fold announced and never seen (its record lost) holds no counter.
  if (const uint8_t syncing = it->second.syncing) {
    MmState* mm = live_mm(it->second.syncing_mm);
    for (int m = 0; m < kMembers && mm; ++m)
      if (syncing >> m & 1 && mm->folds_announced[m]) --mm->folds_announced[m];
  }
  tasks.erase(it);
}

TaskState& ReconstructionCore::task_at(uint32_t tid) {
  const auto [it, created] = tasks.try_emplace(tid);
  if (created)
    it->second.loss_epoch = losses.now();
  else
    catch_up(it->second);
  return it->second;
}

TaskState* ReconstructionCore::find_task(uint32_t tid) {
  const auto it = tasks.find(tid);
  if (it == tasks.end()) return nullptr;
  catch_up(it->second);
  return &it->second;
}

MmState* ReconstructionCore::live_mm(uint64_t addr) {
  const auto it = mms.find(addr);
  if (it == mms.end()) return nullptr;
  catch_up(*it->second);
  return it->second.get();
}

void ReconstructionCore::catch_up(TaskState& task) const {
  if (!losses.catch_up(task.loss_epoch)) return;
  // Before 6.2 a lost record may be a cached update or a fold.
  task.cache_known = false;
  task.syncing = 0;
}

void ReconstructionCore::catch_up(MmState& st) {
  if (!losses.catch_up(st.loss_epoch)) return;
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

void ReconstructionCore::lose() {
  ++stats.losses;
  // Every mm is voided when next looked at (catch_up()), and the sink
  // hears of the loss once.
  losses.lose();
  push(Pending::Type::kLoss, watermark_ns);
}

}  // namespace rssaudit
