// `rssaudit top | show | history | export` over a history database built
// here with the daemon's writer, run as a user runs them.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/schemes/scheme_set.h"
#include "store/store.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using testing::lines_of;
using testing::run_command;
using testing::slurp;

const std::string kCli = RSSAUDIT_CLI;
constexpr int64_t kMinute = 60'000'000'000;
constexpr int kSamples = 5;  // per process, one a minute

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}

// Two runs of the daemon in the last hour: "big drifter" (a comm with a
// space) drifts most; pid 100 is reused by "other" in run 2 with another
// start time; two processes are named "worker". Run 1 stopped; run 2's
// daemon still runs: its writer holds the file for the whole suite.
class QueryCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string templ = fs::temp_directory_path() / "rssaudit-query-XXXXXX";
    dir_ = new fs::path(mkdtemp(templ.data()));
    db_ = new std::string(*dir_ / "history.db");
    auto opened = Store::open(*db_, {});
    ASSERT_TRUE(opened.has_value()) << opened.error().message;
    writer_ = std::move(opened).value().release();
    Store& s = *writer_;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const int64_t t0 = now - 40 * kMinute;
    RunInfo run{.host = "testhost",
                .kernel_release = "6.1.0-test",
                .nr_cpus = 8,
                .batch = 64,
                .page_size = 4096,
                .rssaudit_version = "0.1.0",
                .started_ns = t0};
    s.begin_run(run);
    add(s, s.upsert_process({100, 1000}, "big drifter", "/a", t0), t0, 25600,
        400, true);
    add(s, s.upsert_process({200, 2000}, "worker", "/b", t0), t0, 2560, -20,
        false);
    add(s, s.upsert_process({300, 3000}, "quiet", "/c", t0), t0, 256, 0, false);
    s.end_run(t0 + 10 * kMinute);
    ASSERT_TRUE(s.flush().has_value());  // the store keeps one run in memory
    run.started_ns = t0 + 15 * kMinute;
    s.begin_run(run);
    const int64_t t1 = t0 + 20 * kMinute;
    add(s, s.upsert_process({100, 5000}, "other", "/a", t1), t1, 512, 50,
        false);
    add(s, s.upsert_process({400, 4000}, "worker", "/b", t1), t1, 1024, 10,
        false);
    ASSERT_TRUE(s.flush().has_value());
  }
  static void TearDownTestSuite() {
    delete writer_;
    fs::remove_all(*dir_);
    delete dir_;
    delete db_;
  }

  // kSamples samples a minute apart from `t`, drift growing to `drift`
  // pages; with model errors of every scheme when `models`.
  static void add(Store& s, int64_t process, int64_t t, int64_t anon,
                  int64_t drift, bool models) {
    for (int i = 1; i <= kSamples; ++i) {
      const int64_t time = t + i * kMinute;
      const int64_t d = drift * i / kSamples;
      SampleRow r;
      r.process_id = process;
      r.time_ns = time;
      r.approximate = {100, anon + d, 0, 10};
      r.stat_rss = 110 + anon + d;
      r.precise = {100, anon, 0, 10};
      r.statm_resident = 110 + anon;
      r.exact = {100, anon, 0, 10};
      r.walk = {std::nullopt, anon - 1, 0, std::nullopt};
      r.walk_rss = 109 + anon;
      r.vm_hwm = 110 + anon;
      r.true_peak = 120 + anon;
      r.threads = 3;
      s.add_sample(r);
      if (!models) continue;
      for (size_t k = 0; k < SchemeSet::kCount; ++k)
        s.add_model_error(
            {.process_id = process,
             .start_ns = time - kMinute,
             .end_ns = time,
             .scheme = k,
             .largest_error = int64_t(k * 7 + i),
             .bound = k == 5
                          ? std::nullopt
                          : std::optional<int64_t>(k == 0 ? 504 : 64 * (k + 1)),
             .shared_updates = 10,
             .bytes_per_mm = 64,
             .read_cost = ReadCost{
                 1, k == 1 ? std::nullopt : std::optional<int64_t>(9)}});
    }
  }

  static std::string cli(const std::string& args) {
    return kCli + " " + args + " --db " + *db_;
  }

  static fs::path* dir_;
  static std::string* db_;
  static Store* writer_;
};

fs::path* QueryCli::dir_ = nullptr;
std::string* QueryCli::db_ = nullptr;
Store* QueryCli::writer_ = nullptr;

TEST_F(QueryCli, TopRanksByLargestDriftAndFits80Columns) {
  const auto r = run_command(cli("top --since 1h"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  // The window, the host's two lines, the header and run 2's 2 rows; run
  // 1's 3 apart, under what they are and when their daemon stopped; the
  // legend.
  ASSERT_EQ(lines.size(), 1u + 2u + 1u + 2u + 3u + 3u + 3u) << r.out;
  for (const std::string& line : lines) EXPECT_LE(line.size(), 80u) << line;
  EXPECT_NE(lines[0].find(": 2 of 2 running processes sampled"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[3].find("PID"), std::string::npos);
  EXPECT_NE(lines[4].find("other"), std::string::npos);
  EXPECT_NE(lines[4].find("+200 KiB"), std::string::npos) << lines[4];
  EXPECT_NE(lines[5].find("worker"), std::string::npos);
  EXPECT_NE(lines[6].find("not known to run (rssauditd stopped before they "
                          "exited), as of then:"),
            std::string::npos)
      << r.out;
  EXPECT_NE(lines[7].find("run 1: rssauditd stopped at "), std::string::npos)
      << lines[7];
  EXPECT_EQ(lines[7].find("died"), std::string::npos) << lines[7];
  EXPECT_NE(lines[8].find("PID"), std::string::npos);
  EXPECT_NE(lines[9].find("big drifter"), std::string::npos);
  EXPECT_NE(lines[9].find("+1.6 MiB"), std::string::npos) << lines[9];
  EXPECT_NE(lines[10].find("-80 KiB"), std::string::npos) << lines[10];
  EXPECT_NE(lines[11].find("quiet"), std::string::npos);
  EXPECT_NE(lines[12].find("/BOUND: max |drift| over the kernel's RSS bound"),
            std::string::npos);
}

// The host over the database: the newest run's processes, each at its newest
// sample: "other" (672 pages as readers see them, drift +50) and "worker"
// 400 (1 144, +10); run 1's processes belong to a daemon that stopped.
TEST_F(QueryCli, TopSumsTheNewestRunsProcessesForTheHost) {
  const auto r = run_command(cli("top --pages"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[1].find("readers' RSS 1816 pg, exact 1756 pg, drift +60 pg"),
            std::string::npos)
      << r.out;
  EXPECT_NE(lines[2].find("(2 processes with a known drift); worst case "
                          "\u00b13024 pg"),
            std::string::npos)
      << r.out;
  const auto j = nlohmann::json::parse(run_command(cli("top --json -n 1")).out);
  const nlohmann::json& host = j["host_rss"];
  EXPECT_EQ(host["kernel_pages"], 1816) << "not limited by -n";
  EXPECT_EQ(host["exact_pages"], 1756);
  EXPECT_EQ(host["drift_pages"], 60);
  EXPECT_EQ(host["processes_known"], 2);
  EXPECT_EQ(host["worst_case_pages"], 2 * 3 * 504);
  EXPECT_EQ(host["page_size"], 4096);
  // Run 1 alone: its three processes.
  const auto run1 = nlohmann::json::parse(
      run_command(cli("top --json --since 40m --until 28m")).out);
  EXPECT_EQ(run1["host_rss"]["processes_known"], 3) << run1.dump();
}

TEST_F(QueryCli, TopJsonSortsAndLimits) {
  const auto r = run_command(cli("top --json --sort rss -n 2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["processes_with_samples"], 2) << "run 2's: its daemon runs";
  EXPECT_EQ(j["processes"][0]["comm"], "worker");
  EXPECT_EQ(j["processes"][0]["run_state"], "running");
  EXPECT_EQ(j["processes"][1]["comm"], "other");
  EXPECT_EQ(j["host_run_state"], "running");
  // Run 1's, apart, as of its stop; -n limits them too.
  const nlohmann::json& stopped = j["run_stopped"];
  ASSERT_EQ(stopped.size(), 2u);
  EXPECT_EQ(stopped[0]["comm"], "big drifter");
  EXPECT_EQ(stopped[0]["run_state"], "stopped");
  EXPECT_FALSE(stopped[0]["run_stopped_ns"].is_null());
  EXPECT_EQ(stopped[0]["max_drift_pages"], 400);
  EXPECT_EQ(stopped[0]["samples"], kSamples);
  EXPECT_EQ(stopped[0]["bound_per_counter_pages"], 504);  // 8 x 63
  EXPECT_EQ(stopped[0]["rss_bound_pages"], 3 * 504);
  EXPECT_DOUBLE_EQ(stopped[0]["drift_to_rss_bound"], 400.0 / 1512);
  EXPECT_EQ(stopped[1]["comm"], "worker");
  const auto pages = run_command(cli("top --pages -n 1"));
  EXPECT_NE(pages.out.find("+400 pg"), std::string::npos) << pages.out;
  EXPECT_NE(pages.out.find(": 1 of 2 running processes sampled"),
            std::string::npos)
      << pages.out;
}

TEST_F(QueryCli, ShowPutsEverySourceSideBySide) {
  const auto r = run_command(cli("show 'big drifter' --pages"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* word :
       {"approx BPF", "stat", "precise", "statm", "exact", "walk", "file",
        "anon", "swap", "shmem", "VmHWM", "true peak", "upstream", "hpcc",
        "sync_query", "+400 pg", "26.5%"})  // 400 of 3 x 504
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  for (const std::string& line : lines_of(r.out))
    EXPECT_LE(line.size(), 80u) << line;
  const auto j =
      nlohmann::json::parse(run_command(cli("show 'big drifter' --json")).out);
  EXPECT_EQ(j["sample"]["sources"]["approx"]["anon_pages"], 25600 + 400);
  EXPECT_EQ(j["sample"]["peak_gap_pages"], 10);
  EXPECT_EQ(j["model_errors"].size(), SchemeSet::kCount);
  EXPECT_EQ(j["model_errors"][0]["read_lines_approximate"], 1);
  EXPECT_EQ(j["model_errors"][0]["read_lines_precise"], 9);
  EXPECT_TRUE(j["model_errors"][1]["read_lines_precise"].is_null());
  EXPECT_NE(r.out.find("1/none"), std::string::npos) << r.out;
}

TEST_F(QueryCli, ShowOfAReusedPidPicksTheMostRecentAndSaysSo) {
  const auto r = run_command(cli("show 100"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("'other', run 2"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("most recent"), std::string::npos) << r.err;
  const auto older = run_command(cli("show 100 --run 1"));
  ASSERT_EQ(older.exit_code, 0) << older.err;
  EXPECT_NE(older.out.find("big drifter"), std::string::npos);
  EXPECT_TRUE(older.err.empty()) << older.err;
}

TEST_F(QueryCli, AmbiguousCommListsTheProcessesAndFails) {
  const auto r = run_command(cli("show worker"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("matches 2 processes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pid     200"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pid     400"), std::string::npos) << r.err;
  EXPECT_EQ(run_command(cli("show worker --run 2")).exit_code, 0);
}

TEST_F(QueryCli, HistoryPrintsOneLinePerSample) {
  const auto r = run_command(cli("history 'big drifter' --since 1h"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex sample_line(R"(^\d\d:\d\d:\d\d .*)");
  int samples = 0;
  for (const std::string& line : lines_of(r.out)) {
    EXPECT_LE(line.size(), 80u) << line;
    samples += std::regex_match(line, sample_line);
  }
  EXPECT_EQ(samples, kSamples) << r.out;
  EXPECT_NE(r.out.find("upstrm"), std::string::npos);
  const auto j = nlohmann::json::parse(
      run_command(cli("history 'big drifter' --json")).out);
  ASSERT_EQ(j["samples"].size(), size_t{kSamples});
  EXPECT_EQ(j["samples"][4]["drift_pages"], 400);
  EXPECT_EQ(j["samples"][4]["largest_error_pages"]["hpcc"], 7 + 5);

  // --step: one sample per step, the one with the largest |drift|, each
  // scheme's error the largest of the step.
  constexpr int64_t kStep = 2 * kMinute;
  std::map<int64_t, std::pair<int64_t, int64_t>> expected;  // drift, hpcc
  for (const auto& s : j["samples"]) {
    auto& e = expected[s["time_ns"].get<int64_t>() / kStep];
    e.first = std::max(e.first, s["drift_pages"].get<int64_t>());
    e.second =
        std::max(e.second, s["largest_error_pages"]["hpcc"].get<int64_t>());
  }
  const auto stepped = nlohmann::json::parse(
      run_command(cli("history 'big drifter' --json --step 2m")).out);
  EXPECT_EQ(stepped["step_ns"], kStep);
  EXPECT_EQ(stepped["samples_in_window"], kSamples);
  ASSERT_EQ(stepped["samples"].size(), expected.size());
  size_t i = 0;
  for (const auto& [bucket, e] : expected) {
    EXPECT_EQ(stepped["samples"][i]["drift_pages"], e.first);
    EXPECT_EQ(stepped["samples"][i]["largest_error_pages"]["hpcc"], e.second);
    ++i;
  }
  EXPECT_EQ(run_command(cli("history 'big drifter' --step 0m")).exit_code, 2);
  EXPECT_EQ(run_command(cli("history 'big drifter' --step soon")).exit_code, 2);
}

// CSV with chosen columns, as below's `dump -O csv --fields` gives them:
// top, history and export alike; an unknown field is a usage error
// listing the known ones.
TEST_F(QueryCli, CsvWithFieldsForTopHistoryAndExport) {
  const auto top =
      run_command(cli("top --format csv --fields pid,comm,run_stopped,"
                      "drift_bytes"));
  ASSERT_EQ(top.exit_code, 0) << top.err;
  auto lines = lines_of(top.out);
  ASSERT_EQ(lines.size(), 1u + 5u) << top.out;
  EXPECT_EQ(lines[0], "pid,comm,run_stopped,drift_bytes");
  // The running first, then those of the run that stopped.
  EXPECT_EQ(lines[1], fmt::format("100,other,0,{}", 50 * 4096));
  EXPECT_EQ(lines[3], fmt::format("100,big drifter,1,{}", 400 * 4096));
  const auto history =
      run_command(cli("history 'big drifter' --format csv --fields "
                      "time_ns,drift_bytes,hpcc_error_bytes"));
  ASSERT_EQ(history.exit_code, 0) << history.err;
  lines = lines_of(history.out);
  ASSERT_EQ(lines.size(), 1u + kSamples) << history.out;
  EXPECT_EQ(lines[0], "time_ns,drift_bytes,hpcc_error_bytes");
  EXPECT_TRUE(
      lines.back().ends_with(fmt::format(",{},{}", 400 * 4096, (7 + 5) * 4096)))
      << lines.back();
  const auto exported =
      run_command(cli("export --format csv --fields pid,comm,drift"));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(lines_of(exported.out).front(), "pid,comm,drift");
  const auto json = nlohmann::json::parse(
      run_command(cli("export --format json --fields pid,drift")).out);
  EXPECT_EQ(json["samples"][0].size(), 2u);
  const auto bad = run_command(cli("top --format csv --fields pid,colour"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no field 'colour'; fields: run_id,"),
            std::string::npos)
      << bad.err;
}

TEST_F(QueryCli, UnknownProcessIsOneLineAndExitOne) {
  for (const char* which : {"999", "nosuchcomm"}) {
    const auto r = run_command(cli(std::string("show ") + which));
    EXPECT_EQ(r.exit_code, 1) << which;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find(which), std::string::npos) << r.err;
  }
}

TEST_F(QueryCli, MissingDatabaseNamesThePath) {
  const std::string missing = (*dir_ / "absent.db").string();
  for (const char* sub :
       {"top", "show 1", "history 1", "export --format csv"}) {
    const auto r = run_command(kCli + " " + sub + " --db " + missing);
    EXPECT_EQ(r.exit_code, 1) << sub;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
    EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is rssauditd running?"), std::string::npos);
  }
}

TEST_F(QueryCli, BadArgumentsAreUsageErrors) {
  for (const char* args :
       {"top --since 5x", "top --until yesterday", "top --since 1h --until 2h",
        "top --sort size", "top --pages --bytes", "history 100 --since -1h",
        "show", "export --format xml", "export --format html"}) {
    const auto r = run_command(cli(args));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_FALSE(r.err.empty()) << args;
  }
}

TEST_F(QueryCli, CsvExportHasTheHeaderAndOneRowPerSample) {
  const auto r = run_command(cli("export --format csv --since 24h"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u + 5 * kSamples);
  EXPECT_EQ(lines[0].rfind("time_ns,time_utc,run_id,process_id,pid,", 0), 0u)
      << lines[0];
  EXPECT_NE(lines[0].find(",drift,drift_bytes"), std::string::npos);
  EXPECT_NE(r.out.find(",big drifter,"), std::string::npos);
  // Through -o as well, with only the header outside the window.
  const fs::path file = *dir_ / "empty.csv";
  ASSERT_EQ(run_command(cli("export --format csv --since 2000-01-01\\ 00:00 "
                            "--until 2000-01-02\\ 00:00 -o " +
                            file.string()))
                .exit_code,
            0);
  EXPECT_EQ(lines_of(slurp(file)).size(), 1u);
}

TEST_F(QueryCli, JsonExportParses) {
  const auto r = run_command(cli("export --format json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"].size(), size_t{5 * kSamples});
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["processes"].size(), 5u);
  // Named as `show --json` names a process.
  EXPECT_TRUE(j["processes"][0].contains("process_id"));
  EXPECT_TRUE(j["processes"][0].contains("exit_residue_pages"));
  EXPECT_EQ(j["model_errors"].size(), kSamples * SchemeSet::kCount);
  EXPECT_TRUE(j["samples"][0]["walk_file"].is_null());
}

// The report, written once for the tests below.
std::string html_report(const std::string& cli_args, const fs::path& file) {
  const auto r = run_command(cli_args + " -o " + file.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return slurp(file);
}

TEST_F(QueryCli, HtmlExportIsSelfContainedWithSvgPlots) {
  const std::string html =
      html_report(cli("export --format html"), *dir_ / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_GE(count_of(html, "<svg"), 2u);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
  EXPECT_NE(html.find("big drifter"), std::string::npos);
  // The host at the newest run's samples, and each scheme's read cost
  // beside the process whose interval it was.
  EXPECT_NE(html.find("add up to <b>7.1 MiB</b>, the exact total is "
                      "<b>6.9 MiB</b>, a drift of <b>+240 KiB</b>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>upstream</td><td>100 big drifter (run 1)</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>1/9</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>1/none</td>"), std::string::npos);
  // The drift chart: distinct time ticks, an x-axis title, the bound drawn;
  // charts that scale down with the window; a sentence per section.
  const std::string drift = html.substr(0, html.find("</svg>"));
  const std::regex tick(R"(<text x="[^"]+" y="390.0"[^>]*>([^<]+)</text>)");
  std::set<std::string> ticks;
  size_t n = 0;
  for (auto it = std::sregex_iterator(drift.begin(), drift.end(), tick);
       it != std::sregex_iterator(); ++it, ++n)
    ticks.insert((*it)[1]);
  EXPECT_GE(n, 3u) << drift;
  EXPECT_EQ(ticks.size(), n) << "every tick label distinct";
  EXPECT_NE(drift.find(">local time</text>"), std::string::npos);
  EXPECT_NE(drift.find("the kernel&#39;s RSS bound, 5.9 MiB"),
            std::string::npos)
      << "3 x 8 x 63 pages";
  EXPECT_NE(drift.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(html.find("width=\"100%\""), std::string::npos);
  EXPECT_NE(html.find("KiB (log scale)"), std::string::npos);
  // Each scheme's bars say whose interval they are.
  EXPECT_NE(html.find("fill=\"#555\">100 big drifter</text>"),
            std::string::npos);
  EXPECT_EQ(html.find("pages (log scale)"), std::string::npos);
  EXPECT_GE(count_of(html, "<p>"), 5u);
  // The largest processes, as stat reads them against the exact RSS.
  EXPECT_NE(html.find("<th>RSS as stat reads it</th><th>exact RSS</th>"),
            std::string::npos);
  const std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//)",
                            std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, external));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
}

TEST_F(QueryCli, HtmlReportRendersInHeadlessChromium) {
  const fs::path chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium))
    GTEST_SKIP() << chromium << " is missing (Debian package chromium)";
  const fs::path report = *dir_ / "chromium-report.html";
  html_report(cli("export --format html"), report);
  const fs::path profile = *dir_ / "chromium-profile";
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update"
      " --disable-sync --user-data-dir=" +
      profile.string() + " ";
  // Two widths, kept in the build tree to be looked at: a desktop and the
  // 800 px the report must still fit.
  for (const int width : {1200, 800}) {
    const fs::path screenshot =
        fs::path(RSSAUDIT_BUILD_DIR) / fmt::format("report-{}px.png", width);
    fs::remove(screenshot);
    const auto shot = run_command(
        chromium.string() + flags + "--screenshot=" + screenshot.string() +
        fmt::format(" --window-size={},2400 file://", width) + report.string());
    ASSERT_EQ(shot.exit_code, 0) << shot.err;
    ASSERT_TRUE(fs::exists(screenshot)) << shot.err;
    EXPECT_GT(fs::file_size(screenshot), 20'000u);
  }
  const auto dom = run_command(chromium.string() + flags +
                               "--dump-dom file://" + report.string());
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_GE(count_of(dom.out, "<svg"), 2u) << dom.out.substr(0, 500);
  EXPECT_NE(dom.out.find("<polyline"), std::string::npos);
  EXPECT_NE(dom.out.find("big drifter"), std::string::npos);
}

// A database of one run (2 CPUs, 6.18, 4 KiB pages) from `started_ns`, for
// a test with processes of its own; closing it checkpoints the WAL.
std::unique_ptr<Store> one_run_store(const std::string& path,
                                     int64_t started_ns) {
  auto opened = Store::open(path, {});
  if (!opened) {
    ADD_FAILURE() << opened.error().message;
    return nullptr;
  }
  std::unique_ptr<Store> s = std::move(opened).value();
  s->begin_run(RunInfo{.host = "h",
                       .kernel_release = "6.18",
                       .nr_cpus = 2,
                       .batch = 32,
                       .page_size = 4096,
                       .rssaudit_version = "0.1.0",
                       .started_ns = started_ns});
  return s;
}

// Process `pid` (start ticks pid x 10) with one sample at `time_ns`: `anon`
// precise pages and stat's RSS `drift` pages off; its process id.
int64_t add_sampled(Store& s, uint32_t pid, std::string_view comm,
                    std::string_view cgroup, int64_t time_ns, int64_t anon,
                    int64_t drift) {
  const int64_t p = s.upsert_process({pid, pid * 10ull}, comm, cgroup, time_ns);
  SampleRow r;
  r.process_id = p;
  r.time_ns = time_ns;
  r.stat_rss = anon + drift;
  r.precise = {0, anon, 0, 0};
  s.add_sample(r);
  return p;
}

int64_t wall_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// top as users filter it: by name, cgroup subtree and RSS; exited
// processes listed apart after the running ones; a process never named
// (or pid 0) is no row, only counted.
TEST(QueryCliTop, FiltersAndListsExitedApart) {
  std::string templ = fs::temp_directory_path() / "rssaudit-qtop-XXXXXX";
  const fs::path dir = mkdtemp(templ.data());
  const std::string db = dir / "history.db";
  const int64_t now = wall_now();
  // Its daemon runs: the writer holds the file while the queries read it.
  const std::unique_ptr<Store> store = one_run_store(db, now - 10 * kMinute);
  {
    ASSERT_NE(store, nullptr);
    Store& s = *store;
    auto add = [&](uint32_t pid, const char* comm, const char* cgroup,
                   int64_t anon, int64_t drift) {
      return add_sampled(s, pid, comm, cgroup, now - 4 * kMinute, anon, drift);
    };
    add(1, "db", "/system.slice/db.service", 50000, 30);
    add(2, "web", "/system.slice/web.service", 5000, -20);
    add(3, "shell", "/user.slice", 2000, 10);
    s.record_exit(add(4, "job", "/system.slice/db.service.d", 900, 40),
                  now - 3 * kMinute, 0, 1000);
    add(5, "", "/", 100, 1);      // never named
    add(0, "swap", "/", 100, 1);  // pid 0
    ASSERT_TRUE(s.flush().has_value());
  }
  auto top = [&](const std::string& args) {
    return run_command(kCli + " top --db " + db + " " + args);
  };
  const auto all = top("");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find(": 3 of 3 running processes"), std::string::npos)
      << all.out;
  const size_t exited_at = all.out.find("exited in the window:");
  ASSERT_NE(exited_at, std::string::npos) << all.out;
  EXPECT_GT(all.out.find(" job "), exited_at) << "after the running ones";
  EXPECT_LT(all.out.find(" shell "), exited_at);
  EXPECT_NE(all.out.find("(2 processes without a name or pid not listed)"),
            std::string::npos);
  EXPECT_EQ(all.out.find(" swap "), std::string::npos);
  for (const std::string& line : lines_of(all.out))
    EXPECT_LE(line.size(), 80u) << line;

  auto pids = [&](const std::string& args) {
    const auto j = nlohmann::json::parse(top("--json " + args).out);
    std::vector<uint32_t> out;
    for (const auto& p : j["processes"]) out.push_back(p["pid"]);
    for (const auto& p : j["exited"]) out.push_back(p["pid"]);
    return out;
  };
  EXPECT_EQ(pids("--comm web"), std::vector<uint32_t>{2});
  // The subtree: db.service, not db.service.d, a sibling.
  EXPECT_EQ(pids("--cgroup /system.slice/db.service"),
            std::vector<uint32_t>{1});
  EXPECT_EQ(pids("--cgroup /system.slice --sort rss"),
            (std::vector<uint32_t>{1, 2, 4}));
  // db 195 MiB, web 19.5 MiB, shell 7.8 MiB, job 3.5 MiB.
  EXPECT_EQ(pids("--min-rss 19M"), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(pids("--min-rss 7M --sort rss"), (std::vector<uint32_t>{1, 2, 3}));
  const auto bad = top("--min-rss lots");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--min-rss"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

// No daemon answers: status says so, and how the database's last run
// ended, here killed (its writer gone without ending it).
TEST(QueryCliStatus, WithoutADaemonItSaysHowTheLastRunEnded) {
  std::string templ = fs::temp_directory_path() / "rssaudit-st-XXXXXX";
  const fs::path dir = mkdtemp(templ.data());
  const std::string db = dir / "history.db";
  {
    const std::unique_ptr<Store> s = one_run_store(db, wall_now() - kMinute);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->flush().has_value());
  }  // no end_run: as kill -9 leaves it
  const std::string args =
      " --socket " + (dir / "none.sock").string() + " --db " + db;
  const auto r = run_command(kCli + " status" + args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rssauditd is not running (no socket at "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find(db + ": last run 1 on h, started "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" (died); these values are as of then\n  died: killed "
                       "or crashed"),
            std::string::npos)
      << r.out;
  for (const std::string& line : lines_of(r.out))
    EXPECT_LE(line.size(), 80u) << line;
  const auto j = nlohmann::json::parse(
      run_command(kCli + " status --json" + args).out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["running"], false);
  EXPECT_EQ(j["last_run"]["state"], "died");
  EXPECT_TRUE(j["last_run"]["stopped_ns"].is_number());
  fs::remove_all(dir);
}

// A copy of a database (its main file only, as scp or a backup gives it)
// in a directory the user may not write: no -shm can be made, and SQLite's
// WAL reader failed ("attempt to write a readonly database"); it reads as a
// snapshot now. Run as nobody when root (root may write anywhere).
TEST(QueryCliReadOnly, ACopyWithoutItsShmIsReadByAnyUser) {
  std::string templ = fs::temp_directory_path() / "rssaudit-ro-XXXXXX";
  const fs::path dir = mkdtemp(templ.data());
  const fs::path made = dir / "made.db", copy_dir = dir / "copy";
  {
    const std::unique_ptr<Store> s = one_run_store(made, 0);
    ASSERT_NE(s, nullptr);
    add_sampled(*s, 42, "copied", "/", 1'000'000'000, 100, 10);
    ASSERT_TRUE(s->flush().has_value());
  }  // closing checkpoints the WAL into the main file
  fs::create_directories(copy_dir);
  fs::copy_file(made, copy_dir / "copy.db");
  fs::permissions(copy_dir, fs::perms(0555));
  fs::permissions(copy_dir / "copy.db", fs::perms(0444));
  fs::permissions(dir, fs::perms(0755));
  const std::string as_user =
      geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups "
                     : "";
  const auto r = run_command(as_user + kCli + " show 42 --db " +
                             (copy_dir / "copy.db").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("'copied'"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.err.find("readonly"), std::string::npos) << r.err;
  fs::permissions(copy_dir, fs::perms(0755));
  fs::remove_all(dir);
}

// A process may name itself with bytes that are not UTF-8: every JSON
// output still completes and parses (U+FFFD in their place); it used to
// fail after a partial write for as long as the process was in the window.
TEST(QueryCliNames, JsonOutputsSurviveANameThatIsNotUtf8) {
  std::string templ = fs::temp_directory_path() / "rssaudit-utf-XXXXXX";
  const fs::path dir = mkdtemp(templ.data());
  const std::string db = dir / "history.db";
  const int64_t now = wall_now();
  {
    const std::unique_ptr<Store> s = one_run_store(db, now - kMinute);
    ASSERT_NE(s, nullptr);
    add_sampled(*s, 77, "bad\xff\xfename", "/", now - kMinute / 2, 100, 10);
    ASSERT_TRUE(s->flush().has_value());
  }
  for (const std::string args : {"top --json", "history 77 --json",
                                 "show 77 --json", "export --format json"}) {
    const auto r = run_command(kCli + " " + args + " --db " + db);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << args << ": " << r.out;
    EXPECT_NE(r.out.find("bad\xef\xbf\xbd"), std::string::npos) << args;
  }
  fs::remove_all(dir);
}

// A history database of its own in a temp dir, held open for writing, with a
// run of `nr_cpus` CPUs (batch 32) on `host` counting RSS as `counting`
// begun 10 minutes ago; removed at the end.
class OwnHistory {
 public:
  OwnHistory(const std::string& prefix, uint32_t nr_cpus,
             std::string_view counting, const std::string& host = "h") {
    std::string templ = fs::temp_directory_path() / (prefix + "-XXXXXX");
    dir_ = mkdtemp(templ.data());
    db_ = dir_ / "history.db";
    auto opened = Store::open(db_, {});
    EXPECT_TRUE(opened.has_value()) << opened.error().message;
    if (!opened) return;
    store_ = std::move(opened).value();
    now_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
    store_->begin_run(RunInfo{.host = host,
                              .kernel_release = "test",
                              .nr_cpus = nr_cpus,
                              .batch = 32,
                              .counting = std::string(counting),
                              .page_size = 4096,
                              .rssaudit_version = "0.1.0",
                              .started_ns = now_ - 10 * kMinute});
  }
  ~OwnHistory() { fs::remove_all(dir_); }
  // Null when the database did not open (the test has failed then).
  Store* store() { return store_.get(); }
  // Writes what was added; the writer stays open, as a running daemon's
  // does (a closed one ends its run: its processes no longer run).
  void flush() {
    if (store_) {
      EXPECT_TRUE(store_->flush().has_value());
    }
  }
  int64_t now() const { return now_; }
  const fs::path& dir() const { return dir_; }
  const std::string& db() const { return db_; }

 private:
  fs::path dir_;
  std::string db_;
  std::unique_ptr<Store> store_;
  int64_t now_ = 0;
};

// A run of a kernel before 6.2: no sample holds a precise value (status
// reads the atomics too), and every query says which value is exact.
TEST(QueryCliBefore62, ShowTopAndHistorySayTheStreamIsTheExactValue) {
  OwnHistory history_db("rssaudit-q61", 4, kCountingTaskCache);
  const std::string& db = history_db.db();
  {
    ASSERT_NE(history_db.store(), nullptr);
    Store& s = *history_db.store();
    const int64_t now = history_db.now();
    const int64_t p = s.upsert_process({700, 7000}, "threads", "/t", now);
    SampleRow r;
    r.process_id = p;
    r.time_ns = now - kMinute;
    r.approximate = {300, 2900, 0, 0};  // the atomics, as every reader
    r.stat_rss = 3200;
    r.statm_resident = 3200;
    r.exact = {300, 3034, 0, 0};  // 134 anon pages in threads' caches
    r.walk_rss = 3334;
    s.add_sample(r);
    history_db.flush();
  }
  const std::string args = " --db " + db + " --pages";
  const auto show = run_command(kCli + " show threads" + args);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("atomics fed by per-task caches"), std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("drift (kernel readers - exact): -134 pg"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("walk gap (exact - walk):        0 pg"),
            std::string::npos)
      << show.out;
  EXPECT_EQ(show.out.find("% of the kernel's RSS bound"), std::string::npos);
  for (const std::string& line : lines_of(show.out))
    EXPECT_LE(line.size(), 80u) << line;
  const auto j = nlohmann::json::parse(
      run_command(kCli + " show threads --json" + args).out);
  EXPECT_EQ(j["counting"], "task_cache");
  EXPECT_TRUE(j["sample"]["sources"]["precise"]["rss_pages"].is_null());
  EXPECT_EQ(j["sample"]["drift_pages"], -134);
  const auto top = run_command(kCli + " top" + args);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("per-task caches"), std::string::npos) << top.out;
  const auto tj =
      nlohmann::json::parse(run_command(kCli + " top --json" + args).out);
  EXPECT_EQ(tj["processes"][0]["counting"], "task_cache");
  EXPECT_TRUE(tj["processes"][0]["bound_per_counter_pages"].is_null());
  const auto history = run_command(kCli + " history threads" + args);
  EXPECT_NE(history.out.find("per-task caches"), std::string::npos)
      << history.out;
}

// A sample whose drift is unknown (its /proc pair read while the counters
// moved, or beyond the kernel's bound) is never ranked, plotted or exported
// as drift, and where it is shown it says why.
TEST(QueryCliDriftUnknown, IsNeverRankedOrPlottedAndSaysWhy) {
  // 2 CPUs, batch 32: an RSS bound of 186 pages.
  OwnHistory history_db("rssaudit-qdu", 2, kCountingPercpu);
  const std::string& db = history_db.db();
  ASSERT_NE(history_db.store(), nullptr);
  {
    Store& s = *history_db.store();
    const int64_t now = history_db.now();
    // From /proc alone: stat's rss against status's precise 1000 pages.
    const auto sample = [&](int64_t process, int64_t minutes_ago,
                            int64_t stat_rss, std::optional<DriftUnknown> why) {
      SampleRow r;
      r.process_id = process;
      r.time_ns = now - minutes_ago * kMinute;
      r.stat_rss = stat_rss;
      r.precise = {100, 900, 0, 0};
      r.statm_resident = 1000;
      r.drift_unknown = why;
      s.add_sample(r);
    };
    const int64_t mover = s.upsert_process({10, 100}, "mover", "/m", now);
    sample(mover, 3, 1010, std::nullopt);
    sample(mover, 2, 1900, DriftUnknown::kMoving);
    sample(mover, 1, 1400, DriftUnknown::kBeyondBound);
    const int64_t steady = s.upsert_process({20, 200}, "steady", "/s", now);
    sample(steady, 1, 1050, std::nullopt);
    history_db.flush();
  }
  const std::string args = " --db " + db + " --pages";
  const auto top = run_command(kCli + " top --sort ratio" + args);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // Ranked by its known drift (10 pages), after steady's 50.
  EXPECT_LT(top.out.find(" steady "), top.out.find(" mover ")) << top.out;
  EXPECT_TRUE(std::regex_search(
      top.out, std::regex(" mover +1000 pg +\\?bound +\\+10 pg +5\\.4% ")))
      << top.out;
  EXPECT_NE(top.out.find("?bound: drift unknown, beyond the kernel's bound"),
            std::string::npos)
      << top.out;
  const auto tj = nlohmann::json::parse(
      run_command(kCli + " top --sort ratio --json" + args).out);
  EXPECT_EQ(tj["processes"][1]["comm"], "mover");
  EXPECT_TRUE(tj["processes"][1]["drift_pages"].is_null());
  EXPECT_EQ(tj["processes"][1]["drift_unknown"], "beyond_bound");
  EXPECT_EQ(tj["processes"][1]["max_drift_pages"], 10);
  EXPECT_TRUE(tj["processes"][0]["drift_unknown"].is_null());

  const auto show = run_command(kCli + " show mover" + args);
  EXPECT_NE(show.out.find("drift (approximate - precise): unknown, beyond "
                          "the kernel's bound"),
            std::string::npos)
      << show.out;
  const auto sj = nlohmann::json::parse(
      run_command(kCli + " show mover --json" + args).out);
  EXPECT_TRUE(sj["sample"]["drift_pages"].is_null());
  EXPECT_EQ(sj["sample"]["drift_unknown"], "beyond_bound");

  const auto history = run_command(kCli + " history mover" + args);
  EXPECT_EQ(count_of(history.out, "?moving"), 2u) << history.out;
  EXPECT_NE(history.out.find("?moving: drift unknown, the counters moved "
                             "while /proc was read"),
            std::string::npos)
      << history.out;
  const auto csv =
      run_command(kCli +
                  " export --format csv --fields pid,drift,drift_unknown"
                  " --db " +
                  db);
  EXPECT_EQ(csv.out,
            "pid,drift,drift_unknown\n10,10,\n10,,moving\n10,,beyond_bound\n"
            "20,50,\n")
      << csv.err;
  const std::string html = (history_db.dir() / "report.html").string();
  ASSERT_EQ(
      run_command(kCli + " export --format html -o " + html + " --db " + db)
          .exit_code,
      0);
  EXPECT_NE(slurp(html).find("Not plotted, as their drift is unknown: 1 "
                             "samples read while the counters moved"),
            std::string::npos);
}

// The start time of this process (/proc/self/stat field 22).
uint64_t own_start_ticks() {
  std::ifstream in("/proc/self/stat");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return std::stoull(field);
}

// Processes the history says run while their run runs on this host, whose
// pid is gone from /proc or names another process now: exits not
// recorded (their records lost, the daemon stalled). top lists them with
// the exited and leaves them out of the host; the report too.
TEST(QueryCliGone, ProcessesGoneFromProcAreNotCountedAsRunning) {
  utsname u{};
  ASSERT_EQ(uname(&u), 0);
  OwnHistory history_db("rssaudit-qgone", 2, kCountingPercpu, u.nodename);
  ASSERT_NE(history_db.store(), nullptr);
  const pid_t reaped = fork();
  if (reaped == 0) _exit(0);
  ASSERT_GT(reaped, 0);
  ASSERT_EQ(waitpid(reaped, nullptr, 0), reaped);
  const auto self = static_cast<uint32_t>(getpid());
  {
    Store& s = *history_db.store();
    const int64_t now = history_db.now();
    const auto sample = [&](ProcessIdentity who, const std::string& comm,
                            int64_t stat_rss) {
      const int64_t p = s.upsert_process(who, comm, "/", now);
      SampleRow r;
      r.process_id = p;
      r.time_ns = now - kMinute;
      r.stat_rss = stat_rss;
      r.precise = {100, 900, 0, 0};
      r.statm_resident = 1000;
      s.add_sample(r);
    };
    sample({self, own_start_ticks()}, "alive", 1010);
    sample({static_cast<uint32_t>(reaped), 4242}, "reaped", 1100);
    sample({self, own_start_ticks() + 1}, "reused", 1020);  // another's pid
    history_db.flush();
  }
  const std::string args = " --db " + history_db.db() + " --pages";
  const auto top = run_command(kCli + " top" + args);
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_NE(top.out.find("1 of 1 running processes sampled"),
            std::string::npos)
      << top.out;
  EXPECT_NE(top.out.find("readers' RSS 1010 pg, exact 1000 pg, drift +10 pg"),
            std::string::npos)
      << top.out;
  EXPECT_NE(top.out.find("(2 of them gone from /proc now, their exit not "
                         "recorded yet)"),
            std::string::npos)
      << top.out;
  const auto j =
      nlohmann::json::parse(run_command(kCli + " top --json" + args).out);
  EXPECT_EQ(j["gone_from_proc"], 2);
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["comm"], "alive");
  ASSERT_EQ(j["exited"].size(), 2u);
  for (const auto& p : j["exited"]) EXPECT_TRUE(p["gone_from_proc"]) << p;
  EXPECT_EQ(j["host_rss"]["kernel_pages"], 1010);
  // The report's host and its largest processes: the live one only.
  const std::string html = (history_db.dir() / "report.html").string();
  ASSERT_EQ(run_command(kCli + " export --format html -o " + html +
                        " --db " + history_db.db())
                .exit_code,
            0);
  std::ifstream in(html);
  const std::string report{std::istreambuf_iterator<char>(in), {}};
  const size_t from = report.find("still running");
  ASSERT_NE(from, std::string::npos) << report;
  const std::string host_part = report.substr(
      from, report.find("The processes with the largest drift") - from);
  EXPECT_NE(host_part.find(">alive<"), std::string::npos) << host_part;
  EXPECT_EQ(host_part.find(">reaped<"), std::string::npos) << host_part;
  EXPECT_EQ(host_part.find(">reused<"), std::string::npos) << host_part;
}

}  // namespace
}  // namespace rssaudit
