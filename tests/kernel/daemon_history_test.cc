// Root-only: rssauditd never loses history silently. A database deleted
// under it is replaced by a new one that says so; rows a full disk keeps
// from the database at the stop are counted, said, and fail the exit; a
// run killed with -9 is shown stopped, and marked died by the next start;
// time the daemon did not sample (SIGSTOP) is a recorded gap.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"
#include "tests/support/sqlite_count.h"

namespace rssaudit {
namespace {

TEST(DaemonHistory, ADeletedDatabaseIsBegunAgainAndUnwrittenRowsFailTheExit) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, mount)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("rssaudit-hist-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = dir + "/history.db", log = dir + ".err";
  struct Unmount {  // after the checks, whatever fails
    std::string at;
    ~Unmount() {
      umount2(at.c_str(), MNT_DETACH);
      std::filesystem::remove_all(at);
    }
  } unmount{dir};
  const auto r = testing::run_command(
      "(mount -t tmpfs -o size=16m rssaudit-test " + dir + " || exit 99; ( " +
      std::string(RSSAUDIT_DAEMON) + " --db " + db +
      " --socket none --sample-interval 0.1 --flush-interval 0.1 2>" + log +
      " & d=$!; " + testing::shell_wait_for(log, "capturing") +
      "sleep 0.5; rm -f " + db + " " + db + "-wal " + db + "-shm; " +
      testing::shell_wait_for(log, "was deleted while in use") +
      "sleep 0.5; "
      // The disk full: what the daemon samples from now on stays in memory.
      "cat /dev/zero > " +
      dir + "/filler 2>/dev/null; sleep 0.5; " +
      "kill -TERM $d; wait $d; echo exit=$?; cat " + log + " >&2 ))");
  std::filesystem::remove(log);
  ASSERT_NE(r.exit_code, 99) << "cannot mount a tmpfs: " << r.err;
  // The new file, as the daemon left it: its rows from before the disk
  // filled, and the anomaly that says it was begun again.
  EXPECT_GT(testing::sqlite_count(db, "SELECT count(*) FROM samples"), 0)
      << r.err;
  EXPECT_EQ(testing::sqlite_count(db,
                                  "SELECT count(*) FROM anomalies WHERE kind = "
                                  "'database_reopened'"),
            1);
  EXPECT_NE(r.err.find(" was deleted while in use: a new database begun"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("exit=1"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find(" history rows not written to " + db + ": "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("unwritten_rows="), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unwritten_rows=0 "), std::string::npos) << r.err;
  // Said once, not at every flush.
  const size_t first = r.err.find("history not written, kept in memory");
  EXPECT_EQ(r.err.find("history not written, kept in memory", first + 1),
            std::string::npos)
      << r.err;
}

// A scratch directory for one test's database, logs and files, removed
// after it.
struct Scratch {
  explicit Scratch(const std::string& name)
      : dir(std::filesystem::temp_directory_path() /
            ("rssaudit-" + name + "-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name) const { return dir + "/" + name; }
  std::string dir;
};

// The pids of one array of `top --json`.
std::vector<int64_t> pids_of(const nlohmann::json& top, const char* key) {
  std::vector<int64_t> out;
  for (const auto& p : top.at(key)) out.push_back(p.at("pid").get<int64_t>());
  return out;
}

bool listed(const std::vector<int64_t>& pids, int64_t pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

TEST(DaemonHistory, AKilledRunIsShownStoppedAndMarkedDiedByTheNextStart) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  const Scratch scratch("killed");
  const std::string db = scratch.file("h.db"), cli = RSSAUDIT_CLI;
  const std::string log1 = scratch.file("1.err"), log2 = scratch.file("2.err");
  const std::string daemon = std::string(RSSAUDIT_DAEMON) + " --db " + db +
                             " --socket none --sample-interval 0.2 "
                             "--flush-interval 0.2";
  const auto r = testing::run_command(
      "( " + daemon + " 2>" + log1 + " & d=$!; " +
      testing::shell_wait_for(log1, "capturing") +
      testing::shell_hold_python(16, scratch.file("touched"),
                                 scratch.file("released")) +
      // Written, then some flushes more: the rows of its last flush are
      // what a kill loses.
      "for i in $(seq 300); do " + cli + " show $w --db " + db +
      " >/dev/null 2>&1 && break; sleep 0.1; done; sleep 0.5; "
      "kill -KILL $d; wait $d; echo pid=$w; " +
      cli + " top --db " + db + " --json -n 100000 >" + scratch.file("1.json") +
      "; " + cli + " show $w --db " + db + " >" + scratch.file("show") + "; " +
      cli + " status --db " + db + " --socket " + scratch.file("none.sock") +
      " >" + scratch.file("status") + " 2>&1; echo status=$?; " + daemon +
      " --duration 0.5 2>" + log2 + "; echo exit2=$?; " + cli + " top --db " +
      db + " --json -n 100000 >" + scratch.file("2.json") + "; touch " +
      scratch.file("released") + "; wait $w; cat " + log1 + " " + log2 +
      " >&2 )");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(pid=(\d+))")))
      << r.out << r.err;
  const int64_t pid = std::stoll(m[1]);

  // Before any rssauditd starts again: not running, its values as of the
  // last heartbeat.
  const auto top1 = nlohmann::json::parse(
      testing::slurp(scratch.file("1.json")), nullptr, false);
  ASSERT_FALSE(top1.is_discarded()) << r.err;
  EXPECT_FALSE(listed(pids_of(top1, "processes"), pid)) << top1.dump();
  EXPECT_TRUE(listed(pids_of(top1, "run_stopped"), pid)) << top1.dump();
  EXPECT_EQ(top1.at("host_run_state"), "died");
  const std::string show = testing::slurp(scratch.file("show"));
  EXPECT_NE(show.find("rssauditd stopped at "), std::string::npos) << show;
  EXPECT_NE(show.find(" (died); these values are as of then"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("died: killed or crashed"), std::string::npos);
  const std::string status = testing::slurp(scratch.file("status"));
  EXPECT_NE(status.find("last run 1 "), std::string::npos) << status;
  EXPECT_NE(status.find(" (died)"), std::string::npos) << status;
  EXPECT_NE(r.out.find("status=1"), std::string::npos) << r.out;

  // The next start says so and marks it, at its heartbeat.
  EXPECT_NE(r.out.find("exit2=0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("run 1 (started "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did not stop cleanly"), std::string::npos);
  EXPECT_EQ(testing::sqlite_count(
                db,
                "SELECT count(*) FROM runs WHERE id = 1 AND end_reason = "
                "'died' AND ended_ns = alive_ns"),
            1);
  EXPECT_EQ(testing::sqlite_count(db,
                                  "SELECT count(*) FROM anomalies WHERE "
                                  "kind = 'run_died' AND run_id = 1"),
            1);
  EXPECT_EQ(testing::sqlite_count(db,
                                  "SELECT count(*) FROM runs WHERE id = 2 "
                                  "AND end_reason = 'stopped'"),
            1);
  const auto top2 = nlohmann::json::parse(
      testing::slurp(scratch.file("2.json")), nullptr, false);
  ASSERT_FALSE(top2.is_discarded()) << r.err;
  EXPECT_FALSE(listed(pids_of(top2, "processes"), pid)) << top2.dump();
  bool died_row = false;
  for (const auto& p : top2.at("run_stopped"))
    died_row |= p.at("pid") == pid && p.at("run_id") == 1 &&
                p.at("run_state") == "died";
  EXPECT_TRUE(died_row) << top2.dump();
}

TEST(DaemonHistory, ASigstoppedDaemonRecordsTheSamplingGap) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  const Scratch scratch("stopped");
  const std::string db = scratch.file("h.db"), cli = RSSAUDIT_CLI;
  const std::string log = scratch.file("d.err");
  const auto r = testing::run_command(
      "( " + std::string(RSSAUDIT_DAEMON) + " --db " + db +
      " --socket none --sample-interval 0.2 --flush-interval 0.2 2>" + log +
      " & d=$!; " + testing::shell_wait_for(log, "capturing") +
      testing::shell_hold_python(16, scratch.file("touched"),
                                 scratch.file("released")) +
      "sleep 1; kill -STOP $d; sleep 2; kill -CONT $d; " +
      testing::shell_wait_for(log, "no sample from") + "sleep 1; " + cli +
      " history $w --db " + db + " --since 1m >" + scratch.file("history") +
      "; " + cli + " export --format html --since 1m --db " + db + " -o " +
      scratch.file("report.html") +
      "; kill -TERM $d; wait $d; echo exit=$?; "
      "touch " +
      scratch.file("released") + "; wait $w; cat " + log + " >&2 )");
  EXPECT_NE(r.out.find("exit=0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("the daemon was stopped or stalled"), std::string::npos)
      << r.err;
  // One gap of the stop's length: 2 s, and the tick it delayed.
  EXPECT_EQ(testing::sqlite_count(db, "SELECT count(*) FROM sampling_gaps"), 1)
      << r.err;
  const int64_t gap_ms = testing::sqlite_count(
      db, "SELECT (end_ns - start_ns) / 1000000 FROM sampling_gaps");
  EXPECT_GE(gap_ms, 2000);
  EXPECT_LT(gap_ms, 4000);
  const std::string history = testing::slurp(scratch.file("history"));
  EXPECT_NE(history.find("no sample from "), std::string::npos) << history;
  const std::string html = testing::slurp(scratch.file("report.html"));
  EXPECT_NE(html.find("Sampling gaps"), std::string::npos);
}

}  // namespace
}  // namespace rssaudit
