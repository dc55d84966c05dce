#include "core/schemes/per_cpu_cache.h"

#include <gtest/gtest.h>

#include "tests/core/schemes/life_stream.h"
#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit {
namespace {

using testing::life_event;
using testing::remote_update_on;
using testing::update_on;

LifeEvent switch_out(uint32_t cpu) {
  return life_event(LifeKind::kCpuSwitch, testing::kFirstTid, cpu);
}

// Every reader of the RFC adds the matching CPU caches to the atomics
// (docs/counters.md, scheme 4): what stat, status and VmHWM return is the
// sum, never the atomics alone.
TEST(PerCpuCache, OwnerUpdatesStayInTheCpuCacheUntilItSwitches) {
  PerCpuCache s(Topology::for_cpus(4));
  s.add(update_on(1, 5));
  s.add(update_on(1, 3));
  s.add(update_on(2, 4));
  EXPECT_EQ(s.atomics(kAnonPages), 0);
  EXPECT_EQ(s.approximate(kAnonPages), 12) << "what its readers return";
  EXPECT_EQ(s.precise(kAnonPages), 12);
  EXPECT_EQ(s.cached(kAnonPages, 1), 8);
  EXPECT_EQ(s.live_cpus(), 2u);
  EXPECT_EQ(s.shared_updates(), 0u);
  s.on_event(switch_out(1));
  EXPECT_EQ(s.atomics(kAnonPages), 8);
  EXPECT_EQ(s.approximate(kAnonPages), 12);
  EXPECT_EQ(s.cached(kAnonPages, 1), 0);
  EXPECT_EQ(s.cached(kAnonPages, 2), 4);
  EXPECT_EQ(s.precise(kAnonPages), 12);
  EXPECT_EQ(s.live_cpus(), 1u);
  EXPECT_EQ(s.shared_updates(), 1u);
}

TEST(PerCpuCache, FlushAddsOnlyNonZeroMembers) {
  PerCpuCache s(Topology::for_cpus(2));
  s.add(update_on(0, 6, kFilePages));
  s.add(update_on(0, -6, kFilePages));
  s.add(update_on(0, 2, kShmemPages));
  s.on_event(switch_out(0));
  EXPECT_EQ(s.atomics(kShmemPages), 2);
  EXPECT_EQ(s.atomics(kFilePages), 0);
  EXPECT_EQ(s.shared_updates(), 1u);
}

TEST(PerCpuCache, RemoteUpdatesGoStraightToTheAtomics) {
  PerCpuCache s(Topology::for_cpus(4));
  s.add(remote_update_on(3, 9));
  EXPECT_EQ(s.atomics(kAnonPages), 9);
  EXPECT_EQ(s.approximate(kAnonPages), 9);
  EXPECT_EQ(s.cached(kAnonPages, 3), 0);
  EXPECT_EQ(s.live_cpus(), 0u);
  EXPECT_EQ(s.shared_updates(), 1u);
}

TEST(PerCpuCache, SwitchOfACpuNotCachingTheMmChangesNothing) {
  PerCpuCache s(Topology::for_cpus(4));
  s.add(update_on(1, 5));
  s.on_event(switch_out(0));
  EXPECT_EQ(s.atomics(kAnonPages), 0);
  EXPECT_EQ(s.cached(kAnonPages, 1), 5);
  EXPECT_EQ(s.shared_updates(), 0u);
}

// The atomics lag without bound while the owner keeps its CPU, but no
// reader returns them: the readers' error stays 0, and each read pays for
// it by touching every possible CPU's cache.
TEST(PerCpuCache, TheAtomicsLagUnboundedButTheReadersAddTheCaches) {
  PerCpuCache s(Topology::for_cpus(64));
  for (int i = 0; i < 1000; ++i) s.add(update_on(0, 512));
  EXPECT_EQ(s.precise(kAnonPages) - s.atomics(kAnonPages), 512000);
  EXPECT_EQ(s.approximate(kAnonPages), 512000);
  EXPECT_EQ(s.read_cost(), (ReadCost{65, 65}));
}

TEST(PerCpuCache, MmExitFlushesEveryCpu) {
  PerCpuCache s(Topology::for_cpus(8));
  for (uint32_t cpu = 0; cpu < 8; ++cpu) s.add(update_on(cpu, 1 + cpu));
  s.on_event(life_event(LifeKind::kMmExit));
  EXPECT_EQ(s.atomics(kAnonPages), 36);
  EXPECT_EQ(s.live_cpus(), 0u);
  EXPECT_EQ(s.shared_updates(), 8u);
}

TEST(PerCpuCache, OtherEventsDoNotFlush) {
  PerCpuCache s(Topology::for_cpus(2));
  s.add(update_on(0, 7));
  for (LifeKind k : {LifeKind::kFault, LifeKind::kSecondUser,
                     LifeKind::kTaskExit, LifeKind::kRusageQuery})
    s.on_event(life_event(k));
  EXPECT_EQ(s.atomics(kAnonPages), 0);
  EXPECT_EQ(s.cached(kAnonPages, 0), 7);
}

TEST(PerCpuCache, TheCachesBelongToTheCpusNotTheMm) {
  EXPECT_EQ(PerCpuCache(Topology::for_cpus(1)).bytes_per_mm(), 32u);
  EXPECT_EQ(PerCpuCache(Topology::for_cpus(65536)).bytes_per_mm(), 32u);
}

class PerCpuCacheRandom : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PerCpuCacheRandom, EveryReadIsExactAndSwitchesEmptyTheCache) {
  const uint32_t cpus = GetParam();
  for (int32_t max_delta : {1, 32, 512}) {
    PerCpuCache s(Topology::for_cpus(cpus));
    testing::InvariantChecker check(s);
    check.set_precise_every(testing::precise_interval(cpus));
    for (const testing::Step& step :
         testing::life_stream(cpus * 17u + max_delta, 20000, cpus, max_delta)) {
      testing::apply(check, step);
      if (::testing::Test::HasFatalFailure()) return;
      if (step.is_event && step.event.kind == LifeKind::kCpuSwitch) {
        for (int m = 0; m < kMembers; ++m)
          ASSERT_EQ(s.cached(m, step.event.cpu), 0);
      }
    }
    check.check_precise();
    EXPECT_EQ(check.largest_error(), 0) << "its readers add the caches";
    check.event(life_event(LifeKind::kMmExit));
    EXPECT_EQ(s.live_cpus(), 0u);
    for (int m = 0; m < kMembers; ++m) EXPECT_EQ(s.atomics(m), check.exact(m));
  }
}

INSTANTIATE_TEST_SUITE_P(Cpus, PerCpuCacheRandom,
                         ::testing::ValuesIn(testing::kCpuCounts));

}  // namespace
}  // namespace rssaudit
