#include "core/schemes/per_task_cache.h"

#include <gtest/gtest.h>

#include "tests/core/schemes/life_stream.h"
#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit {
namespace {

using testing::kFirstTid;
using testing::life_event;
using testing::update_on;

// An update in a page fault of `task`; the CPU does not matter to this scheme.
Update by(uint32_t task, int32_t delta, uint8_t member = kAnonPages) {
  return update_on(0, delta, member, testing::kOwnerFault, task);
}

// One page fault of `task` mapping `pages` anon pages.
void fault(PerTaskCache& s, uint32_t task, int32_t pages = 1) {
  s.on_event(life_event(LifeKind::kFault, task));
  s.add(by(task, pages));
}

TEST(PerTaskCache, The66thFaultSyncsAsEventsPlusPlusAbove64Dictates) {
  PerTaskCache s(Topology::for_cpus(4));
  // Faults 1..65 see events 0..64 before the increment: none exceeds 64.
  for (int i = 1; i <= 65; ++i) fault(s, kFirstTid);
  EXPECT_EQ(s.events(kFirstTid), 65);
  EXPECT_EQ(s.cached(kFirstTid, kAnonPages), 65);
  EXPECT_EQ(s.approximate(kAnonPages), 0);
  EXPECT_EQ(s.shared_updates(), 0u);
  // Fault 66 sees events == 65 > 64: it syncs the 65 cached pages before its
  // own update, which starts the next cache.
  s.on_event(life_event(LifeKind::kFault, kFirstTid));
  EXPECT_EQ(s.approximate(kAnonPages), 65);
  EXPECT_EQ(s.cached(kFirstTid, kAnonPages), 0);
  EXPECT_EQ(s.events(kFirstTid), 0);
  EXPECT_EQ(s.shared_updates(), 1u);
  s.add(by(kFirstTid, 1));
  EXPECT_EQ(s.cached(kFirstTid, kAnonPages), 1);
  // Events restart at 0, so the next sync is again 66 faults later.
  for (int i = 67; i <= 131; ++i) fault(s, kFirstTid);
  EXPECT_EQ(s.approximate(kAnonPages), 65);
  fault(s, kFirstTid);  // fault 132
  EXPECT_EQ(s.approximate(kAnonPages), 131);
  EXPECT_EQ(s.precise(kAnonPages), 132);
}

TEST(PerTaskCache, ARunOfFaultsActsAsThatManySingleFaults) {
  // From every reachable events count, runs across zero, one and several
  // sync points: same values, events and shared updates as one at a time.
  for (int cached_faults : {0, 1, 40, 64, 65}) {
    for (uint32_t run :
         {1u, 2u, 25u, 65u, 66u, 67u, 131u, 132u, 133u, 1000u, 65535u}) {
      PerTaskCache one(Topology::for_cpus(2)), batched(Topology::for_cpus(2));
      for (PerTaskCache* s : {&one, &batched})
        for (int i = 0; i < cached_faults; ++i) fault(*s, kFirstTid);
      bool one_moved = false;
      for (uint32_t i = 0; i < run; ++i)
        one_moved |= one.on_event(life_event(LifeKind::kFault, kFirstTid));
      LifeEvent e = life_event(LifeKind::kFault, kFirstTid);
      e.count = run;
      SCOPED_TRACE(::testing::Message() << cached_faults << " then " << run);
      EXPECT_EQ(batched.on_event(e), one_moved);
      EXPECT_EQ(batched.events(kFirstTid), one.events(kFirstTid));
      EXPECT_EQ(batched.approximate(kAnonPages), one.approximate(kAnonPages));
      EXPECT_EQ(batched.cached(kFirstTid, kAnonPages),
                one.cached(kFirstTid, kAnonPages));
      EXPECT_EQ(batched.shared_updates(), one.shared_updates());
    }
  }
}

TEST(PerTaskCache, UpdatesOutsideTheOwnersFaultPathHitTheAtomics) {
  PerTaskCache s(Topology::for_cpus(2));
  s.add(testing::remote_update_on(0, 5));  // reclaim, remote access
  s.add(update_on(0, -3, kFilePages, kUpdateByOwner));  // zap_pte_range
  EXPECT_EQ(s.approximate(kAnonPages), 5);
  EXPECT_EQ(s.approximate(kFilePages), -3);
  EXPECT_EQ(s.shared_updates(), 2u);
  EXPECT_EQ(s.tasks(), 0u);  // no task cache was needed
}

// Every reader reads the atomics; nothing reaches the threads' caches, so
// the scheme offers no precise read (docs/counters.md).
TEST(PerTaskCache, ReadersReadTheAtomicsAndNoPreciseReadExists) {
  EXPECT_EQ(PerTaskCache(Topology::for_cpus(384)).read_cost(),
            (ReadCost{1, std::nullopt}));
}

TEST(PerTaskCache, SyncAddsOnlyNonZeroMembers) {
  PerTaskCache s(Topology::for_cpus(2));
  s.on_event(life_event(LifeKind::kFault, kFirstTid));
  s.add(by(kFirstTid, 3));
  s.add(by(kFirstTid, 2, kFilePages));
  s.add(by(kFirstTid, -2, kFilePages));
  s.on_event(life_event(LifeKind::kTaskExit, kFirstTid));
  EXPECT_EQ(s.approximate(kAnonPages), 3);
  EXPECT_EQ(s.approximate(kFilePages), 0);
  EXPECT_EQ(s.shared_updates(), 1u);
}

TEST(PerTaskCache, EachThreadHidesItsCacheUntilItFaultsAgain) {
  PerTaskCache s(Topology::for_cpus(8));
  // Three threads each take 65 THP faults of 512 pages, then sleep: readers
  // miss all of it, whatever the thread count, for as long as they sleep.
  for (uint32_t t = kFirstTid; t < kFirstTid + 3; ++t)
    for (int i = 0; i < 65; ++i) fault(s, t, 512);
  EXPECT_EQ(s.approximate(kAnonPages), 0);
  EXPECT_EQ(s.precise(kAnonPages), 3 * 65 * 512);
  EXPECT_FALSE(s.bound(kAnonPages).has_value());
}

TEST(PerTaskCache, TaskExitSyncsOnlyTheExitingTask) {
  PerTaskCache s(Topology::for_cpus(2));
  fault(s, kFirstTid, 7);
  fault(s, kFirstTid + 1, 11);
  EXPECT_EQ(s.bytes_per_mm(), 32u + 2 * 20u);
  s.on_event(life_event(LifeKind::kTaskExit, kFirstTid + 1));
  EXPECT_EQ(s.approximate(kAnonPages), 11);
  EXPECT_EQ(s.cached(kFirstTid, kAnonPages), 7);
  EXPECT_EQ(s.tasks(), 1u);
  EXPECT_EQ(s.bytes_per_mm(), 32u + 20u);
  // An exit of a task that never cached anything changes nothing.
  s.on_event(life_event(LifeKind::kTaskExit, kFirstTid + 5));
  EXPECT_EQ(s.approximate(kAnonPages), 11);
  EXPECT_EQ(s.tasks(), 1u);
}

TEST(PerTaskCache, MmExitSyncsEveryTask) {
  PerTaskCache s(Topology::for_cpus(2));
  fault(s, kFirstTid, 7);
  fault(s, kFirstTid + 1, 11);
  s.on_event(life_event(LifeKind::kMmExit));
  EXPECT_EQ(s.approximate(kAnonPages), 18);
  EXPECT_EQ(s.tasks(), 0u);
  EXPECT_EQ(s.bytes_per_mm(), 32u);
}

TEST(PerTaskCache, OtherEventsDoNotSync) {
  PerTaskCache s(Topology::for_cpus(2));
  fault(s, kFirstTid, 7);
  for (LifeKind k :
       {LifeKind::kSecondUser, LifeKind::kCpuSwitch, LifeKind::kRusageQuery})
    s.on_event(life_event(k));
  EXPECT_EQ(s.approximate(kAnonPages), 0);
  EXPECT_EQ(s.cached(kFirstTid, kAnonPages), 7);
}

TEST(PerTaskCache, AKernelSyncFoldsOneMemberOfOneTask) {
  PerTaskCache s(Topology::for_cpus(2));
  s.add(by(kFirstTid, 5));
  s.add(by(kFirstTid, 2, kFilePages));
  s.add(by(kFirstTid + 1, 3));
  s.on_event(LifeEvent{LifeKind::kCacheSync, kFirstTid, 0, kAnonPages});
  EXPECT_EQ(s.approximate(kAnonPages), 5);
  EXPECT_EQ(s.approximate(kFilePages), 0);  // its own fold comes apart
  EXPECT_EQ(s.cached(kFirstTid, kFilePages), 2);
  EXPECT_EQ(s.cached(kFirstTid + 1, kAnonPages), 3);
  EXPECT_EQ(s.shared_updates(), 1u);
  // An empty member, an unknown task, a member out of range: no move.
  s.on_event(LifeEvent{LifeKind::kCacheSync, kFirstTid, 0, kAnonPages});
  s.on_event(LifeEvent{LifeKind::kCacheSync, kFirstTid + 9, 0, kAnonPages});
  s.on_event(LifeEvent{LifeKind::kCacheSync, kFirstTid, 0, kMembers});
  EXPECT_EQ(s.approximate(kAnonPages), 5);
  EXPECT_EQ(s.shared_updates(), 1u);
  EXPECT_EQ(s.precise(kAnonPages), 8);
}

class PerTaskCacheRandom : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PerTaskCacheRandom, PreciseIsExactAndExitSyncsEverything) {
  const uint32_t cpus = GetParam();
  for (int32_t max_delta : {1, 32, 512}) {
    PerTaskCache s(Topology::for_cpus(cpus));
    testing::InvariantChecker check(s);
    int fault_syncs = 0;
    for (const testing::Step& step :
         testing::life_stream(cpus * 31u + max_delta, 20000, cpus, max_delta)) {
      const bool fault = step.is_event && step.event.kind == LifeKind::kFault;
      const int32_t events = fault ? s.events(step.event.task) : 0;
      testing::apply(check, step);
      if (::testing::Test::HasFatalFailure()) return;
      if (fault) {
        const bool sync = events > PerTaskCache::kEventsThresh;
        fault_syncs += sync;
        ASSERT_EQ(s.events(step.event.task), sync ? 0 : events + 1);
      }
    }
    EXPECT_GT(fault_syncs, 0);
    EXPECT_GT(check.largest_error(), 0);
    check.check_precise();
    check.event(life_event(LifeKind::kMmExit));
    for (int m = 0; m < kMembers; ++m)
      EXPECT_EQ(s.approximate(m), check.exact(m));
  }
}

INSTANTIATE_TEST_SUITE_P(Cpus, PerTaskCacheRandom,
                         ::testing::ValuesIn(testing::kCpuCounts));

}  // namespace
}  // namespace rssaudit
