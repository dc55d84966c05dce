#include "cli/run_until.h"

#include <poll.h>

#include <atomic>
#include <chrono>
#include <csignal>

#include "os/clock.h"

namespace rssaudit::cli {
namespace {

std::atomic<bool> interrupted{false};

}  // namespace

void run_until(double duration_s, Doorbell& doorbell,
               const std::function<bool()>& tick) {
  interrupted = false;
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });
  const auto end = std::chrono::steady_clock::now() + seconds(duration_s);
  while (!interrupted && std::chrono::steady_clock::now() < end) {
    pollfd rung{doorbell.fd(), POLLIN, 0};
    if (poll(&rung, 1, 10) > 0) doorbell.answer();
    if (!tick()) break;
  }
}

}  // namespace rssaudit::cli
