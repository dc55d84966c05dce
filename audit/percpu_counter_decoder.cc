// Since Linux 6.2 the counters are percpu_counters: each update record
// carries its CPU's slot and `count` right after the add (bpf/rss_stat.bpf.c).
// A non-zero slot gives the delta from the slot before it; a slot back at
// zero folded into `count` or returned to zero, which `count`'s move says,
// and two such records on different CPUs whose windows overlap are flagged
// (docs/kernel.md).
#include "audit/percpu_counter_decoder.h"

#include <algorithm>
#include <cstdlib>

namespace rssaudit {

void PercpuCounterDecoder::on_update(const rss_event& e) {
  ++core_.stats.updates;
  if (!core_.depth_known(e)) ++core_.stats.depth_unknown;
  const uint64_t start = core_.start_of(e), end = core_.end_of(e);
  MmState& st = core_.update_mm(e);
  const int m = e.member;
  SlotState& slot = st.slots.at(e.cpu)[m];

  Pending& p = core_.push(Pending::Type::kUpdate, st, end);
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
  uint64_t add_after_seq = core_.locked_add(e) ? slot.after_seq : 0;
  if (e.flags & RSS_EVF_OWNER) {
    const ReconstructionCore::OwnerUpdate owner = core_.owner_update(e, p);
    task_since = owner.since;
    add_after_seq = std::max(add_after_seq, owner.since_seq);
  } else if (core_.unlocked_add(e)) {
    // As for an owner's task above, for the one other task an mm keeps.
    task_since = st.other_tid == e.tid ? st.other_since_ns : 0;
    st.other_tid = e.tid;
    st.other_since_ns = std::max(task_since, core_.earliest_of(e));
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
    if (moved != 0 && std::llabs(moved) < core_.options.batch) {
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
      ++core_.stats.late_overlaps;
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
      // An emitted fold that may hold ours went out as exact: had it been
      // held back still, mark_overlaps() would flag it.
      if (st.emitted_fold_end[m] >= absorbed_since &&
          st.emitted_fold_cpu[m] != e.cpu && st.emitted_fold_task[m] != e.tid &&
          !emitted_before) {
        ++core_.stats.late_overlaps;
        p.info.fidelity = Fidelity::kAmbiguous;
      }
    }
    mark_overlaps(p, since, absorbed_since, add_after_seq);
    if (late && e.aux == st.count[m]) st.unexplained_end[m] = 0;
  }
  if (e.aux != st.count[m] && !st.unexplained_end[m]) {
    // The capture times the first record of a CPU that shows a `count` its
    // previous one did not; were this one untimed, its earliest moment
    // only widens the late fold's window.
    st.unexplained_end[m] = e.start_ns ? end : core_.earliest_of(e);
    st.unexplained_cpu[m] = e.cpu;
  }
  if (e.slot == 0 && e.start_ns > core_.fold_start_watermark_ns)
    core_.fold_start_watermark_ns = e.start_ns;
  if (slot.suspect) {
    slot.suspect = false;
    flag_ambiguous(p.info);
  }
  core_.check_snapped(slot, p, e.slot);
  if (core_.unlocked_add(e)) on_unlocked_add(p, st, task_since);
  slot.value = e.slot;
  slot.known = true;
  slot.after_ns = core_.earliest_of(e);
  slot.after_seq = p.seq + 1;
  p.update.delta = static_cast<int32_t>(delta);
}

void PercpuCounterDecoder::on_unlocked_add(Pending& p, MmState& st,
                                         uint64_t since_ns) {
  ++core_.stats.unlocked;
  const int m = p.update.member;
  flag_ambiguous(p.info);
  // Newest first (p is the newest); records are in reservation order, as
  // in mark_overlaps(). since_ns 0 (the task's first record of the mm)
  // bounds nothing: every held-back update of the counter is flagged.
  for (size_t i = core_.pending.size(); i-- > 0;) {
    Pending& q = core_.pending.at(i);
    if (q.end_ns + core_.max_span_ns + ReconstructionCore::kLateSlackNs < since_ns) break;
    // The task's own earlier records came before this add.
    if (q.type == Pending::Type::kUpdate && q.mm == &st &&
        q.update.member == m && q.update.task != p.update.task)
      flag_ambiguous(q.info);
  }
  if (since_ns && st.emitted_update_task[m] != p.update.task &&
      st.emitted_update_end[m] + ReconstructionCore::kLateSlackNs >= since_ns)
    ++core_.stats.late_overlaps;
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
void PercpuCounterDecoder::mark_overlaps(Pending& fold, uint64_t since_ns,
                                       uint64_t other_task_since_ns,
                                       uint64_t add_after_seq) {
  for (uint64_t next = fold.prev_fold; next && core_.pending.holds(next - 1);) {
    Pending& p = core_.pending.by_seq(next - 1);
    next = p.prev_fold;
    // Records are in reservation order and each spans at most max_span_ns,
    // so every record before one that ended max_span_ns before `since`
    // ended before it too.
    if (p.end_ns + core_.max_span_ns + ReconstructionCore::kLateSlackNs < other_task_since_ns) break;
    if (p.update.cpu == fold.update.cpu || read_before_add(p, add_after_seq))
      continue;
    // Another task's fold may have landed before its record started by up
    // to an interrupt's length (the add re-enables interrupts before the
    // tracepoint): near misses between tasks are flagged too. One task's
    // records cannot overlap its own.
    const bool same_task = p.update.task == fold.update.task;
    if (same_task ? p.end_ns < since_ns
                  : p.end_ns + ReconstructionCore::kLateSlackNs < other_task_since_ns)
      continue;
    // p reserved before fold, so p started before fold ended: overlap.
    flag_ambiguous(p.info);
    flag_ambiguous(fold.info);
  }
}

}  // namespace rssaudit
