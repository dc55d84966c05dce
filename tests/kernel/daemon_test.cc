// Root-only: rssauditd as a newcomer runs it, against a workload it sees.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "daemon/bpf_capture.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

TEST(Daemon, SummarisesAWorkloadAndExitsCleanlyOnSigterm) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (const auto s = probe_capture_support(); !s.missing.empty())
    GTEST_SKIP() << s.missing;
  const std::string daemon = RSSAUDIT_DAEMON;
  // The workload: a shell that starts after the daemon and faults 32 MiB.
  const auto r = testing::run_command(
      "( " + daemon +
      " & d=$!; sleep 1; "
      "python3 -c 'b = bytearray(32 << 20); b[::4096] = b\"x\" * (8192)'; "
      "sleep 0.3; kill -TERM $d; wait $d )");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopping (SIGTERM)"), std::string::npos) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m, std::regex(R"(fidelity=([0-9.]+)% \((\d+)/(\d+)\))")))
      << r.err;
  EXPECT_GT(std::stoull(m[3]), 8192u) << "the 8192 faults were seen";
  EXPECT_GE(std::stod(m[1]), 99.0);
  EXPECT_NE(r.err.find("drops=0"), std::string::npos);
  EXPECT_NE(r.err.find("mm tgid="), std::string::npos);
}

TEST(Daemon, BadArgumentsExitTwo) {
  const auto r =
      testing::run_command(std::string(RSSAUDIT_DAEMON) + " --poll-ms 0");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace rssaudit
