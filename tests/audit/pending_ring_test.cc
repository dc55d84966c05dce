#include "audit/pending_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

namespace rssaudit {
namespace {

struct Entry {
  uint64_t value = 0;
  std::unique_ptr<int> owned;  // moved, never copied, when the ring grows
};

TEST(PendingRing, KeepsFifoOrderAndNumbersAcrossGrowthAndWrap) {
  PendingRing<Entry> ring(4);
  uint64_t next_out = 0;
  // Interleave pushes and pops so the head wraps before and after growth.
  for (uint64_t in = 0; in < 100; ++in) {
    Entry& e = ring.push();
    e.value = in;
    e.owned = std::make_unique<int>(static_cast<int>(in));
    EXPECT_EQ(ring.pushed(), in + 1);
    if (in % 3 == 2) {
      ASSERT_FALSE(ring.empty());
      EXPECT_EQ(ring.front().value, next_out);
      EXPECT_EQ(*ring.front().owned, static_cast<int>(next_out));
      ring.pop_front();
      ++next_out;
    }
  }
  EXPECT_EQ(ring.size(), 100 - next_out);
  for (size_t i = 0; i < ring.size(); ++i)
    EXPECT_EQ(ring.at(i).value, next_out + i);
  while (!ring.empty()) {
    EXPECT_EQ(ring.front().value, next_out++);
    ring.pop_front();
  }
  EXPECT_EQ(next_out, 100u);
}

TEST(PendingRing, FindsAQueuedEntryByItsNumberAndNoOther) {
  PendingRing<Entry> ring(2);
  for (uint64_t in = 0; in < 10; ++in) ring.push().value = in * 10;
  for (int i = 0; i < 4; ++i) ring.pop_front();
  // Numbers 4..9 queued; 0..3 gone; 10 not pushed yet.
  for (uint64_t seq = 0; seq < 12; ++seq) {
    EXPECT_EQ(ring.holds(seq), seq >= 4 && seq < 10) << seq;
    if (ring.holds(seq)) {
      EXPECT_EQ(ring.by_seq(seq).value, seq * 10);
    }
  }
}

}  // namespace
}  // namespace rssaudit
