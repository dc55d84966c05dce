// The time arguments of the query commands (--since, --until): a duration
// back from now ("30s", "15m", "1h", "7d"), "now", or a local wall-clock
// time "YYYY-MM-DD HH:MM" (optionally ":SS").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "os/clock.h"  // local_time_text(): `ns` as local "YYYY-MM-DD HH:MM:SS"

namespace rssaudit::cli {

// Nanoseconds since the Unix epoch, or why `text` is not a time.
Result<int64_t> parse_time_arg(std::string_view text, int64_t now_ns);

// Nanoseconds since the Unix epoch, from the system clock.
int64_t wall_now_ns();

// "30s", "15m", "1h", "7d" as nanoseconds (positive), or why not.
Result<int64_t> duration_ns(std::string_view text);

// `ns` as UTC "YYYY-MM-DDTHH:MM:SSZ" (ISO 8601), for exports.
std::string utc_time_text(int64_t ns);

}  // namespace rssaudit::cli
