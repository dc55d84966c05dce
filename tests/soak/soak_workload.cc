// The soak test's workload program (tests/soak/README.md).
// Usage:
//   soak_workload busy THREADS PAUSE_US STATUS_FILE
//   soak_workload pool PROCESSES PERIOD_MS STATUS_FILE
//   soak_workload storm RATE SECONDS STATUS_FILE
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "workload.h"

namespace {

constexpr const char* kUsage =
    "usage: soak_workload busy THREADS PAUSE_US STATUS_FILE\n"
    "       soak_workload pool PROCESSES PERIOD_MS STATUS_FILE\n"
    "       soak_workload storm RATE SECONDS STATUS_FILE\n";

// The argument `name` as an integer in [low, high]; else a message naming
// it and exit 2.
int number(const char* text, const char* name, int low, int high) {
  int value = 0;
  const std::string_view s(text);
  const auto [end, error] =
      std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc{} || end != s.data() + s.size() || value < low ||
      value > high) {
    std::fprintf(stderr, "soak_workload: %s '%s' is not a number in %d..%d\n",
                 name, text, low, high);
    std::exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rssaudit::soak;
  if (argc != 5) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string_view mode = argv[1];
  const std::string status = argv[4];
  if (mode == "busy")
    return run_busy(number(argv[2], "THREADS", 1, 4096),
                    number(argv[3], "PAUSE_US", 0, 10000000), status);
  if (mode == "pool")
    return run_pool(number(argv[2], "PROCESSES", 1, 4000000),
                    number(argv[3], "PERIOD_MS", 1, 3600000), status);
  if (mode == "storm")
    return run_storm(number(argv[2], "RATE", 1, 1000000),
                     number(argv[3], "SECONDS", 1, 86400), status);
  std::fprintf(stderr, "soak_workload: unknown mode '%s'\n%s", argv[1], kUsage);
  return 2;
}
