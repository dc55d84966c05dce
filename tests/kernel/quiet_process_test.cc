// Root-only: a process started before rssauditd and idle since makes no RSS
// update the capture could see; it is audited from /proc all the same, in
// the history, the live view and the CLI's answers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "capture/bpf_capture.h"
#include "core/procfs/proc_stat.h"
#include "core/procfs/proc_status.h"
#include "store/store_queries.h"
#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

TEST(QuietProcess, StartedBeforeTheDaemonIsAuditedWithItsDrift) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  const CaptureSupport support = probe_capture_support();
  if (!support.missing.empty()) GTEST_SKIP() << support.missing;
  const std::string base = std::filesystem::temp_directory_path() /
                           ("rssaudit-quiet-" + std::to_string(getpid()));
  const std::string db = base + ".db", sock = base + ".sock";
  const std::string err = base + ".err", touched = base + ".touched";
  const std::string released = base + ".released", pid_file = base + ".pid";
  const std::string live = base + ".live", stat = base + ".stat";
  const std::string status = base + ".status";
  const std::string cli = std::string(RSSAUDIT_CLI) + " ";
  // python3 touches 64 MiB and sleeps; then the daemon starts, audits only
  // it (--pid) and walks it. The live query polls until the daemon has
  // sampled it; /proc is read right after, as the independent source.
  const auto r = testing::run_command(
      "( " + testing::shell_hold_python(64, touched, released) + "echo $w > " +
      pid_file + "; " + std::string(RSSAUDIT_DAEMON) + " --db " + db +
      " --socket " + sock +
      " --pid $w --walk $w --quiet-interval 0.5 --sample-interval 0.2 "
      "--flush-interval 0.2 2>" +
      err + " & d=$!; " + testing::shell_wait_for(err, "capturing") +
      "for i in $(seq 300); do " + cli + "show --live --json --socket " + sock +
      " $w > " + live + " && break; sleep 0.1; done; cat /proc/$w/stat > " +
      stat + "; cat /proc/$w/status > " + status +
      "; sleep 1.2; kill -TERM $d; wait $d; s=$?; touch " + released +
      "; wait $w; exit $s )");
  const std::string log = testing::slurp(err);
  ASSERT_EQ(r.exit_code, 0) << r.err << log;
  const uint32_t pid = std::stoul(testing::slurp(pid_file));
  const auto st = parse_proc_stat(testing::slurp(stat));
  const auto ss = parse_proc_status(testing::slurp(status));
  ASSERT_TRUE(st.has_value() && ss.has_value()) << r.err;
  const int64_t page_kb = getpagesize() / 1024;
  const int64_t proc_drift =
      static_cast<int64_t>(st->rss) -
      static_cast<int64_t>(*ss->rss_anon_kb + *ss->rss_file_kb +
                           *ss->rss_shmem_kb) /
          page_kb;
  // Before 6.2 status reads the atomics as stat does: no precise source.
  const bool precise = support.percpu_rss;

  const auto shown = nlohmann::json::parse(testing::slurp(live));
  EXPECT_EQ(shown.at("comm"), "python3") << shown.dump();
  EXPECT_EQ(shown.at("quiet"), true) << shown.dump();
  EXPECT_EQ(shown.at("updates"), 0) << shown.dump();
  EXPECT_EQ(shown.at("kernel_rss_pages"), st->rss);
  if (precise) {
    EXPECT_EQ(shown.at("drift_pages"), proc_drift) << shown.dump();
  } else {
    EXPECT_TRUE(shown.at("drift_pages").is_null()) << shown.dump();
  }

  auto reader = StoreReader::open_read_only(db);
  ASSERT_TRUE(reader.has_value()) << reader.error().message;
  auto procs = reader.value()->processes_with_pid(pid);
  ASSERT_TRUE(procs.has_value() && procs->size() == 1u) << log;
  auto history =
      reader.value()->process_history(procs.value()[0].id, 0, INT64_MAX);
  ASSERT_TRUE(history.has_value());
  EXPECT_GE(history->size(), 2u) << "a sample per --quiet-interval\n" << log;
  int walked = 0;
  for (const StoredSample& s : history.value()) {
    EXPECT_EQ(s.row.stat_rss, static_cast<int64_t>(st->rss));
    if (precise) {
      EXPECT_EQ(s.drift, proc_drift);
    }
    // 64 MiB touched: the walk finds at least those pages present.
    if (s.row.walk_rss) {
      ++walked;
      EXPECT_GE(*s.row.walk_rss, 64 << 20 >> 12);
    }
  }
  EXPECT_GE(walked, 1) << "--walk names it: walked though it never updates";
  EXPECT_NE(log.find("quiet_samples="), std::string::npos) << log;

  const auto top = testing::run_command(cli + "top --db " + db);
  EXPECT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("python3"), std::string::npos) << top.out;
  const auto show =
      testing::run_command(cli + "show " + std::to_string(pid) + " --db " + db);
  EXPECT_EQ(show.exit_code, 0) << show.err;
  // No stream: since 6.2 the drift is stat's against status's; before,
  // status reads what stat does and the exact value is unknown.
  EXPECT_NE(show.out.find(precise ? "drift (approximate - precise): "
                                  : "drift (kernel readers - exact): -\n"),
            std::string::npos)
      << show.out;
  const auto report = testing::run_command(
      cli + "export --format html --since 1h -o " + db + ".html --db " + db);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(testing::slurp(db + ".html").find("python3"), std::string::npos);
  for (const std::string& f :
       {err, touched, released, pid_file, live, stat, status, db + ".html", db,
        db + "-wal", db + "-shm"})
    std::filesystem::remove(f);
}

}  // namespace
}  // namespace rssaudit
