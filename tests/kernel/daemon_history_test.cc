// Root-only: rssauditd never loses history silently. A database deleted
// under it is replaced by a new one that says so; rows a full disk keeps
// from the database at the stop are counted, said, and fail the exit.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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

}  // namespace
}  // namespace rssaudit
