// The snapshot iterator's output, decoded (audit/counter_snapshot.h).
#include "audit/counter_snapshot.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace rssaudit {
namespace {

void append(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

// An entry as the iterator writes it: the head, then its slots.
std::vector<uint8_t> entry(uint64_t id, std::vector<rss_snapshot_slot> slots) {
  rss_snapshot head{};
  head.id = id;
  head.mm = 0x1000 * id;
  head.flags = RSS_SNAP_PERCPU;
  head.slots = static_cast<uint32_t>(slots.size());
  std::vector<uint8_t> out;
  append(out, &head, sizeof(head));
  append(out, slots.data(), slots.size() * sizeof(rss_snapshot_slot));
  return out;
}

TEST(SnapshotDecoder, EntriesCutAnywhereComeOutWhole) {
  std::vector<uint8_t> all = entry(1, {{0, 1, 0, 5}, {1, 1, 0, -3}});
  const std::vector<uint8_t> second = entry(2, {});
  all.insert(all.end(), second.begin(), second.end());
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    SnapshotDecoder d;
    std::vector<CounterSnapshot> out;
    ASSERT_TRUE(d.feed({all.data(), cut}, out));
    ASSERT_TRUE(d.feed({all.data() + cut, all.size() - cut}, out));
    ASSERT_EQ(out.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(out[0].head.id, 1u);
    ASSERT_EQ(out[0].slots.size(), 2u);
    EXPECT_EQ(out[0].slots[1].value, -3);
    EXPECT_EQ(out[1].head.id, 2u);
    EXPECT_TRUE(out[1].slots.empty());
    EXPECT_EQ(d.pending(), 0u);
  }
}

TEST(SnapshotDecoder, AnEntryOfTooManySlotsIsAnErrorNamingItsOffset) {
  std::vector<uint8_t> bytes = entry(1, {});
  std::vector<uint8_t> bad = entry(2, {});
  rss_snapshot head;
  std::memcpy(&head, bad.data(), sizeof(head));
  head.slots = RSS_SNAPSHOT_MAX_SLOTS + 1;
  std::memcpy(bad.data(), &head, sizeof(head));
  bytes.insert(bytes.end(), bad.begin(), bad.end());
  SnapshotDecoder d;
  std::vector<CounterSnapshot> out;
  const Result<void> r = d.feed(bytes, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("byte 112"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(d.pending(), 0u);
}

TEST(SnapshotQueue, TakesItsIdDroppingOlderOnesWhoseRecordsWereLost) {
  SnapshotQueue q;
  for (uint64_t id : {3, 5, 6}) {
    CounterSnapshot s;
    s.head.id = id;
    q.push(s);
  }
  EXPECT_FALSE(q.take(2)) << "never written (read again under a later id)";
  EXPECT_EQ(q.size(), 3u);
  const auto five = q.take(5);
  ASSERT_TRUE(five);
  EXPECT_EQ(five->head.id, 5u);
  EXPECT_EQ(q.orphans(), 1u) << "3's record never came";
  EXPECT_EQ(q.size(), 1u);
}

}  // namespace
}  // namespace rssaudit
