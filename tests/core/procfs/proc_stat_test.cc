#include "core/procfs/proc_stat.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/core/procfs/proc_samples.h"
#include "tests/core/procfs/proc_test_support.h"

namespace rssaudit {
namespace {

// The python3 sample with its comm replaced.
std::string stat_with_comm(std::string_view comm) {
  std::string text(samples::kStat);
  text.replace(text.find("(python3)"), 9, "(" + std::string(comm) + ")");
  return text;
}

// The python3 sample with field `field` (>= 3) replaced by `value`.
std::string stat_with_field(int field, std::string_view value) {
  std::string text(samples::kStat);
  size_t begin = text.find(") ") + 2;
  for (int f = 3; f < field; ++f) begin = text.find(' ', begin) + 1;
  text.replace(begin, text.find(' ', begin) - begin, value);
  return text;
}

TEST(ProcStat, ParsesARealProcess) {
  const auto r = parse_proc_stat(samples::kStat);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const ProcStat& s = r.value();
  EXPECT_EQ(s.pid, 6029u);
  EXPECT_EQ(s.comm, "python3");
  EXPECT_EQ(s.state, 'R');
  EXPECT_EQ(s.ppid, 6026u);
  EXPECT_EQ(s.flags, 0x400000u);  // PF_RANDOMIZE
  EXPECT_FALSE(s.exiting());
  EXPECT_EQ(s.num_threads, 3u);
  EXPECT_EQ(s.start_time, 59617u);
  EXPECT_EQ(s.vsize, 168230912u);
  EXPECT_EQ(s.rss, 3516u);
}

TEST(ProcStat, ParsesKernelThreadsWithNoMemoryAndLongComms) {
  const auto k = parse_proc_stat(samples::kKthreadStat);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_EQ(k.value().comm, "kthreadd");
  EXPECT_EQ(k.value().ppid, 0u);
  EXPECT_EQ(k.value().rss, 0u);
  EXPECT_EQ(k.value().vsize, 0u);

  // Workqueue workers show "kworker/...-WQ", longer than TASK_COMM_LEN.
  const auto w = parse_proc_stat(samples::kKworkerStat);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w.value().comm, "kworker/u8:0-ext4-rsv-conversion");
  EXPECT_EQ(w.value().state, 'I');
}

TEST(ProcStat, KeepsHostileCommsWholeAndTheOtherFieldsRight) {
  ProcStat expected = parse_proc_stat(samples::kStat).value();
  const std::string hostile[] = {
      "a b",
      "x) (y",
      ")",
      "((",
      "a\nb",
      "",
      ") R 1 1 1 0 -1",
      // 64 bytes, the longest comm a kernel thread name can show.
      std::string(51, 'k') + ") S 1 2 3 4 (",
  };
  for (const std::string& comm : hostile) {
    ASSERT_LE(comm.size(), 64u);
    const std::string text = stat_with_comm(comm);
    const auto r = parse_proc_stat(text);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    expected.comm = comm;
    EXPECT_EQ(r.value(), expected) << "comm '" << comm << "'";
    // Cut reads of hostile comms never yield a wrong value either.
    EXPECT_EQ(shortest_parsing_prefix(parse_proc_stat, text),
              text.find(" 3516 ") + 6)
        << "comm '" << comm << "'";
  }
}

// A process whose exit began (PF_EXITING in field 9) is exiting before its
// state says so, and a zombie or a dead one is exiting whatever its flags.
TEST(ProcStat, AnExitIsToldByPfExitingOrAZombieState) {
  const auto exiting = parse_proc_stat(stat_with_field(9, "4194308"));
  ASSERT_TRUE(exiting.has_value()) << exiting.error().message;
  EXPECT_EQ(exiting.value().flags, 0x400004u);
  EXPECT_EQ(exiting.value().state, 'R');
  EXPECT_TRUE(exiting.value().exiting());
  for (const char* state : {"Z", "X"}) {
    const auto dead = parse_proc_stat(stat_with_field(3, state));
    ASSERT_TRUE(dead.has_value()) << dead.error().message;
    EXPECT_TRUE(dead.value().exiting()) << state;
  }
  for (const char* state : {"R", "S", "D", "T"}) {
    EXPECT_FALSE(parse_proc_stat(stat_with_field(3, state)).value().exiting())
        << state;
  }
}

// stat read before and after a sample's other files: its count held still,
// moved, or an exit was under way (which wins: a teardown folds as it goes).
TEST(ProcStat, TwoReadsTellStillMovingAndExitingCounters) {
  const ProcStat before = parse_proc_stat(samples::kStat).value();
  ProcStat after = before;
  EXPECT_EQ(rss_reads_between(before, after), RssReads::kStill);
  after.rss = before.rss + 32;  // a fold in between
  EXPECT_EQ(rss_reads_between(before, after), RssReads::kMoving);
  after.rss = before.rss - 1;
  EXPECT_EQ(rss_reads_between(before, after), RssReads::kMoving);

  ProcStat exiting = before;
  exiting.flags |= ProcStat::kPfExiting;
  EXPECT_EQ(rss_reads_between(exiting, before), RssReads::kExiting);
  EXPECT_EQ(rss_reads_between(before, exiting), RssReads::kExiting);
  exiting.rss = 0;  // its mm gone by the second read
  EXPECT_EQ(rss_reads_between(before, exiting), RssReads::kExiting);
  ProcStat zombie = before;
  zombie.state = 'Z';
  EXPECT_EQ(rss_reads_between(before, zombie), RssReads::kExiting);
}

TEST(ProcStat, CutReadsParseOnlyOnceTheRssFieldIsComplete) {
  // Field 24 ends with the space after "3516"; a read cut inside it would
  // otherwise give rss 351 or 35.
  EXPECT_EQ(shortest_parsing_prefix(parse_proc_stat, samples::kStat),
            samples::kStat.find(" 3516 ") + 6);
}

TEST(ProcStat, NamesTheMissingFieldOfATruncatedText) {
  const auto r = parse_proc_stat("6029 (python3) R 6026 6026 ");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().file, ProcFile::kStat);
  EXPECT_EQ(r.error().field, "field 6");
  EXPECT_TRUE(contains(r.error().message, "/proc/PID/stat: field 6: missing"))
      << r.error().message;

  EXPECT_EQ(parse_proc_stat("").error().field, "field 1 (pid)");
  EXPECT_EQ(parse_proc_stat("6029 (pyth").error().field, "field 2 (comm)");
  EXPECT_EQ(parse_proc_stat("6029 (python3)").error().field, "field 2 (comm)");
}

TEST(ProcStat, RejectsGarbageAndOverflowNamingTheFieldAndOffset) {
  struct Case {
    int field;
    std::string value;
    std::string name;
    std::string reason;
  } cases[] = {
      {22, "59617x", "field 22 (starttime)", "not a number"},
      {22, "", "field 22 (starttime)", "not a number"},
      {22, "+59617", "field 22 (starttime)", "not a number"},
      {23, "0x1000", "field 23 (vsize)", "not a number"},
      {24, "18446744073709551616", "field 24 (rss)", "out of range"},
      {24, "-1", "field 24 (rss)", "not a number"},
      {4, "4294967296", "field 4 (ppid)", "out of range"},
      {9, "4194304x", "field 9 (flags)", "not a number"},
      {9, "4294967296", "field 9 (flags)", "out of range"},
      {20, "3\n", "field 20 (num_threads)", "not a number"},
      {3, "RS", "field 3 (state)", "not one character"},
  };
  for (const Case& c : cases) {
    const std::string text = stat_with_field(c.field, c.value);
    const auto r = parse_proc_stat(text);
    ASSERT_FALSE(r.has_value()) << c.name << " = '" << c.value << "'";
    EXPECT_EQ(r.error().field, c.name);
    EXPECT_TRUE(contains(r.error().message, c.reason)) << r.error().message;
    EXPECT_EQ(text.substr(r.error().offset, c.value.size()), c.value);
    EXPECT_EQ(r.error().line, 1u);
  }
  const auto pid = parse_proc_stat("x (a) R 1 ");
  ASSERT_FALSE(pid.has_value());
  EXPECT_EQ(pid.error().field, "field 1 (pid)");
}

TEST(ProcStat, CountsLinesForErrorsAfterANewlineInTheComm) {
  std::string text = stat_with_comm("a\nb");
  text.replace(text.find(" 59617 ") + 1, 5, "5961x");
  const auto r = parse_proc_stat(text);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().line, 2u);
  EXPECT_TRUE(contains(r.error().message, "line 2")) << r.error().message;
}

}  // namespace
}  // namespace rssaudit
