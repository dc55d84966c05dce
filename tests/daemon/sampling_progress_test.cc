#include "daemon/sampling_progress.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr int64_t kWall = 1'700'000'000'000'000'000;
// A tick a second: 2 s.
const uint64_t kThreshold = sampling_gap_threshold_ns(1.0);

// Ticks a second apart, slices 50 ms apart: no gap.
TEST(SamplingProgress, TicksAndSlicesAtTheirPaceAreNoGap) {
  SamplingProgress p;
  for (uint64_t t = 1000 * kMs; t < 10'000 * kMs; t += 50 * kMs)
    EXPECT_FALSE(p.step(t, kWall + int64_t(t), kThreshold).has_value()) << t;
  EXPECT_FALSE(p.step(11'900 * kMs, kWall + int64_t{11'900 * kMs}, kThreshold));
}

// A stop between ticks, between slices or inside one: each leaves two
// signs 30 s apart, and the gap runs from the first sign's wall time to
// the second's.
TEST(SamplingProgress, AStopAnywhereBetweenTwoSignsIsAGapOfItsLength) {
  SamplingProgress p;
  EXPECT_FALSE(p.step(1000 * kMs, kWall + 1000 * int64_t{kMs}, kThreshold));
  EXPECT_FALSE(p.step(1050 * kMs, kWall + 1050 * int64_t{kMs}, kThreshold));
  const auto gap =
      p.step(31'050 * kMs, kWall + 31'050 * int64_t{kMs}, kThreshold);
  ASSERT_TRUE(gap.has_value());
  EXPECT_EQ(gap->start_ns, kWall + 1050 * int64_t{kMs});
  EXPECT_EQ(gap->end_ns, kWall + 31'050 * int64_t{kMs});
  // Progress again: the next sign at the ordinary pace is no second gap.
  EXPECT_FALSE(p.step(31'100 * kMs, kWall + 31'100 * int64_t{kMs}, kThreshold));
}

// The first sign has nothing before it; a threshold's worth exactly is no
// gap. Ticks of 0.1 s still allow a second.
TEST(SamplingProgress, TheFirstSignAndTheThresholdItselfAreNoGap) {
  SamplingProgress p;
  EXPECT_FALSE(p.step(99'000 * kMs, kWall, kThreshold));
  EXPECT_FALSE(p.step(101'000 * kMs, kWall + 2000 * int64_t{kMs}, kThreshold));
  EXPECT_TRUE(p.step(103'001 * kMs, kWall + 4001 * int64_t{kMs}, kThreshold));
  EXPECT_EQ(sampling_gap_threshold_ns(0.1), 1000 * kMs);
  EXPECT_EQ(sampling_gap_threshold_ns(5), 10'000 * kMs);
}

}  // namespace
}  // namespace rssaudit
