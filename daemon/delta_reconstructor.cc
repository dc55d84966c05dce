#include "daemon/delta_reconstructor.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace rssaudit {
namespace {

constexpr uint64_t kCloneVm = 0x00000100;     // include/uapi/linux/sched.h
constexpr uint64_t kCloneVfork = 0x00004000;  // include/uapi/linux/sched.h

uint64_t end_ns(const rss_event& e) { return e.start_ns + e.span_ns; }

}  // namespace

DeltaReconstructor::DeltaReconstructor(const ReconstructorOptions& options)
    : options_(options), pending_(1024) {}

DeltaReconstructor::~DeltaReconstructor() = default;

DeltaReconstructor::Pending& DeltaReconstructor::push(Pending::Type type,
                                                      MmState& mm,
                                                      uint64_t end_ns) {
  if (size_ == pending_.size()) {
    std::vector<Pending> bigger(pending_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(at(i));
    pending_ = std::move(bigger);
    head_ = 0;
  }
  Pending& p = at(size_++);
  p.type = type;
  p.fold = false;
  p.mm = &mm;
  p.end_ns = end_ns;
  p.info = UpdateInfo{};
  return p;
}

DeltaReconstructor::MmState& DeltaReconstructor::mm_state(uint64_t addr,
                                                          bool from_zero,
                                                          uint64_t time_ns) {
  std::unique_ptr<MmState>& slot = mms_[addr];
  if (slot) return *slot;
  slot = std::make_unique<MmState>();
  MmState& st = *slot;
  st.key = MmKey{addr, next_generation_++};
  st.from_zero = from_zero;
  st.count_known.fill(from_zero);
  st.slots.reset(new SlotState[size_t{options_.nr_cpus} * kMembers]);
  for (size_t i = 0; i < size_t{options_.nr_cpus} * kMembers; ++i)
    st.slots[i].known = from_zero;
  ++stats_.mms_created;
  push(Pending::Type::kCreated, st, time_ns);
  return st;
}

void DeltaReconstructor::push_life(MmState& mm, LifeKind kind,
                                   const rss_event& e) {
  Pending& p = push(Pending::Type::kLife, mm, end_ns(e));
  p.life = LifeEvent{kind, e.tid, e.cpu};
}

void DeltaReconstructor::on_event(const rss_event& e, ReconstructorSink& sink) {
  ++stats_.events;
  // Capped at the grace period: one odd record must not make every later
  // overlap scan walk the whole queue.
  if (e.span_ns > max_span_ns_)
    max_span_ns_ = std::min<uint64_t>(e.span_ns, options_.grace_ns);
  if (e.cpu >= options_.nr_cpus) {
    ++stats_.bad_records;
    return;
  }
  switch (e.kind) {
    case RSS_EV_UPDATE:
      if (e.member >= kMembers) {
        ++stats_.bad_records;
        return;
      }
      on_update(e);
      break;
    case RSS_EV_NEW_TASK: {
      tasks_.erase(e.tid);  // a reused tid: another task
      const auto flags = static_cast<uint64_t>(e.aux);
      // Without CLONE_VM the child got a brand-new mm.
      MmState& st = mm_state(e.mm, !(flags & kCloneVm), e.start_ns);
      if ((flags & kCloneVm) && !(flags & kCloneVfork))
        push_life(st, LifeKind::kSecondUser, e);
      break;
    }
    case RSS_EV_EXEC: {
      mm_state(e.mm, true, e.start_ns);
      uint64_t old_mm = static_cast<uint64_t>(e.aux);
      if (const auto task = tasks_.find(e.tid); task != tasks_.end()) {
        if (!old_mm) old_mm = task->second.mm;
        task->second.mm = e.mm;
      }
      const auto old = mms_.find(old_mm);
      if (old_mm && old_mm != e.mm && old != mms_.end())
        push_life(*old->second, LifeKind::kTaskExit, e);
      break;
    }
    case RSS_EV_EXIT:
      tasks_.erase(e.tid);
      push_life(mm_state(e.mm, false, e.start_ns), LifeKind::kTaskExit, e);
      break;
    case RSS_EV_EXIT_MMAP: {
      const auto it = mms_.find(e.mm);
      if (it == mms_.end()) break;  // never updated under the capture
      push_life(*it->second, LifeKind::kMmExit, e);
      Pending& p = push(Pending::Type::kDestroyed, *it->second, end_ns(e));
      p.dead = std::move(it->second);
      mms_.erase(it);
      ++stats_.mms_destroyed;
      break;
    }
    default:
      ++stats_.bad_records;
      return;
  }
  if (e.start_ns > watermark_ns_) watermark_ns_ = e.start_ns;
  emit_ready(sink, false);
}

void DeltaReconstructor::on_update(const rss_event& e) {
  ++stats_.updates;
  MmState& st = mm_state(e.mm, e.flags & RSS_EVF_CREATING, e.start_ns);
  const int m = e.member;
  SlotState& slot = st.slots[size_t{e.cpu} * kMembers + m];

  Pending& p = push(Pending::Type::kUpdate, st, end_ns(e));
  p.update.time_ns = e.start_ns;
  p.update.task = e.tid;
  p.update.cpu = e.cpu;
  p.update.member = static_cast<uint8_t>(m);
  const bool in_fault = e.flags & RSS_EVF_IN_FAULT;
  p.update.flags = ((e.flags & RSS_EVF_OWNER) ? kUpdateByOwner : 0) |
                   (in_fault ? kUpdateInFault : 0);
  p.info.end_ns = end_ns(e);
  p.info.kernel_count = e.aux;
  p.info.kernel_slot = e.slot;
  p.info.tgid = e.tgid;
  if (e.flags & RSS_EVF_OWNER) {
    const auto [task, first] = tasks_.try_emplace(e.tid);
    // The fault total wraps at 2^16: the difference is right below that.
    p.info.faults = first
                        ? uint16_t{in_fault}
                        : static_cast<uint16_t>(e.faults - task->second.faults);
    task->second = TaskState{e.faults, e.mm};
  }

  int64_t delta = 0;
  if (!slot.known || !st.count_known[m]) {
    // Joined mid-life: this event only sets the baseline.
    p.info.fidelity = Fidelity::kNoBaseline;
    if (!st.count_known[m] || e.slot == 0) st.count[m] = e.aux;
    st.count_known[m] = true;
  } else if (e.slot != 0) {
    // No fold (a fold leaves the slot at zero): the slot moved by delta.
    delta = int64_t{e.slot} - slot.value;
  } else {
    // Back to zero: `count` moved by slot_before + delta (a fold, at least
    // batch away from zero) or not at all.
    p.fold = true;
    int64_t moved = e.aux - st.count[m];
    if (moved != 0 && std::llabs(moved) < options_.batch) {
      p.info.fidelity = Fidelity::kInconsistent;
      moved = 0;  // the rest stays unexplained for the next fold
    }
    st.count[m] += moved;
    delta = moved - slot.value;
    if (st.emitted_fold_end[m] >= e.start_ns &&
        st.emitted_fold_cpu[m] != e.cpu) {
      ++stats_.late_overlaps;
      p.info.fidelity = Fidelity::kAmbiguous;
    }
    const bool late = st.unexplained_end[m] && st.unexplained_cpu[m] != e.cpu;
    mark_overlaps(p, late
                         ? std::min<uint64_t>(st.unexplained_end[m], e.start_ns)
                         : e.start_ns);
    if (late && e.aux == st.count[m]) st.unexplained_end[m] = 0;
  }
  if (e.aux != st.count[m] && !st.unexplained_end[m]) {
    st.unexplained_end[m] = end_ns(e);
    st.unexplained_cpu[m] = e.cpu;
  }
  slot.value = e.slot;
  slot.known = true;
  p.update.delta = static_cast<int32_t>(delta);
}

// Flags `fold` and every held-back fold of the same counter on another CPU
// whose window overlaps its own, [since_ns, end]: which of them moved
// `count` first is unknown. Stops at records that ended more than grace_ns
// before: older ones cannot overlap (they ended before their successors
// reserved).
void DeltaReconstructor::mark_overlaps(Pending& fold, uint64_t since_ns) {
  for (size_t i = size_ - 1; i-- > 0;) {
    Pending& p = at(i);
    // Records are in reservation order and each spans at most max_span_ns_,
    // so every record before one that ended max_span_ns_ before `since`
    // ended before it too.
    if (p.end_ns + max_span_ns_ + kLateSlackNs < since_ns) break;
    if (p.type != Pending::Type::kUpdate || !p.fold || p.mm != fold.mm ||
        p.update.member != fold.update.member ||
        p.update.cpu == fold.update.cpu)
      continue;
    // Another task's fold may have landed before its record started by up
    // to an interrupt's length (the add re-enables interrupts before the
    // tracepoint): near misses between tasks are flagged too. One task's
    // records cannot overlap its own.
    const uint64_t slack = p.update.task == fold.update.task ? 0 : kLateSlackNs;
    if (p.end_ns + slack < since_ns) continue;
    // p reserved before fold, so p started before fold ended: overlap.
    if (p.info.fidelity != Fidelity::kNoBaseline)
      p.info.fidelity = Fidelity::kAmbiguous;
    if (fold.info.fidelity != Fidelity::kNoBaseline)
      fold.info.fidelity = Fidelity::kAmbiguous;
  }
}

void DeltaReconstructor::advance(uint64_t now_ns, ReconstructorSink& sink) {
  if (now_ns > watermark_ns_) watermark_ns_ = now_ns;
  emit_ready(sink, false);
}

void DeltaReconstructor::flush(ReconstructorSink& sink) {
  emit_ready(sink, true);
}

void DeltaReconstructor::emit_ready(ReconstructorSink& sink, bool all) {
  while (size_ > 0) {
    Pending& p = pending_[head_];
    if (!all && p.end_ns + options_.grace_ns >= watermark_ns_) break;
    emit(p, sink);
    p.dead.reset();
    head_ = (head_ + 1) & (pending_.size() - 1);
    --size_;
  }
}

void DeltaReconstructor::emit(Pending& p, ReconstructorSink& sink) {
  MmState& st = *p.mm;
  switch (p.type) {
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
      }
      if (p.fold) {
        const int m = p.update.member;
        st.emitted_fold_end[m] = p.end_ns;
        st.emitted_fold_cpu[m] = p.update.cpu;
      }
      if (p.update.by_owner()) {
        // The task's faults since its last update came before this one.
        const LifeEvent fault{LifeKind::kFault, p.update.task, p.update.cpu};
        for (uint16_t i = 0; i < p.info.faults; ++i)
          sink.on_life(st.key, fault);
      }
      sink.on_update(st.key, p.update, p.info);
      break;
    }
    case Pending::Type::kLife:
      sink.on_life(st.key, p.life);
      break;
    case Pending::Type::kDestroyed:
      sink.on_mm_destroyed(st.key);
      break;
  }
}

}  // namespace rssaudit
