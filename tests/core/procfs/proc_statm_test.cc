#include "core/procfs/proc_statm.h"

#include <gtest/gtest.h>

#include "tests/core/procfs/proc_samples.h"
#include "tests/core/procfs/proc_test_support.h"

namespace rssaudit {
namespace {

TEST(ProcStatm, ParsesARealProcessAndAKernelThread) {
  const auto r = parse_proc_statm(samples::kStatm);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r.value(), (ProcStatm{.size = 41072,
                                  .resident = 3546,
                                  .shared = 1680,
                                  .text = 1,
                                  .lib = 0,
                                  .data = 6226,
                                  .dt = 0}));
  const auto k = parse_proc_statm(samples::kKthreadStatm);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_EQ(k.value(), ProcStatm{});
}

TEST(ProcStatm, CutReadsAreRejectedUntilTheNewline) {
  EXPECT_EQ(shortest_parsing_prefix(parse_proc_statm, samples::kStatm),
            samples::kStatm.size());
  const auto r = parse_proc_statm("41072 3546 1680");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "shared");
  EXPECT_EQ(r.error().offset, 15u);
}

TEST(ProcStatm, RejectsGarbageNamingTheField) {
  struct Case {
    std::string_view text;
    std::string_view field;
    std::string_view reason;
  } cases[] = {
      {"41072 3546 x 1 0 6226 0\n", "shared", "not a number"},
      {"41072  3546 1680 1 0 6226 0\n", "resident", "not a number"},
      {"41072 3546 1680 1 0 6226 99999999999999999999\n", "dt", "out of range"},
      {"41072 3546 1680 1 0 6226 0 7\n", "dt", "not a number"},
      {"41072 3546 1680 1 0 6226 0\nextra", "dt", "text after it"},
      {"-1 3546 1680 1 0 6226 0\n", "size", "not a number"},
  };
  for (const Case& c : cases) {
    const auto r = parse_proc_statm(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().file, ProcFile::kStatm);
    EXPECT_EQ(r.error().field, c.field) << c.text;
    EXPECT_TRUE(contains(r.error().message, c.reason)) << r.error().message;
  }
}

}  // namespace
}  // namespace rssaudit
