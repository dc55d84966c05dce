#include "core/formats/openmetrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

LiveProcess process(uint32_t pid, std::string comm, int64_t drift,
                    std::string cgroup = "/system.slice") {
  LiveProcess p;
  p.pid = pid;
  p.comm = std::move(comm);
  p.cgroup = std::move(cgroup);
  p.exact_rss = 1000;
  p.kernel_rss = 1000 + drift;
  p.rss_bound = 3 * 4 * 63;
  p.from_zero = true;
  p.kernel_known = true;
  p.fidelity_checked = 10;
  p.fidelity_matched = 9;
  return p;
}

LiveView sample_view() {
  LiveView v;
  v.health.host = "box";
  v.health.kernel_release = "6.1.0";
  v.health.nr_cpus = 4;
  v.health.batch = 64;
  v.health.events = 12345;
  v.health.events_per_s = 250.5;
  v.health.drops = {.stream_full = 5, .unpublished = 2};
  v.health.ambiguous = 2;
  v.health.lag_s = 0.01;
  v.health.fidelity_checked = 100;
  v.health.fidelity_matched = 99;
  v.health.live_mms = 42;
  v.health.quiet_processes = 5;
  v.health.host_processes_known = 3;
  v.health.host_kernel_rss = 1000;
  v.health.host_exact_rss = 990;
  v.health.host_worst_case = 0;  // before 6.2: the series is absent
  v.health.drift_unknown_moving = 12;
  v.health.drift_unknown_exiting = 3;
  v.processes = {process(10, "sshd", 5), process(11, "sshd", -40),
                 process(12, "bash", 3), process(13, "cron", 1)};
  return v;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

size_t count_lines_starting(const std::string& text, const std::string& head) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    if (text.compare(at, head.size(), head) == 0) ++n;
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return n;
}

TEST(OpenMetrics, EscapesQuotesBackslashesAndNewlinesInLabelValues) {
  LiveView v = sample_view();
  v.processes = {process(7, "a\"b\\c\nd e", 9)};
  const auto om = render_openmetrics(v, {.process_series = 20});
  EXPECT_TRUE(
      contains(om,
               "rssaudit_process_drift_bytes{pid=\"7\",comm=\"a\\\"b\\\\c\\nd "
               "e\"} 36864\n"))
      << om;
  EXPECT_TRUE(
      contains(om, "rssaudit_group_processes{comm=\"a\\\"b\\\\c\\nd e\"} 1\n"));
}

TEST(OpenMetrics, ReplacesInvalidUtf8InLabelValues) {
  LiveView v = sample_view();
  v.processes = {process(7, "x\xff\xc3(y\xc3\xa9", 9)};  // ends with a valid é
  const auto om = render_openmetrics(v, {});
  EXPECT_TRUE(contains(om, "comm=\"x\xef\xbf\xbd\xef\xbf\xbd(y\xc3\xa9\""))
      << om;
}

TEST(OpenMetrics, NamesEqualOnceRenderedAreOneGroup) {
  LiveView v = sample_view();
  v.processes = {process(7, "x\xff", 9), process(8, "x\xfe", 1)};
  const auto om = render_openmetrics(v, {});
  EXPECT_TRUE(
      contains(om, "rssaudit_group_processes{comm=\"x\xef\xbf\xbd\"} 2\n"))
      << om;
}

TEST(OpenMetrics, GroupsByCommWithSumsAndLargestDrift) {
  const auto om = render_openmetrics(sample_view(), {});
  // In bytes, pages of the health's 4 KiB.
  EXPECT_TRUE(
      contains(om, "rssaudit_group_drift_bytes{comm=\"sshd\"} -143360\n"));
  EXPECT_TRUE(contains(
      om, "rssaudit_group_largest_drift_bytes{comm=\"sshd\"} 163840\n"));
  EXPECT_TRUE(
      contains(om, "rssaudit_group_rss_bound_bytes{comm=\"sshd\"} 6193152\n"));
  EXPECT_TRUE(
      contains(om, "rssaudit_group_kernel_rss_bytes{comm=\"sshd\"} 8048640\n"));
  EXPECT_TRUE(
      contains(om, "rssaudit_group_exact_rss_bytes{comm=\"sshd\"} 8192000\n"));
  EXPECT_TRUE(contains(om, "rssaudit_group_processes{comm=\"sshd\"} 2\n"));
  EXPECT_TRUE(
      contains(om, "rssaudit_group_fidelity_ratio{comm=\"sshd\"} 0.9\n"));
  // 40 / 756: the worst member against its own bound.
  EXPECT_TRUE(
      contains(om, "rssaudit_group_drift_to_rss_bound_ratio{comm=\"sshd\"} " +
                       fmt::format("{}", 40.0 / 756.0) + "\n"));
}

TEST(OpenMetrics, GroupsByCgroupWhenAsked) {
  LiveView v = sample_view();
  v.processes[2].cgroup = "/user.slice";
  const auto om = render_openmetrics(v, {.group_by = GroupBy::kCgroup});
  EXPECT_TRUE(
      contains(om, "rssaudit_group_processes{cgroup=\"/system.slice\"} 3\n"));
  EXPECT_TRUE(
      contains(om, "rssaudit_group_processes{cgroup=\"/user.slice\"} 1\n"));
  EXPECT_FALSE(contains(om, "rssaudit_group_processes{comm="));
}

TEST(OpenMetrics, FoldsGroupsBeyondTopNIntoOther) {
  LiveView v = sample_view();
  // A real group named "other" must not collide with the fold.
  v.processes.push_back(process(14, "other", 100));
  const auto om = render_openmetrics(v, {.top_n = 2, .process_series = 2});
  EXPECT_EQ(count_lines_starting(om, "rssaudit_group_processes{"), 3u) << om;
  EXPECT_TRUE(contains(om, "rssaudit_group_processes{comm=\"other\"} 1\n"));
  EXPECT_TRUE(contains(om, "rssaudit_group_processes{comm=\"sshd\"} 2\n"));
  // bash (3) and cron (1) folded: sums and the larger |drift|.
  EXPECT_TRUE(contains(
      om, "rssaudit_group_processes{comm=\"other\",folded=\"true\"} 2\n"));
  EXPECT_TRUE(contains(
      om,
      "rssaudit_group_drift_bytes{comm=\"other\",folded=\"true\"} 16384\n"));
  EXPECT_TRUE(contains(om,
                       "rssaudit_group_largest_drift_bytes{comm=\"other\","
                       "folded=\"true\"} 12288\n"));
  // Per-process series, as asked: only the two largest |drift|.
  EXPECT_EQ(count_lines_starting(om, "rssaudit_process_drift_bytes{"), 2u);
  EXPECT_TRUE(contains(om, "{pid=\"14\",comm=\"other\"} 409600\n"));
  EXPECT_TRUE(contains(om, "{pid=\"11\",comm=\"sshd\"} -163840\n"));
}

TEST(OpenMetrics, NoFoldWhenGroupsFitInTopN) {
  const auto om = render_openmetrics(sample_view(), {.top_n = 3});
  EXPECT_FALSE(contains(om, "folded")) << om;
}

// A process joined mid-life has no absolute exact value: its drift is
// unknown, so it adds to no drift figure and gets no series of its own,
// while its group still counts it and its fidelity.
TEST(OpenMetrics, LeavesOutDriftOfProcessesWithoutAbsoluteValues) {
  LiveView v = sample_view();
  LiveProcess joined = process(14, "sshd", 90000);
  joined.from_zero = false;
  v.processes.push_back(joined);
  const std::string text = render_openmetrics(v, {.process_series = 20});
  EXPECT_TRUE(
      contains(text, "rssaudit_group_drift_bytes{comm=\"sshd\"} -143360\n"))
      << text;
  EXPECT_TRUE(contains(text, "rssaudit_group_processes{comm=\"sshd\"} 3\n"));
  EXPECT_FALSE(contains(text, "pid=\"14\""));
}

// Exact values known, but a counter not updated since the audit joined:
// the kernel's side of the drift is partial, so no drift either.
TEST(OpenMetrics, LeavesOutDriftWhileAKernelCountIsUnknown) {
  LiveView v = sample_view();
  LiveProcess partial = process(14, "sshd", -90000);
  partial.kernel_known = false;
  v.processes.push_back(partial);
  const std::string text = render_openmetrics(v, {.process_series = 20});
  EXPECT_TRUE(
      contains(text, "rssaudit_group_drift_bytes{comm=\"sshd\"} -143360\n"))
      << text;
  EXPECT_FALSE(contains(text, "pid=\"14\""));
}

// A group none of whose processes has a known drift has no drift series
// (never 0); processes not named yet are in no group (no comm=""), counted.
TEST(OpenMetrics, AGroupWithoutAKnownDriftHasNoDriftAndUnnamedAreApart) {
  LiveView v = sample_view();
  LiveProcess joined = process(14, "cc1plus", 500);
  joined.from_zero = false;
  v.processes.push_back(joined);
  v.processes.push_back(process(15, "", 2));
  const std::string om = render_openmetrics(v, {});
  EXPECT_TRUE(contains(om, "rssaudit_group_processes{comm=\"cc1plus\"} 1\n"))
      << om;
  EXPECT_FALSE(contains(om, "rssaudit_group_drift_bytes{comm=\"cc1plus\"}"));
  EXPECT_FALSE(contains(om, "comm=\"\""));
  EXPECT_TRUE(contains(om, "\nrssaudit_ungrouped_processes 1\n"));
}

// No per-process series unless asked: a pid label makes a new series of
// every short-lived process.
TEST(OpenMetrics, PerProcessSeriesOnlyWhenAsked) {
  EXPECT_FALSE(
      contains(render_openmetrics(sample_view(), {}), "rssaudit_process_"));
  EXPECT_EQ(count_lines_starting(
                render_openmetrics(sample_view(), {.process_series = 3}),
                "rssaudit_process_drift_bytes{"),
            3u);
}

// Each scheme's largest error of a counter over the audited processes (not
// the quiet ones, for which no model ran), in bytes.
TEST(OpenMetrics, PerSchemeLargestErrors) {
  LiveView v = sample_view();
  v.processes[0].largest_error[0] = 31;
  v.processes[1].largest_error[0] = 12;
  v.processes[1].largest_error[2] = 70;
  LiveProcess quiet = process(16, "idle", 0);
  quiet.quiet = true;
  quiet.largest_error[2] = 999;
  v.processes.push_back(quiet);
  const std::string om = render_openmetrics(v, {});
  EXPECT_TRUE(contains(
      om, "rssaudit_scheme_largest_error_bytes{scheme=\"upstream\"} 126976\n"))
      << om;
  EXPECT_TRUE(contains(
      om, "rssaudit_scheme_largest_error_bytes{scheme=\"per_task\"} 286720\n"));
  EXPECT_TRUE(contains(
      om, "rssaudit_scheme_largest_error_bytes{scheme=\"per_cpu\"} 0\n"));
}

TEST(OpenMetrics, OmitsBpfCostWhenUnknown) {
  LiveView v = sample_view();
  EXPECT_FALSE(contains(render_openmetrics(v, {}), "rssaudit_bpf_event_cost"));
  v.health.bpf_ns_per_event = 150;
  EXPECT_TRUE(contains(render_openmetrics(v, {}),
                       "\nrssaudit_bpf_event_cost_seconds 1.5e-07\n"));
}

TEST(OpenMetrics, OmitsFidelityWhenNothingWasChecked) {
  LiveView v = sample_view();
  v.health.fidelity_checked = 0;
  v.health.fidelity_matched = 0;
  for (auto& p : v.processes) p.fidelity_checked = p.fidelity_matched = 0;
  const auto om = render_openmetrics(v, {});
  EXPECT_FALSE(contains(om, "fidelity_ratio")) << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_fidelity_checks_total 0\n"));
}

// A dropped history row is a loss store_ok shows, even once writing works
// again; the history's size and growth are there, growth only once known.
TEST(OpenMetrics, DroppedHistoryRowsAndTheStoreSize) {
  LiveView v = sample_view();
  v.health.store_file_bytes = 3 << 20;
  v.health.store_used_bytes = 2 << 20;
  auto om = render_openmetrics(v, {});
  EXPECT_TRUE(contains(om, "\nrssaudit_store_ok 1\n")) << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_store_dropped_rows_total 0\n"));
  EXPECT_TRUE(contains(om,
                       "# UNIT rssaudit_store_file_bytes bytes\n"
                       "rssaudit_store_file_bytes 3145728\n"))
      << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_store_used_bytes 2097152\n"));
  EXPECT_FALSE(contains(om, "rssaudit_store_cap_bytes ")) << "no cap";
  EXPECT_FALSE(contains(om, "rssaudit_store_growth_bytes_per_second "))
      << "not measured yet";
  v.health.store_dropped_rows = 5;
  v.health.store_cap_bytes = 1 << 30;
  v.health.store_growth_bytes_per_s = 1234.5;
  v.health.sampling_gaps = 2;
  om = render_openmetrics(v, {});
  EXPECT_TRUE(contains(om, "\nrssaudit_store_ok 0\n")) << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_store_dropped_rows_total 5\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_store_cap_bytes 1073741824\n"));
  EXPECT_TRUE(
      contains(om, "\nrssaudit_store_growth_bytes_per_second 1234.5\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_sampling_gaps_total 2\n"));
}

TEST(OpenMetrics, DaemonHealthWithUnitsAndTypes) {
  LiveView v = sample_view();
  v.health.store_error = "disk full";
  const auto om =
      render_openmetrics(v, {.process_series = 20, .version = "0.1.0"});
  EXPECT_TRUE(contains(om,
                       "# TYPE rssaudit_events counter\n"
                       "rssaudit_events_total 12345\n"))
      << om;
  EXPECT_TRUE(contains(om,
                       "\nrssaudit_capture_drops_total{cause=\"stream_full\"} 5\n"
                       "rssaudit_capture_drops_total{cause=\"unpublished\"} 2\n"
                       "rssaudit_capture_drops_total{cause=\"unexpanded\"} 0\n"
                       "rssaudit_capture_drops_total{cause=\"missed_runs\"} 0\n"))
      << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_ambiguous_updates_total 2\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_events_per_second 250.5\n"));
  EXPECT_TRUE(contains(om,
                       "# UNIT rssaudit_lag_seconds seconds\n"
                       "rssaudit_lag_seconds 0.01\n"));
  EXPECT_TRUE(contains(om, "# UNIT rssaudit_group_drift_bytes bytes\n"));
  EXPECT_FALSE(contains(om, "_pages")) << "base units: bytes";
  EXPECT_TRUE(contains(om, "\nrssaudit_fidelity_ratio 0.99\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_live_mms 42\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_quiet_processes 5\n"));
  EXPECT_TRUE(contains(
      om,
      "# TYPE rssaudit_drift_unknown_samples counter\n"
      "rssaudit_drift_unknown_samples_total{reason=\"moving\"} 12\n"
      "rssaudit_drift_unknown_samples_total{reason=\"exiting\"} 3\n"
      "rssaudit_drift_unknown_samples_total{reason=\"beyond_bound\"} 0\n"))
      << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_host_kernel_rss_bytes 4096000\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_host_exact_rss_bytes 4055040\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_host_drift_known_processes 3\n"));
  EXPECT_FALSE(contains(om, "rssaudit_host_worst_case_drift")) << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_store_ok 0\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_page_size_bytes 4096\n"));
  EXPECT_TRUE(contains(om, "# TYPE rssaudit_build info\n"));
  EXPECT_TRUE(contains(om, "\nrssaudit_build_info{version=\"0.1.0\"} 1\n"));
  EXPECT_TRUE(contains(om,
                       "\nrssaudit_host_info{host=\"box\",kernel_release="
                       "\"6.1.0\",counting=\"percpu_counter\"} 1\n"))
      << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_process_rss_bound_bytes{"));
}

// Before 6.2 no bound holds a thread's cache in time: no bound series, never
// a made-up 0; the host says how its kernel counts.
TEST(OpenMetrics, AKernelWithPerTaskCachesHasNoBoundSeries) {
  LiveView v = sample_view();
  v.health.counting = "task_cache";
  for (LiveProcess& p : v.processes) p.rss_bound = 0;
  const auto om = render_openmetrics(v, {.process_series = 20});
  EXPECT_FALSE(contains(om, "\nrssaudit_process_rss_bound_bytes{")) << om;
  EXPECT_FALSE(contains(om, "\nrssaudit_group_rss_bound_bytes{")) << om;
  EXPECT_FALSE(contains(om, "\nrssaudit_group_drift_to_rss_bound_ratio{"))
      << om;
  EXPECT_TRUE(contains(om, "counting=\"task_cache\"} 1\n")) << om;
  EXPECT_TRUE(contains(om, "\nrssaudit_process_drift_bytes{")) << om;
}

TEST(OpenMetrics, EndsWithOneEofLine) {
  const auto om = render_openmetrics(sample_view(), {});
  ASSERT_GE(om.size(), 6u);
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
  EXPECT_EQ(om.find("# EOF"), om.size() - 6);
}

TEST(PrometheusText, NamesFamiliesAsTheirSamplesWithoutUnitsOrEof) {
  const auto text = render_prometheus_text(sample_view(), {});
  EXPECT_TRUE(contains(text,
                       "# TYPE rssaudit_events_total counter\n"
                       "rssaudit_events_total 12345\n"))
      << text;
  EXPECT_TRUE(contains(text, "# TYPE rssaudit_build_info gauge\n"));
  EXPECT_FALSE(contains(text, "# UNIT"));
  EXPECT_FALSE(contains(text, "# EOF"));
}

TEST(NegotiateFormat, OpenMetricsOnlyWhenAskedForExplicitly) {
  // What Prometheus 2.42 sends.
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,"
                             "application/openmetrics-text;version=0.0.1;"
                             "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format("Application/OpenMetrics-Text"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("*/*"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=0"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain;q=1,"
                             "application/openmetrics-text;q=0.5"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=2.0.0"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format(";;,,q=;;=,"), ExpositionFormat::kPrometheusText);
}

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

// promtool 2.42 lints the text format only; see core/formats/openmetrics.h.
TEST(PrometheusText, PassesPromtoolCheckMetrics) {
  if (!have_promtool()) {
    GTEST_SKIP() << "promtool not found: install the Debian package "
                    "'prometheus'";
  }
  LiveView v = sample_view();
  v.health.bpf_ns_per_event = 150;
  v.processes.push_back(process(7, "a\"b\\c\nd e", 9, ""));
  v.processes.push_back(process(8, "x\xff", -2, "/a b"));
  for (auto group_by : {GroupBy::kComm, GroupBy::kCgroup}) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("rssaudit-promtool-" + std::to_string(getpid()));
    std::ofstream(path) << render_prometheus_text(v, {.group_by = group_by,
                                                      .top_n = 2,
                                                      .process_series = 3,
                                                      .version = "0.1.0"});
    const auto r =
        testing::run_command("promtool check metrics < " + path.string());
    std::filesystem::remove(path);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out + r.err, "");
  }
}

}  // namespace
}  // namespace rssaudit
