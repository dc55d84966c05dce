// The tools people read RSS with, measured against the files they could
// read: procps' ps -o rss and top's RES at the probe's quiet moment, when
// stat's RSS and status's differ. Root: the probe reads its child's
// smaps_rollup. The kernel's side runs in every guest
// (tests/kernel/readers_test.cc); procps is the host's.
#include "sampler/reader_probe.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

// procps (ps -o rss, top's RES) at the probe's quiet moment, when stat's
// RSS and status's differ: which of the two each tool shows, on this
// machine's procps.
TEST(Readers, ProcpsPsAndTopShowStatusNotStat) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the child's smaps_rollup)";
  // Busybox has its own ps and top (the guests'): procps' say so.
  if (testing::run_command("ps --version").out.find("procps") ==
          std::string::npos ||
      testing::run_command("top -V").out.find("procps") == std::string::npos)
    GTEST_SKIP() << "procps (ps, top) is not installed";
  std::string ps, top;
  const ReaderPrecision p = probe_reader_precision(512, [&](uint32_t pid) {
    ps = testing::run_command(fmt::format("ps -o rss= -p {}", pid)).out;
    top = testing::run_command(
              fmt::format("COLUMNS=200 top -b -n 1 -p {} | awk '$1 == {} "
                          "{{print $6}}'",
                          pid, pid))
              .out;
  });
  ASSERT_TRUE(p.error.empty()) << p.error;
  if (p.status_pages == p.stat_pages)
    GTEST_SKIP() << "status reads what stat reads on this kernel: no "
                    "difference to tell the tools' sources apart";
  ASSERT_FALSE(ps.empty() || top.empty())
      << "ps '" << ps << "' top '" << top << "'";
  const int64_t kb = getpagesize() / 1024;
  fmt::print(
      "readers: procps ps -o rss {} kB, top RES {} kB; stat {} kB, "
      "status {} kB\n",
      std::stoll(ps), std::stoll(top), p.stat_pages * kb, p.status_pages * kb);
  EXPECT_EQ(std::stoll(ps), p.status_pages * kb) << "ps -o rss";
  EXPECT_EQ(std::stoll(top), p.status_pages * kb) << "top RES";
}

}  // namespace
}  // namespace rssaudit
