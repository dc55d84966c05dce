#include "core/formats/live_view_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "tests/support/sample_live_view.h"

namespace rssaudit {
namespace {

using nlohmann::json;

auto fields(const DaemonHealth& h) {
  return std::tie(
      h.time_ns, h.uptime_s, h.host, h.kernel_release, h.nr_cpus, h.batch,
      h.page_size, h.events, h.events_per_s, h.drops, h.ambiguous, h.losses,
      h.lag_s, h.loop_delay_s, h.bpf_ns_per_event, h.fidelity_checked,
      h.fidelity_matched, h.live_mms, h.quiet_processes,
      h.host_processes_known, h.host_kernel_rss, h.host_exact_rss,
      h.host_worst_case, h.drift_unknown_moving, h.drift_unknown_exiting,
      h.drift_beyond_bound, h.store_error, h.store_dropped_rows,
      h.store_pending_rows, h.store_file_bytes, h.store_used_bytes,
      h.store_cap_bytes, h.store_growth_bytes_per_s, h.sampling_gaps);
}

auto fields(const LiveProcess& p) {
  return std::tie(p.pid, p.start_ticks, p.comm, p.cgroup, p.from_zero, p.quiet,
                  p.updates, p.flagged, p.fidelity_checked, p.fidelity_matched,
                  p.exact_rss, p.kernel_rss, p.kernel_known, p.peak_rss,
                  p.rss_bound, p.largest_error);
}

void expect_same(const LiveView& a, const LiveView& b) {
  EXPECT_TRUE(fields(a.health) == fields(b.health));
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (size_t i = 0; i < a.processes.size(); ++i)
    EXPECT_TRUE(fields(a.processes[i]) == fields(b.processes[i])) << i;
}

// Through text, as the socket carries it.
LiveView round_trip(const LiveView& v) {
  const std::string line = dump_line(live_view_to_json(v));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  Result<LiveView> back = live_view_from_json(json::parse(line));
  EXPECT_TRUE(back.has_value()) << back.error().message;
  return back.value_or(LiveView{});
}

TEST(LiveViewJson, RoundTripIsExact) {
  const LiveView v = testing::sample_live_view();
  expect_same(v, round_trip(v));
}

TEST(LiveViewJson, RoundTripKeepsExtremesAndAwkwardText) {
  LiveView v = testing::sample_live_view();
  v.health.time_ns = std::numeric_limits<int64_t>::min();
  v.health.events = std::numeric_limits<uint64_t>::max();
  v.health.batch = std::numeric_limits<int32_t>::min();
  v.health.nr_cpus = std::numeric_limits<uint32_t>::max();
  v.health.events_per_s = 0.1;  // not exact in binary: needs 17 digits
  v.health.uptime_s = 1e-300;
  v.health.lag_s = 12345.678901234567;
  v.health.bpf_ns_per_event.reset();
  v.health.store_error = "rssaudit.db: database or disk is full";
  LiveProcess& p = v.processes[0];
  p.comm = "a \"quoted\"\n\tcomm \\ ü";
  p.cgroup = "";
  p.exact_rss = std::numeric_limits<int64_t>::min();
  p.kernel_rss = std::numeric_limits<int64_t>::max();
  p.largest_error.back() = -1;
  p.pid = std::numeric_limits<uint32_t>::max();
  expect_same(v, round_trip(v));
}

TEST(LiveViewJson, EmptyViewRoundTrips) {
  expect_same(LiveView{}, round_trip(LiveView{}));
}

TEST(LiveViewJson, NonFiniteDoublesBecomeNullAndParseBackAsNan) {
  LiveView v;
  v.health.lag_s = std::numeric_limits<double>::infinity();
  v.health.events_per_s = std::nan("");
  v.health.bpf_ns_per_event = std::nan("");
  const json j = live_view_to_json(v);
  EXPECT_TRUE(j["health"]["lag_s"].is_null());
  EXPECT_TRUE(j["health"]["bpf_ns_per_event"].is_null());
  const LiveView back = round_trip(v);
  EXPECT_TRUE(std::isnan(back.health.lag_s));
  EXPECT_TRUE(std::isnan(back.health.events_per_s));
  EXPECT_FALSE(back.health.bpf_ns_per_event.has_value());
}

TEST(LiveViewJson, InvalidUtf8IsReplacedNotThrown) {
  LiveProcess p = testing::sample_process(1, "", 0, 0, true);
  p.comm = std::string("bad\xff\xfe", 5);
  std::string line;
  ASSERT_NO_THROW(line = dump_line(process_to_json(p)));
  Result<LiveProcess> back = process_from_json(json::parse(line));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->comm.substr(0, 3), "bad");
}

TEST(LiveViewJson, LargestErrorIsKeyedBySchemeName) {
  const json j = process_to_json(testing::sample_process(5, "x", 1, 2, true));
  for (size_t i = 0; i < SchemeSet::kCount; ++i)
    EXPECT_TRUE(j["largest_error"].contains(std::string(SchemeSet::kNames[i])))
        << SchemeSet::kNames[i];
}

// The error of parsing the sample view after `edit`.
std::string error_after(void (*edit)(json&)) {
  json j = live_view_to_json(testing::sample_live_view());
  edit(j);
  Result<LiveView> r = live_view_from_json(j);
  EXPECT_FALSE(r.has_value());
  return r.has_value() ? "" : r.error().message;
}

TEST(LiveViewJson, ErrorsNameTheField) {
  EXPECT_EQ(error_after([](json& j) { j["health"].erase("drops_by_cause"); }),
            "health.drops_by_cause: missing");
  EXPECT_EQ(error_after([](json& j) {
              j["health"]["drops_by_cause"].erase("unpublished");
            }),
            "health.drops_by_cause.unpublished: missing");
  EXPECT_EQ(error_after([](json& j) {
              j["processes"][1]["largest_error"].erase("hpcc");
            }),
            "processes[1].largest_error.hpcc: missing");
  EXPECT_EQ(error_after([](json& j) { j["processes"][0]["pid"] = -1; }),
            "processes[0].pid: expected an integer from 0 to 4294967295, got "
            "-1");
  EXPECT_EQ(error_after([](json& j) { j["health"]["nr_cpus"] = 4294967296; }),
            "health.nr_cpus: expected an integer from 0 to 4294967295, got "
            "4294967296");
  EXPECT_EQ(error_after([](json& j) { j["health"]["batch"] = 1.5; }),
            "health.batch: expected an integer from -2147483648 to "
            "2147483647, got 1.5");
  EXPECT_EQ(error_after([](json& j) { j["health"]["host"] = 7; }),
            "health.host: expected a string, got 7");
  EXPECT_EQ(error_after([](json& j) { j["health"]["lag_s"] = "soon"; }),
            "health.lag_s: expected a number, got \"soon\"");
  EXPECT_EQ(error_after([](json& j) { j["processes"][2]["from_zero"] = 1; }),
            "processes[2].from_zero: expected true or false, got 1");
  EXPECT_EQ(error_after([](json& j) { j["processes"] = json::object(); }),
            "processes: expected an array, got {}");
  EXPECT_EQ(error_after([](json& j) { j["processes"][3] = "x"; }),
            "processes[3]: expected an object, got \"x\"");
  EXPECT_EQ(error_after([](json& j) { j = json::array(); }),
            "the document: expected an object, got []");
}

TEST(LiveViewJson, UnknownFieldsAreIgnoredForNewerDaemons) {
  json j = live_view_to_json(testing::sample_live_view());
  j["health"]["something_new"] = {1, 2};
  j["processes"][0]["also_new"] = "x";
  EXPECT_TRUE(live_view_from_json(j).has_value());
}

}  // namespace
}  // namespace rssaudit
