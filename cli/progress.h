// Progress on stderr for work that lasts longer than a second: a line that
// rewrites itself on a terminal, a line per second otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rssaudit::cli {

class Progress {
 public:
  Progress(std::string label, uint64_t total);
  ~Progress();  // ends the line if anything was shown
  void update(uint64_t done);

 private:
  using Clock = std::chrono::steady_clock;
  std::string label_;
  uint64_t total_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_shown_{};
  bool shown_ = false;
  bool tty_;
};

}  // namespace rssaudit::cli
