// Root-only: a live audit and the replay of its recording agree, and the
// `rssaudit record` / `replay` commands work end to end on this kernel.
#include "capture/recording.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "audit/audit_pipeline.h"
#include "capture/bpf_capture.h"
#include "os/clock.h"
#include "sampler/sampler.h"
#include "tests/kernel/capture_support.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

// A child that faults `mib` MiB one page at a time, hopping CPUs, and exits.
pid_t spawn_fault_loop(size_t mib) {
  const pid_t pid = fork();
  if (pid == 0) {
    const size_t bytes = mib << 20;
    char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    madvise(p, bytes, MADV_NOHUGEPAGE);
    const unsigned cpus = std::thread::hardware_concurrency();
    for (size_t i = 0; i < bytes / 4096; ++i) {
      if (i % 97 == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(static_cast<int>(i / 97 % cpus), &set);
        sched_setaffinity(0, sizeof(set), &set);
      }
      static_cast<volatile char*>(p)[i * 4096] = 1;
    }
    munmap(p, bytes);
    _exit(0);
  }
  return pid;
}

std::filesystem::path temp_file(const char* name) {
  return std::filesystem::temp_directory_path() /
         (std::string(name) + std::to_string(getpid()));
}

class RecordingTest : public ::testing::Test {
 protected:
  void SetUp() override { RSSAUDIT_OPEN_TEST_CAPTURE(capture_); }
  std::unique_ptr<BpfCapture> capture_;
};

TEST_F(RecordingTest, ReplayOfARecordingGivesTheLiveResults) {
  const auto path = temp_file("rssaudit-live-");
  const RecordHeader header = host_record_header(capture_->possible_cpus());
  RecordingFile file(path, header);
  AuditPipeline live(topology_of(header));
  DeltaReconstructor reconstructor(
      ReconstructorOptions{header.nr_cpu_ids, header.percpu_batch});
  auto drain = [&] {
    testing::drain_capture(*capture_, reconstructor, live,
                           [&](const rss_event& e) { file.append(e); });
  };
  const pid_t child = spawn_fault_loop(16);
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) drain();
  usleep(20'000);
  drain();
  reconstructor.flush(live);
  file.close();
  ASSERT_EQ(capture_->drops(), 0u);

  std::optional<AuditPipeline> replayed;
  const ReplayOutcome r =
      replay_file(path, [&](const RecordHeader& h) -> ReconstructorSink& {
        return replayed.emplace(topology_of(h));
      });
  std::filesystem::remove(path);
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.events, file.events());

  auto child_mms = [&](const AuditPipeline& p) {
    std::vector<MmSummary> out;
    for (const MmSummary& m : p.summaries())
      if (m.tgid == static_cast<uint32_t>(child)) out.push_back(m);
    return out;
  };
  const auto a = child_mms(live), b = child_mms(*replayed);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_GE(a[0].updates, 4096u);  // one per 4 KiB fault, and the munmap
  EXPECT_EQ(a[0].updates, b[0].updates);
  EXPECT_EQ(a[0].exact_rss, b[0].exact_rss);
  EXPECT_EQ(a[0].peak_rss, b[0].peak_rss);
  EXPECT_GE(a[0].peak_rss, 4096);  // 16 MiB was resident at once
  EXPECT_EQ(a[0].kernel_rss, b[0].kernel_rss);
  EXPECT_EQ(a[0].largest_error, b[0].largest_error);
  EXPECT_EQ(a[0].fidelity_matched, b[0].fidelity_matched);
  EXPECT_EQ(a[0].fidelity_checked,
            a[0].updates - a[0].flagged - a[0].cached + a[0].folds);
  EXPECT_EQ(a[0].fidelity_matched, a[0].fidelity_checked)
      << "single-threaded: the model of the kernel's scheme equals its count";
  EXPECT_EQ(live.fidelity_matched(), replayed->fidelity_matched());
}

TEST_F(RecordingTest, RecordAndReplayCommandsEndToEnd) {
  capture_.reset();  // the command loads its own programs
  const auto path = temp_file("rssaudit-cli-");
  const std::string cli = RSSAUDIT_CLI;
  // Fault loops from the moment the programs are attached (the command
  // says so) until the recording ends: in a TCG guest attaching takes
  // seconds, and attaching while rss_stat fires hard there once crashed
  // the guest kernel (an int3 of the code patching, in trace_rss_stat).
  const std::string said = path.string() + ".err";
  std::atomic<bool> recorded{false};
  std::vector<pid_t> loops;  // written by the workload, read after join
  pid_t execed = 0;
  std::thread workload([&] {
    // A thread's name is what its forks are called: the children are
    // "fault-loop" from birth, whatever this test binary is called.
    prctl(PR_SET_NAME, "fault-loop");
    while (!recorded &&
           testing::slurp(said).find("recording to") == std::string::npos)
      usleep(20'000);
    // One child execs at once: its forked mm must not take the new name.
    execed = fork();
    if (execed == 0) {
      execl("/bin/sleep", "sleep", "0.3", nullptr);
      _exit(127);
    }
    while (!recorded) {
      loops.push_back(spawn_fault_loop(8));
      waitpid(loops.back(), nullptr, 0);
    }
    waitpid(execed, nullptr, 0);
  });
  auto rec = testing::run_command("(" + cli + " record --duration 1.5 -o " +
                                  path.string() + " 2>" + said + ")");
  recorded = true;
  workload.join();
  rec.err = testing::slurp(said);
  std::filesystem::remove(said);
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  const auto rep =
      testing::run_command(cli + " replay --json " + path.string());
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto j = nlohmann::json::parse(rep.out);
  EXPECT_GE(j["updates"].get<uint64_t>(), 2048u);
  EXPECT_EQ(j["fidelity_matched"], j["fidelity_checked"]);

  // Every mm named as its process was called while it lived, or not at all.
  const auto all = testing::run_command(cli + " replay --json --top 100000 " +
                                        path.string());
  ASSERT_EQ(all.exit_code, 0) << all.err;
  size_t loops_named = 0;
  bool sleep_named = false;
  const auto replayed = nlohmann::json::parse(all.out);
  for (const auto& m : replayed["mms"]) {
    const auto tgid = m["tgid"].get<pid_t>();
    if (std::find(loops.begin(), loops.end(), tgid) != loops.end()) {
      EXPECT_EQ(m["comm"], "fault-loop") << m;
      ++loops_named;
    }
    if (tgid == execed && m["comm"] == "sleep") {
      EXPECT_FALSE(sleep_named) << "two mms of pid " << execed << " as sleep";
      sleep_named = true;
    } else if (tgid == execed && !m["comm"].is_null()) {
      EXPECT_EQ(m["comm"], "fault-loop") << m;
    }
  }
  EXPECT_GE(loops_named, 1u);
  EXPECT_TRUE(sleep_named) << all.out.substr(0, 2000);

  // A cut file: exit 1, the error names the byte offset, the rest replayed.
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 100u);
  std::filesystem::resize_file(path, size - 100);
  const auto cut = testing::run_command(cli + " replay " + path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(cut.exit_code, 1);
  EXPECT_NE(cut.err.find("at byte"), std::string::npos) << cut.err;
  EXPECT_NE(cut.out.find("events"), std::string::npos);
}

}  // namespace
}  // namespace rssaudit
