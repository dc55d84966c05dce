// DrainThread over streams in memory: every record reaches the taker in the
// streams' order, with watermarks after what was published before them,
// and a full queue holds the thread back instead of losing a record.
#include "capture/drain_thread.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/capture/memory_streams.h"

namespace rssaudit {
namespace {

using Seqs = std::vector<uint64_t>;

// Polls often: the tests wait for the thread, not for a 50 ms sleep.
constexpr PollPacing kPacing{100'000, 1'000'000, 16};

// What `t` hands over until `records` records and then a watermark have
// come (or 10 s pass); the watermarks' times in `watermarks`.
Seqs take_until(DrainThread& t, size_t records,
                std::vector<uint64_t>* watermarks = nullptr) {
  Seqs seqs;
  bool marked = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(seqs.size() >= records && marked) &&
         std::chrono::steady_clock::now() < deadline) {
    t.take(
        1000,
        [&](const rss_event& e) {
          seqs.push_back(e.mm - 0x1000);
          marked = false;
        },
        [&](uint64_t ns) {
          if (watermarks) watermarks->push_back(ns);
          marked = true;
        });
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return seqs;
}

TEST(DrainThread, HandsOverEveryRecordInSequenceOrderThenAWatermark) {
  MemoryStreams s(3, 16);
  for (uint64_t seq : {0, 1, 2, 5, 7}) s.write(0, seq);
  for (uint64_t seq : {3, 4, 6, 9}) s.write(1, seq);
  s.write(2, 8);
  StreamReader r = s.reader();
  DrainThread t(r, 64, kPacing);
  std::vector<uint64_t> marks;
  EXPECT_EQ(take_until(t, 10, &marks), (Seqs{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  ASSERT_FALSE(marks.empty());
  // The thread freed every slot for the producers.
  EXPECT_EQ(s.at(0).tail, 5u);
  EXPECT_EQ(s.at(1).tail, 4u);
  EXPECT_EQ(s.at(2).tail, 1u);
}

TEST(DrainThread, NoWatermarkWhileANumberIsMissing) {
  MemoryStreams s(2, 16);
  s.write(0, 0);
  s.write(1, 1, false);  // taken, still being written
  s.write(0, 2);
  StreamReader r = s.reader();
  DrainThread t(r, 64, kPacing);
  Seqs seqs;
  bool marked = false;
  for (int i = 0; i < 20; ++i) {  // ~20 ms: many polls, far below the skip
    t.take(
        1000, [&](const rss_event& e) { seqs.push_back(e.mm - 0x1000); },
        [&](uint64_t) { marked = true; });
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(seqs, Seqs{0});
  EXPECT_FALSE(marked) << "record 1 may hold an add from before the poll";
  s.publish(1);
  EXPECT_EQ(take_until(t, 2), (Seqs{1, 2}));
}

TEST(DrainThread, AFullQueueHoldsTheThreadBackAndLosesNothing) {
  MemoryStreams s(2, 64);
  for (uint64_t seq = 0; seq < 100; ++seq) s.write(seq % 2, seq);
  StreamReader r = s.reader();
  DrainThread t(r, 8, kPacing);  // 8 items: the thread must wait
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT(t.waits(), 0u);
  Seqs want;
  for (uint64_t seq = 0; seq < 100; ++seq) want.push_back(seq);
  EXPECT_EQ(take_until(t, 100), want);
}

TEST(DrainThread, StopHandsOverWhatTheThreadStillHeld) {
  MemoryStreams s(1, 64);
  for (uint64_t seq = 0; seq < 40; ++seq) s.write(0, seq);
  StreamReader r = s.reader();
  DrainThread t(r, 8, kPacing);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Seqs seqs;
  t.stop([&](const rss_event& e) { seqs.push_back(e.mm - 0x1000); },
         [](uint64_t) {});
  // The thread's poll in progress ends before it stops; nothing is lost
  // of what it took from the streams.
  ASSERT_FALSE(seqs.empty());
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i);
  EXPECT_EQ(s.at(0).tail, seqs.size());
}

}  // namespace
}  // namespace rssaudit
