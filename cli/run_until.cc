#include "cli/run_until.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "os/clock.h"

namespace rssaudit::cli {
namespace {

std::atomic<bool> interrupted{false};

}  // namespace

void run_until(double duration_s, const std::function<bool()>& tick) {
  interrupted = false;
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });
  const auto end = std::chrono::steady_clock::now() + seconds(duration_s);
  while (!interrupted && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!tick()) break;
  }
}

}  // namespace rssaudit::cli
