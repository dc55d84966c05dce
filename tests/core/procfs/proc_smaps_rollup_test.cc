#include "core/procfs/proc_smaps_rollup.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/core/procfs/proc_samples.h"
#include "tests/core/procfs/proc_test_support.h"

namespace rssaudit {
namespace {

TEST(ProcSmapsRollup, ParsesARealProcess) {
  const auto r = parse_proc_smaps_rollup(samples::kSmapsRollup);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const ProcSmapsRollup& s = r.value();
  EXPECT_EQ(s.start, 0x55705ed62000u);
  EXPECT_EQ(s.end, 0x7fffab6b5000u);
  EXPECT_EQ(s.rss_kb, 14184u);
  EXPECT_EQ(s.pss_kb, 12505u);
  EXPECT_EQ(s.pss_anon_kb, 7464u);
  EXPECT_EQ(s.pss_file_kb, 5041u);
  EXPECT_EQ(s.pss_shmem_kb, 0u);
  EXPECT_EQ(s.shared_clean_kb, 2048u);
  EXPECT_EQ(s.shared_dirty_kb, 0u);
  EXPECT_EQ(s.private_clean_kb, 4672u);
  EXPECT_EQ(s.private_dirty_kb, 7464u);
  EXPECT_EQ(s.referenced_kb, 14184u);
  EXPECT_EQ(s.anonymous_kb, 7464u);
  EXPECT_EQ(s.swap_kb, 0u);
  EXPECT_EQ(s.swap_pss_kb, 0u);
}

TEST(ProcSmapsRollup, OlderKernelsWithoutPssSplitLeaveItAbsent) {
  // Before 5.9 there are no Pss_Anon/Pss_File/Pss_Shmem lines.
  std::string text(samples::kSmapsRollup);
  for (std::string_view key : {"Pss_Anon:", "Pss_File:", "Pss_Shmem:"}) {
    const size_t begin = text.find(key);
    text.erase(begin, text.find('\n', begin) + 1 - begin);
  }
  const auto r = parse_proc_smaps_rollup(text);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r.value().pss_anon_kb);
  EXPECT_FALSE(r.value().pss_file_kb);
  EXPECT_FALSE(r.value().pss_shmem_kb);
  EXPECT_EQ(r.value().rss_kb, 14184u);
}

TEST(ProcSmapsRollup, ParsesTheHeaderOfAnMmWithoutVmas) {
  const auto r = parse_proc_smaps_rollup(
      "00000000-00000000 ---p 00000000 00:00 0                          "
      "[rollup]\nRss: 0 kB\nPss: 0 kB\nShared_Clean: 0 kB\n"
      "Shared_Dirty: 0 kB\nPrivate_Clean: 0 kB\nPrivate_Dirty: 0 kB\n"
      "Referenced: 0 kB\nAnonymous: 0 kB\nSwap: 0 kB\nSwapPss: 0 kB\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r.value().start, 0u);
  EXPECT_EQ(r.value().end, 0u);
}

TEST(ProcSmapsRollup, CutReadsParseOnlyOnceSwapPssIsComplete) {
  const std::string_view text = samples::kSmapsRollup;
  const size_t swap_pss_end = text.find('\n', text.find("SwapPss:")) + 1;
  EXPECT_EQ(shortest_parsing_prefix(parse_proc_smaps_rollup, text),
            swap_pss_end);
}

TEST(ProcSmapsRollup, RejectsBadHeadersAndGarbageNamingTheField) {
  const std::string text(samples::kSmapsRollup);
  const struct {
    std::string bad;
    std::string_view field;
  } cases[] = {
      {"", "header"},
      {text.substr(text.find('\n') + 1), "start"},
      {"7f-8f ---p 00000000 00:00 0  [heap]\n" +
           text.substr(text.find('\n') + 1),
       "header"},
      {std::string(text).replace(text.find("12505"), 5, "12 05"), "Pss"},
      {std::string(text).replace(text.find("7464 kB\nPss_File"), 4, "74x4"),
       "Pss_Anon"},
      {std::string(text).replace(text.find("Swap:"), 5, "Swop:"), "Swap"},
  };
  for (const auto& c : cases) {
    const auto r = parse_proc_smaps_rollup(c.bad);
    ASSERT_FALSE(r.has_value()) << c.bad;
    EXPECT_EQ(r.error().file, ProcFile::kSmapsRollup);
    EXPECT_EQ(r.error().field, c.field) << r.error().message;
  }
}

}  // namespace
}  // namespace rssaudit
