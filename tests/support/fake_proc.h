// A process's /proc files in a temp dir, from the samples captured in
// tests/core/procfs/proc_samples.h, for a ProcessSampler given that root:
// its stat as a test wants it, and a stat that changes between two reads.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/core/procfs/proc_samples.h"

namespace rssaudit::testing {

// The python3 sample's stat (rss 3516 pages, status 3546 precise) with
// field 24 (rss) and field 9 (flags: 0x4 is PF_EXITING) as given.
inline std::string stat_with(uint64_t rss, uint32_t flags = 0x400000) {
  std::string text(samples::kStat);
  text.replace(text.find(" 4194304 "), 9, " " + std::to_string(flags) + " ");
  text.replace(text.find(" 3516 "), 6, " " + std::to_string(rss) + " ");
  return text;
}

// Writes the cheap files the sampler reads into `dir` (/proc/PID), the
// python3 sample's but for `stat`.
inline void write_process(const std::filesystem::path& dir,
                          const std::string& stat) {
  std::filesystem::create_directories(dir);
  auto put = [&](const char* name, std::string_view text) {
    std::ofstream(dir / name, std::ios::binary) << text;
  };
  put("stat", stat);
  put("statm", samples::kStatm);
  put("status", samples::kStatus);
  put("cgroup", "0::/test.slice\n");
}

// A file that gives `texts` to its successive opens, as if the process had
// changed between two reads of one sample: a FIFO per text, each put in
// place before the previous reader can see its end, then a plain file
// holding the last text. Each FIFO waits for its reader for at most 10 s.
class ChangingFile {
 public:
  ChangingFile(const std::filesystem::path& path,
               std::vector<std::string> texts)
      : path_(path) {
    const std::string next = path_.string() + ".next";
    if (texts.empty() || mkfifo(next.c_str(), 0600) != 0 ||
        std::rename(next.c_str(), path_.c_str()) != 0)
      std::abort();
    writer_ = std::thread([this, next, texts = std::move(texts)] {
      for (size_t i = 0; i < texts.size(); ++i) {
        int fd = -1;
        for (int wait = 0; wait < 10'000 && fd < 0; ++wait) {
          // ENXIO until a reader has it open.
          fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
          if (fd < 0) usleep(1000);
        }
        opened_ += fd >= 0 && write(fd, texts[i].data(), texts[i].size()) ==
                                  static_cast<ssize_t>(texts[i].size());
        // The reader sees the end of this text only at the close: by then
        // its next open finds the next FIFO, or the last text for good.
        if (fd >= 0 && i + 1 < texts.size()) {
          if (mkfifo(next.c_str(), 0600) != 0) std::abort();
        } else {
          std::ofstream(next, std::ios::binary) << texts.back();
        }
        std::rename(next.c_str(), path_.c_str());
        if (fd < 0) return;
        close(fd);
      }
    });
  }
  ChangingFile(const ChangingFile&) = delete;
  ChangingFile& operator=(const ChangingFile&) = delete;
  ~ChangingFile() { writer_.join(); }
  // Texts read so far.
  int opened() const { return opened_; }

 private:
  std::filesystem::path path_;
  std::atomic<int> opened_{0};
  std::thread writer_;
};

}  // namespace rssaudit::testing
