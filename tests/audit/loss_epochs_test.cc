#include "audit/loss_epochs.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace rssaudit {
namespace {

TEST(LossEpoch, StateIsVoidedOnceAfterAnyNumberOfLosses) {
  LossEpoch losses;
  uint64_t a = losses.now(), b = losses.now();
  EXPECT_FALSE(losses.stale(a));
  EXPECT_FALSE(losses.catch_up(a));
  losses.lose();
  losses.lose();
  losses.lose();
  EXPECT_TRUE(losses.stale(a));
  EXPECT_TRUE(losses.catch_up(a));   // voided once for three losses
  EXPECT_FALSE(losses.catch_up(a));  // then current
  EXPECT_FALSE(losses.stale(a));
  EXPECT_TRUE(losses.stale(b));  // another holder is not caught up by a's
  EXPECT_EQ(losses.now(), 3u);
}

TEST(UnplacedDrops, ARiseWithoutAFlaggedRecordIsALossToPlace) {
  UnplacedDrops drops;
  EXPECT_FALSE(drops.after_drain(0));  // nothing lost
  EXPECT_TRUE(drops.after_drain(5));   // lost, its flagged record not come
  EXPECT_FALSE(drops.after_drain(5));  // no new loss
  drops.placed();                      // the flagged record came ...
  EXPECT_FALSE(drops.after_drain(9));  // ... so the rise is placed already
  EXPECT_TRUE(drops.after_drain(12));  // a new rise, unflagged
  drops.placed();                      // a flagged record with no rise
  EXPECT_FALSE(drops.after_drain(12));
  EXPECT_FALSE(drops.after_drain(12));
}

}  // namespace
}  // namespace rssaudit
