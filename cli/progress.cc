#include "cli/progress.h"

#include <fmt/core.h>
#include <unistd.h>

namespace rssaudit::cli {

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)), total_(total), tty_(isatty(STDERR_FILENO)) {}

Progress::~Progress() {
  if (shown_ && tty_) fmt::print(stderr, "\n");
}

void Progress::update(uint64_t done) {
  const auto now = Clock::now();
  if (now - start_ < std::chrono::seconds(1)) return;
  if (shown_ && now - last_shown_ < std::chrono::seconds(1)) return;
  last_shown_ = now;
  shown_ = true;
  const double pct = total_ ? 100.0 * done / total_ : 0.0;
  fmt::print(stderr, "{}{}: {:.1f} M of {:.1f} M updates ({:.0f}%){}",
             tty_ ? "\r" : "", label_, done / 1e6, total_ / 1e6, pct,
             tty_ ? "" : "\n");
}

}  // namespace rssaudit::cli
