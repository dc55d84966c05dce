// Root-only: a drift rssauditd stores is one of one moment, so within the
// kernel's bound. A process whose threads fault and unmap all the time
// (bench/busy_threads.cc), started before the daemon (its drift is /proc's
// until a snapshot of its counters gives the capture's), and short
// processes that start and exit all along (their exits read across a
// teardown), audited for 6 s at least: no stored drift beyond its run's
// RSS bound, every unknown drift stored with its reason, and the reasons
// counted. The reasons themselves (a read that moved, an exit under way)
// are made to happen in tests/daemon/history_recorder_test.cc, on a fake
// /proc: here the snapshot leaves /proc's pair too few reads to catch one.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"
#include "tests/support/sqlite_count.h"

namespace rssaudit {
namespace {

// Kills the process whose pid `file` holds, if it still holds one, at the
// end of the test whatever fails; then removes the file.
struct KillAtEnd {
  std::string file;
  ~KillAtEnd() {
    if (const std::string pid = testing::slurp(file); !pid.empty())
      kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
    std::filesystem::remove(file);
  }
};

// The number after `key=` in the last summary line of `log`; -1 if none.
int64_t summary_value(const std::string& log, const std::string& key) {
  const std::regex re("history .* " + key + "=([0-9]+) ");
  int64_t value = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re);
       it != std::sregex_iterator(); ++it)
    value = std::stoll((*it)[1]);
  return value;
}

TEST(DriftOfOneMoment, NoStoredDriftExceedsItsRunsBound) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  const CaptureSupport support = probe_capture_support();
  if (!support.missing.empty()) GTEST_SKIP() << support.missing;
  if (!support.percpu_rss)
    RSSAUDIT_SCHEME_SKIP(
        "the kernel counts RSS with atomics and per-task caches (before "
        "Linux 6.2): drift has no bound there, and /proc no precise value");
  const std::string base = std::filesystem::temp_directory_path() /
                           ("rssaudit-drift-" + std::to_string(getpid()));
  const std::string db = base + ".db", err = base + ".err";
  const std::string pid_file = base + ".pid", stop = base + ".stop";
  const std::string busy_file = base + ".busy";
  const KillAtEnd busy{busy_file}, daemon_at_end{pid_file};
  // bench/busy_threads.cc: 16 threads, before the daemon. It samples every
  // 20 ms; meanwhile 8 `sleep 0.01` at a time, over and over.
  const auto started = testing::run_command(
      "(" + std::string(RSSAUDIT_BUSY_THREADS) +
      " 16 >/dev/null 2>&1 & echo $! > " + busy_file + "; sleep 0.5; " +
      std::string(RSSAUDIT_DAEMON) + " --db " + db +
      " --socket none --sample-interval 0.02 --flush-interval 0.2 2>" + err +
      " & echo $! > " + pid_file + "; d=$!; " +
      testing::shell_wait_for(err, "capturing") + "(while [ ! -e " + stop +
      " ]; do s=; for i in 1 2 3 4 5 6 7 8; do "
      "sleep 0.01 & s=\"$s $!\"; done; wait $s; done) "
      ">/dev/null 2>&1 &)");
  ASSERT_EQ(started.exit_code, 0) << started.err;
  const std::string daemon =
      std::to_string(std::stol(testing::slurp(pid_file)));
  const std::string busy_pid =
      std::to_string(std::stol(testing::slurp(busy_file)));
  // A missing binary (a guest without it) leaves a pid of nothing.
  ASSERT_EQ(kill(static_cast<pid_t>(std::stol(busy_pid)), 0), 0)
      << RSSAUDIT_BUSY_THREADS << " is not running";
  const auto count = [&](const std::string& sql) {
    return testing::sqlite_count(db, sql);
  };
  const std::string busy_samples =
      "FROM samples WHERE process_id IN (SELECT id FROM processes WHERE "
      "pid = " +
      busy_pid + ")";
  // At least 6 s, and until 20 processes exited (120 s at most: a loaded
  // host samples slowly).
  for (int tenths = 0; tenths < 1200; ++tenths) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (tenths >= 60 && tenths % 5 == 0 &&
        count("SELECT count(*) FROM processes WHERE exit_ns IS NOT NULL") >= 20)
      break;
  }
  const auto stopped =
      testing::run_command("touch " + stop + "; kill -TERM " + daemon +
                           "; for i in $(seq 600); do kill -0 " + daemon +
                           " 2>/dev/null || exit 0; sleep 0.1; done; exit 1");
  const std::string log = testing::slurp(err);
  ASSERT_EQ(stopped.exit_code, 0) << "rssauditd did not stop\n" << log;
  std::filesystem::remove(pid_file);  // gone: nothing to kill at the end
  ASSERT_NE(log.find("rssauditd: stopping (SIGTERM)"), std::string::npos)
      << log;

  // The busy process has drifts: the capture's once its counters were
  // snapshot, or /proc's where a read held still.
  EXPECT_GT(count("SELECT count(*) " + busy_samples + " AND drift IS NOT NULL"),
            0)
      << log;
  EXPECT_GE(count("SELECT count(*) FROM processes WHERE exit_ns IS NOT NULL"),
            20)
      << log;

  EXPECT_EQ(count("SELECT count(*) FROM samples s JOIN processes p ON p.id "
                  "= s.process_id JOIN runs r ON r.id = p.run_id WHERE "
                  "abs(s.drift) > 3 * r.nr_cpus * (r.batch - 1)"),
            0)
      << "a stored drift beyond the kernel's bound";
  EXPECT_EQ(count("SELECT count(*) FROM samples WHERE drift IS NULL AND "
                  "drift_unknown IS NULL AND stat_rss IS NOT NULL AND "
                  "precise_file IS NOT NULL AND precise_anon IS NOT NULL AND "
                  "precise_shmem IS NOT NULL"),
            0)
      << "a drift unknown without a reason";
  // Counted as stored (the summary at exit follows the last flush); a
  // drift of one moment beyond the bound would be a kernel bug.
  EXPECT_EQ(summary_value(log, "drift_moving"),
            count("SELECT count(*) FROM samples WHERE drift_unknown = "
                  "'moving'"))
      << log;
  EXPECT_EQ(summary_value(log, "drift_exiting"),
            count("SELECT count(*) FROM samples WHERE drift_unknown = "
                  "'exiting'"))
      << log;
  EXPECT_EQ(summary_value(log, "drift_beyond_bound"), 0) << log;
  EXPECT_EQ(count("SELECT count(*) FROM anomalies WHERE kind = "
                  "'drift_beyond_bound'"),
            0)
      << log;
  for (const std::string& file : {err, stop, db, db + "-wal", db + "-shm"})
    std::filesystem::remove(file);
}

}  // namespace
}  // namespace rssaudit
