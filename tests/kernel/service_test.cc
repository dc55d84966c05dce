// Root-only: rssauditd as systemd runs it (Type=notify, WatchdogSec=), with
// a stand-in for the manager's notify socket: ready once capturing, status
// lines, watchdog pings at half the timeout, stopping on SIGTERM; and with
// no capability but those the unit grants.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "capture/bpf_capture.h"
#include "tests/support/notify_listener.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text + "\n").find("\n" + line + "\n") != std::string::npos;
}

// The values of `key` in one notification ("KEY=value" lines).
std::vector<std::string> values_of(const std::string& text,
                                   const std::string& key) {
  std::vector<std::string> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    if (line.rfind(key + "=", 0) == 0)
      values.push_back(line.substr(key.size() + 1));
    start = end + 1;
  }
  return values;
}

TEST(Service, NotifiesReadyStatusWatchdogAndStopping) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  testing::NotifyListener manager;
  ASSERT_EQ(manager.error(), "");
  const std::string db = (manager.dir() / "rssaudit.db").string();
  const std::string socket = (manager.dir() / "control.sock").string();
  const std::string config = (manager.dir() / "rssauditd.conf").string();
  const std::string log = (manager.dir() / "stderr").string();
  std::ofstream(config) << "# all defaults\n";

  const pid_t daemon = fork();
  ASSERT_GE(daemon, 0);
  if (daemon == 0) {
    // What systemd sets for WatchdogSec=2s: the timeout and the one
    // process it is meant for.
    setenv("NOTIFY_SOCKET", manager.path().c_str(), 1);
    setenv("WATCHDOG_USEC", "2000000", 1);
    setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
    const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    execl(RSSAUDIT_DAEMON, RSSAUDIT_DAEMON, "--config", config.c_str(), "--db",
          db.c_str(), "--socket", socket.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::vector<std::string> received;
  const auto collect_until = [&](Clock::time_point deadline,
                                 const std::string& wanted) {
    while (Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - Clock::now());
      const auto note = manager.receive(std::max(left, 1ms));
      if (!note) continue;
      EXPECT_EQ(note->pid, daemon) << "NotifyAccess=main: from the daemon";
      received.push_back(note->text);
      if (!wanted.empty() && has_line(note->text, wanted)) return true;
    }
    return false;
  };
  const auto count = [&](const std::string& line) {
    int n = 0;
    for (const std::string& t : received) n += has_line(t, line);
    return n;
  };

  const bool ready = collect_until(Clock::now() + 20s, "READY=1");
  // Three pings' worth of time at one ping per second.
  if (ready) collect_until(Clock::now() + 3500ms, "");
  kill(daemon, SIGTERM);
  const bool stopping = collect_until(Clock::now() + 20s, "STOPPING=1");
  // A daemon that hangs on SIGTERM fails the test rather than blocking it.
  int status = 0;
  bool exited = false;
  for (const auto give_up = Clock::now() + 30s; Clock::now() < give_up;) {
    if (waitpid(daemon, &status, WNOHANG) == daemon) {
      exited = true;
      break;
    }
    usleep(50'000);
  }
  if (!exited) {
    kill(daemon, SIGKILL);
    waitpid(daemon, &status, 0);
  }
  EXPECT_TRUE(exited) << "exits within 30 s of SIGTERM";

  std::string all;
  for (const std::string& t : received) all += "[" + t + "]\n";
  const std::string err = testing::slurp(log);
  EXPECT_TRUE(ready) << "READY=1 within 20 s\n" << all << err;
  EXPECT_GE(count("WATCHDOG=1"), 2) << all << err;
  int status_lines = 0;
  for (const std::string& t : received)
    for (const std::string& value : values_of(t, "STATUS")) {
      ++status_lines;
      EXPECT_FALSE(value.empty()) << "a status says something: " << t;
    }
  EXPECT_GE(status_lines, 2) << "at READY and on sample ticks\n" << all;
  EXPECT_TRUE(stopping) << "STOPPING=1 after SIGTERM\n" << all << err;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status << "\n"
      << err;
  // A stopping daemon never claims to be up again.
  bool after_stopping = false;
  for (const std::string& t : received) {
    if (after_stopping) {
      EXPECT_FALSE(has_line(t, "READY=1")) << all;
    }
    after_stopping = after_stopping || has_line(t, "STOPPING=1");
  }
}

// The unit's CapabilityBoundingSet= as setpriv's --bounding-set argument
// ("-all,+bpf,..."), and as the CapEff mask /proc shows for it.
struct UnitCapabilities {
  std::string setpriv_set = "-all";
  uint64_t mask = 0;
  std::string error;
};

UnitCapabilities unit_capabilities(const std::string& unit_text) {
  // The numbers of <linux/capability.h>, for the names the unit may list.
  const std::vector<std::pair<std::string, int>> known = {
      {"CAP_DAC_READ_SEARCH", 2},
      {"CAP_SYS_PTRACE", 19},
      {"CAP_NET_BIND_SERVICE", 10},
      {"CAP_SYS_ADMIN", 21},
      {"CAP_SYS_RESOURCE", 24},
      {"CAP_PERFMON", 38},
      {"CAP_BPF", 39}};
  UnitCapabilities caps;
  std::smatch line;
  if (!std::regex_search(unit_text, line,
                         std::regex("\nCapabilityBoundingSet=([^\n]*)"))) {
    caps.error = "the unit has no CapabilityBoundingSet=";
    return caps;
  }
  std::istringstream names(line[1].str());
  for (std::string name; names >> name;) {
    const auto it =
        std::find_if(known.begin(), known.end(),
                     [&](const auto& k) { return k.first == name; });
    if (it == known.end()) {
      caps.error = "a capability this test does not know: " + name;
      return caps;
    }
    std::string lower = name.substr(4);
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    caps.setpriv_set += ",+" + lower;
    caps.mask |= uint64_t{1} << it->second;
  }
  return caps;
}

// The unit runs the daemon as root with only the capabilities it lists
// (CapabilityBoundingSet=, NoNewPrivileges=): they must be enough to load,
// attach and audit (a denied load or attach exits non-zero; a denied /proc
// read of some other process mid-exec may happen under any capabilities, so
// the log is not searched for denials). setpriv sets the same bounding set:
// root's capabilities after exec are what the bounding set allows. No systemd
// here (it is not PID 1 on the test machines), so the rest of the sandbox is
// not applied.
TEST(Service, CapturesWithOnlyTheCapabilitiesTheUnitGrants) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  if (testing::run_command("command -v setpriv").exit_code != 0)
    GTEST_SKIP() << "setpriv is not installed (Debian: util-linux)";
  const UnitCapabilities caps =
      unit_capabilities(testing::slurp(RSSAUDIT_UNIT));
  ASSERT_EQ(caps.error, "") << RSSAUDIT_UNIT;
  const std::string dir =
      ::testing::TempDir() + "rssaudit-caps-" + std::to_string(getpid());
  ASSERT_EQ(testing::run_command("mkdir -p " + dir).exit_code, 0);
  std::ofstream(dir + "/rssauditd.conf") << "# all defaults\n";

  // dd's 8 MiB buffer is 2 048 pages faulted in once the daemon captures;
  // SIGINT then stops it (after a last drain), and its log follows.
  const std::string log = dir + "/log";
  const testing::CommandResult r = testing::run_command(
      "(setpriv --bounding-set " + caps.setpriv_set +
      " --inh-caps -all --no-new-privs " RSSAUDIT_DAEMON " --config " + dir +
      "/rssauditd.conf --db " + dir +
      "/rssaudit.db --socket none --top 1000 2>" + log +
      " & for i in $(seq 200); do grep -q capturing " + log +
      " && break; kill -0 $! 2>/dev/null || break; sleep 0.1; done; "
      "grep CapEff /proc/$!/status; "
      "dd if=/dev/zero of=/dev/null bs=8M count=2 2>/dev/null; sleep 1; "
      "kill -INT $!; wait $!; status=$?; cat " +
      log + " >&2; exit $status)");
  testing::run_command("rm -rf " + dir);

  ASSERT_EQ(r.exit_code, 0) << r.err;
  char mask[17];
  std::snprintf(mask, sizeof(mask), "%016llx",
                static_cast<unsigned long long>(caps.mask));
  EXPECT_NE(r.out.find(std::string("CapEff:\t") + mask), std::string::npos)
      << "the daemon ran with only the unit's capabilities\n"
      << r.out;
  // The kernel's count may be below zero where the exact value is 0: the
  // slots hold the rest.
  std::smatch dd;
  ASSERT_TRUE(std::regex_search(
      r.err, dd,
      std::regex("mm tgid=\\d+ comm=dd [^\\n]*updates=(\\d+) flagged=0 "
                 "exact_rss=\\d+ kernel_rss=-?\\d+")))
      << "dd's mm audited, nothing flagged\n"
      << r.err;
  EXPECT_GE(std::stoi(dd[1].str()), 2048) << dd[0];
  // The snapshot iterator (baselines of processes older than the daemon)
  // attached and ran without an error under those capabilities.
  EXPECT_EQ(r.err.find("snapshot iterator"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("\\nsnapshots passes=\\d+ [^\\n]* errors=0\\n")))
      << r.err;
}

}  // namespace
}  // namespace rssaudit
