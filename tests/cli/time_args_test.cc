// The --since/--until parser of the query commands.
#include "cli/time_args.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include <string>

namespace rssaudit::cli {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kNow = 1'700'000'000 * kS;

int64_t ns(const Result<int64_t>& t) {
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return t.value_or(-1);
}

bool rejected(std::string_view text) {
  return !parse_time_arg(text, kNow).has_value();
}

// Sets TZ for one test and restores it after.
class TimeZone {
 public:
  explicit TimeZone(const char* tz) {
    if (const char* old = getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~TimeZone() {
    if (old_.empty()) {
      unsetenv("TZ");
    } else {
      setenv("TZ", old_.c_str(), 1);
    }
    tzset();
  }

 private:
  std::string old_;
};

TEST(TimeArgs, DurationsCountBackFromNow) {
  EXPECT_EQ(ns(parse_time_arg("30s", kNow)), kNow - 30 * kS);
  EXPECT_EQ(ns(parse_time_arg("15m", kNow)), kNow - 15 * 60 * kS);
  EXPECT_EQ(ns(parse_time_arg("1h", kNow)), kNow - 3600 * kS);
  EXPECT_EQ(ns(parse_time_arg("7d", kNow)), kNow - 7 * 86400 * kS);
  EXPECT_EQ(ns(parse_time_arg("0s", kNow)), kNow);
  EXPECT_EQ(ns(parse_time_arg("now", kNow)), kNow);
}

TEST(TimeArgs, DurationsBeyondTheEpochClampToIt) {
  EXPECT_EQ(ns(parse_time_arg("99999999999d", kNow)), 0);
}

TEST(TimeArgs, AbsoluteTimesAreLocal) {
  {
    TimeZone utc("UTC0");
    EXPECT_EQ(ns(parse_time_arg("2023-11-14 22:13", kNow)), 1'699'999'980 * kS);
    EXPECT_EQ(ns(parse_time_arg("2023-11-14 22:13:20", kNow)), kNow);
    EXPECT_EQ(local_time_text(kNow), "2023-11-14 22:13:20");
  }
  TimeZone east("XYZ-2");  // two hours ahead of UTC
  EXPECT_EQ(ns(parse_time_arg("2023-11-15 00:13:20", kNow)), kNow);
  EXPECT_EQ(utc_time_text(kNow), "2023-11-14T22:13:20Z");
}

// Times whose nanoseconds since the epoch do not fit 64 bits (found by
// fuzz/time_args_fuzz: the product overflowed).
TEST(TimeArgs, TimesOutsideTheNanosecondRangeAreRefused) {
  TimeZone utc("UTC0");
  for (const char* far : {"2300-01-01 00:00", "1600-01-01 00:00",
                          "2-03-30 02:30", "9999-12-31 23:59"}) {
    const auto r = parse_time_arg(far, kNow);
    ASSERT_FALSE(r.has_value()) << far;
    EXPECT_NE(r.error().message.find("between the years 1678 and 2262"),
              std::string::npos)
        << far << ": " << r.error().message;
  }
  EXPECT_TRUE(parse_time_arg("2262-01-01 00:00", kNow).has_value());
}

TEST(TimeArgs, RejectsWhatIsNotATime) {
  for (const char* bad :
       {"", "1", "h", "1x", "-5m", "1.5h", "1h30m", "yesterday", "2023-11-14",
        "2023-13-01 00:00", "2023-02-30 10:00", "2023-11-14 25:00",
        "2023-11-14 10:00 junk", "2023-11-14T10:00"})
    EXPECT_TRUE(rejected(bad)) << bad;
}

TEST(TimeArgs, StepsArePositiveDurations) {
  EXPECT_EQ(duration_ns("30s").value(), 30'000'000'000);
  EXPECT_EQ(duration_ns("5m").value(), 300'000'000'000);
  EXPECT_EQ(duration_ns("1d").value(), 86'400'000'000'000);
  for (const char* bad : {"", "0m", "5", "m", "-1s", "1.5h", "99999999999d"})
    EXPECT_FALSE(duration_ns(bad).has_value()) << bad;
}

}  // namespace
}  // namespace rssaudit::cli
