// Root-only: which RSS readers of the running kernel are precise, measured
// against a page-table walk (sampler/reader_probe.h). The matrix runs this
// on every guest kernel; its printed table is the source of the readers
// table in docs/counters.md; rssauditd records what it measures. procps'
// ps and top are measured in tests/sampler/reader_probe_test.cc (the guests
// have busybox's).
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "capture/bpf_capture.h"
#include "sampler/reader_probe.h"
#include "store/store_queries.h"
#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

TEST(Readers, EachReaderMeasuredAgainstAPageTableWalk) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the child's smaps_rollup)";
  const ReaderPrecision p = probe_reader_precision();
  ASSERT_TRUE(p.error.empty()) << p.error;
  utsname uts{};
  uname(&uts);
  // One line per kernel for the docs' table (grep "readers:" in the logs).
  fmt::print(
      "readers: kernel {} cpus {} walk {} | stat {} {} | statm {} {} | "
      "status {} {} | VmHWM {} {} | ru_maxrss {} {} | after {} pages\n",
      uts.release, sysconf(_SC_NPROCESSORS_ONLN), p.walk_pages,
      reader_verdict_name(p.stat), p.stat_pages, reader_verdict_name(p.statm),
      p.statm_pages, reader_verdict_name(p.status), p.status_pages,
      reader_verdict_name(p.vm_hwm), p.vm_hwm_pages,
      reader_verdict_name(p.ru_maxrss), p.ru_maxrss_pages.value_or(-1),
      p.touches);
  EXPECT_EQ(p.stat, ReaderVerdict::kApproximate);
  // statm and status print the same counters the same way (task_statm and
  // task_mem): one verdict. An approximate one reads what stat reads.
  EXPECT_EQ(p.statm, p.status);
  if (p.status == ReaderVerdict::kApproximate) {
    EXPECT_EQ(p.status_pages, p.stat_pages);
    EXPECT_EQ(p.statm_pages, p.stat_pages);
  }
  // The child's RSS only grew: its high-water mark is the RSS as the
  // approximate count had it.
  EXPECT_EQ(p.vm_hwm_pages, std::max(p.stat_pages, p.vm_hwm_pages));
  ASSERT_TRUE(p.ru_maxrss_pages.has_value());
  // Before 6.2 every reader reads the atomics, status too.
  if (!probe_capture_support().percpu_rss) {
    EXPECT_EQ(p.status, ReaderVerdict::kApproximate);
  }
}

// rssauditd relies on this very probe: its log says what it measured, its
// run records whether status is precise, and only then do its samples hold
// precise values (history_recorder_test covers the other case).
TEST(Readers, RssauditdRecordsWhatTheProbeMeasures) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  const CaptureSupport support = probe_capture_support();
  if (!support.missing.empty()) GTEST_SKIP() << support.missing;
  const ReaderPrecision p = probe_reader_precision();
  ASSERT_TRUE(p.error.empty()) << p.error;
  const std::string base = std::filesystem::temp_directory_path() /
                           ("rssaudit-readers-" + std::to_string(getpid()));
  const std::string db = base + ".db";
  const auto r = testing::run_command(std::string(RSSAUDIT_DAEMON) + " --db " +
                                      db + " --socket none --duration 1");
  const std::string& log = r.err;
  ASSERT_EQ(r.exit_code, 0) << log;
  const std::string said =
      fmt::format("status {},", reader_verdict_name(p.status));
  EXPECT_NE(log.find("RSS readers measured on this kernel: stat approximate"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(said), std::string::npos) << said << "\n" << log;
  auto reader = StoreReader::open_read_only(db);
  ASSERT_TRUE(reader.has_value()) << reader.error().message;
  auto runs = (*reader)->list_runs();
  ASSERT_TRUE(runs.has_value() && runs->size() == 1u);
  EXPECT_EQ(runs.value()[0].info.status_precise,
            p.status == ReaderVerdict::kPrecise);
  for (const char* suffix : {".db", ".db-wal", ".db-shm"})
    std::filesystem::remove(base + suffix);
}

}  // namespace
}  // namespace rssaudit
