// StreamReader over memory laid out as the BPF side lays out its maps:
// the merge of per-CPU streams into one sequence, holes, skips, limits and
// the positions it hands back to the producers.
#include "capture/stream_reader.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/capture/memory_streams.h"

namespace rssaudit {
namespace {

// The sequence numbers the reader hands over (at most `max`).
// `now_ns`: the drain's time (only how long a number is missing uses it).
std::vector<uint64_t> drain(StreamReader& r, size_t max = 1000,
                            uint64_t now_ns = 1) {
  std::vector<uint64_t> seqs;
  r.consume(max, now_ns,
            [&](const rss_event& e) { seqs.push_back(e.mm - 0x1000); });
  return seqs;
}

using Seqs = std::vector<uint64_t>;

TEST(StreamReader, MergesTheCpusStreamsInSequenceOrder) {
  MemoryStreams s(3, 16);
  // Runs on one CPU, alternation, and a CPU that joins late.
  for (uint64_t seq : {0, 1, 2, 5, 7}) s.write(0, seq);
  for (uint64_t seq : {3, 4, 6, 9}) s.write(1, seq);
  s.write(2, 8);
  StreamReader r = s.reader();
  EXPECT_EQ(drain(r), (Seqs{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(drain(r), Seqs{});
  // Every slot is handed back to the producers.
  EXPECT_EQ(s.at(0).tail, 5u);
  EXPECT_EQ(s.at(1).tail, 4u);
  EXPECT_EQ(s.at(2).tail, 1u);
  EXPECT_EQ(r.unpublished(), 0u);
}

TEST(StreamReader, WaitsForANumberStillBeingWritten) {
  MemoryStreams s(2, 16);
  s.write(0, 0);
  s.write(1, 1, /*publish=*/false);  // CPU 1's program is still writing
  s.write(0, 2);
  s.write(0, 3);
  StreamReader r = s.reader();
  EXPECT_EQ(drain(r), Seqs{0});
  EXPECT_TRUE(r.held_back());
  EXPECT_EQ(s.at(0).tail, 1u) << "2 and 3 stay in the stream";
  s.publish(1);
  EXPECT_EQ(drain(r), (Seqs{1, 2, 3}));
  EXPECT_FALSE(r.held_back());
  EXPECT_EQ(r.unpublished(), 0u);
}

TEST(StreamReader, SkipsANumberThatNeverComesAndCountsIt) {
  constexpr uint64_t kStall = StreamReader::kStallNs;
  MemoryStreams s(2, 16);
  s.write(0, 0);
  s.write(1, 2);  // 1 was taken and never published
  s.write(1, 3);
  StreamReader r = s.reader();
  EXPECT_EQ(drain(r, 1000, 1000), Seqs{0});
  EXPECT_TRUE(r.held_back());
  // However many drains come, until kStallNs after the hole was seen.
  for (uint64_t t : {uint64_t{2000}, kStall / 2, 1000 + kStall - 1}) {
    EXPECT_EQ(drain(r, 1000, t), Seqs{}) << "at " << t << " it still waits";
    EXPECT_TRUE(r.held_back());
  }
  EXPECT_EQ(drain(r, 1000, 1000 + kStall), (Seqs{2, 3}));
  EXPECT_FALSE(r.held_back());
  EXPECT_EQ(r.unpublished(), 1u);
  // The wait starts again at the next hole.
  s.write(0, 5);
  EXPECT_EQ(drain(r, 1000, 5 * kStall), Seqs{});
  s.write(1, 4);
  EXPECT_EQ(drain(r, 1000, 5 * kStall + 1), (Seqs{4, 5}));
  EXPECT_EQ(r.unpublished(), 1u);
}

TEST(StreamReader, HandsOverAtMostMaxAndKeepsTheRest) {
  MemoryStreams s(2, 16);
  for (uint64_t seq = 0; seq < 6; ++seq) s.write(seq % 2, seq);
  StreamReader r = s.reader();
  EXPECT_EQ(drain(r, 4), (Seqs{0, 1, 2, 3}));
  EXPECT_EQ(s.at(0).tail, 2u);
  EXPECT_EQ(s.at(1).tail, 2u);
  EXPECT_EQ(drain(r, 4), (Seqs{4, 5}));
}

TEST(StreamReader, FollowsStreamsAroundTheirSlots) {
  MemoryStreams s(2, 4);
  StreamReader r = s.reader();
  uint64_t seq = 0;
  Seqs expected;
  // 5 laps of each CPU's 4 slots, drained after every 3 records.
  for (int round = 0; round < 13; ++round) {
    Seqs want;
    for (int i = 0; i < 3; ++i, ++seq) {
      s.write(uint32_t(seq / 2 % 2), seq);
      want.push_back(seq);
    }
    ASSERT_EQ(drain(r), want) << "round " << round;
  }
  EXPECT_EQ(s.at(0).tail + s.at(1).tail, seq);
}

// An owner's anon update by task 7 of mm 0x5000, as on_rss_stat writes it.
void make_update(rss_event& e, int32_t slot, uint16_t faults,
                 uint32_t repeats = 0) {
  e.kind = RSS_EV_UPDATE;
  e.mm = 0x5000;
  e.member = 1;
  e.tid = e.tgid = 7;
  e.flags = RSS_EVF_OWNER | RSS_EVF_IN_FAULT;
  e.slot = slot;
  e.faults = faults;
  e.span_ns = repeats;
}

TEST(StreamReader, HandsOverEachRepeatAsItsOwnUpdateAndClosesTheRecord) {
  MemoryStreams s(2, 16);
  s.write(0, 0);
  make_update(s.last(0), 3, 40);
  s.write(0, 1);
  make_update(s.last(0), 4, 41, /*repeats=*/3);
  s.last(0).flags |= RSS_EVF_AFTER_LOSS;
  s.write(1, 2);
  StreamReader r = s.reader();
  std::vector<rss_event> got;
  r.consume(100, 1, [&](const rss_event& e) { got.push_back(e); });
  ASSERT_EQ(got.size(), 6u);
  // The record, then its repeats: each moves the slot and the faults on
  // by what the record moved them (+1, +1), untimed, the loss said once.
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(got[i].slot, static_cast<int32_t>(3 + i)) << i;
    EXPECT_EQ(got[i].faults, 40 + i) << i;
    EXPECT_EQ(got[i].span_ns, 0u) << i;
    EXPECT_EQ(got[i].mm, 0x5000u) << i;
    EXPECT_EQ(bool(got[i].flags & RSS_EVF_AFTER_LOSS), i == 1) << i;
  }
  EXPECT_EQ(got[5].cpu, 1u);  // the next record in sequence
  EXPECT_EQ(r.repeats(), 3u);
  EXPECT_EQ(r.unexpanded(), 0u);
  // Closed: a repeat that comes now takes a record of its own.
  EXPECT_EQ(s.last(0).span_ns, RSS_REPEATS_CLOSED | 3u);
  EXPECT_EQ(s.last(1).span_ns, 0u) << "no update: left as it was";
  EXPECT_EQ(s.at(0).tail, 2u);
}

TEST(StreamReader, RepeatsOfARecordThatFollowsNoSuchUpdateAreCountedLost) {
  MemoryStreams s(1, 16);
  s.write(0, 0);
  make_update(s.last(0), 3, 40);
  s.write(0, 1);
  make_update(s.last(0), 4, 41, /*repeats=*/2);
  s.last(0).tid = 8;  // another task's: its move is not known
  StreamReader r = s.reader();
  std::vector<rss_event> got;
  r.consume(100, 1, [&](const rss_event& e) { got.push_back(e); });
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(r.repeats(), 0u);
  EXPECT_EQ(r.unexpanded(), 2u);
  EXPECT_EQ(r.unpublished(), 0u);
}

}  // namespace
}  // namespace rssaudit
