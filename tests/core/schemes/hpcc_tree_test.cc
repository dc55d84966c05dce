#include "core/schemes/hpcc_tree.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit {
namespace {

using Shape = std::vector<uint32_t>;

using testing::remote_update_on;
using testing::update_on;

constexpr LifeEvent kSecondThread{LifeKind::kSecondUser, 2, 0};

Topology custom(uint32_t cpus, Shape shape, int32_t batch) {
  Topology t = Topology::for_cpus(cpus);
  t.hpcc_shape = std::move(shape);
  t.hpcc_batch = batch;
  EXPECT_EQ(validate(t), "");
  return t;
}

// A tree already shared by two threads.
HpccTree active_tree(const Topology& t) {
  HpccTree tree(t);
  tree.on_event(kSecondThread);
  return tree;
}

TEST(HpccShape, DefaultShapesFollowTheRules) {
  const std::vector<std::pair<uint32_t, Shape>> cases = {
      {1, {1}},
      {2, {2}},
      {3, {4}},
      {16, {16}},
      {32, {32}},
      {33, {16, 4}},
      {64, {16, 4}},
      {65, {8, 16}},
      {128, {8, 16}},
      {256, {8, 8, 4}},
      {384, {8, 8, 8}},
      {1024, {8, 8, 16}},
      {4096, {8, 8, 8, 8}},
      {65536, {8, 8, 8, 8, 16}},
  };
  for (const auto& [cpus, shape] : cases)
    EXPECT_EQ(hpcc_shape(Topology::for_cpus(cpus)), shape) << cpus << " CPUs";
}

TEST(HpccShape, OverrideIsUsedAsIs) {
  EXPECT_EQ(hpcc_shape(custom(10, {4, 3}, 32)), (Shape{4, 3}));
  EXPECT_EQ(hpcc_shape(custom(64, {64}, 32)), (Shape{64}));
}

TEST(HpccTree, ThresholdsMultiplyAndItemsDivideByTheFanOuts) {
  const HpccTree tree(Topology::for_cpus(1024));  // 8, 8, 16
  ASSERT_EQ(tree.depth(), 3);
  EXPECT_EQ(tree.threshold(0), 32);
  EXPECT_EQ(tree.threshold(1), 256);
  EXPECT_EQ(tree.threshold(2), 2048);
  EXPECT_EQ(tree.items(0), 1024u);
  EXPECT_EQ(tree.items(1), 128u);
  EXPECT_EQ(tree.items(2), 16u);
  const HpccTree odd(custom(10, {4, 3}, 5));
  EXPECT_EQ(odd.threshold(1), 20);
  EXPECT_EQ(odd.items(0), 12u);  // the product may exceed the CPU count
  EXPECT_EQ(odd.items(1), 3u);
}

TEST(HpccTree, CarryRoundsTowardZeroAndKeepsTheRemainder) {
  HpccTree tree = active_tree(Topology::for_cpus(2));  // flat
  tree.add(update_on(0, 20));
  tree.add(update_on(0, 20));  // 40: sends 32, keeps 8
  EXPECT_EQ(tree.approximate(kAnonPages), 32);
  EXPECT_EQ(tree.residual(0, 0, kAnonPages), 8);
  tree.add(update_on(1, -50));  // sends -32, keeps -18
  EXPECT_EQ(tree.approximate(kAnonPages), 0);
  EXPECT_EQ(tree.residual(0, 1, kAnonPages), -18);
  tree.add(update_on(0, 100));  // 108: sends 96, keeps 12
  EXPECT_EQ(tree.approximate(kAnonPages), 96);
  EXPECT_EQ(tree.residual(0, 0, kAnonPages), 12);
  tree.add(update_on(1, -1000));  // -1018: sends -992, keeps -26
  EXPECT_EQ(tree.approximate(kAnonPages), -896);
  EXPECT_EQ(tree.residual(0, 1, kAnonPages), -26);
  EXPECT_EQ(tree.precise(kAnonPages), 20 + 20 - 50 + 100 - 1000);
  EXPECT_EQ(tree.shared_updates(), 4u);
}

TEST(HpccTree, ACarryClimbsOnlyWhenTheItemReachesItsThreshold) {
  HpccTree tree = active_tree(Topology::for_cpus(64));  // 16, 4: T1 = 512
  for (int i = 0; i < 15; ++i) tree.add(update_on(0, 32));
  EXPECT_EQ(tree.residual(1, 0, kAnonPages), 480);
  EXPECT_EQ(tree.approximate(kAnonPages), 0);
  // CPU 4 feeds the same level-1 item as CPU 0 (4 items, interleaved).
  tree.add(update_on(4, 32));
  EXPECT_EQ(tree.residual(1, 0, kAnonPages), 0);
  EXPECT_EQ(tree.approximate(kAnonPages), 512);
  EXPECT_EQ(tree.carries_at_level(0), 16u);
  EXPECT_EQ(tree.carries_at_level(1), 1u);
  EXPECT_EQ(tree.shared_updates(), 17u);
}

TEST(HpccTree, CpusFeedItemsInterleaved) {
  HpccTree tree = active_tree(Topology::for_cpus(128));  // 8, 16: 16 items
  tree.add(update_on(19, 32));
  EXPECT_EQ(tree.residual(1, 3, kAnonPages), 32);  // 19 mod 16 = 3
  EXPECT_EQ(tree.residual(1, 4, kAnonPages), 0);
}

TEST(HpccTree, MembersAreIndependent) {
  HpccTree tree = active_tree(Topology::for_cpus(4));
  tree.add(update_on(3, 40, kFilePages));
  tree.add(update_on(3, 7, kShmemPages));
  EXPECT_EQ(tree.approximate(kFilePages), 32);
  EXPECT_EQ(tree.precise(kFilePages), 40);
  EXPECT_EQ(tree.approximate(kShmemPages), 0);
  EXPECT_EQ(tree.precise(kShmemPages), 7);
  EXPECT_EQ(tree.precise(kAnonPages), 0);
}

TEST(HpccTree, BoundFormula) {
  // nr_cpus (B - 1) + sum over levels l >= 1 of fed items x (T(l) - T(l-1)).
  EXPECT_EQ(*active_tree(Topology::for_cpus(1)).bound(0), 31);
  EXPECT_EQ(*active_tree(Topology::for_cpus(3)).bound(0), 3 * 31);
  EXPECT_EQ(*active_tree(Topology::for_cpus(64)).bound(0),
            64 * 31 + 4 * (512 - 32));
  EXPECT_EQ(*active_tree(Topology::for_cpus(1024)).bound(0),
            1024 * 31 + 128 * (256 - 32) + 16 * (2048 - 256));
  EXPECT_EQ(hpcc_bound(Topology::for_cpus(1024)), 89088);  // no tree needed
  // 3 CPUs feed only 3 of the 8 level-1 items.
  EXPECT_EQ(*active_tree(custom(3, {2, 8}, 32)).bound(0), 3 * 31 + 3 * 32);
  // Saturates rather than wrapping on absurd overrides: T(16) = B x 2^31.
  EXPECT_EQ(
      *active_tree(
           custom(4, {65536, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
                  std::numeric_limits<int32_t>::max()))
           .bound(0),
      std::numeric_limits<int64_t>::max());
}

TEST(HpccTree, MemoryFollowsTheKernelLayout) {
  EXPECT_EQ(HpccTree(Topology::for_cpus(1024)).bytes_per_mm(), 64u);
  // Biases 64 + root 32 + 1-byte slots.
  EXPECT_EQ(active_tree(Topology::for_cpus(1)).bytes_per_mm(), 96u + 4u);
  // 128 + 16 items of 4 x 8 bytes.
  EXPECT_EQ(active_tree(Topology::for_cpus(1024)).bytes_per_mm(),
            96u + 144u * 32u + 1024u * 4u);
  // A batch above 127 no longer fits a signed byte: s32 slots.
  EXPECT_EQ(active_tree(custom(4, {4}, 200)).bytes_per_mm(), 96u + 4u * 16u);
}

// Checks the residuals on the path of `cpu`, after each update.
void expect_path_within_thresholds(const HpccTree& tree, const Update& u) {
  for (int l = 0; l < tree.depth(); ++l) {
    const int64_t r = tree.residual(l, u.cpu, u.member);
    ASSERT_LT(r < 0 ? -r : r, tree.threshold(l))
        << "level " << l << " on cpu " << u.cpu << " escaped its threshold";
  }
}

void run_random(const Topology& t, uint64_t seed) {
  // Huge deltas climb to the root and take the division path.
  constexpr int32_t kHuge = 1 << 16;
  for (int32_t max_delta : {1, 32, 512, kHuge}) {
    HpccTree tree = active_tree(t);
    testing::InvariantChecker check(tree);
    const uint64_t every = testing::precise_interval(t.nr_cpus);
    check.set_precise_every(every);
    uint64_t n = 0;
    for (const Update& u : testing::random_stream(seed + max_delta, 20000,
                                                  t.nr_cpus, max_delta)) {
      check.apply(u);
      expect_path_within_thresholds(tree, u);
      if (++n % every == 0) {
        ASSERT_EQ(tree.check_invariants(), "");
      }
    }
    check.check_precise();
    ASSERT_EQ(tree.check_invariants(), "");
    if (max_delta == kHuge) {
      EXPECT_GT(tree.carries_at_level(tree.depth() - 1), 0u) << "root unused";
    }
  }
}

class HpccRandom : public ::testing::TestWithParam<uint32_t> {};

TEST_P(HpccRandom, InvariantsHoldAfterEveryUpdate) {
  const uint32_t cpus = GetParam();
  run_random(Topology::for_cpus(cpus), cpus * 7919u);
}

INSTANTIATE_TEST_SUITE_P(Cpus, HpccRandom,
                         ::testing::ValuesIn(testing::kCpuCounts));

TEST(HpccRandomOverride, InvariantsHoldOnShapesThatAreNotPowersOfTwo) {
  run_random(custom(10, {4, 3}, 5), 1);
  run_random(custom(100, {3, 5, 7}, 16), 2);
  run_random(custom(3, {2, 8}, 200), 3);
}

// Drives every residual a CPU feeds to its extreme with sign `sign`: the
// items top level first, each with one amount that passes untouched through
// the still empty levels below, then every slot to B - 1.
std::vector<Update> extreme_stream(const HpccTree& tree, uint32_t nr_cpus,
                                   int sign) {
  std::vector<Update> out;
  for (int l = tree.depth() - 1; l >= 1; --l) {
    const int64_t amount = tree.threshold(l) - tree.threshold(l - 1);
    EXPECT_LE(amount, std::numeric_limits<int32_t>::max());
    const uint64_t fed = std::min<uint64_t>(tree.items(l), nr_cpus);
    for (uint32_t cpu = 0; cpu < fed; ++cpu)
      out.push_back(update_on(cpu, static_cast<int32_t>(sign * amount)));
  }
  const int32_t slot = static_cast<int32_t>(tree.threshold(0) - 1);
  for (uint32_t cpu = 0; cpu < nr_cpus; ++cpu)
    out.push_back(update_on(cpu, sign * slot));
  return out;
}

void expect_bound_reached(const Topology& t) {
  for (int sign : {1, -1}) {
    HpccTree tree = active_tree(t);
    testing::InvariantChecker check(tree);
    check.set_precise_every(std::numeric_limits<uint64_t>::max());
    check.apply_all(extreme_stream(tree, t.nr_cpus, sign));
    const int64_t bound = *tree.bound(kAnonPages);
    EXPECT_EQ(tree.approximate(kAnonPages), 0) << "nothing reached the root";
    EXPECT_EQ(tree.precise(kAnonPages) - tree.approximate(kAnonPages),
              sign * bound)
        << t.nr_cpus << " CPUs";
    EXPECT_EQ(check.largest_error(), bound);
    EXPECT_EQ(tree.check_invariants(), "");
  }
}

class HpccAdversarial : public ::testing::TestWithParam<uint32_t> {};

TEST_P(HpccAdversarial, ErrorReachesTheBoundExactlyWithBothSigns) {
  expect_bound_reached(Topology::for_cpus(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Cpus, HpccAdversarial,
                         ::testing::ValuesIn(testing::kCpuCounts));

TEST(HpccAdversarialOverride, ErrorReachesTheBoundOnOverriddenShapes) {
  expect_bound_reached(custom(10, {4, 3}, 5));
  expect_bound_reached(custom(100, {3, 5, 7}, 16));
  expect_bound_reached(custom(3, {2, 8}, 200));
  expect_bound_reached(custom(384, {8, 8, 8}, 64));
}

TEST(HpccHysteresis, UnitOscillationAtASlotBoundaryCarriesOnce) {
  HpccTree tree = active_tree(Topology::for_cpus(1024));
  tree.add(update_on(5, 31));
  tree.add(update_on(5, 1));  // 32: one carry into level 1
  ASSERT_EQ(tree.carries_at_level(0), 1u);
  ASSERT_EQ(tree.residual(1, 5, kAnonPages), 32);
  for (int i = 0; i < 5000; ++i) {
    tree.add(update_on(5, -1));
    tree.add(update_on(5, 1));
  }
  for (int l = 0; l < tree.depth(); ++l)
    EXPECT_EQ(tree.carries_at_level(l), l == 0 ? 1u : 0u) << "level " << l;
  EXPECT_EQ(tree.shared_updates(), 1u);
  EXPECT_EQ(tree.precise(kAnonPages), 32);
}

TEST(HpccHysteresis, OscillationAtAnItemBoundaryDoesNotClimbFurther) {
  HpccTree tree = active_tree(Topology::for_cpus(64));  // T1 = 512
  for (int i = 0; i < 16; ++i) tree.add(update_on(0, 32));
  ASSERT_EQ(tree.carries_at_level(1), 1u);
  ASSERT_EQ(tree.approximate(kAnonPages), 512);
  for (int i = 0; i < 5000; ++i) {
    tree.add(update_on(0, -32));
    tree.add(update_on(0, 32));
  }
  EXPECT_EQ(tree.carries_at_level(1), 1u);
  EXPECT_EQ(tree.approximate(kAnonPages), 512);
}

TEST(HpccLazy, ExactAndUnallocatedBeforeTheSecondThread) {
  HpccTree tree(Topology::for_cpus(1024));
  testing::InvariantChecker check(tree);
  std::mt19937_64 rng(7);
  uint64_t by_others = 0;
  for (Update u : testing::random_stream(11, 5000, 1024, 512)) {
    if (rng() % 4 == 0) {
      u.flags = 0;
      ++by_others;
    }
    check.apply(u);  // bound 0: approximate == exact after every update
  }
  for (LifeKind k : {LifeKind::kFault, LifeKind::kTaskExit,
                     LifeKind::kCpuSwitch, LifeKind::kRusageQuery})
    check.event({k, 1, 3});
  EXPECT_FALSE(tree.activated());
  EXPECT_EQ(*tree.bound(kAnonPages), 0);
  EXPECT_EQ(tree.bytes_per_mm(), 64u);
  EXPECT_EQ(tree.read_cost(), (ReadCost{1, 1})) << "the biases alone";
  EXPECT_EQ(tree.shared_updates(), by_others) << "only the atomic bias";
}

TEST(HpccLazy, TheSecondThreadActivatesTheTreeAndKeepsTheBiases) {
  HpccTree tree(Topology::for_cpus(64));
  tree.add(update_on(3, 100));
  tree.add(remote_update_on(0, -7));
  tree.on_event(kSecondThread);
  EXPECT_TRUE(tree.activated());
  EXPECT_EQ(tree.bytes_per_mm(), 96u + 4u * 32u + 64u * 4u);
  // The root and biases; the precise read adds 4 items and 64 slots.
  EXPECT_EQ(tree.read_cost(), (ReadCost{1, 1 + 4 + 64}));
  EXPECT_EQ(*tree.bound(kAnonPages), 64 * 31 + 4 * 480);
  EXPECT_EQ(tree.approximate(kAnonPages), 93);
  // Owner and other tasks alike now go to the CPU's slot.
  tree.add(update_on(3, 5));
  tree.add(remote_update_on(0, -2));
  EXPECT_EQ(tree.approximate(kAnonPages), 93);
  EXPECT_EQ(tree.residual(0, 3, kAnonPages), 5);
  EXPECT_EQ(tree.residual(0, 0, kAnonPages), -2);
  EXPECT_EQ(tree.precise(kAnonPages), 96);
  EXPECT_EQ(tree.shared_updates(), 1u);
  // A third thread finds the tree already there.
  tree.on_event(kSecondThread);
  EXPECT_EQ(tree.residual(0, 3, kAnonPages), 5);
  EXPECT_EQ(tree.precise(kAnonPages), 96);
}

TEST(HpccLazy, RandomStreamAcrossTheActivation) {
  HpccTree tree(Topology::for_cpus(33));
  testing::InvariantChecker check(tree);
  const std::vector<Update> stream = testing::random_stream(5, 20000, 33, 64);
  for (size_t i = 0; i < stream.size(); ++i) {
    if (i == stream.size() / 2) {
      EXPECT_EQ(check.largest_error(), 0);
      check.event(kSecondThread);
    }
    check.apply(stream[i]);
  }
  check.check_precise();
  EXPECT_GT(check.largest_error(), 0);
  EXPECT_EQ(tree.check_invariants(), "");
}

}  // namespace
}  // namespace rssaudit
