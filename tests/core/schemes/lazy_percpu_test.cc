#include "core/schemes/lazy_percpu.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>

#include "tests/core/schemes/life_stream.h"
#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit {
namespace {

using testing::life_event;
using testing::remote_update_on;
using testing::update_on;

TEST(LazyPercpu, SingleThreadIsExactWithoutPerCpuMemory) {
  const Topology big = Topology::for_cpus(65536);
  LazyPercpu s(big);
  s.add(update_on(7, 300));
  s.add(remote_update_on(9, 25));  // the atomic
  s.add(update_on(1, -40, kFilePages));
  EXPECT_EQ(s.approximate(kAnonPages), 325);
  EXPECT_EQ(s.precise(kAnonPages), 325);
  EXPECT_EQ(s.approximate(kFilePages), -40);
  EXPECT_EQ(*s.bound(kAnonPages), 0);
  EXPECT_EQ(s.shared_updates(), 1u);
  EXPECT_EQ(s.upstream(), nullptr);
  EXPECT_EQ(s.bytes_per_mm(), 64u);
  EXPECT_EQ(s.bytes_per_mm(), LazyPercpu(Topology::for_cpus(1)).bytes_per_mm());
  EXPECT_EQ(s.read_cost(), (ReadCost{1, 1})) << "plain count and atomic";
}

TEST(LazyPercpu, OtherEventsDoNotUpgrade) {
  LazyPercpu s(Topology::for_cpus(4));
  for (LifeKind k :
       {LifeKind::kFault, LifeKind::kTaskExit, LifeKind::kCpuSwitch,
        LifeKind::kRusageQuery, LifeKind::kMmExit})
    s.on_event(life_event(k));
  EXPECT_EQ(s.upstream(), nullptr);
}

TEST(LazyPercpu, SecondThreadSeedsAPercpuCounterWithTheValueSoFar) {
  const Topology t = Topology::for_cpus(384);
  LazyPercpu s(t);
  s.add(update_on(3, 1000));
  s.add(remote_update_on(4, 5));
  s.add(remote_update_on(5, 2, kSwapEnts));
  s.on_event(life_event(LifeKind::kSecondUser));
  ASSERT_NE(s.upstream(), nullptr);
  EXPECT_EQ(s.approximate(kAnonPages), 1005);
  EXPECT_EQ(s.approximate(kSwapEnts), 2);
  for (uint32_t cpu = 0; cpu < 384; ++cpu)
    ASSERT_EQ(s.upstream()->slot(kAnonPages, cpu), 0);
  EXPECT_EQ(s.upstream()->batch(), t.upstream_batch);
  EXPECT_EQ(*s.bound(kAnonPages), 384 * 767);
  EXPECT_EQ(s.shared_updates(), 2u);  // seeding is not an update
  EXPECT_EQ(s.bytes_per_mm(), 64u + UpstreamPercpu(t).bytes_per_mm());
  EXPECT_EQ(s.read_cost(), UpstreamPercpu(t).read_cost());
  // Now a small add stays in the slot, as upstream does.
  s.add(update_on(3, 1));
  EXPECT_EQ(s.approximate(kAnonPages), 1005);
  EXPECT_EQ(s.precise(kAnonPages), 1006);
}

TEST(LazyPercpu, ALaterThreadDoesNotUpgradeAgain) {
  LazyPercpu s(Topology::for_cpus(4));
  s.on_event(life_event(LifeKind::kSecondUser));
  const UpstreamPercpu* first = s.upstream();
  s.add(update_on(2, 9));
  s.on_event(life_event(LifeKind::kSecondUser));
  EXPECT_EQ(s.upstream(), first);
  EXPECT_EQ(s.upstream()->slot(kAnonPages, 2), 9);
}

// After the upgrade every read, slot and carry matches an UpstreamPercpu that
// started from the same value and saw the same updates.
TEST(LazyPercpu, BehavesExactlyAsUpstreamAfterTheUpgrade) {
  for (uint32_t cpus : {1u, 3u, 64u, 1024u}) {
    const Topology t = Topology::for_cpus(cpus);
    const auto stream = testing::random_stream(cpus, 20000, cpus, 96);
    LazyPercpu s(t);
    std::array<int64_t, kMembers> before{};
    for (size_t i = 0; i < 5000; ++i) {
      s.add(stream[i]);
      before[stream[i].member] += stream[i].delta;
    }
    s.on_event(life_event(LifeKind::kSecondUser));
    const uint64_t shared_before = s.shared_updates();
    UpstreamPercpu ref(t);
    for (int m = 0; m < kMembers; ++m) ref.add_to_count(m, before[m]);
    for (size_t i = 5000; i < stream.size(); ++i) {
      const Update& u = stream[i];
      s.add(u);
      ref.add(u);
      ASSERT_EQ(s.approximate(u.member), ref.approximate(u.member));
      ASSERT_EQ(s.upstream()->slot(u.member, u.cpu), ref.slot(u.member, u.cpu));
    }
    for (int m = 0; m < kMembers; ++m) {
      EXPECT_EQ(s.precise(m), ref.precise(m));
      for (uint32_t cpu = 0; cpu < cpus; ++cpu)
        ASSERT_EQ(s.upstream()->slot(m, cpu), ref.slot(m, cpu));
    }
    EXPECT_EQ(s.shared_updates() - shared_before, ref.shared_updates());
  }
}

class LazyPercpuRandom : public ::testing::TestWithParam<uint32_t> {};

TEST_P(LazyPercpuRandom, ExactUntilTheUpgradeThenWithinUpstreamsBound) {
  const uint32_t cpus = GetParam();
  for (int32_t max_delta : {1, 32, 512}) {
    LazyPercpu s(Topology::for_cpus(cpus));
    testing::InvariantChecker check(s);
    check.set_precise_every(testing::precise_interval(cpus));
    for (const testing::Step& step :
         testing::life_stream(cpus * 13u + max_delta, 20000, cpus, max_delta)) {
      testing::apply(check, step);
      if (::testing::Test::HasFatalFailure()) return;
      if (!s.upstream()) {
        ASSERT_EQ(s.bound(kAnonPages), Bound{0});
      } else if (!step.is_event) {
        ASSERT_LT(
            std::abs(s.upstream()->slot(step.update.member, step.update.cpu)),
            s.upstream()->batch());
      }
    }
    check.check_precise();
    EXPECT_NE(s.upstream(), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpus, LazyPercpuRandom,
                         ::testing::ValuesIn(testing::kCpuCounts));

}  // namespace
}  // namespace rssaudit
