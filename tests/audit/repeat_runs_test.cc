#include "audit/repeat_runs.h"

#include <gtest/gtest.h>

#include <vector>

namespace rssaudit {
namespace {

// An anon update by task 7 in its own mm, untimed unless `start_ns`.
rss_event update(uint16_t cpu, int32_t slot, uint16_t faults,
                 int64_t count = 0, uint64_t start_ns = 0) {
  rss_event e{};
  e.kind = RSS_EV_UPDATE;
  e.mm = 0xffff888000001000;
  e.member = 1;
  e.tid = e.tgid = 7;
  e.flags = RSS_EVF_OWNER | RSS_EVF_IN_FAULT;
  e.preempt = RSS_PREEMPT_KNOWN | 2;
  e.cpu = cpu;
  e.slot = slot;
  e.faults = faults;
  e.aux = count;
  e.start_ns = start_ns;
  return e;
}

std::vector<bool> fed(RepeatRuns& runs, const std::vector<rss_event>& es) {
  std::vector<bool> out;
  for (const rss_event& e : es) out.push_back(runs.repeats(e));
  return out;
}

TEST(RepeatRuns, AFaultBurstIsTwoRecordsAndItsRepeats) {
  RepeatRuns runs(2);
  std::vector<rss_event> burst = {update(0, 1, 10, 0, 5'000)};
  for (int i = 2; i <= 6; ++i)
    burst.push_back(update(0, i, static_cast<uint16_t>(9 + i)));
  // The first two set the move; the rest repeat it.
  EXPECT_EQ(fed(runs, burst),
            (std::vector<bool>{false, false, true, true, true, true}));
}

TEST(RepeatRuns, AnythingNewEndsARun) {
  RepeatRuns runs(2);
  (void)fed(runs, {update(0, 1, 1), update(0, 2, 2), update(0, 3, 3)});
  rss_event other_task = update(0, 4, 4);
  other_task.tid = 8;
  EXPECT_FALSE(runs.repeats(other_task));
  (void)fed(runs, {update(0, 5, 5), update(0, 6, 6), update(0, 7, 7)});
  EXPECT_FALSE(runs.repeats(update(0, 8, 8, 0, 9'000)));  // timed
  (void)fed(runs, {update(0, 9, 9), update(0, 10, 10)});
  EXPECT_FALSE(runs.repeats(update(0, 11, 11, 32)));  // count moved
  (void)fed(runs, {update(0, 12, 12, 32), update(0, 13, 13, 32)});
  EXPECT_FALSE(runs.repeats(update(0, 525, 14, 32)));  // a THP: +512
  (void)fed(runs, {update(0, 526, 15, 32), update(0, 527, 16, 32)});
  EXPECT_FALSE(runs.repeats(update(0, 528, 18, 32)));  // two faults
  rss_event file = update(0, 529, 19, 32);
  file.member = 0;
  EXPECT_FALSE(runs.repeats(file));
}

TEST(RepeatRuns, EachCpuHasItsOwnRuns) {
  RepeatRuns runs(2);
  EXPECT_EQ(fed(runs, {update(0, 1, 1), update(1, -1, 1), update(0, 2, 2),
                       update(1, -2, 2), update(0, 3, 3), update(1, -3, 3)}),
            (std::vector<bool>{false, false, false, false, true, true}));
  rss_event beyond = update(2, 4, 4);
  EXPECT_FALSE(runs.repeats(beyond));
}

TEST(RepeatRuns, BeforeSixTwoACachedUpdateRepeatsItsDelta) {
  RepeatRuns runs(1);
  std::vector<rss_event> cached;
  for (uint16_t i = 0; i < 4; ++i) {
    rss_event e = update(0, 1, i, 40);
    e.flags |= RSS_EVF_CACHED;
    cached.push_back(e);
  }
  EXPECT_EQ(fed(runs, cached), (std::vector<bool>{false, false, true, true}));
  rss_event atomic = update(0, 0, 4, 44, 7'000);
  atomic.flags = RSS_EVF_OWNER | RSS_EVF_ATOMIC;
  EXPECT_FALSE(runs.repeats(atomic));
}

}  // namespace
}  // namespace rssaudit
