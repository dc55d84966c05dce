// Root-only: rssauditd writing its history to a file system that fills up
// while it runs. It must say the history is not written, naming the file,
// keep auditing, and write again (rows from before and after) once space
// returns; SIGTERM still ends it with 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "capture/bpf_capture.h"
#include "store/store_queries.h"
#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kWorkloadComm = "rssdiskload";

int64_t wall_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Polls `done` for up to `limit`.
bool eventually(const std::function<bool()>& done,
                std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

class SmallTmpfs {
 public:
  SmallTmpfs() {
    std::string templ = fs::temp_directory_path() / "rssaudit-disk-XXXXXX";
    dir_ = mkdtemp(templ.data());
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=4m") != 0) {
      error_ = std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  fs::path path(const char* name) const { return fs::path(dir_) / name; }

 private:
  std::string dir_;
  std::string error_;
  bool mounted_ = false;
};

// A process that keeps faulting and unmapping pages, so every tick has
// updates to audit and a sample to record.
pid_t start_workload() {
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_NAME, kWorkloadComm);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) {
      constexpr size_t kBytes = size_t{1} << 20;
      auto* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      for (size_t i = 0; i < kBytes; i += 4096) p[i] = 1;
      munmap(p, kBytes);
      usleep(20'000);
    }
  }
  return pid;
}

// rssauditd with its stderr in a file the test reads as it runs.
pid_t start_daemon(const std::string& db, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    execl(RSSAUDIT_DAEMON, RSSAUDIT_DAEMON, "--db", db.c_str(),
          "--sample-interval", "0.2", "--flush-interval", "0.2", "--comm",
          kWorkloadComm, "--socket", "none", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// The `updates=` count of the newest summary line.
uint64_t last_summary_updates(const std::string& text) {
  static const std::regex kUpdates(R"(summary live_mms=\d+ \S+ updates=(\d+))");
  uint64_t last = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), kUpdates), end;
       it != end; ++it) {
    last = std::stoull((*it)[1]);
  }
  return last;
}

// Samples in [since, until], or -1 while the database cannot be read: the
// daemon creates the file a moment before its schema, so a poll may find it
// empty (every caller then fails on the count, with the daemon's log).
int64_t samples_between(const std::string& db, int64_t since, int64_t until) {
  auto reader = StoreReader::open_read_only(db);
  if (!reader.has_value()) return -1;
  auto n = reader.value()->count_samples(since, until);
  return n.has_value() ? n.value() : -1;
}

// The daemon's first rows of the workload reach the file (8 s at most).
bool first_rows_written(const std::string& db) {
  return eventually(
      [&] { return fs::exists(db) && samples_between(db, 0, INT64_MAX) >= 2; },
      8s);
}

TEST(DaemonDisk, FullDiskIsReportedAuditingGoesOnAndWritingResumes) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, mount)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  SmallTmpfs tmpfs;
  if (!tmpfs.mounted())
    GTEST_SKIP() << "cannot mount a tmpfs: " << tmpfs.error();
  const std::string db = tmpfs.path("rssaudit.db");
  const std::string filler = tmpfs.path("filler");
  const std::string log =
      fs::temp_directory_path() /
      ("rssaudit-disk-" + std::to_string(getpid()) + ".log");

  const pid_t workload = start_workload();
  const int64_t started = wall_now_ns();
  const pid_t daemon = start_daemon(db, log);
  auto err = [&] { return testing::slurp(log); };
  // Rows of the workload reach the file before the disk fills.
  ASSERT_TRUE(first_rows_written(db)) << err();
  const int64_t filled = wall_now_ns();
  // Fill every byte left: the next flush cannot grow the WAL.
  testing::run_command("dd if=/dev/zero of=" + filler +
                       " bs=64k 2>/dev/null; sync");
  ASSERT_TRUE(eventually(
      [&] {
        const std::string e = err();
        return e.find("history not written") != std::string::npos &&
               e.find(db) != std::string::npos;
      },
      5s))
      << err();

  // Still auditing: the summary's update count grows while nothing is
  // written.
  kill(daemon, SIGUSR1);
  ASSERT_TRUE(eventually([&] { return last_summary_updates(err()) > 0; }, 3s))
      << err();
  const uint64_t before = last_summary_updates(err());
  std::this_thread::sleep_for(600ms);
  kill(daemon, SIGUSR1);
  EXPECT_TRUE(
      eventually([&] { return last_summary_updates(err()) > before; }, 3s))
      << err();

  fs::remove(filler);
  const int64_t freed = wall_now_ns();
  ASSERT_TRUE(eventually(
      [&] { return err().find("history written again") != std::string::npos; },
      5s))
      << err();
  // A tick after the space came back, written too.
  ASSERT_TRUE(eventually(
      [&] { return samples_between(db, freed, INT64_MAX) >= 1; }, 5s))
      << err();

  kill(daemon, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err();
  kill(workload, SIGKILL);
  waitpid(workload, nullptr, 0);

  EXPECT_GE(samples_between(db, started, filled), 2) << "rows from before";
  EXPECT_GE(samples_between(db, freed, INT64_MAX), 1) << "rows from after";
  // The rows kept in memory while the disk was full were written too.
  EXPECT_GE(samples_between(db, filled, freed), 1) << "rows from meanwhile";
  fs::remove(log);
}

// An ext4 image on a loop device, mounted for the test; shut down (as a
// failing disk or `xfs_io -c shutdown` does) at will.
class LoopExt4 {
 public:
  LoopExt4() {
    std::string templ = fs::temp_directory_path() / "rssaudit-ext4-XXXXXX";
    dir_ = mkdtemp(templ.data());
    image_ = dir_ + ".img";
    const auto made = testing::run_command(
        "truncate -s 32M " + image_ + " && mkfs.ext4 -q -F " + image_ +
        " 2>&1 && mount -o loop " + image_ + " " + dir_ + " 2>&1");
    if (made.exit_code != 0) {
      error_ = made.out;
      return;
    }
    mounted_ = true;
  }
  ~LoopExt4() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
    fs::remove(image_);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  fs::path path(const char* name) const { return fs::path(dir_) / name; }
  // EXT4_IOC_SHUTDOWN, EXT4_GOING_FLAGS_DEFAULT (what was written is synced
  // first, as a disk that fails after it did): every later read and
  // write of the file system fails with EIO.
  bool shut_down() const {
    const int fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
    uint32_t flags = 0;
    const bool ok = fd >= 0 && ioctl(fd, _IOR('X', 125, uint32_t), &flags) == 0;
    if (fd >= 0) close(fd);
    return ok;
  }
  // Unmounted and mounted again: what the disk holds.
  bool remount() {
    umount2(dir_.c_str(), 0);
    mounted_ = testing::run_command("mount -o loop " + image_ + " " + dir_)
                   .exit_code == 0;
    return mounted_;
  }

 private:
  std::string dir_, image_, error_;
  bool mounted_ = false;
};

// A file system failing under the database is an I/O error, said as one
// at every flush: after the first "disk I/O error" SQLite read pages the
// failing ext4 gave it and said "database disk image is malformed", of a
// file intact on the disk. The rows written before are there once it is
// mounted again.
TEST(DaemonDisk, AFileSystemShutDownUnderItIsAnIoErrorNotACorruptFile) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, mount)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  LoopExt4 disk;
  if (!disk.mounted())
    RSSAUDIT_HOST_SKIP(
        ("cannot mount an ext4 image on a loop device: " + disk.error())
            .c_str());
  const std::string db = disk.path("rssaudit.db");
  const std::string log =
      fs::temp_directory_path() /
      ("rssaudit-ext4-" + std::to_string(getpid()) + ".log");
  const pid_t workload = start_workload();
  const pid_t daemon = start_daemon(db, log);
  auto err = [&] { return testing::slurp(log); };
  ASSERT_TRUE(first_rows_written(db)) << err();
  const int64_t shut = wall_now_ns();
  ASSERT_TRUE(disk.shut_down()) << std::strerror(errno);
  // Several flushes fail (every 0.2 s).
  ASSERT_TRUE(eventually(
      [&] { return err().find("history not written") != std::string::npos; },
      5s))
      << err();
  std::this_thread::sleep_for(1500ms);
  kill(daemon, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  kill(workload, SIGKILL);
  waitpid(workload, nullptr, 0);
  const std::string said = err();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1)
      << "rows left unwritten: exit 1\n" << said;
  EXPECT_EQ(said.find("malformed"), std::string::npos) << said;
  EXPECT_NE(said.find(db + ": writing"), std::string::npos) << said;
  EXPECT_NE(said.find("disk I/O error"), std::string::npos) << said;
  ASSERT_TRUE(disk.remount());
  auto reader = StoreReader::open_read_only(db);
  ASSERT_TRUE(reader.has_value()) << reader.error().message;
  auto before = reader.value()->count_samples(0, shut);
  ASSERT_TRUE(before.has_value()) << before.error().message;
  EXPECT_GE(*before, 2) << "rows from before";
  fs::remove(log);
}

}  // namespace
}  // namespace rssaudit
