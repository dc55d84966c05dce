#include "daemon/loop_delay.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

TEST(LoopDelay, KeepsTheLongestWaitOfTheLastMinuteAndForgetsOlderOnes) {
  LoopDelay delay;
  const uint64_t start = 1000 * kSecond;
  delay.note(start, start + 300'000'000);           // 0.3 s late
  delay.note(start + 5 * kSecond, start + 5 * kSecond + 10'000'000);
  EXPECT_EQ(delay.last_minute_ns(start + 10 * kSecond), 300'000'000u);
  // A minute on, the 0.3 s has aged out; the 10 ms is still in.
  EXPECT_EQ(delay.last_minute_ns(start + 62 * kSecond), 10'000'000u);
  EXPECT_EQ(delay.last_minute_ns(start + 70 * kSecond), 0u);
}

TEST(LoopDelay, AnEarlyProbeIsNoWaitAndTakingResetsTheSummaryMaximum) {
  LoopDelay delay;
  delay.note(5 * kSecond, 5 * kSecond - 1000);  // fired before its time
  EXPECT_EQ(delay.take(), 0u);
  delay.note(6 * kSecond, 6 * kSecond + 2 * kSecond);
  delay.note(7 * kSecond, 7 * kSecond + 1);
  EXPECT_EQ(delay.take(), 2 * kSecond);
  EXPECT_EQ(delay.take(), 0u);
}

TEST(LoopDelay, ASlotReusedAMinuteLaterStartsFromZero) {
  LoopDelay delay;
  delay.note(3 * kSecond, 3 * kSecond + 900'000'000);
  // 63 s falls in the same ring slot as 3 s.
  delay.note(63 * kSecond, 63 * kSecond + 1'000'000);
  EXPECT_EQ(delay.last_minute_ns(63 * kSecond + 1), 1'000'000u);
}

}  // namespace
}  // namespace rssaudit
