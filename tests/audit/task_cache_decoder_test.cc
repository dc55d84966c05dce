// The reconstruction of a kernel before 6.2 (audit/task_cache_decoder.cc):
// records as bpf/task_cache.bpf.c writes them, fed through the
// reconstructor into the audit pipeline.
#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

#include "audit/audit_pipeline.h"
#include "audit/delta_reconstructor.h"
#include "core/schemes/topology.h"

namespace rssaudit {
namespace {

constexpr uint64_t kMm = 0xffff888012345000;
constexpr uint32_t kParent = 100, kChild = 200;

// The updates the pipeline was given, beside the pipeline itself.
class Tap : public ReconstructorSink {
 public:
  explicit Tap(AuditPipeline& p) : pipeline(p) {}
  void on_mm_created(const MmKey& mm, bool from_zero) override {
    key = mm;
    pipeline.on_mm_created(mm, from_zero);
  }
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    updates.push_back(u);
    infos.push_back(info);
    pipeline.on_update(mm, u, info);
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    fault_events += e.kind == LifeKind::kFault;
    pipeline.on_life(mm, e);
  }
  void on_mm_destroyed(const MmKey& mm) override {
    pipeline.on_mm_destroyed(mm);
  }
  void on_cache_fold(const MmKey& mm, const LifeEvent& sync,
                     const UpdateInfo& info) override {
    folds.push_back(sync);
    fold_infos.push_back(info);
    pipeline.on_cache_fold(mm, sync, info);
  }
  void on_baseline(const MmKey& mm, int member, std::optional<int64_t> pages,
                   std::optional<int64_t> kernel_count) override {
    pipeline.on_baseline(mm, member, pages, kernel_count);
  }
  AuditPipeline& pipeline;
  MmKey key;
  std::vector<Update> updates;
  std::vector<UpdateInfo> infos;
  size_t fault_events = 0;
  std::vector<LifeEvent> folds;
  std::vector<UpdateInfo> fold_infos;
};

class TaskCacheUpdate : public ::testing::Test {
 protected:
  TaskCacheUpdate() : pipeline_(Topology::for_cpus(2)), tap_(pipeline_) {}

  rss_event record(uint8_t kind, uint8_t flags, int64_t aux, int32_t slot,
                   uint32_t tid = kChild) {
    rss_event e{};
    e.mm = kMm;
    e.kind = kind;
    e.flags = flags;
    e.member = 1;  // anon
    e.aux = aux;
    e.slot = slot;
    e.tid = tid;
    e.tgid = tid;
    e.cpu = 0;
    e.start_ns = (flags & RSS_EVF_CACHED) ? 0 : (now_ns_ += 1000);
    // An atomic record carries the owner's cache instead (0: empty).
    e.faults = (flags & RSS_EVF_ATOMIC) ? 0 : faults_;
    return e;
  }
  void feed(const rss_event& e) { r_.on_event(e, tap_); }
  // fork(): the child task and its brand-new mm.
  void fork_child() {
    rss_event e = record(RSS_EV_NEW_TASK, 0, SIGCHLD, 0);
    feed(e);
  }
  // The child's fault: its cache takes one anon page; the atomic is `atomic`.
  void cached_fault(int64_t atomic) {
    ++faults_;
    feed(record(RSS_EV_UPDATE,
                RSS_EVF_OWNER | RSS_EVF_CACHED | RSS_EVF_IN_FAULT, atomic, 1));
  }
  // sync_mm_rss()'s announcement: one record per member.
  void announce_sync(int32_t anon) {
    for (uint8_t m = 0; m < kMembers; ++m) {
      rss_event e =
          record(RSS_EV_CACHE_SYNC, RSS_EVF_OWNER, m == 1 ? anon : 0, 66);
      e.member = m;
      feed(e);
    }
  }
  // A sync: its announcement, then the fold of the anon cache.
  void sync(int32_t anon, int64_t atomic_after, int32_t moved = 0) {
    announce_sync(anon);
    rss_event fold = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC,
                            atomic_after, moved);
    fold.faults = static_cast<uint16_t>(anon);  // the cache it folds
    feed(fold);
  }
  void atomic_add(int64_t after, int32_t moved = 0, uint32_t tid = kParent) {
    feed(record(RSS_EV_UPDATE, RSS_EVF_ATOMIC | RSS_EVF_CREATING, after, moved,
                tid));
  }
  MmSummary summary() {
    for (const MmSummary& s : pipeline_.summaries())
      if (s.key == tap_.key) return s;
    ADD_FAILURE() << "no summary of the mm";
    return {};
  }

  DeltaReconstructor r_{ReconstructorOptions{.nr_cpus = 2, .batch = 32}};
  AuditPipeline pipeline_;
  Tap tap_;
  uint64_t now_ns_ = 1'000'000;
  uint16_t faults_ = 0;
};

TEST_F(TaskCacheUpdate, CachedFaultsAreExactAndHiddenUntilTheSyncShowsThem) {
  fork_child();
  for (int i = 0; i < 10; ++i) cached_fault(0);
  r_.flush(tap_);
  ASSERT_EQ(tap_.updates.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(tap_.updates[i].delta, 1);
    EXPECT_TRUE(tap_.updates[i].by_owner() && tap_.updates[i].in_fault());
    EXPECT_EQ(tap_.infos[i].fidelity, Fidelity::kExact);
    EXPECT_EQ(tap_.infos[i].kernel_count, 0);  // what every reader sees
    EXPECT_TRUE(tap_.infos[i].task_cache);
  }
  // A cached update leaves the atomic as it was: nothing to check yet.
  EXPECT_EQ(pipeline_.fidelity_checked(), 0u);
  // Its faults are noted, but the model infers no sync from them: the
  // stream carries the kernel's own.
  EXPECT_EQ(tap_.infos[1].faults, 1);
  EXPECT_EQ(tap_.fault_events, 0u);
  MmSummary s = summary();
  EXPECT_EQ(s.exact_rss, 10);
  ASSERT_TRUE(s.known_drift());
  EXPECT_EQ(*s.known_drift(), -10);  // the ten pages the kernel hides

  sync(10, 10);
  r_.flush(tap_);
  EXPECT_EQ(tap_.updates.size(), 10u);  // a sync is no update
  ASSERT_EQ(tap_.folds.size(), 1u);
  EXPECT_EQ(tap_.folds[0].kind, LifeKind::kCacheSync);
  EXPECT_EQ(tap_.folds[0].task, kChild);
  EXPECT_EQ(tap_.folds[0].count, uint32_t{kAnonPages});
  EXPECT_EQ(tap_.fold_infos[0].kernel_count, 10);
  EXPECT_EQ(tap_.fold_infos[0].fidelity, Fidelity::kExact);
  EXPECT_EQ(r_.stats().syncs, 1u);
  EXPECT_EQ(r_.stats().sync_mismatches, 0u);
  // The per_task model, not upstream, is held to the kernel's atomic at
  // the fold: it cached the ten pages and folded them as the kernel did.
  EXPECT_EQ(pipeline_.fidelity_checked(), 1u);
  EXPECT_EQ(pipeline_.fidelity_matched(), 1u);
  s = summary();
  EXPECT_EQ(s.exact_rss, 10);
  EXPECT_EQ(*s.known_drift(), 0);
}

// A cached update the stream did not see: the sync's announcement holds
// the kernel's cache. The missing page is given to the task's cache as a
// flagged update of its own, so the model folds what the kernel folds and
// the exact value counts it.
TEST_F(TaskCacheUpdate, ASyncOfMoreThanTheStreamCachedCorrectsTheModelFlagged) {
  fork_child();
  for (int i = 0; i < 3; ++i) cached_fault(0);
  sync(4, 4);
  r_.flush(tap_);
  EXPECT_EQ(r_.stats().sync_mismatches, 1u);
  ASSERT_EQ(tap_.updates.size(), 4u);
  EXPECT_EQ(tap_.updates.back().delta, 1);
  EXPECT_TRUE(tap_.updates.back().in_fault());
  EXPECT_EQ(tap_.infos.back().fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(pipeline_.fidelity_checked(), 1u);
  EXPECT_EQ(pipeline_.fidelity_matched(), 1u) << "the model folded 4 too";
  EXPECT_EQ(summary().exact_rss, 4);
}

TEST_F(TaskCacheUpdate, AnAtomicAddBetweenTwoSyncsFollowsTheFold) {
  fork_child();
  for (int i = 0; i < 4; ++i) cached_fault(0);
  sync(4, 4);
  atomic_add(9);  // the parent's: 4 -> 9
  cached_fault(9);
  sync(1, 10);
  r_.flush(tap_);
  ASSERT_EQ(tap_.updates.size(), 6u);
  EXPECT_EQ(tap_.updates[4].delta, 5);
  EXPECT_EQ(tap_.infos[4].fidelity, Fidelity::kExact);
  EXPECT_EQ(summary().exact_rss, 10);
  EXPECT_EQ(*summary().known_drift(), 0);
  EXPECT_EQ(pipeline_.fidelity_checked(), 3u);  // two folds and the add
  EXPECT_EQ(pipeline_.fidelity_matched(), 3u);
  EXPECT_EQ(r_.stats().sync_mismatches, 0u);
}

TEST_F(TaskCacheUpdate, AFoldAnotherAddOvertookKeepsTheExactSumAndIsFlagged) {
  fork_child();
  for (int i = 0; i < 4; ++i) cached_fault(0);
  // The child folds 4 (0 -> 4); the parent's add of 3 lands right after
  // it and takes its place in the sequence first (7), then the fold's
  // record comes, its atomic moved by 3 since its add; then the parent's
  // add of 1 (8).
  announce_sync(4);
  atomic_add(7);
  rss_event fold = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 4, 3);
  fold.faults = 4;
  feed(fold);
  atomic_add(8);
  r_.flush(tap_);
  // Four cached faults, the add read as 7, the fold's give-back, the next.
  ASSERT_EQ(tap_.updates.size(), 7u);
  EXPECT_EQ(tap_.updates[4].delta, 7);  // held the fold: flagged
  EXPECT_EQ(tap_.infos[4].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(tap_.updates[5].delta, -7);  // 4 - 7, less the 4 folded
  EXPECT_EQ(tap_.infos[5].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(tap_.updates[6].delta, 4);  // 8 - 4: after 4 or after 7?
  EXPECT_EQ(tap_.infos[6].fidelity, Fidelity::kAmbiguous);
  ASSERT_EQ(tap_.fold_infos.size(), 1u);
  EXPECT_EQ(tap_.fold_infos[0].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(r_.stats().reordered, 1u);
  // The group's sum is right: 4 cached, 3 and 1 added.
  EXPECT_EQ(summary().exact_rss, 8);
  EXPECT_EQ(*summary().known_drift(), 0);
  EXPECT_EQ(pipeline_.fidelity_checked(), 0u);
}

TEST_F(TaskCacheUpdate, AnAddWhileAnotherTasksFoldIsAnnouncedIsFlagged) {
  fork_child();
  for (int i = 0; i < 4; ++i) cached_fault(0);
  // Announced, then the parent's add (its count may or may not hold the
  // fold: sync_mm_rss() runs preemptible), then the fold, in order.
  announce_sync(4);
  atomic_add(7);  // the fold's add came first: 0 -> 4 -> 7
  rss_event fold = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 4, 3);
  fold.faults = 4;
  feed(fold);
  atomic_add(9);
  r_.flush(tap_);
  EXPECT_EQ(tap_.infos[4].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(summary().exact_rss, 4 + 3 + 2);
}

TEST_F(TaskCacheUpdate, AFoldWhoseAnnouncementWasSkippedIsToldByTheCache) {
  fork_child();
  for (int i = 0; i < 6; ++i) cached_fault(0);
  // The sync's hook did not run (the kernel skipped it): only the fold's
  // record, which still saw the task's cache of 6 at its add.
  rss_event fold = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 6, 0);
  fold.faults = 6;  // the cache at the add
  feed(fold);
  // The task's own add (a zap after a sync: its cache is 0 then).
  rss_event zap = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 4, 0);
  zap.faults = 0;
  feed(zap);
  r_.flush(tap_);
  EXPECT_EQ(r_.stats().unannounced_folds, 1u);
  ASSERT_EQ(tap_.folds.size(), 1u);
  EXPECT_EQ(tap_.fold_infos[0].fidelity, Fidelity::kAmbiguous);
  ASSERT_EQ(tap_.updates.size(), 7u);  // six faults, the zap
  EXPECT_EQ(tap_.updates[6].delta, -2);
  EXPECT_EQ(summary().exact_rss, 4);
  EXPECT_EQ(*summary().known_drift(), 0);
  EXPECT_EQ(r_.stats().sync_mismatches, 0u);
}

TEST_F(TaskCacheUpdate, ACacheAnAtomicRecordShowsCorrectsTheTracking) {
  fork_child();
  for (int i = 0; i < 3; ++i) cached_fault(0);
  // A THP fault's atomic add of 512 while the cache holds 5, not the 3
  // the stream showed: two cached updates were missed.
  rss_event thp = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 512, 0);
  thp.faults = 5;
  feed(thp);
  r_.flush(tap_);
  EXPECT_EQ(r_.stats().sync_mismatches, 1u);
  EXPECT_EQ(r_.stats().unannounced_folds, 0u);
  EXPECT_EQ(tap_.updates.back().delta, 512);
  EXPECT_EQ(tap_.infos.back().fidelity, Fidelity::kExact);
  // Before it, the two missed pages given to the cache, flagged.
  const Update& missed = tap_.updates[tap_.updates.size() - 2];
  EXPECT_EQ(missed.delta, 2);
  EXPECT_TRUE(missed.in_fault());
  EXPECT_EQ(tap_.infos[tap_.infos.size() - 2].fidelity, Fidelity::kAmbiguous);
}

TEST_F(TaskCacheUpdate, ATaskFromBeforeTheCaptureIsCheckedFromItsFirstSync) {
  // The task (no NEW_TASK seen) execs: its updates of the new mm come
  // before the EXEC record, and its cache (what the exec_mmap() sync left,
  // and those) is unknown until its next sync says what it held.
  for (int i = 0; i < 2; ++i) cached_fault(0);
  rss_event exec = record(RSS_EV_EXEC, 0, 0, 0);
  feed(exec);
  cached_fault(0);
  sync(7, 7);  // four cached before the capture: not counted
  for (int i = 0; i < 2; ++i) cached_fault(7);
  sync(5, 12);  // two cached updates, five folded: three unseen
  r_.flush(tap_);
  EXPECT_EQ(r_.stats().syncs, 2u);
  EXPECT_EQ(r_.stats().sync_mismatches, 1u);
}

TEST_F(TaskCacheUpdate, TheSecondSyncOfAnExitedTaskIsIgnored) {
  fork_child();
  cached_fault(0);
  sync(1, 1);
  rss_event exit = record(RSS_EV_EXIT, RSS_EVF_GROUP_DEAD, 0, 0);
  feed(exit);
  announce_sync(0);  // exit_mm(): sync_mm_rss() again, every member 0
  r_.flush(tap_);
  EXPECT_EQ(r_.stats().syncs, 1u);
  EXPECT_EQ(r_.stats().bad_records, 0u);
}

TEST_F(TaskCacheUpdate, AtomicAddsChainOnTheAtomicInSequenceOrder) {
  fork_child();
  atomic_add(5);
  atomic_add(12);
  atomic_add(9);
  r_.flush(tap_);
  ASSERT_EQ(tap_.updates.size(), 3u);
  EXPECT_EQ(tap_.updates[0].delta, 5);
  EXPECT_EQ(tap_.updates[1].delta, 7);
  EXPECT_EQ(tap_.updates[2].delta, -3);
  for (const UpdateInfo& i : tap_.infos)
    EXPECT_EQ(i.fidelity, Fidelity::kExact);
  EXPECT_FALSE(tap_.updates[0].by_owner());
  EXPECT_EQ(summary().exact_rss, 9);
}

TEST_F(TaskCacheUpdate, AnOvertakenAddFlagsItselfWhatItMayHaveUpsetAndTheNext) {
  fork_child();
  atomic_add(5);
  // 5 -> 7 (this record), then another task's add 7 -> 12 took its place
  // in the sequence first: its delta reads 7, this one's -5.
  atomic_add(12, 0, kChild);
  atomic_add(7, 5);
  atomic_add(13);  // follows 12 in the atomic, not 7
  atomic_add(14);
  r_.flush(tap_);
  ASSERT_EQ(tap_.updates.size(), 5u);
  EXPECT_EQ(tap_.infos[0].fidelity, Fidelity::kExact);
  EXPECT_EQ(tap_.infos[1].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(tap_.infos[2].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(tap_.infos[3].fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(tap_.infos[4].fidelity, Fidelity::kExact);
  EXPECT_EQ(tap_.updates[4].delta, 1);
  EXPECT_EQ(r_.stats().reordered, 1u);
  // Each keeps its move in the sequence: the group sums to the atomic's.
  EXPECT_EQ(
      tap_.updates[1].delta + tap_.updates[2].delta + tap_.updates[3].delta,
      13 - 5);
  EXPECT_EQ(summary().exact_rss, 14);
}

TEST_F(TaskCacheUpdate, AnAddThatDoesNotMoveTheAtomicIsFlagged) {
  fork_child();
  atomic_add(5);
  atomic_add(5);
  r_.flush(tap_);
  ASSERT_EQ(tap_.infos.size(), 2u);
  EXPECT_EQ(tap_.infos[1].fidelity, Fidelity::kAmbiguous);
}

// An mm from before the capture: /proc shows only its atomics, and each
// task's cache is its own. The snapshot iterator reads every task of it:
// one that stayed off its CPU gives its cache; one that ran gives it at
// its next sync. Once the atomic and every cache are known, so is the
// value: the atomic plus the caches.
TEST_F(TaskCacheUpdate, AnOlderMmIsExactOnceEveryTasksCacheIsKnown) {
  constexpr uint32_t kThread = kChild + 1;
  SnapshotQueue queue;
  r_.read_snapshots_from(&queue);
  feed(record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 40, 0));
  EXPECT_EQ(r_.snapshot_candidates(now_ns_, 8), std::vector<uint64_t>{kMm});
  uint64_t id = 0;
  const auto snapshot = [&](uint32_t tid, int32_t anon, bool quiet) {
    rss_event e = record(RSS_EV_SNAPSHOT, RSS_EVF_OWNER, int64_t(++id), 0, tid);
    CounterSnapshot v;
    v.head.id = id;
    v.head.mm = kMm;
    v.head.tid = v.head.tgid = tid;
    v.head.flags = RSS_SNAP_TASK_CACHE | (quiet ? RSS_SNAP_TASK_QUIET : 0);
    v.head.count[1] = v.head.count_after[1] = 40;
    v.head.cache[1] = anon;
    queue.push(v);
    feed(e);
  };
  snapshot(kChild, 7, false);  // it ran during the read
  snapshot(kThread, 3, true);
  rss_event end = record(RSS_EV_SNAPSHOT, 0, int64_t(id), 0, 0);
  end.mm = 0;  // the end of the pass
  feed(end);
  r_.flush(tap_);
  EXPECT_FALSE(summary().absolute) << "the owner's cache is not known yet";
  cached_fault(40);  // its cache: 8 pages now, the stream cannot say
  sync(8, 48);
  r_.flush(tap_);
  const MmSummary s = summary();
  ASSERT_TRUE(s.absolute);
  // 40 atomic + 8 cached by the owner + 3 by the thread, now 48 + 3.
  EXPECT_EQ(s.exact_rss, 51);
  EXPECT_EQ(r_.stats().snapshot_members, uint64_t{kMembers});
  EXPECT_TRUE(r_.snapshot_candidates(now_ns_, 8).empty());
}

}  // namespace
}  // namespace rssaudit
