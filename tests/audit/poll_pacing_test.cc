#include "audit/poll_pacing.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

constexpr PollPacing kPacing{1'000'000, 50'000'000, 75'000};

TEST(PollPacing, AnIdleRingIsPolledAtTheLongestPeriod) {
  EXPECT_EQ(next_poll_ns(kPacing, 0, 50'000'000), 50'000'000u);
  EXPECT_EQ(next_poll_ns(kPacing, 0, 0), 50'000'000u);
}

TEST(PollPacing, ARateThatWouldNotFillTheBatchKeepsTheLongestPeriod) {
  // 1 M records/s: 50 ms of them is 50 000 records, under the batch.
  EXPECT_EQ(next_poll_ns(kPacing, 10'000, 10'000'000), 50'000'000u);
}

TEST(PollPacing, AFasterRateIsPolledWhenTheBatchWouldBeFull) {
  // 3 M records/s fill 75 000 records in 25 ms.
  EXPECT_EQ(next_poll_ns(kPacing, 30'000, 10'000'000), 25'000'000u);
  // 10 M records/s: 7.5 ms.
  EXPECT_EQ(next_poll_ns(kPacing, 100'000, 10'000'000), 7'500'000u);
}

TEST(PollPacing, NeverSoonerThanTheShortestPeriod) {
  EXPECT_EQ(next_poll_ns(kPacing, 262'144, 1'000), 1'000'000u);
}

}  // namespace
}  // namespace rssaudit
