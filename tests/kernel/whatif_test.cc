// Root-only: `rssaudit whatif` on a live process and on a recording made by
// `rssaudit record` on this kernel.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

const std::string kCli = RSSAUDIT_CLI;

// `command` (one of whatif --pid, record) in the background, its stderr in
// a file; once it prints `ready`, the file `go` is created. Its output.
testing::CommandResult run_capturing(const std::string& command,
                                     const std::string& ready,
                                     const std::string& go) {
  const std::string err = go + ".err";
  auto r = testing::run_command("( " + command + " 2>" + err + " & c=$!; " +
                                testing::shell_wait_for(err, ready, "$c") +
                                "touch " + go + "; wait $c; s=$?; cat " + err +
                                " >&2; exit $s )");
  std::filesystem::remove(err);
  std::filesystem::remove(go);
  return r;
}

std::string go_file() {
  return std::filesystem::temp_directory_path() /
         ("rssaudit-whatif-go-" + std::to_string(getpid()));
}
constexpr size_t kMib = 8;

// A child that waits for the file `go` (the command said it captures; in a
// TCG guest attaching takes seconds), faults kMib MiB one page at a time
// (resting after the first), unmaps them and exits.
pid_t spawn_faulting_child(const std::string& go) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 600 && !std::filesystem::exists(go); ++i)
      usleep(100'000);
    const size_t bytes = kMib << 20;
    char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    madvise(p, bytes, MADV_NOHUGEPAGE);
    // One fault, then a rest: the capture sees the mm and takes a snapshot
    // of its counters before the burst.
    static_cast<volatile char*>(p)[0] = 1;
    usleep(300'000);
    for (size_t i = 4096; i < bytes; i += 4096)
      static_cast<volatile char*>(p)[i] = 1;
    munmap(p, bytes);
    _exit(0);
  }
  return pid;
}

class WhatifKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Probe only: the command loads its own programs.
    std::unique_ptr<BpfCapture> probe;
    RSSAUDIT_OPEN_TEST_CAPTURE(probe);
  }

  // The child's mm: every update of it seen, each scheme within its bound.
  // The child exists before the capture: its peak is known only live,
  // where whatif takes a snapshot of its counters; a recording has none.
  static void expect_child_mm(const nlohmann::json& j, pid_t child,
                              bool peak_known) {
    ASSERT_FALSE(j["mms"].empty()) << j.dump();
    const auto& mm = j["mms"][0];
    EXPECT_EQ(mm["tgid"], child);
    // A fault a page; up to a page per CPU only sets a baseline (the
    // process existed before the capture).
    EXPECT_GE(mm["updates"].get<uint64_t>(), kMib * 256);
    if (peak_known) {
      ASSERT_TRUE(mm["peak_rss_pages"].is_number()) << mm.dump();
      EXPECT_GE(mm["peak_rss_pages"].get<int64_t>(), int64_t(kMib) * 256);
    } else {
      EXPECT_TRUE(mm["peak_rss_pages"].is_null()) << mm.dump();
    }
    ASSERT_EQ(mm["schemes"].size(), 6u);
    const auto& upstream = mm["schemes"][0];
    ASSERT_EQ(upstream["name"], "upstream");
    for (const auto& s : mm["schemes"]) {
      if (s["name"] == "per_cpu") {
        // Its readers add every possible CPU's cache to the atomics: no
        // error, at the price of a read as wide as upstream's sum.
        EXPECT_EQ(s["largest_error_pages"], 0) << s.dump();
        EXPECT_EQ(s["read_lines_approximate"], upstream["read_lines_precise"]);
        EXPECT_EQ(s["read_lines_precise"], upstream["read_lines_precise"]);
      }
      if (s["bound_per_counter_pages"].is_null()) continue;
      EXPECT_LE(s["largest_error_pages"].get<int64_t>(),
                s["bound_per_counter_pages"].get<int64_t>())
          << s["name"];
    }
    if (j["models_as_recorded"] == true) {
      EXPECT_EQ(mm["fidelity_matched"], mm["fidelity_checked"])
          << "single-threaded: the upstream model equals the kernel's count";
    }
  }
};

TEST_F(WhatifKernelTest, LiveProcess) {
  const pid_t child = spawn_faulting_child(go_file());
  const auto r = run_capturing(
      kCli + " whatif --json --duration 10 --pid " + std::to_string(child),
      "auditing", go_file());
  waitpid(child, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["source"], "live");
  EXPECT_EQ(j["pid"], child);
  EXPECT_EQ(j["dropped"], 0);
  expect_child_mm(j, child, true);
}

// A process that existed before the capture is never compared with the
// kernel's count: the text says so rather than "100% of 0".
TEST_F(WhatifKernelTest, LiveProcessInTextSaysFidelityIsNotMeasured) {
  const pid_t child = spawn_faulting_child(go_file());
  const auto r = run_capturing(
      kCli + " whatif --duration 5 --pid " + std::to_string(child), "auditing",
      go_file());
  waitpid(child, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("upstream fidelity not measured"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("existed before the capture"), std::string::npos)
      << r.out;
}

TEST_F(WhatifKernelTest, RecordingOfAProcessAndItsReevaluation) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("rssaudit-whatif-kernel-" + std::to_string(getpid()));
  const pid_t child = spawn_faulting_child(go_file());
  const auto rec =
      run_capturing(kCli + " record --duration 5 --pid " +
                        std::to_string(child) + " -o " + path.string(),
                    "recording to", go_file());
  waitpid(child, nullptr, 0);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;

  const std::string whatif = kCli + " whatif --json --recording " +
                             path.string() + " --pid " + std::to_string(child);
  const auto as_recorded = testing::run_command(whatif);
  ASSERT_EQ(as_recorded.exit_code, 0) << as_recorded.err;
  const auto j = nlohmann::json::parse(as_recorded.out);
  EXPECT_EQ(j["models_as_recorded"], true);
  expect_child_mm(j, child, false);

  const auto big = testing::run_command(whatif + " --cpus 1024");
  std::filesystem::remove(path);
  ASSERT_EQ(big.exit_code, 0) << big.err;
  const auto b = nlohmann::json::parse(big.out);
  EXPECT_EQ(b["models_as_recorded"], false);
  EXPECT_EQ(b["model_upstream_batch"], 2048);
  expect_child_mm(b, child, false);
  // The same updates: only the models changed.
  EXPECT_EQ(b["mms"][0]["updates"], j["mms"][0]["updates"]);
  EXPECT_EQ(b["mms"][0]["peak_rss_pages"], j["mms"][0]["peak_rss_pages"]);
}

}  // namespace
}  // namespace rssaudit
