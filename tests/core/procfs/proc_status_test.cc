#include "core/procfs/proc_status.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/core/procfs/proc_samples.h"
#include "tests/core/procfs/proc_test_support.h"

namespace rssaudit {
namespace {

std::string status_with_line(std::string_view key, std::string_view line) {
  std::string text(samples::kStatus);
  // Searching "\n" + text finds the first line too; its index is the key's.
  const size_t begin = ("\n" + text).find("\n" + std::string(key) + ":");
  text.replace(begin, text.find('\n', begin) - begin, line);
  return text;
}

TEST(ProcStatus, ParsesARealProcess) {
  const auto r = parse_proc_status(samples::kStatus);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const ProcStatus& s = r.value();
  EXPECT_EQ(s.name, "python3");
  EXPECT_EQ(s.tgid, 6029u);
  EXPECT_EQ(s.threads, 3u);
  EXPECT_EQ(s.vm_rss_kb, 14184u);
  EXPECT_EQ(s.rss_anon_kb, 7464u);
  EXPECT_EQ(s.rss_file_kb, 6720u);
  EXPECT_EQ(s.rss_shmem_kb, 0u);
  EXPECT_EQ(s.vm_swap_kb, 0u);
  EXPECT_EQ(s.vm_hwm_kb, 14184u);
}

TEST(ProcStatus, ConvertsKilobytesToPagesOfTheHostSize) {
  const ProcStatus s = parse_proc_status(samples::kStatus).value();
  EXPECT_EQ(s.vm_rss_pages(4096), 3546u);
  EXPECT_EQ(s.vm_rss_pages(65536), 14184u / 64);
  EXPECT_EQ(s.vm_hwm_pages(4096), 3546u);
  EXPECT_EQ(s.member_pages(kAnonPages, 4096), 1866u);
  EXPECT_EQ(s.member_pages(kFilePages, 4096), 1680u);
  EXPECT_EQ(s.member_pages(kShmemPages, 4096), 0u);
  EXPECT_EQ(s.member_pages(kSwapEnts, 4096), 0u);
}

TEST(ProcStatus, KernelThreadsHaveAbsentNotZeroMemoryFields) {
  const auto r = parse_proc_status(samples::kKthreadStatus);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const ProcStatus& s = r.value();
  EXPECT_EQ(s.name, "kthreadd");
  EXPECT_EQ(s.tgid, 2u);
  EXPECT_EQ(s.threads, 1u);
  EXPECT_FALSE(s.vm_rss_kb);
  EXPECT_FALSE(s.rss_anon_kb);
  EXPECT_FALSE(s.rss_file_kb);
  EXPECT_FALSE(s.rss_shmem_kb);
  EXPECT_FALSE(s.vm_swap_kb);
  EXPECT_FALSE(s.vm_hwm_kb);
  EXPECT_FALSE(s.vm_rss_pages(4096));
  EXPECT_FALSE(s.member_pages(kAnonPages, 4096));
}

TEST(ProcStatus, UnescapesNamesAsTheKernelEscapesThem) {
  // prctl(PR_SET_NAME, "a\nb\\c\td") shows as below on this kernel: only
  // '\n' and '\' are escaped.
  const struct {
    std::string_view line;
    std::string_view name;
  } cases[] = {
      {"Name:\ta\\nb\\\\c\td", "a\nb\\c\td"},
      {"Name:\tx) (y", "x) (y"},
      {"Name:\t", ""},
      {"Name:\t  lead", "  lead"},
      {"Name:\t\\\\n", "\\n"},
  };
  for (const auto& c : cases) {
    const auto r = parse_proc_status(status_with_line("Name", c.line));
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r.value().name, c.name);
  }
  for (std::string_view bad : {"Name:\tab\\", "Name:\ta\\tb", "Name: a"}) {
    const auto r = parse_proc_status(status_with_line("Name", bad));
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().field, "Name");
    EXPECT_EQ(r.error().line, 1u);
  }
}

TEST(ProcStatus, CutReadsParseOnlyOnceThreadsIsComplete) {
  const size_t threads_end = samples::kStatus.find("Threads:\t3\n") + 11;
  EXPECT_EQ(shortest_parsing_prefix(parse_proc_status, samples::kStatus),
            threads_end);
  EXPECT_EQ(shortest_parsing_prefix(parse_proc_status, samples::kKthreadStatus),
            samples::kKthreadStatus.find("Threads:\t1\n") + 11);
}

TEST(ProcStatus, RejectsGarbageNamingTheFieldAndLine) {
  const struct {
    std::string_view key;
    std::string_view line;
    std::string_view reason;
  } cases[] = {
      {"VmRSS", "VmRSS:\t   14x84 kB", "not a number"},
      {"VmRSS", "VmRSS:\t   14184 MB", "unit is not kB"},
      {"VmRSS", "VmRSS:\t   14184", "expected 'N kB'"},
      {"VmHWM", "VmHWM:\t18446744073709551616 kB", "out of range"},
      {"RssAnon", "RssAnon:\t-4 kB", "not a number"},
      {"Tgid", "Tgid:\t6029 6029", "not a number"},
      {"Threads", "Threads:\t", "not a number"},
  };
  for (const auto& c : cases) {
    const std::string text = status_with_line(c.key, c.line);
    const auto r = parse_proc_status(text);
    ASSERT_FALSE(r.has_value()) << c.line;
    EXPECT_EQ(r.error().file, ProcFile::kStatus);
    EXPECT_EQ(r.error().field, c.key);
    EXPECT_TRUE(contains(r.error().message, c.reason)) << r.error().message;
    const size_t line_start = text.find(c.line);
    EXPECT_EQ(r.error().line,
              1 + std::count(text.begin(), text.begin() + line_start, '\n'));
  }
}

TEST(ProcStatus, RequiresNameTgidAndThreads) {
  EXPECT_EQ(parse_proc_status("").error().field, "Name");
  EXPECT_EQ(parse_proc_status("Name:\tx\nThreads:\t1\n").error().field, "Tgid");
  EXPECT_EQ(parse_proc_status("Name:\tx\nTgid:\t1\n").error().field, "Threads");
  const auto ok = parse_proc_status("Name:\tx\nTgid:\t1\nThreads:\t1\n");
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
}

}  // namespace
}  // namespace rssaudit
