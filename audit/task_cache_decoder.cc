// The records of a kernel before Linux 6.2 (bpf/task_cache.bpf.c), whose
// counters are atomics fed by per-task caches. A cached update carries its
// own delta. An atomic add carries the atomic after it, so its delta is
// that minus the atomic of the counter's previous record in the sequence,
// which is the add before it unless another add overtook it between its
// add and its record: the record says so (rss_event.h), and then it, and
// what it may have upset, are flagged. A sync moves pages from a task's
// cache into the atomic and leaves the exact value as it was: the sink
// hears of it as a fold (kCacheSync of one member, with the new atomic).
#include <cstdlib>
#include <limits>

#include "audit/task_cache_decoder.h"

namespace rssaudit {

void TaskCacheDecoder::on_cache_sync(const rss_event& e) {
  const int m = e.member;
  const auto bit = static_cast<uint8_t>(1u << m);
  // exit_mm() syncs again after the task's exit record: nothing is left
  // to fold then, and the task must not come back.
  if (!e.aux && !core_.find_task(e.tid)) return;
  TaskState& task = core_.task_at(e.tid);
  if (m == 0) ++core_.stats.syncs;
  if (task.cache_known && task.cache[m] != e.aux) {
    ++core_.stats.sync_mismatches;
    push_cache_correction(e, core_.mm_state(e, false, core_.start_of(e)), m,
                          e.aux - task.cache[m]);
  }
  task.cache[m] = static_cast<int32_t>(e.aux);
  task.sync_pages[m] = static_cast<int32_t>(e.aux);
  if (e.aux && !(task.syncing & bit)) {
    task.syncing |= bit;
    task.syncing_mm = e.mm;
    ++core_.mm_state(e, false, core_.start_of(e)).folds_announced[m];
  }
  // Four records, in member order: after the last the whole cache is known,
  // which may complete a snapshot of its mm.
  if (m == kMembers - 1) {
    task.cache_known = true;
    if (MmState* mm = core_.live_mm(e.mm); mm && mm->awaiting_caches)
      core_.complete_task_snapshot(*mm, core_.end_of(e));
  }
}

void TaskCacheDecoder::on_update(const rss_event& e) {
  const int m = e.member;
  const bool owner = e.flags & RSS_EVF_OWNER;
  MmState& st = core_.update_mm(e);
  st.task_cache = true;
  const uint64_t start = core_.start_of(e), end = core_.end_of(e);
  // The atomic's move since the counter's previous record in the sequence.
  // Summed over records it telescopes to the atomic's own move even where
  // adds took their places in the sequence out of order, so each record
  // keeps its move, and reordered ones are flagged: the group's sum is
  // right, its split unknown.
  int64_t moved = 0;
  bool ambiguous = st.count_known[m] && st.suspect_next[m];
  if (st.count_known[m]) moved = e.aux - st.count[m];
  // The owner's own atomic add: a fold of its cache if it announced one,
  // or if the cache it still held at the add (its record says) is what
  // moved the atomic: a fold whose announcement went unseen (its program
  // skipped: counted by the kernel as a miss). An add the cache's amount
  // by chance, THP's 512 pages say, would be taken for a fold.
  TaskState* folding = nullptr;
  int32_t fold_pages = 0;
  if ((e.flags & RSS_EVF_ATOMIC) && owner) {
    const auto cache_now = static_cast<int16_t>(e.faults);
    TaskState* known = core_.find_task(e.tid);
    if (known && (known->syncing >> m & 1)) {
      folding = known;
      fold_pages = folding->sync_pages[m];
      if (cache_now != fold_pages) {
        // The kernel folds what its cache holds at the add.
        ++core_.stats.sync_mismatches;
        push_cache_correction(e, st, m, int64_t{cache_now} - fold_pages);
        fold_pages = cache_now;
        ambiguous = true;
      }
      folding->syncing &= static_cast<uint8_t>(~(1u << m));
      --st.folds_announced[m];
    } else if (cache_now != 0 && st.count_known[m] && moved == cache_now &&
               !ambiguous && e.slot == 0) {
      ++core_.stats.unannounced_folds;
      folding = &core_.task_at(e.tid);
      fold_pages = cache_now;
      ambiguous = true;
    } else if (known && known->cache_known && std::abs(cache_now) < 0x7fff &&
               known->cache[m] != cache_now) {
      // A cached update or a fold went unseen: the cache is the kernel's.
      ++core_.stats.sync_mismatches;
      push_cache_correction(e, st, m, int64_t{cache_now} - known->cache[m]);
      known->cache[m] = cache_now;
    }
  }
  // Another task announced a fold of this counter whose record has not
  // come: its add may be in this count already (sync_mm_rss() runs
  // preemptible at fault entry, exit and exec).
  if ((e.flags & RSS_EVF_ATOMIC) && st.folds_announced[m] > 0) ambiguous = true;

  if (folding) {
    // The fold of the task's cache: the atomic moves by the cached pages,
    // the exact value does not. Whatever else moved it since the previous
    // record is an update of the group, flagged.
    TaskState& task = *folding;
    const int64_t rest = moved - fold_pages;
    if (st.count_known[m] && rest != 0 && e.slot == 0 && !ambiguous)
      ++core_.stats.sync_mismatches;
    task.cache[m] = 0;
    st.suspect_next[m] = false;
    st.count[m] = e.aux;
    st.count_known[m] = true;
    Pending& p = core_.push(Pending::Type::kCacheFold, st, end);
    p.chained = true;
    p.life =
        LifeEvent{LifeKind::kCacheSync, e.tid, e.cpu, static_cast<uint32_t>(m)};
    p.update.time_ns = start;
    p.update.task = e.tid;
    p.update.member = static_cast<uint8_t>(m);
    p.info.kernel_count = e.aux;
    p.info.task_cache = true;
    if (ambiguous || e.slot != 0) flag_ambiguous(p.info);
    if (e.slot != 0) on_overtaken_add(p, st);
    if (st.count_known[m] && rest != 0) push_correction(e, st, rest);
    return;
  }

  ++core_.stats.updates;
  Pending& p = core_.push(Pending::Type::kUpdate, st, end);
  p.update.time_ns = start;
  p.update.task = e.tid;
  p.update.cpu = e.cpu;
  p.update.member = static_cast<uint8_t>(m);
  // What the kernel cached is what the per_task model caches: the flag
  // the model reads as "the owner's fault path".
  p.update.flags = (owner ? kUpdateByOwner : 0) |
                   ((e.flags & RSS_EVF_CACHED) ? kUpdateInFault : 0);
  p.info.end_ns = end;
  p.info.tgid = e.tgid;
  p.info.task_cache = true;
  // (An atomic record's fault field holds the cache, not faults.)
  if (owner && (e.flags & RSS_EVF_CACHED)) core_.owner_update(e, p);
  if (e.flags & RSS_EVF_CACHED) {
    p.update.delta = e.slot;
    if (owner && core_.last_task->cache_known) {
      // The kernel's cache is an int: a sum past it is no kernel's, and
      // the cache is then not known.
      const int64_t sum = int64_t{core_.last_task->cache[m]} + e.slot;
      if (sum == static_cast<int32_t>(sum))
        core_.last_task->cache[m] = static_cast<int32_t>(sum);
      else
        core_.last_task->cache_known = false;
    }
    // The atomic is unchanged; the stream's own chain of it, once known,
    // is in sequence order with the other records.
    p.info.kernel_count = st.count_known[m] ? st.count[m] : e.aux;
    return;
  }
  p.chained = true;
  p.info.kernel_count = e.aux;
  if (!st.count_known[m]) {
    // An mm from before the capture: the atomic before this add is unknown.
    p.info.fidelity = Fidelity::kNoBaseline;
    st.synced[m] = false;
  } else if (moved > std::numeric_limits<int32_t>::max() ||
             moved < std::numeric_limits<int32_t>::min()) {
    // No update moves a counter by 2^31 pages: the value is lost.
    p.info.fidelity = Fidelity::kNoBaseline;
    st.synced[m] = false;
  } else {
    p.update.delta = static_cast<int32_t>(moved);
    // Every add moves the atomic: no move means an overtaken add's.
    if (moved == 0 || ambiguous) p.info.fidelity = Fidelity::kAmbiguous;
  }
  st.suspect_next[m] = false;
  st.count[m] = e.aux;
  st.count_known[m] = true;
  if (e.slot != 0) on_overtaken_add(p, st);
}

// The task's cache held `delta` pages more than the stream showed (a cached
// update or a fold went unseen; the kernel's own figure says so): given to
// the task's cache as an update of its own, flagged, so that the per_task
// model caches what the kernel caches and the exact value counts the pages.
void TaskCacheDecoder::push_cache_correction(const rss_event& e, MmState& st,
                                               int m, int64_t delta) {
  if (delta == 0) return;
  ++core_.stats.updates;
  Pending& p = core_.push(Pending::Type::kUpdate, st, core_.end_of(e));
  p.update.time_ns = core_.start_of(e);
  p.update.task = e.tid;
  p.update.cpu = e.cpu;
  p.update.member = static_cast<uint8_t>(m);
  p.update.flags = kUpdateByOwner | kUpdateInFault;
  p.update.delta = static_cast<int32_t>(delta);  // a cache is an int
  p.info.end_ns = core_.end_of(e);
  p.info.tgid = e.tgid;
  p.info.task_cache = true;
  p.info.kernel_count = st.count_known[m] ? st.count[m] : e.aux;
  p.info.fidelity = Fidelity::kAmbiguous;
}

// An overtaken or overtaking fold moved the atomic by `rest` pages more than
// the cache it folded: those are other adds' (their records took their
// deltas from counts that held the fold), given back as an update of the
// group, flagged, so that the exact value stays the sum of the stream.
void TaskCacheDecoder::push_correction(const rss_event& e, MmState& st,
                                         int64_t rest) {
  ++core_.stats.updates;
  Pending& p = core_.push(Pending::Type::kUpdate, st, core_.end_of(e));
  p.update.time_ns = core_.start_of(e);
  p.update.task = e.tid;
  p.update.cpu = e.cpu;
  p.update.member = e.member;
  p.update.flags = kUpdateByOwner;
  p.info.end_ns = core_.end_of(e);
  p.info.tgid = e.tgid;
  p.info.task_cache = true;
  p.info.kernel_count = e.aux;
  p.chained = true;
  if (rest > std::numeric_limits<int32_t>::max() ||
      rest < std::numeric_limits<int32_t>::min()) {
    p.info.fidelity = Fidelity::kNoBaseline;  // the value is lost
    st.synced[e.member] = false;
    return;
  }
  p.update.delta = static_cast<int32_t>(rest);
  p.info.fidelity = Fidelity::kAmbiguous;
}

// `p`'s add was overtaken: another add of its counter came between its add
// and its record's place in the sequence. That add's record may be any
// held-back atomic update or fold of the counter by another task since
// `p`'s add, which came at most grace_ns before its record (longer, and it
// is counted late): they are flagged, and so is the counter's next one,
// whose predecessor in the atomic is then not known.
void TaskCacheDecoder::on_overtaken_add(Pending& p, MmState& st) {
  ++core_.stats.reordered;
  const int m = p.update.member;
  flag_ambiguous(p.info);
  const uint64_t start = p.update.time_ns;
  const uint64_t since =
      start > core_.options.grace_ns ? start - core_.options.grace_ns : 0;
  for (size_t i = core_.pending.size(); i-- > 0;) {
    Pending& q = core_.pending.at(i);
    if (q.end_ns + core_.max_span_ns + ReconstructionCore::kLateSlackNs < since) break;
    // The task's own earlier adds came before this one.
    if (q.chained && q.mm == &st && q.update.member == m &&
        q.update.task != p.update.task)
      flag_ambiguous(q.info);
  }
  if (st.emitted_update_end[m] + ReconstructionCore::kLateSlackNs >= since) ++core_.stats.late_overlaps;
  st.suspect_next[m] = true;
}

}  // namespace rssaudit
