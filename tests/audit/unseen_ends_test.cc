#include "audit/unseen_ends.h"

#include <gtest/gtest.h>

#include <vector>

namespace rssaudit {
namespace {

TEST(UnseenEnds, AnEndWaitsForTheDrainToCatchUpWithWhenItWasFoundGone) {
  UnseenEnds ends;
  ends.add(MmKey{0x1000, 1}, 500);
  ends.add(MmKey{0x2000, 2}, 900);
  std::vector<uint64_t> ended;
  const auto end = [&](const MmKey& key) { ended.push_back(key.addr); };
  ends.apply(500, end);  // records up to 500 handed over: not past it yet
  EXPECT_TRUE(ended.empty());
  ends.apply(700, end);
  EXPECT_EQ(ended, std::vector<uint64_t>{0x1000});
  EXPECT_EQ(ends.waiting(), 1u);
  ends.apply(901, end);
  EXPECT_EQ(ended, (std::vector<uint64_t>{0x1000, 0x2000}));
  EXPECT_EQ(ends.waiting(), 0u);
  ends.apply(2000, end);
  EXPECT_EQ(ended.size(), 2u) << "each end once";
}

}  // namespace
}  // namespace rssaudit
