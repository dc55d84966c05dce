#include "core/schemes/sync_before_query.h"

#include <gtest/gtest.h>

#include "tests/core/schemes/life_stream.h"
#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit {
namespace {

using testing::life_event;
using testing::update_on;

TEST(SyncBeforeQuery, MmExitMakesTheCountExact) {
  SyncBeforeQuery s(Topology::for_cpus(4));
  s.add(update_on(0, 20));
  s.add(update_on(3, -7, kFilePages));
  EXPECT_EQ(s.approximate(kAnonPages), 0);
  s.on_event(life_event(LifeKind::kMmExit));
  EXPECT_EQ(s.approximate(kAnonPages), 20);
  EXPECT_EQ(s.approximate(kFilePages), -7);
  EXPECT_EQ(s.upstream().slot(kAnonPages, 0), 0);
  EXPECT_EQ(s.shared_updates(), 2u);  // one lock per counter folded
}

TEST(SyncBeforeQuery, RusageQueryMakesTheCountExact) {
  SyncBeforeQuery s(Topology::for_cpus(4));
  s.add(update_on(2, 31));
  s.on_event(life_event(LifeKind::kRusageQuery));
  EXPECT_EQ(s.approximate(kAnonPages), 31);
  EXPECT_EQ(s.upstream().slot(kAnonPages, 2), 0);
}

TEST(SyncBeforeQuery, OtherEventsDoNotFold) {
  SyncBeforeQuery s(Topology::for_cpus(4));
  s.add(update_on(2, 31));
  for (LifeKind k : {LifeKind::kFault, LifeKind::kSecondUser,
                     LifeKind::kTaskExit, LifeKind::kCpuSwitch})
    s.on_event(life_event(k, testing::kFirstTid, 2));
  EXPECT_EQ(s.approximate(kAnonPages), 0);
  EXPECT_EQ(s.upstream().slot(kAnonPages, 2), 31);
}

TEST(SyncBeforeQuery, CostsWhatUpstreamCosts) {
  const Topology t = Topology::for_cpus(384);
  SyncBeforeQuery s(t);
  EXPECT_EQ(s.bytes_per_mm(), UpstreamPercpu(t).bytes_per_mm());
  EXPECT_EQ(s.bound(kAnonPages), UpstreamPercpu(t).bound(kAnonPages));
  EXPECT_EQ(s.read_cost(), UpstreamPercpu(t).read_cost());
}

class SyncBeforeQueryRandom : public ::testing::TestWithParam<uint32_t> {};

// While nobody queries, every read, slot and carry equals upstream's; each
// query leaves the approximate read exact.
TEST_P(SyncBeforeQueryRandom, EqualsUpstreamWhileRunningExactAfterQueries) {
  const uint32_t cpus = GetParam();
  for (int32_t max_delta : {1, 32, 512}) {
    const Topology t = Topology::for_cpus(cpus);
    SyncBeforeQuery s(t);
    UpstreamPercpu ref(t);
    testing::InvariantChecker check(s);
    check.set_precise_every(testing::precise_interval(cpus));
    for (const testing::Step& step :
         testing::life_stream(cpus * 7u + max_delta, 20000, cpus, max_delta)) {
      testing::apply(check, step);
      if (::testing::Test::HasFatalFailure()) return;
      if (!step.is_event) {
        const Update& u = step.update;
        ref.add(u);
        ASSERT_EQ(s.approximate(u.member), ref.approximate(u.member));
        ASSERT_EQ(s.upstream().slot(u.member, u.cpu),
                  ref.slot(u.member, u.cpu));
      } else if (step.event.kind == LifeKind::kRusageQuery) {
        for (int m = 0; m < kMembers; ++m)
          ASSERT_EQ(s.approximate(m), check.exact(m));
        ref.fold_all();  // keeps the reference in step with the fold
      }
    }
    EXPECT_EQ(s.shared_updates(), ref.shared_updates());
    check.event(life_event(LifeKind::kMmExit));
    for (int m = 0; m < kMembers; ++m)
      EXPECT_EQ(s.approximate(m), check.exact(m));
  }
}

INSTANTIATE_TEST_SUITE_P(Cpus, SyncBeforeQueryRandom,
                         ::testing::ValuesIn(testing::kCpuCounts));

}  // namespace
}  // namespace rssaudit
