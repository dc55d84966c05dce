// Parses every file of a fake procfs tree in a temp dir, as the sampler will
// walk /proc: one read per file, dispatch on the file name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "core/procfs/proc_maps.h"
#include "core/procfs/proc_smaps_rollup.h"
#include "core/procfs/proc_stat.h"
#include "core/procfs/proc_statm.h"
#include "core/procfs/proc_status.h"
#include "tests/core/procfs/proc_samples.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;

class ProcFakeTree : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("rssaudit-procfs-" + std::to_string(std::random_device{}()));
    fs::create_directories(root_);
    // python3 with 3 threads: every file the sampler reads.
    add("6029", "stat", samples::kStat);
    add("6029", "statm", samples::kStatm);
    add("6029", "status", samples::kStatus);
    add("6029", "smaps_rollup", samples::kSmapsRollup);
    add("6029", "maps", samples::kMaps);
    // kthreadd: no mm, so empty maps and no smaps_rollup (reads ESRCH).
    add("2", "stat", samples::kKthreadStat);
    add("2", "statm", samples::kKthreadStatm);
    add("2", "status", samples::kKthreadStatus);
    add("2", "maps", "");
    add("12", "stat", samples::kKworkerStat);
  }
  void TearDown() override { fs::remove_all(root_); }

  void add(const std::string& pid, const std::string& name,
           std::string_view text) {
    fs::create_directories(root_ / pid);
    std::ofstream(root_ / pid / name, std::ios::binary) << text;
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  fs::path root_;
};

TEST_F(ProcFakeTree, ParsesEveryFileOfEveryPid) {
  std::map<uint32_t, ProcStat> stats;
  std::map<uint32_t, ProcStatm> statms;
  std::map<uint32_t, ProcStatus> statuses;
  std::map<uint32_t, std::vector<Vma>> maps;
  std::map<uint32_t, ProcSmapsRollup> rollups;
  int files = 0;
  for (const fs::directory_entry& dir : fs::directory_iterator(root_)) {
    const uint32_t pid = std::stoul(dir.path().filename());
    for (const fs::directory_entry& file : fs::directory_iterator(dir)) {
      const std::string name = file.path().filename();
      const std::string text = read(file.path());
      SCOPED_TRACE(file.path().string());
      ++files;
      if (name == "stat") {
        const auto r = parse_proc_stat(text);
        ASSERT_TRUE(r.has_value()) << r.error().message;
        stats[pid] = r.value();
      } else if (name == "statm") {
        const auto r = parse_proc_statm(text);
        ASSERT_TRUE(r.has_value()) << r.error().message;
        statms[pid] = r.value();
      } else if (name == "status") {
        const auto r = parse_proc_status(text);
        ASSERT_TRUE(r.has_value()) << r.error().message;
        statuses[pid] = r.value();
      } else if (name == "maps") {
        const auto r = parse_proc_maps(text);
        ASSERT_TRUE(r.has_value()) << r.error().message;
        maps[pid] = r.value();
      } else if (name == "smaps_rollup") {
        const auto r = parse_proc_smaps_rollup(text);
        ASSERT_TRUE(r.has_value()) << r.error().message;
        rollups[pid] = r.value();
      } else {
        ADD_FAILURE() << "unexpected file " << name;
      }
    }
  }
  EXPECT_EQ(files, 10);
  ASSERT_EQ(stats.size(), 3u);

  // Identity and thread count agree across files of one pid.
  for (const auto& [pid, stat] : stats) {
    EXPECT_EQ(stat.pid, pid);
    if (statuses.contains(pid)) {
      EXPECT_EQ(statuses[pid].tgid, pid);
      EXPECT_EQ(statuses[pid].threads, stat.num_threads);
    }
  }
  // The precise sources, read back to back, agree; the approximate stat
  // field 24 was 30 pages short.
  EXPECT_EQ(statuses[6029].vm_rss_pages(4096), statms[6029].resident);
  EXPECT_EQ(rollups[6029].rss_kb, statuses[6029].vm_rss_kb);
  EXPECT_EQ(statms[6029].resident - stats[6029].rss, 30u);
  EXPECT_EQ(maps[6029].size(), 38u);
  EXPECT_TRUE(maps[2].empty());
  EXPECT_FALSE(statuses[2].vm_rss_kb);
}

}  // namespace
}  // namespace rssaudit
