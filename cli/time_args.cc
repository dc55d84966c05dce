#include "cli/time_args.h"

#include <time.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <utility>

namespace rssaudit::cli {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

// "15m" as (count, seconds per unit).
Result<std::pair<int64_t, int64_t>> count_and_unit(std::string_view text) {
  if (text.empty())
    return unexpected(Error{"a duration needs a unit: s, m, h or d"});
  int64_t seconds_per_unit = 0;
  switch (text.back()) {
    case 's':
      seconds_per_unit = 1;
      break;
    case 'm':
      seconds_per_unit = 60;
      break;
    case 'h':
      seconds_per_unit = 3600;
      break;
    case 'd':
      seconds_per_unit = 86400;
      break;
    default:
      return unexpected(Error{"a duration needs a unit: s, m, h or d"});
  }
  const std::string_view digits = text.substr(0, text.size() - 1);
  int64_t count = 0;
  const auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), count);
  if (digits.empty() || ec != std::errc() || end != digits.end() || count < 0)
    return unexpected(Error{"expected a count before the unit, as in 15m"});
  return std::pair{count, seconds_per_unit};
}

Result<int64_t> parse_duration(std::string_view text, int64_t now_ns) {
  const auto parsed = count_and_unit(text);
  if (!parsed) return unexpected(parsed.error());
  const auto [count, seconds_per_unit] = *parsed;
  // Anything before the epoch is as good as "since ever".
  if (count > now_ns / kNsPerSecond / seconds_per_unit) return int64_t{0};
  return now_ns - count * seconds_per_unit * kNsPerSecond;
}

Result<int64_t> parse_local(std::string_view text) {
  struct tm tm = {};
  int year, month, day, hour, minute, second = 0, consumed = 0;
  const std::string s(text);
  const int fields = std::sscanf(s.c_str(), "%4d-%2d-%2d %2d:%2d%n", &year,
                                 &month, &day, &hour, &minute, &consumed);
  if (fields != 5)
    return unexpected(Error{"expected YYYY-MM-DD HH:MM (local time)"});
  if (consumed < static_cast<int>(s.size())) {
    int more = 0;
    if (std::sscanf(s.c_str() + consumed, ":%2d%n", &second, &more) != 1 ||
        consumed + more != static_cast<int>(s.size()))
      return unexpected(Error{"expected YYYY-MM-DD HH:MM (local time)"});
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 59 || hour < 0 || minute < 0 || second < 0)
    return unexpected(Error{"no such date or time"});
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  tm.tm_isdst = -1;  // let the time zone say whether DST applies
  const time_t t = mktime(&tm);
  // mktime normalises 2024-02-31 to March: refuse instead of surprising.
  if (t == -1 || tm.tm_mday != day || tm.tm_mon != month - 1)
    return unexpected(Error{"no such date or time"});
  // Nanoseconds since the epoch in 64 bits: 1678 to 2262.
  if (t > INT64_MAX / kNsPerSecond || t < INT64_MIN / kNsPerSecond)
    return unexpected(Error{"a time between the years 1678 and 2262"});
  return static_cast<int64_t>(t) * kNsPerSecond;
}

}  // namespace

Result<int64_t> duration_ns(std::string_view text) {
  const auto parsed = count_and_unit(text);
  if (!parsed) return unexpected(parsed.error());
  const auto [count, seconds_per_unit] = *parsed;
  if (count == 0) return unexpected(Error{"a duration must be positive"});
  if (count > INT64_MAX / kNsPerSecond / seconds_per_unit)
    return unexpected(Error{"too long a duration"});
  return count * seconds_per_unit * kNsPerSecond;
}

Result<int64_t> parse_time_arg(std::string_view text, int64_t now_ns) {
  if (text == "now") return now_ns;
  if (text.empty()) return unexpected(Error{"empty time"});
  if (text.find('-') != std::string_view::npos) return parse_local(text);
  return parse_duration(text, now_ns);
}

int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string utc_time_text(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / kNsPerSecond);
  struct tm tm = {};
  gmtime_r(&t, &tm);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace rssaudit::cli
