// `rssaudit status`, `top --live` and `show --live` run as a user runs
// them, against fake_daemon: the real ControlServer serving a fixed view.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/formats/live_view_json.h"
#include "tests/support/run_command.h"
#include "tests/support/sample_live_view.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::lines_of;
using testing::run_command;

const std::string kCli = RSSAUDIT_CLI;
const std::string kFakeDaemon = RSSAUDIT_FAKE_DAEMON;

class LiveCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string templ = fs::temp_directory_path() / "rssaudit-live-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = new fs::path(templ);
    socket_ = new std::string(*dir_ / "control.sock");
    const fs::path view = *dir_ / "view.json";
    std::ofstream(view) << dump_line(
        live_view_to_json(testing::sample_live_view()));

    int out[2];
    ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
    daemon_ = fork();
    if (daemon_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      execl(kFakeDaemon.c_str(), kFakeDaemon.c_str(), socket_->c_str(),
            view.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    // "ready" once it listens; EOF if it failed to start.
    pollfd p{out[0], POLLIN, 0};
    char buf[16] = {};
    const bool ready = poll(&p, 1, 10'000) > 0 && read(out[0], buf, 5) == 5 &&
                       std::string(buf, 5) == "ready";
    close(out[0]);
    ASSERT_TRUE(ready) << "fake_daemon did not start";
  }

  static void TearDownTestSuite() {
    if (daemon_ > 0) {
      kill(daemon_, SIGTERM);
      waitpid(daemon_, nullptr, 0);
    }
    fs::remove_all(*dir_);
    delete dir_;
    delete socket_;
  }

  static std::string cli(const std::string& args) {
    return kCli + " " + args + " --socket '" + *socket_ + "'";
  }

  static void expect_fits_80_columns(const std::string& out) {
    for (const std::string& line : lines_of(out))
      EXPECT_LE(line.size(), 80u) << line;
  }

  static inline fs::path* dir_ = nullptr;
  static inline std::string* socket_ = nullptr;
  static inline pid_t daemon_ = -1;
};

TEST_F(LiveCli, StatusShowsTheDaemonsHealth) {
  const auto r = run_command(cli("status"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rssauditd on testhost (kernel 6.12.0-test), up 1h "
                       "02m 03s\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("events   123456789 (4321.5/s), behind by 0.012 s, "
                       "BPF 95 ns/event"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("loop     answers within 0.250 s"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("7 records lost in capture at 2 places"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("by cause: 4 stream full, 1 unpublished, 0 "
                       "unexpanded, 2 missed runs"),
            std::string::npos)
      << r.out;
  // 999990 of 1000000: rounded down, never shown as 100%.
  EXPECT_NE(r.out.find("fidelity 99.99% (999990 of 1000000 checked updates)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("live mms 3, and 1 quiet processes"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("store    writing\n           11 rows DROPPED (the "
                       "oldest, while flushes failed)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("database 3.0 MiB on disk, 2.0 MiB of data (cap 1.0 "
                       "GiB)\n           growing 42.2 MiB/day over the last "
                       "hour (the cap holds 24.3 days)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gaps     2 sampling gaps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drift    unknown in samples: 12 moving (the counters "
                       "moved while\n           /proc was read), 3 exiting, 1 "
                       "beyond the kernel's bound\n           ANOMALY: "),
            std::string::npos)
      << r.out;
  expect_fits_80_columns(r.out);
}

// The host's totals, and --gap: how much of a shortfall drift explains.
// 29574 pages as the readers see them, 29184 exact: drift +390 pages; the
// worst case 4 processes x the RSS bound of 8 CPUs, batch 64 (1512).
TEST_F(LiveCli, StatusSaysTheHostsDriftAndHowMuchOfAGapItExplains) {
  const auto r = run_command(cli("status --gap 100M"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("host     readers' RSS 115.5 MiB, exact 114.0 MiB, "
                       "drift +1.5 MiB"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(3 processes with a known drift); worst case "
                       "\u00b123.6 MiB"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("a gap of 100.0 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drift accounts for 1.5 MiB of it now (1.5% of the "
                       "gap)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the rest, 76.4 MiB, is not RSS counter drift"),
            std::string::npos)
      << r.out;
  expect_fits_80_columns(r.out);
  const json j = json::parse(run_command(cli("status --json --gap 100M")).out);
  EXPECT_EQ(j["gap"]["gap_pages"], 25600);
  EXPECT_EQ(j["gap"]["drift_now_pages"], 390);
  EXPECT_EQ(j["gap"]["drift_at_most_pages"], 4 * 1512);
  const auto bad = run_command(cli("status --gap lots"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--gap takes a size such as 1.4G"), std::string::npos)
      << bad.err;
}

TEST_F(LiveCli, StatusJsonIsTheHealth) {
  const auto r = run_command(cli("status --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["host"], "testhost");
  EXPECT_EQ(j["events"], 123456789);
  EXPECT_EQ(j["drops"], 7);
  EXPECT_EQ(j["socket"], *socket_);
  EXPECT_TRUE(health_from_json(j).has_value())
      << health_from_json(j).error().message;
}

TEST_F(LiveCli, TheSocketComesFromTheEnvironment) {
  const auto r =
      run_command("RSSAUDIT_SOCKET='" + *socket_ + "' " + kCli + " status");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(LiveCli, TopLiveRanksByDriftIn80Columns) {
  const auto r = run_command(cli("top --live"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = lines_of(r.out);
  // Title, the host in 2 lines, header, 4 rows, 3 lines of footnotes.
  ASSERT_EQ(lines.size(), 11u) << r.out;
  EXPECT_NE(lines[0].find("testhost"), std::string::npos);
  EXPECT_NE(lines[0].find("4 of 4 audited processes"), std::string::npos);
  EXPECT_EQ(lines[1],
            "host: readers' RSS 115.5 MiB, exact 114.0 MiB, drift +1.5 MiB");
  lines.erase(lines.begin() + 1, lines.begin() + 3);
  EXPECT_NE(lines[2].find("big drifter"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("+1.6 MiB"), std::string::npos) << lines[2];
  // Mid-life: kernel RSS known, exact values shown as "-".
  EXPECT_NE(lines[5].find("joined"), std::string::npos) << lines[5];
  EXPECT_NE(lines[5].find(" - "), std::string::npos) << lines[5];
  // Quiet: no updates to count.
  EXPECT_TRUE(lines[4].ends_with(" quiet")) << lines[4];
  EXPECT_NE(lines[8].find("exact RSS unknown"), std::string::npos) << r.out;
  EXPECT_NE(lines[6].find("quiet: no update since rssauditd started"),
            std::string::npos)
      << r.out;
  expect_fits_80_columns(r.out);
}

TEST_F(LiveCli, TopLiveJsonParsesAndHonoursLimitAndSort) {
  const auto r = run_command(cli("top --live --json -n 2 --sort rss"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["source"], "rssauditd");
  EXPECT_EQ(j["total"], 4);
  EXPECT_EQ(j["host_rss"]["kernel_pages"], 26000 + 2540 + 1034);
  EXPECT_EQ(j["host_rss"]["exact_pages"], 25600 + 2560 + 1024);
  EXPECT_EQ(j["host_rss"]["worst_case_pages"], 4 * 1512);
  ASSERT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["processes"][0]["pid"], 100);  // kernel RSS 26000 pages
  EXPECT_EQ(j["processes"][1]["pid"], 300);  // 9000
  EXPECT_EQ(j["processes"][0]["drift_pages"], 400);
  EXPECT_EQ(j["processes"][0]["drift_bytes"], 400 * 4096);
  EXPECT_TRUE(j["processes"][1]["exact_rss_pages"].is_null());
  EXPECT_TRUE(j["processes"][1]["drift_pages"].is_null());
  EXPECT_EQ(j["processes"][1]["kernel_rss_pages"], 9000);
}

// The filters of top over the database, live; --watch redraws as top(1)
// does, and only with --live.
TEST_F(LiveCli, TopLiveFiltersAndWatches) {
  auto pids = [&](const std::string& args) {
    const json j =
        json::parse(run_command(cli("top --live --json " + args)).out);
    std::vector<uint32_t> out;
    for (const auto& p : j["processes"]) out.push_back(p["pid"]);
    return out;
  };
  EXPECT_EQ(pids("--comm worker"), (std::vector<uint32_t>{200, 400}));
  EXPECT_EQ(pids("--cgroup /system.slice -n 1"), std::vector<uint32_t>{100});
  EXPECT_TRUE(pids("--cgroup /user.slice").empty());
  // Kernel RSS: 26000 pages (101.6 MiB), 9000 (35.2 MiB), the others less.
  EXPECT_EQ(pids("--min-rss 30M --sort rss"),
            (std::vector<uint32_t>{100, 300}));
  const auto watched =
      run_command("timeout 1.6 " + cli("top --live --watch 0.5"));
  EXPECT_EQ(watched.exit_code, 124) << "runs until interrupted";
  size_t frames = 0;
  for (size_t at = watched.out.find("\x1b[H\x1b[2J"); at != std::string::npos;
       at = watched.out.find("\x1b[H\x1b[2J", at + 1))
    ++frames;
  EXPECT_GE(frames, 2u) << watched.out;
  EXPECT_EQ(run_command(kCli + " top --watch 1").exit_code, 2)
      << "--watch needs --live";
}

TEST_F(LiveCli, ShowLiveByPidAndByComm) {
  const auto r = run_command(cli("show 200 --live"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pid 200 'worker', live from rssauditd on testhost"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("drift (kernel - exact):    -80 KiB"), std::string::npos)
      << r.out;
  for (const std::string_view scheme : SchemeSet::kNames)
    EXPECT_NE(r.out.find(std::string(scheme)), std::string::npos) << scheme;
  expect_fits_80_columns(r.out);

  const auto by_comm = run_command(cli("show 'big drifter' --live --json"));
  ASSERT_EQ(by_comm.exit_code, 0) << by_comm.err;
  const json j = json::parse(by_comm.out);
  EXPECT_EQ(j["pid"], 100);
  EXPECT_EQ(j["comm"], "big drifter");
  EXPECT_EQ(j["largest_error_pages"]["upstream"], 2);
  EXPECT_EQ(j["page_size"], 4096);
}

TEST_F(LiveCli, ShowLiveOfAQuietProcessSaysWhereItsValuesComeFrom) {
  const auto r = run_command(cli("show 400 --live"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("quiet: no update since rssauditd started"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("drift (kernel - exact):    +40 KiB"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("true peak:                 -\n"), std::string::npos)
      << r.out;
  expect_fits_80_columns(r.out);
  const json j = json::parse(run_command(cli("show 400 --live --json")).out);
  EXPECT_EQ(j["quiet"], true);
  EXPECT_TRUE(j["true_peak_pages"].is_null());
  EXPECT_TRUE(j["largest_error_pages"].is_null()) << "no model ran";
  EXPECT_NE(r.out.find("models: none ran"), std::string::npos) << r.out;
}

TEST_F(LiveCli, ShowLiveOfAnUnknownOrAmbiguousProcessFails) {
  auto r = run_command(cli("show 999 --live"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "rssaudit: rssauditd: no audited process with pid 999\n");
  r = run_command(cli("show worker --live"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("matches 2 processes (pids 200, 400)"),
            std::string::npos)
      << r.err;
}

TEST_F(LiveCli, LiveWithDatabaseOptionsIsAUsageError) {
  EXPECT_EQ(run_command(cli("top --live --since 1h")).exit_code, 2);
  EXPECT_EQ(run_command(cli("show 200 --live --db x.db")).exit_code, 2);
}

TEST_F(LiveCli, NoDaemonIsOneLineAndExit1) {
  const std::string missing = (*dir_ / "none.sock").string();
  for (const char* command :
       {"status", "top --live", "show 200 --live", "status --json"}) {
    const auto r = run_command(kCli + " " + command + " --socket " + missing);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.err, "rssaudit: rssauditd is not running (no socket at " +
                         missing + ")\n")
        << command;
    EXPECT_EQ(r.out, "") << command;
  }
}

TEST_F(LiveCli, AStaleSocketIsNotRunningEither) {
  const std::string stale = (*dir_ / "stale.sock").string();
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, stale.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  const auto r = run_command(kCli + " status --socket " + stale);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "rssaudit: rssauditd is not running (nothing listens on the "
            "socket " +
                stale + ")\n");
}

}  // namespace
}  // namespace rssaudit
