// The CLI's --since/--until and durations (cli/time_args.h): a time or an
// error, a duration positive, a duration back from now within [0, now], a
// local time printed back parses to the same instant; no overflow (UBSan).
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

#include "cli/time_args.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

// 2026-01-01 00:00 UTC, and a clock just after the epoch.
constexpr int64_t kNows[] = {1'767'225'600'000'000'000, 1'000'000'000};
constexpr int64_t kNsPerSecond = 1'000'000'000;

void check(std::string_view text) {
  const auto duration = cli::duration_ns(text);
  if (duration) {
    FUZZ_CHECK(*duration > 0 && *duration % kNsPerSecond == 0,
               fmt::format("{} from {}", *duration, shown(text)));
    const std::string seconds = fmt::format("{}s", *duration / kNsPerSecond);
    const auto again = cli::duration_ns(seconds);
    FUZZ_CHECK(again && *again == *duration,
               fmt::format("{} from {}", seconds, shown(text)));
  }
  for (const int64_t now : kNows) {
    const auto time = cli::parse_time_arg(text, now);
    if (!time) {
      FUZZ_CHECK(!time.error().message.empty(), shown(text));
      continue;
    }
    const std::string what =
        fmt::format("{} at now {} from {}", *time, now, shown(text));
    if (text == "now") {
      FUZZ_CHECK(*time == now, what);
    } else if (text.find('-') == std::string_view::npos) {
      // A duration back from now; anything before the epoch is 0.
      FUZZ_CHECK(*time >= 0 && *time <= now, what);
      if (duration)
        FUZZ_CHECK(*time == (*duration <= now ? now - *duration : 0), what);
    } else {
      const std::string local = local_time_text(*time);
      const auto again = cli::parse_time_arg(local, now);
      FUZZ_CHECK(again && *again == *time,
                 fmt::format("{} printed as {}", what, local));
    }
  }
}

}  // namespace
}  // namespace rssaudit::fuzz

// A zone with daylight saving time, so that gaps and repeated hours are
// reached, without depending on the host's.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
  tzset();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
