// Baselines from the snapshot iterator (bpf/snapshot.bpf.c) for mms the
// capture joined mid-life. The iterator takes a record's sequence number,
// then reads; so every add whose record comes earlier in the sequence is in
// what it read, and an add whose record comes later may be too. Setting the
// reconstruction's state to what it read at the record keeps the value
// exact from there once each CPU (task) that raced the reads has recorded
// again (docs/kernel.md, "Baselines of mms older than the capture"):
// - since 6.2 the update records come after their add, so a later record
//   whose add was read shows its slot where the snapshot left it: delta 0
//   given, the add already in the baseline (that record is flagged). A
//   fold during the reads moves `count`, read before and after the slots:
//   that member is not taken.
// - before 6.2 a task's cached update is recorded before its add: a task
//   that ran during the reads may have had one in between, so only a task
//   that stayed off its CPU gives its cache; the others' caches become
//   known at their next sync. The mm's value is the atomic plus every one
//   of its tasks' caches, known when the last of them is.

#include "audit/reconstruction_core.h"

namespace rssaudit {

void ReconstructionCore::on_snapshot(const rss_event& e) {
  std::optional<CounterSnapshot> s =
      snapshots ? snapshots->take(static_cast<uint64_t>(e.aux))
                 : std::nullopt;
  if (!e.mm) {
    // The end of a pass: every task of the mms it read was read.
    for (const MmKey& key : pass_mms)
      if (MmState* st = live_mm(key.addr); st && st->key == key)
        complete_task_snapshot(*st, end_of(e));
    pass_mms.clear();
    ++snapshot_pass;
    return;
  }
  ++stats.snapshots;
  if (!s || s->head.mm != e.mm) {
    ++stats.snapshots_unread;
    return;
  }
  // Only an mm the audit holds: one that made no update since the capture
  // began is sampled from /proc alone.
  MmState* st = live_mm(e.mm);
  if (!st) return;
  if (s->head.flags & RSS_SNAP_PERCPU)
    apply_percpu_snapshot(*st, *s, e);
  else if (s->head.flags & RSS_SNAP_TASK_CACHE)
    apply_task_snapshot(*st, *s, e);
}

void ReconstructionCore::apply_percpu_snapshot(MmState& st,
                                               const CounterSnapshot& s,
                                               const rss_event& e) {
  const uint64_t time = start_of(e);
  st.next_snapshot_ns = time + kSnapshotRetryNs;
  if (s.head.flags & RSS_SNAP_TRUNCATED) {
    stats.snapshot_raced += kMembers;
    return;
  }
  uint8_t members = 0;
  std::array<std::optional<int64_t>, kMembers> values{}, counts{};
  for (int m = 0; m < kMembers; ++m) {
    if (st.synced[m]) continue;
    if (s.head.count[m] != s.head.count_after[m]) {
      ++stats.snapshot_raced;
      continue;
    }
    const int64_t count = s.head.count[m];
    st.count[m] = count;
    st.count_known[m] = true;
    st.unexplained_end[m] = 0;
    // Every CPU's slot known from this moment, 0 unless the snapshot
    // holds it: memory for the CPUs it names only, whatever the CPU count.
    st.slots.update_all([&](auto& slots) {
      SlotState& slot = slots[m];
      slot.value = 0;
      slot.known = true;
      slot.snapped = true;
      slot.after_ns = time;
    });
    for (const rss_snapshot_slot& slot : s.slots)  // the last of a CPU wins
      if (slot.member == m && slot.cpu < options.nr_cpus &&
          (slot.value != 0 || st.slots.get(slot.cpu)[m].value != 0))
        st.slots.at(slot.cpu)[m].value = slot.value;
    int64_t value = count;
    st.slots.for_each_allocated(
        [&](uint32_t, const auto& slots) { value += slots[m].value; });
    st.synced[m] = true;
    values[m] = value;
    counts[m] = count;
    members |= static_cast<uint8_t>(1u << m);
    ++stats.snapshot_members;
  }
  if (!members) return;
  Pending& p = push(Pending::Type::kBaseline, st, time);
  p.baseline_members = members;
  p.baseline = values;
  p.baseline_count = counts;
}

void ReconstructionCore::apply_task_snapshot(MmState& st,
                                             const CounterSnapshot& s,
                                             const rss_event& e) {
  st.task_cache = true;
  st.next_snapshot_ns = start_of(e) + kSnapshotRetryNs;
  if (st.snapshot_pass != snapshot_pass) {
    st.snapshot_pass = snapshot_pass;
    st.snapshot_tasks.clear();
    pass_mms.push_back(st.key);
  }
  st.snapshot_tasks.push_back(e.tid);
  TaskState& task = task_at(e.tid);
  task.mm = e.mm;
  if (s.head.flags & RSS_SNAP_TASK_QUIET) {
    if (task.cache_known &&
        !std::equal(task.cache.begin(), task.cache.end(), s.head.cache))
      ++stats.snapshot_mismatches;
    std::copy(s.head.cache, s.head.cache + kMembers, task.cache.begin());
    task.cache_known = true;
  }
  // The atomics: an add racing the read made them differ, and the next
  // atomic record gives them again.
  for (int m = 0; m < kMembers; ++m) {
    if (st.count_known[m]) continue;
    if (s.head.count[m] != s.head.count_after[m]) {
      ++stats.snapshot_raced;
      continue;
    }
    st.count[m] = s.head.count[m];
    st.count_known[m] = true;
  }
}

void ReconstructionCore::complete_task_snapshot(MmState& st, uint64_t time_ns) {
  uint8_t members = 0;
  std::array<std::optional<int64_t>, kMembers> values{}, counts{};
  bool waiting = false;
  for (int m = 0; m < kMembers; ++m) {
    if (st.synced[m]) continue;
    int64_t value = st.count[m];
    bool known = st.count_known[m];
    for (const uint32_t tid : st.snapshot_tasks) {
      const TaskState* task = find_task(tid);
      // Gone, or in another mm now: its cache was folded when it left.
      if (!task || task->mm != st.key.addr) continue;
      known &= task->cache_known;
      value += task->cache[m];
    }
    if (!known) {
      waiting = true;
      continue;
    }
    st.synced[m] = true;
    values[m] = value;
    counts[m] = st.count[m];
    members |= static_cast<uint8_t>(1u << m);
    ++stats.snapshot_members;
  }
  st.awaiting_caches = waiting;
  if (!members) return;
  Pending& p = push(Pending::Type::kBaseline, st, time_ns);
  p.baseline_members = members;
  p.baseline = values;
  p.baseline_count = counts;
}

void ReconstructionCore::check_snapped(SlotState& slot, Pending& p,
                                       int32_t slot_after) {
  if (!slot.snapped) return;
  slot.snapped = false;
  if (slot_after != slot.value) return;
  ++stats.snapshot_absorbed;
  flag_ambiguous(p.info);
}

std::vector<uint64_t> ReconstructionCore::snapshot_candidates(
    uint64_t now_ns, size_t max) const {
  std::vector<uint64_t> out;
  for (const auto& [addr, st] : mms) {
    if (out.size() >= max) break;
    // A loss since it was looked at voided it (catch_up()).
    const bool voided = stale(*st);
    if (!voided && st->next_snapshot_ns > now_ns) continue;
    bool all = !voided;
    for (int m = 0; m < kMembers; ++m) all &= st->synced[m];
    if (!all) out.push_back(addr);
  }
  return out;
}

}  // namespace rssaudit
