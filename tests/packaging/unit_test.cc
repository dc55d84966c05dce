// The systemd unit and the example configuration as installed: the unit
// passes `systemd-analyze verify`, and the example config holds every
// rssauditd option, each at its default.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "daemon/daemon_options.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using testing::slurp;

// The unit as configured for the install prefix (packaging/CMakeLists.txt).
const std::string kUnit = RSSAUDIT_UNIT;
const std::string kInstalledDaemon = RSSAUDIT_INSTALLED_DAEMON;

bool has_systemd_analyze() {
  return run_command("command -v systemd-analyze").exit_code == 0;
}

std::string replace_all(std::string s, const std::string& from,
                        const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos;
       at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

class UnitFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/rssaudit-unit-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    text_ = slurp(kUnit);
    ASSERT_FALSE(text_.empty()) << kUnit << " was not configured";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The unit with the build tree's rssauditd in place of the installed
  // one: verify checks that ExecStart's binary exists and is executable.
  std::string for_build_tree() const {
    const std::string exec = "ExecStart=" + kInstalledDaemon + " ";
    EXPECT_NE(text_.find(exec), std::string::npos)
        << "ExecStart names the installed daemon";
    return replace_all(text_, exec,
                       "ExecStart=" + std::string(RSSAUDIT_DAEMON) + " ");
  }

  struct Verdict {
    int exit_code;
    std::string about_unit;  // stderr lines naming our unit
    std::string all;
  };
  Verdict verify(const std::string& text) const {
    const fs::path unit = dir_ / "rssauditd.service";
    std::ofstream(unit) << text;
    const auto r = run_command("systemd-analyze verify --man=no " +
                               unit.string() + " 2>&1");
    Verdict v{r.exit_code, "", r.out + r.err};
    std::istringstream lines(v.all);
    for (std::string line; std::getline(lines, line);)
      if (line.find("rssauditd") != std::string::npos)
        v.about_unit += line + "\n";
    return v;
  }

  fs::path dir_;
  std::string text_;
};

TEST_F(UnitFileTest, PassesSystemdAnalyzeVerifyWithoutWarnings) {
  if (!has_systemd_analyze())
    GTEST_SKIP() << "systemd-analyze is not installed (Debian: systemd)";
  const Verdict v = verify(for_build_tree());
  EXPECT_EQ(v.exit_code, 0) << v.all;
  EXPECT_EQ(v.about_unit, "") << "warnings about our unit";
}

// Guards the test above: verify does check our unit here, so its silence
// means something.
TEST_F(UnitFileTest, VerifyRejectsAMissingDaemonBinary) {
  if (!has_systemd_analyze())
    GTEST_SKIP() << "systemd-analyze is not installed (Debian: systemd)";
  const std::string missing = (dir_ / "no-such-rssauditd").string();
  const Verdict v =
      verify(replace_all(text_, "ExecStart=" + kInstalledDaemon + " ",
                         "ExecStart=" + missing + " "));
  EXPECT_NE(v.exit_code, 0) << v.all;
  EXPECT_NE(v.all.find("no-such-rssauditd"), std::string::npos) << v.all;
}

TEST_F(UnitFileTest, RunsTheDaemonWithTheServicePaths) {
  const std::string exec = "ExecStart=" + kInstalledDaemon + " --config " +
                           RSSAUDIT_INSTALLED_CONFIG +
                           " --db /var/lib/rssaudit/rssaudit.db"
                           " --socket /run/rssaudit/control.sock\n";
  EXPECT_NE(text_.find(exec), std::string::npos) << text_;
  EXPECT_FALSE(std::regex_search(text_, std::regex("@[A-Z_]+@")))
      << "a variable left unsubstituted";
}

TEST_F(UnitFileTest, GrantsOnlyTheListedCapabilities) {
  const std::string caps =
      "CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH\n";
  EXPECT_NE(text_.find("\nCapabilityBoundingSet=" + caps), std::string::npos);
  EXPECT_NE(text_.find("\nAmbientCapabilities=" + caps), std::string::npos);
}

// What the daemon writes is root's only, and its metrics reach this host's
// agent only unless a drop-in allows more.
TEST_F(UnitFileTest, KeepsTheHistoryPrivateAndTheMetricsLocal) {
  EXPECT_NE(text_.find("\nUMask=0077\n"), std::string::npos);
  EXPECT_NE(text_.find("\nIPAddressDeny=any\n"), std::string::npos);
  EXPECT_NE(text_.find("\nIPAddressAllow=localhost\n"), std::string::npos);
}

// The daemon reads every process's /proc/PID: nothing may hide them.
TEST_F(UnitFileTest, LeavesOtherProcessesVisible) {
  for (const char* hiding :
       {"\nProtectProc=", "\nProcSubset=", "\nPrivatePIDs=", "\nPrivateUsers="})
    EXPECT_EQ(text_.find(hiding), std::string::npos) << hiding;
}

// The service install, staged with DESTDIR: both binaries, the unit
// written for the install-time prefix, the example config in /etc, and an
// edited config kept by a reinstall.
TEST(Install, ServicePrefixPutsEverythingWhereTheUnitLooks) {
  char dir[] = "/tmp/rssaudit-install-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const fs::path stage = dir;
  const std::string install = "DESTDIR=" + stage.string() + " " +
                              CMAKE_COMMAND + " --install " +
                              RSSAUDIT_BUILD_DIR + " --prefix /usr";
  const auto first = run_command(install);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  for (const char* exe : {"usr/bin/rssauditd", "usr/bin/rssaudit"}) {
    const fs::path p = stage / exe;
    EXPECT_TRUE(fs::exists(p)) << p;
    EXPECT_EQ(access(p.c_str(), X_OK), 0) << p;
  }
  const std::string unit =
      slurp(stage / "usr/lib/systemd/system/rssauditd.service");
  EXPECT_NE(unit.find("\nExecStart=/usr/bin/rssauditd --config "
                      "/etc/rssaudit/rssauditd.conf "),
            std::string::npos)
      << unit;
  const fs::path conf = stage / "etc/rssaudit/rssauditd.conf";
  EXPECT_EQ(slurp(conf), slurp(RSSAUDIT_EXAMPLE_CONFIG));

  std::ofstream(conf, std::ios::app) << "sample-interval = 2\n";
  const std::string edited = slurp(conf);
  const auto again = run_command(install);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(slurp(conf), edited) << "a reinstall keeps the edited config";
  fs::remove_all(stage);
}

// Every `#key = value` line of the example, uncommented, loads, and gives
// the defaults.
TEST(ExampleConfig, EveryShownValueIsTheDefault) {
  const std::string text = slurp(RSSAUDIT_EXAMPLE_CONFIG);
  ASSERT_FALSE(text.empty());
  std::string uncommented;
  const std::regex shown(R"(^#([a-z0-9-]+) = (\S.*)$)");
  std::istringstream lines(text);
  int values = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, shown)) {
      uncommented += line.substr(1) + "\n";
      ++values;
    }
  }
  EXPECT_GE(values, 15);
  char path[] = "/tmp/rssaudit-conf-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << uncommented;
  const Result<DaemonOptions, OptionsError> loaded =
      load_daemon_options({"--config", path});
  fs::remove(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message << "\n"
                                  << uncommented;
  const DaemonOptions& o = *loaded;
  const DaemonOptions d;
  EXPECT_EQ(o.duration_s, d.duration_s);
  EXPECT_EQ(o.pid, d.pid);
  EXPECT_EQ(o.poll_ms, d.poll_ms);
  EXPECT_EQ(o.summary_s, d.summary_s);
  EXPECT_EQ(o.top, d.top);
  EXPECT_EQ(o.db, d.db);
  EXPECT_EQ(o.sample_s, d.sample_s);
  EXPECT_EQ(o.flush_s, d.flush_s);
  EXPECT_EQ(o.recorder.min_rss_pages, d.recorder.min_rss_pages);
  EXPECT_EQ(o.walk_interval_s, d.walk_interval_s);
  EXPECT_EQ(o.walk_min_rss_pages, d.walk_min_rss_pages);
  EXPECT_EQ(o.retention_days, d.retention_days);
  EXPECT_EQ(o.retention_mib, d.retention_mib);
  EXPECT_EQ(o.recorder.model_error_interval_s,
            d.recorder.model_error_interval_s);
  EXPECT_EQ(o.socket, d.socket);
  EXPECT_EQ(o.metrics_group_by, d.metrics_group_by);
  EXPECT_EQ(o.metrics_top, d.metrics_top);
  EXPECT_EQ(o.metrics_processes, d.metrics_processes);
  // The settings shown empty (no default value) are unset by default.
  EXPECT_TRUE(o.recorder.comm.empty());
  EXPECT_TRUE(o.walk.empty());
  EXPECT_TRUE(o.socket_group.empty());
  EXPECT_TRUE(o.metrics_listen.empty());
}

// A new rssauditd option shows up in the example, or this fails.
TEST(ExampleConfig, ListsEveryDaemonOption) {
  const auto help = run_command(std::string(RSSAUDIT_DAEMON) + " --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  std::set<std::string> options;
  const std::regex flag(R"(--([a-z0-9-]+))");
  for (auto it = std::sregex_iterator(help.out.begin(), help.out.end(), flag);
       it != std::sregex_iterator(); ++it)
    options.insert((*it)[1]);
  options.erase("help");
  options.erase("version");  // a flag that prints and exits, not a setting
  options.erase("config");   // not a key: the file cannot name itself
  ASSERT_GE(options.size(), 15u) << help.out;
  const std::string text = slurp(RSSAUDIT_EXAMPLE_CONFIG);
  for (const std::string& key : options)
    EXPECT_NE(text.find("\n#" + key + " ="), std::string::npos)
        << "key '" << key << "' missing from the example";
}

// CLI11 2.1 does not wrap: core/formats/help_formatter.h does, at 80.
TEST(DaemonHelp, FitsIn80Columns) {
  const auto help = run_command(std::string(RSSAUDIT_DAEMON) + " --help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  std::istringstream lines(help.out);
  size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n)
    EXPECT_LE(line.size(), 80u) << line;
  EXPECT_GT(n, 20u);
}

// Man pages made from the programs' own --help by help2man: one per program
// and per subcommand, each with its options (troff writes - as \-).
TEST(ManPages, OnePerProgramAndSubcommandWithItsOptions) {
  const std::string dir = RSSAUDIT_MAN_DIR;
  if (dir.empty())
    GTEST_SKIP() << "help2man not found (Debian package help2man)";
  EXPECT_NE(slurp(dir + "/man8/rssauditd.8").find("\\-\\-metrics\\-processes"),
            std::string::npos);
  EXPECT_NE(slurp(dir + "/man1/rssaudit.1").find("whatif"), std::string::npos);
  for (const char* sub : {"simulate", "record", "replay", "top", "show",
                          "history", "export", "status", "whatif", "check"}) {
    const std::string page =
        slurp(dir + "/man1/rssaudit-" + std::string(sub) + ".1");
    EXPECT_NE(page.find(".TH"), std::string::npos) << sub;
    EXPECT_NE(page.find("rssaudit " + std::string(sub)), std::string::npos)
        << sub;
  }
  EXPECT_NE(slurp(dir + "/man1/rssaudit-top.1").find("\\-\\-min\\-rss"),
            std::string::npos);
}

// Completion from the programs' own --help: subcommands, then each one's
// options, and rssauditd's.
TEST(BashCompletion, CompletesSubcommandsAndTheirOptions) {
  const std::string script =
      std::string(RSSAUDIT_PACKAGING_DIR) + "/bash-completion/rssaudit";
  auto complete = [&](const std::string& words, int cword) {
    const std::string bin =
        std::filesystem::path(RSSAUDIT_DAEMON).parent_path().string() + ":" +
        (std::filesystem::path(RSSAUDIT_BUILD_DIR) / "cli").string();
    return run_command("bash -c 'source " + script + "; PATH=" + bin +
                       ":$PATH; COMP_WORDS=(" + words +
                       "); COMP_CWORD=" + std::to_string(cword) +
                       "; _rssaudit; echo \"${COMPREPLY[*]}\"'")
        .out;
  };
  EXPECT_EQ(complete("rssaudit t", 1), "top\n");
  EXPECT_EQ(complete("rssaudit top --min", 2), "--min-rss\n");
  EXPECT_EQ(complete("rssaudit history x --st", 3), "--step\n");
  EXPECT_EQ(complete("rssauditd --metrics-p", 1), "--metrics-processes\n");
}

}  // namespace
}  // namespace rssaudit
