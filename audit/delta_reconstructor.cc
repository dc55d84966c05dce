#include "audit/delta_reconstructor.h"

#include <algorithm>
#include <limits>

namespace rssaudit {

DeltaReconstructor::DeltaReconstructor(const ReconstructorOptions& options)
    : core_(options), percpu_(core_), task_cache_(core_) {}

DeltaReconstructor::~DeltaReconstructor() = default;

void DeltaReconstructor::on_event(const rss_event& e, ReconstructorSink& sink) {
  ++core_.stats.events;
  if (e.flags & RSS_EVF_AFTER_LOSS) {
    on_loss();
    core_.drops.placed();
  }
  // Capped at the grace period: one odd record must not make every later
  // overlap scan walk the whole queue.
  if (e.span_ns > core_.max_span_ns)
    core_.max_span_ns = std::min<uint64_t>(e.span_ns, core_.options.grace_ns);
  const bool has_member =
      e.kind == RSS_EV_UPDATE || e.kind == RSS_EV_CACHE_SYNC;
  // Also what no kernel writes, so that the arithmetic on it cannot
  // overflow: a count past 2^40 pages (4 EiB), a task cache (an int) past
  // an int's range.
  constexpr int64_t kMaxPages = int64_t{1} << 40;
  const int64_t max_aux = e.kind == RSS_EV_CACHE_SYNC
                              ? std::numeric_limits<int32_t>::max()
                              : kMaxPages;
  if (e.cpu >= core_.options.nr_cpus || (has_member && e.member >= kMembers) ||
      (has_member && (e.aux > max_aux || e.aux < -max_aux))) {
    ++core_.stats.bad_records;
    return;
  }
  if (core_.mms.size() >= core_.options.max_mms && e.kind != RSS_EV_EXIT_MMAP &&
      !core_.mms.contains(e.mm)) {
    ++core_.stats.over_mm_limit;
    return;
  }
  switch (e.kind) {
    case RSS_EV_UPDATE:
      if (e.flags & (RSS_EVF_CACHED | RSS_EVF_ATOMIC))
        task_cache_.on_update(e);
      else
        percpu_.on_update(e);
      break;
    case RSS_EV_NEW_TASK: {
      // A reused tid is another task: its mm is the new one, its faults
      // not yet known.
      TaskState& task = core_.tasks[e.tid];
      task = TaskState{.mm = e.mm, .since_ns = e.start_ns, .cache_known = true};
      task.clone_seen = true;
      task.loss_epoch = core_.losses.now();
      const auto flags = static_cast<uint64_t>(e.aux);
      // Without CLONE_VM the child got a brand-new mm.
      MmState& st = core_.mm_state(e, !(flags & CLONE_VM), e.start_ns);
      if ((flags & CLONE_VM) && !(flags & CLONE_VFORK)) {
        core_.push_life(st, LifeKind::kSecondUser, e);
        st.second_user = true;
      }
      // Before 6.2 a snapshot's value adds up every task's cache: this
      // one's from its birth (0).
      if ((flags & CLONE_VM) && !st.snapshot_tasks.empty())
        st.snapshot_tasks.push_back(e.tid);
      break;
    }
    case RSS_EV_EXEC: {
      core_.mm_state(e, true, e.start_ns);
      // The old mm: from the task's NEW_TASK record or its updates (older
      // recordings carry it in aux). Unknown for a task from before the
      // capture that has not updated its own mm since.
      uint64_t old_mm = static_cast<uint64_t>(e.aux);
      TaskState& task = core_.task_at(e.tid);
      if (!old_mm) old_mm = task.mm;
      task.mm = e.mm;
      const auto old = core_.mms.find(old_mm);
      if (old_mm && old_mm != e.mm && old != core_.mms.end())
        core_.push_life(*old->second, LifeKind::kTaskExit, e);
      break;
    }
    case RSS_EV_EXIT:
      if (core_.last_task && core_.last_tid == e.tid) core_.last_task = nullptr;
      core_.forget_task(e.tid);
      core_.push_life(core_.mm_state(e, false, e.start_ns), LifeKind::kTaskExit, e);
      break;
    case RSS_EV_CACHE_SYNC:
      task_cache_.on_cache_sync(e);
      break;
    case RSS_EV_SNAPSHOT:
      core_.on_snapshot(e);
      break;
    case RSS_EV_EXIT_MMAP: {
      const auto it = core_.mms.find(e.mm);
      if (it == core_.mms.end()) break;  // never updated under the capture
      core_.push_life(*it->second, LifeKind::kMmExit, e);
      core_.retire(it, core_.end_of(e));
      break;
    }
    default:
      ++core_.stats.bad_records;
      return;
  }
  if (e.start_ns > core_.watermark_ns) core_.watermark_ns = e.start_ns;
  emit_ready(sink, false);
  while (core_.pending.size() > core_.options.max_pending) {
    ++core_.stats.forced_emits;
    emit_oldest(sink);
  }
}

void DeltaReconstructor::on_loss() { core_.lose(); }

bool DeltaReconstructor::end_unseen(const MmKey& key) {
  const auto it = core_.mms.find(key.addr);
  if (it == core_.mms.end() || !(it->second->key == key)) return false;
  Pending& p = core_.push(Pending::Type::kLife, *it->second, core_.watermark_ns);
  p.life = LifeEvent{LifeKind::kMmExit, 0, 0};
  core_.retire(it, core_.watermark_ns);
  ++core_.stats.ended_unseen;
  return true;
}

void DeltaReconstructor::on_drops(uint64_t total) {
  if (core_.drops.after_drain(total)) on_loss();
}

void DeltaReconstructor::advance(uint64_t now_ns, ReconstructorSink& sink) {
  if (now_ns > core_.last_advance_ns) core_.last_advance_ns = now_ns;
  if (now_ns > core_.watermark_ns) core_.watermark_ns = now_ns;
  emit_ready(sink, false);
}

void DeltaReconstructor::flush(ReconstructorSink& sink) {
  emit_ready(sink, true);
}

void DeltaReconstructor::emit_ready(ReconstructorSink& sink, bool all) {
  while (!core_.pending.empty()) {
    if (!all && core_.pending.front().end_ns + core_.options.grace_ns >= core_.watermark_ns)
      break;
    emit_oldest(sink);
  }
}

void DeltaReconstructor::emit_oldest(ReconstructorSink& sink) {
  Pending& p = core_.pending.front();
  emit(p, sink);
  p.dead.reset();
  core_.pending.pop_front();
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
          ++core_.stats.exact;
          break;
        case Fidelity::kAmbiguous:
          ++core_.stats.ambiguous;
          break;
        case Fidelity::kNoBaseline:
          ++core_.stats.no_baseline;
          break;
        case Fidelity::kInconsistent:
          ++core_.stats.inconsistent;
          break;
        case Fidelity::kCountAhead:
          ++core_.stats.count_ahead;
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