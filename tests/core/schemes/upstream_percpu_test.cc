#include "core/schemes/upstream_percpu.h"

#include <gtest/gtest.h>

#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit {
namespace {

using testing::update_on;

TEST(UpstreamPercpu, BatchIsMax32OrTwiceTheCpus) {
  EXPECT_EQ(upstream_rss_batch(1), 32);
  EXPECT_EQ(upstream_rss_batch(16), 32);
  EXPECT_EQ(upstream_rss_batch(17), 34);
  EXPECT_EQ(upstream_rss_batch(384), 768);
}

TEST(UpstreamPercpu, SmallAddsStayInTheSlot) {
  UpstreamPercpu c(Topology::for_cpus(2));
  for (int i = 0; i < 31; ++i) c.add(update_on(0, 1));
  EXPECT_EQ(c.approximate(kAnonPages), 0);
  EXPECT_EQ(c.slot(kAnonPages, 0), 31);
  EXPECT_EQ(c.precise(kAnonPages), 31);
  EXPECT_EQ(c.shared_updates(), 0u);
}

TEST(UpstreamPercpu, ReachingTheBatchFoldsTheWholeSlot) {
  UpstreamPercpu c(Topology::for_cpus(2));
  for (int i = 0; i < 32; ++i) c.add(update_on(1, 1));
  EXPECT_EQ(c.approximate(kAnonPages), 32);
  EXPECT_EQ(c.slot(kAnonPages, 1), 0);
  EXPECT_EQ(c.shared_updates(), 1u);
  // 20 + 20 = 40 >= 32: folds 40, not 32 (no remainder is kept).
  c.add(update_on(0, 20));
  c.add(update_on(0, 20));
  EXPECT_EQ(c.approximate(kAnonPages), 72);
  EXPECT_EQ(c.slot(kAnonPages, 0), 0);
}

TEST(UpstreamPercpu, NegativeValuesFoldAtMinusBatch) {
  UpstreamPercpu c(Topology::for_cpus(2));
  c.add(update_on(0, -31));
  EXPECT_EQ(c.approximate(kAnonPages), 0);
  EXPECT_EQ(c.slot(kAnonPages, 0), -31);
  c.add(update_on(0, -1));  // |-32| >= 32
  EXPECT_EQ(c.approximate(kAnonPages), -32);
  EXPECT_EQ(c.slot(kAnonPages, 0), 0);
  // A munmap of 100 pages on a CPU holding +5 folds -95 at once.
  c.add(update_on(1, 5));
  c.add(update_on(1, -100));
  EXPECT_EQ(c.approximate(kAnonPages), -127);
  EXPECT_EQ(c.precise(kAnonPages), -127);
}

TEST(UpstreamPercpu, MembersAreIndependent) {
  UpstreamPercpu c(Topology::for_cpus(4));
  c.add(update_on(3, 40, kFilePages));
  c.add(update_on(3, 7, kShmemPages));
  EXPECT_EQ(c.approximate(kFilePages), 40);
  EXPECT_EQ(c.approximate(kShmemPages), 0);
  EXPECT_EQ(c.precise(kShmemPages), 7);
  EXPECT_EQ(c.approximate(kAnonPages), 0);
}

TEST(UpstreamPercpu, BoundIsCpusTimesBatchMinusOneAndIsReached) {
  const Topology t = Topology::for_cpus(384);
  UpstreamPercpu c(t);
  ASSERT_EQ(*c.bound(kAnonPages), 384 * 767);
  for (uint32_t cpu = 0; cpu < 384; ++cpu) c.add(update_on(cpu, 767));
  EXPECT_EQ(c.precise(kAnonPages) - c.approximate(kAnonPages),
            *c.bound(kAnonPages));
  EXPECT_EQ(c.shared_updates(), 0u);
}

TEST(UpstreamPercpu, FoldAllMakesTheApproximateExact) {
  UpstreamPercpu c(Topology::for_cpus(3));
  c.add(update_on(0, 5));
  c.add(update_on(2, -9, kFilePages));
  c.fold_all();
  EXPECT_EQ(c.approximate(kAnonPages), 5);
  EXPECT_EQ(c.approximate(kFilePages), -9);
  EXPECT_EQ(c.slot(kAnonPages, 0), 0);
  EXPECT_EQ(c.shared_updates(), 2u);  // two counters had something to fold
}

// percpu_counter_read() is `count`; percpu_counter_sum() adds every CPU's
// slot, each in its CPU's per-CPU area (docs/counters.md).
TEST(UpstreamPercpu, AReadTouchesCountAndASumEveryCpu) {
  EXPECT_EQ(UpstreamPercpu(Topology::for_cpus(384)).read_cost(),
            (ReadCost{1, 385}));
}

TEST(UpstreamPercpu, MemoryGrowsWithPossibleCpus) {
  EXPECT_EQ(UpstreamPercpu(Topology::for_cpus(1)).bytes_per_mm(), 160u + 16u);
  EXPECT_EQ(UpstreamPercpu(Topology::for_cpus(384)).bytes_per_mm(),
            160u + 384u * 16u);
}

class UpstreamRandom : public ::testing::TestWithParam<uint32_t> {};

TEST_P(UpstreamRandom, InvariantsHoldAfterEveryUpdate) {
  const uint32_t cpus = GetParam();
  for (int32_t max_delta : {1, 32, 512}) {
    UpstreamPercpu c(Topology::for_cpus(cpus));
    testing::InvariantChecker check(c);
    check.set_precise_every(testing::precise_interval(cpus));
    for (const Update& u : testing::random_stream(cpus * 7919u + max_delta,
                                                  20000, cpus, max_delta)) {
      check.apply(u);
      const int32_t slot = c.slot(u.member, u.cpu);
      ASSERT_LT(std::abs(slot), c.batch()) << "slot escaped (-batch, batch)";
    }
    check.check_precise();
  }
}

INSTANTIATE_TEST_SUITE_P(Cpus, UpstreamRandom,
                         ::testing::ValuesIn(testing::kCpuCounts));

}  // namespace
}  // namespace rssaudit
