// rssauditd's settings from flags and the config file, as a SIGHUP reload
// sees them too: no BPF, no root.
#include "daemon/daemon_options.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "core/formats/config_file.h"

namespace rssaudit {
namespace {

class DaemonOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("rssauditd-conf-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void write(const std::string& text) { std::ofstream(path_) << text; }
  Result<DaemonOptions, OptionsError> load(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--config", path_});
    return load_daemon_options(flags);
  }
  std::string path_;
};

TEST_F(DaemonOptionsTest, FileSetsOptionsAndFlagsWin) {
  write(
      "sample-interval = 2.5\ntop = 7\nwalk = all\ncomm = postgres\n"
      "cgroup = /system.slice/postgresql.service\nmin-updates = 1000\n");
  const Result<DaemonOptions, OptionsError> r = load({"--top", "3"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->sample_s, 2.5);
  EXPECT_EQ(r->top, 3u) << "the flag wins over the file";
  EXPECT_EQ(r->walk, std::vector<std::string>{"all"});
  EXPECT_EQ(r->recorder.comm, "postgres");
  EXPECT_EQ(r->recorder.cgroup, "/system.slice/postgresql.service");
  EXPECT_EQ(r->recorder.min_updates, 1000u);
  EXPECT_EQ(r->db, "rssaudit.db") << "unset keys keep defaults";
}

TEST_F(DaemonOptionsTest, WalkFlagReplacesTheFilesList) {
  write("walk = 1,2\n");
  const Result<DaemonOptions, OptionsError> r = load({"--walk", "3"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->walk, std::vector<std::string>{"3"});
  EXPECT_EQ(walk_policy(*r).pids.count(3), 1u);
}

TEST_F(DaemonOptionsTest, UnknownKeyNamesFileLineAndKey) {
  write("# settings\ntop = 3\nsampel-interval = 2\n");
  const Result<DaemonOptions, OptionsError> r = load({});
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, 1);
  EXPECT_EQ(r.error().message, path_ + ":3: unknown key 'sampel-interval'");
}

TEST_F(DaemonOptionsTest, BadValueNamesFileLineAndKey) {
  write("top = 3\nsample-interval = -1\n");
  const Result<DaemonOptions, OptionsError> r = load({});
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.rfind(path_ + ":2: key 'sample-interval': ", 0),
            0u)
      << r.error().message;
  write("walk = all,12x\n");
  EXPECT_NE(load({}).error().message.find(":1: key 'walk'"), std::string::npos);
  write("metrics-listen = localhost\n");
  EXPECT_NE(load({}).error().message.find("ADDRESS:PORT"), std::string::npos);
  write("cgroup = system.slice\n");
  EXPECT_NE(load({}).error().message.find(":1: key 'cgroup'"),
            std::string::npos);
  write("metrics-group-by = user\n");
  EXPECT_NE(load({}).error().message.find(":1: key 'metrics-group-by'"),
            std::string::npos);
}

TEST_F(DaemonOptionsTest, SyntaxErrorNamesFileAndLine) {
  write("top = 3\n\ntop 4\n");
  EXPECT_EQ(load({}).error().message.rfind(path_ + ":3: ", 0), 0u);
  write("top = 3\ntop = 4\n");
  EXPECT_NE(
      load({}).error().message.find(":2: key 'top' already set on line 1"),
      std::string::npos);
}

TEST_F(DaemonOptionsTest, ConfigCannotNameAnotherConfig) {
  write("config = /etc/other.conf\n");
  EXPECT_NE(load({}).error().message.find(":1: key 'config' cannot be set"),
            std::string::npos);
}

TEST_F(DaemonOptionsTest, MissingExplicitFileFailsMissingDefaultDoesNot) {
  const Result<DaemonOptions, OptionsError> r =
      load({});  // path_ was never written
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, 1);
  EXPECT_EQ(r.error().message,
            path_ + ": cannot read config file: No such file or directory");
  // Without --config, the default path is optional (a fresh install).
  if (!std::filesystem::exists(kDefaultConfigPath)) {
    const Result<DaemonOptions, OptionsError> d =
        load_daemon_options({"--top", "4"});
    ASSERT_TRUE(d.has_value()) << d.error().message;
    EXPECT_EQ(d->top, 4u);
    // Even when named, as the systemd unit does.
    EXPECT_TRUE(
        load_daemon_options({"--config", kDefaultConfigPath}).has_value());
  }
}

// What a config may cost is bounded: /dev/zero once grew the daemon to
// 4 GB, a FIFO froze it on SIGHUP.
TEST_F(DaemonOptionsTest, OnlyARegularFileOfAtMostOneMiBIsRead) {
  const auto refused = [](const std::string& path, const std::string& why) {
    const auto r = load_daemon_options({"--config", path});
    ASSERT_FALSE(r.has_value()) << path;
    EXPECT_EQ(r.error().exit_code, 1);
    EXPECT_EQ(r.error().message, path + ": cannot read config file: " + why);
  };
  refused("/dev/zero", "a device, not a regular file");
  refused(std::filesystem::temp_directory_path(),
          "a directory, not a regular file");
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  refused(path_, "a FIFO, not a regular file");  // no writer is waited for
  std::filesystem::remove(path_);
  write("# " + std::string(kMaxConfigBytes, 'x') + "\n");
  refused(path_, "larger than 1048576 bytes");
  write("# " + std::string(kMaxConfigBytes - 100, 'x') + "\ntop = 5\n");
  const auto r = load({});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->top, 5u);
}

TEST_F(DaemonOptionsTest, BadFlagIsAUsageError) {
  write("");
  const Result<DaemonOptions, OptionsError> r = load({"--poll-ms", "0"});
  EXPECT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, 2);
  EXPECT_EQ(load({"--no-such-flag"}).error().exit_code, 2);
}

// Every number finite and in range: NaN, infinities and 1e-300 busy-loop or
// overflow a timer, 1e10 s overflowed one, a port past 65535 wrapped.
TEST_F(DaemonOptionsTest, NumbersMustBeFiniteAndInRange) {
  write("");
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{
           {"--sample-interval", "nan"},
           {"--sample-interval", "1e-300"},
           {"--sample-interval", "0"},
           {"--flush-interval", "inf"},
           {"--summary-interval", "1e10"},
           {"--summary-interval", "-1"},
           {"--duration", "inf"},
           {"--duration", "nan"},
           {"--quiet-interval", "1e-9"},
           {"--walk-interval", "-inf"},
           {"--retention-days", "nan"},
           {"--retention-mib", "1e300"},
           {"--metrics-listen", "127.0.0.1:99999"},
           {"--metrics-listen", "127.0.0.1:0065536"},
           {"--sample-interval", "5s"}}) {
    const auto r = load(bad);
    ASSERT_FALSE(r.has_value()) << bad[0] << " " << bad[1];
    EXPECT_EQ(r.error().exit_code, 2) << bad[0] << " " << bad[1];
  }
  for (const std::vector<std::string>& good :
       std::vector<std::vector<std::string>>{
           {"--sample-interval", "0.5"},
           {"--summary-interval", "0"},
           {"--duration", "0"},
           {"--duration", "30"},
           {"--quiet-interval", "0"},
           {"--retention-days", "0"},
           {"--metrics-listen", "127.0.0.1:65535"}})
    EXPECT_TRUE(load(good).has_value()) << good[0] << " " << good[1];
  // In a config file too, naming its line.
  write("sample-interval = nan\n");
  const auto r = load({});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find(":1: key 'sample-interval'"),
            std::string::npos)
      << r.error().message;
}

// Counts are whole and unsigned as written: CLI11 2.1 wrapped "-5" into
// 2^64-5 pages, so --min-rss -5 recorded nothing and exited 0.
TEST_F(DaemonOptionsTest, CountsAreWholeNumbersNeverWrappedNegatives) {
  write("");
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--min-rss", "-5"},
                                             {"--min-updates", "-1"},
                                             {"--top", "-1"},
                                             {"--walk-min-rss", "1.5"},
                                             {"--metrics-top", "0"},
                                             {"--metrics-processes", "1e3"},
                                             {"--poll-ms", "nan"},
                                             {"--stream-kib", "-1"},
                                             {"--stream-kib", "4194305"},
                                             {"--pid", "4194305"},
                                             {"--pid", "+7"}}) {
    const auto r = load(bad);
    ASSERT_FALSE(r.has_value()) << bad[0] << " " << bad[1];
    EXPECT_EQ(r.error().exit_code, 2) << bad[0] << " " << bad[1];
    EXPECT_NE(r.error().message.find(bad[0] + ": takes a whole number"),
              std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find("got '" + bad[1] + "'"), std::string::npos)
        << r.error().message;
  }
  const auto r = load({"--min-rss", "0", "--min-updates", "18446744073",
                       "--stream-kib", "112"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->recorder.min_updates, 18446744073u);
  EXPECT_EQ(r->stream_kib, 112u);
  EXPECT_EQ(load({})->stream_kib, 0u);  // automatic
}

TEST_F(DaemonOptionsTest, ConsumerThreadsAreOneTwoOrAuto) {
  write("");
  EXPECT_EQ(load({})->consumer_threads, ConsumerThreads::automatic);
  EXPECT_EQ(load({"--consumer-threads", "1"})->consumer_threads,
            ConsumerThreads::one);
  EXPECT_EQ(load({"--consumer-threads", "2"})->consumer_threads,
            ConsumerThreads::two);
  EXPECT_EQ(load({"--consumer-threads", "auto"})->consumer_threads,
            ConsumerThreads::automatic);
  for (const char* bad : {"3", "0", "two", ""}) {
    const auto r = load({"--consumer-threads", bad});
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().exit_code, 2) << bad;
    EXPECT_NE(r.error().message.find("--consumer-threads"), std::string::npos)
        << r.error().message;
  }
}

// --walk takes PIDs as --pid does: 20 digits passed its check and threw
// std::out_of_range out of the daemon's start; 4294967297 walked pid 1.
TEST_F(DaemonOptionsTest, WalkTakesOnlyPidsAPidCanBe) {
  write("");
  for (const char* bad : {"99999999999999999999", "4294967297", "4194305",
                          "0", "+3", "-1", "all,3x"}) {
    const auto r = load({"--walk", bad});
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().exit_code, 2) << bad;
    EXPECT_NE(r.error().message.find("takes 'all' or PIDs from 1 to 4194304"),
              std::string::npos)
        << r.error().message;
  }
  const auto r = load({"--walk", "1,4194304"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(walk_policy(*r).pids, (std::unordered_set<uint32_t>{1, 4194304}));
}

// An error echoes its argument shown, not obeyed: a newline in it made
// the message two lines (found by daemon_options_fuzz), an escape reached
// the terminal.
TEST_F(DaemonOptionsTest, AnErrorIsOneLineWithoutControlsWhateverItEchoes) {
  write("");
  const auto r = load({"--duration", "1e300\n\x1b[2J\xc2\x9b"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code, 2);
  EXPECT_NE(r.error().message.find("got '1e300??[2J?'"), std::string::npos)
      << r.error().message;
}

// help and version act instead of setting: in a config file they are
// refused naming the line, not thrown as CLI11's request to print help.
TEST_F(DaemonOptionsTest, HelpAndVersionAreNoConfigKeys) {
  for (const char* key : {"help", "version"}) {
    write(fmt::format("top = 3\n{} = 1\n", key));
    const auto r = load({});
    ASSERT_FALSE(r.has_value()) << key;
    EXPECT_EQ(r.error().exit_code, 1);
    EXPECT_EQ(r.error().message,
              fmt::format("{}:2: key '{}' cannot be set in a config file",
                          path_, key));
  }
}

TEST_F(DaemonOptionsTest, RestartOnlyChangesAreNamed) {
  DaemonOptions a, b;
  b.sample_s = 9;
  b.recorder.comm = "x";
  EXPECT_TRUE(keep_restart_only(a, b).empty());
  b.db = "other.db";
  b.metrics_listen = "127.0.0.1:9100";
  b.stream_kib = 112;  // the streams are sized at load
  b.consumer_threads = ConsumerThreads::two;
  EXPECT_EQ(keep_restart_only(a, b),
            (std::vector<std::string>{"db", "stream-kib", "consumer-threads",
                                      "metrics-listen"}));
  EXPECT_EQ(b.stream_kib, 0u);
}

}  // namespace
}  // namespace rssaudit
