// The `rssaudit simulate` command as a user runs it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

using testing::run_command;

const std::string kCli = RSSAUDIT_CLI;

TEST(SimulateCli, JsonReportsEveryScheme) {
  const auto r =
      run_command(kCli + " simulate --cpus 384 --updates 200000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cpus"], 384);
  EXPECT_EQ(j["upstream_batch"], 768);
  EXPECT_EQ(j["hpcc_shape"], nlohmann::json({8, 8, 8}));
  ASSERT_EQ(j["schemes"].size(), 6u);
  for (const auto& s : j["schemes"]) {
    EXPECT_GE(s["largest_error_pages"].get<int64_t>(), 0) << s["name"];
    if (!s["bound_per_counter_pages"].is_null()) {
      EXPECT_LE(s["largest_error_pages"].get<int64_t>(),
                s["bound_per_counter_pages"].get<int64_t>())
          << s["name"];
    }
  }
  EXPECT_EQ(j["schemes"][0]["name"], "upstream");
  EXPECT_EQ(j["schemes"][0]["bound_per_counter_pages"], 384 * 767);
}

TEST(SimulateCli, HumanOutputFits80Columns) {
  for (const char* args :
       {"--cpus 4 --updates 10000 --workload threads", "--table"}) {
    const auto r = run_command(kCli + " simulate " + args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("hpcc"), std::string::npos);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      EXPECT_LE(line.size(), 80u) << line;
  }
}

TEST(SimulateCli, TableSweepsTo65536Cpus) {
  const auto r = run_command(kCli + " simulate --table --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  EXPECT_EQ(rows.front()["cpus"], 1);
  EXPECT_EQ(rows.back()["cpus"], 65536);
  EXPECT_EQ(rows.back()["hpcc_shape"], nlohmann::json({8, 8, 8, 8, 16}));
  for (const auto& row : rows)
    EXPECT_LE(row["hpcc_bound_pages"].get<int64_t>(),
              row["upstream_bound_pages"].get<int64_t>())
        << row["cpus"];
}

// Each scheme's readers on another machine: 384 CPUs, 8 threads
// (docs/counters.md gives each reader's source).
TEST(SimulateCli, ToleranceAnswersPerReaderAndSchemeForOtherCpuCounts) {
  const auto r =
      run_command(kCli + " simulate --tolerance --cpus 384 --threads 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cpus"], 384);
  EXPECT_EQ(j["threads"], 8);
  ASSERT_EQ(j["schemes"].size(), 6u);
  auto reader = [&](std::string_view scheme, std::string_view name) {
    for (const auto& s : j["schemes"])
      if (s["name"] == scheme)
        for (const auto& rd : s["readers"])
          if (rd["reader"] == name) return rd;
    ADD_FAILURE() << scheme << " " << name;
    return nlohmann::json();
  };
  EXPECT_EQ(reader("upstream", "stat")["rss_error_pages"], 3 * 384 * 767);
  EXPECT_EQ(reader("upstream", "status")["rss_error_pages"], 0);
  EXPECT_EQ(reader("per_task", "status")["anon_error_pages"], 8 * 66);
  EXPECT_EQ(reader("per_task", "status")["bounded_in_time"], false);
  EXPECT_EQ(reader("per_cpu", "stat")["rss_error_pages"], 0);
  EXPECT_EQ(reader("sync_query", "ru_maxrss")["rss_error_pages"], 0);
  EXPECT_LT(reader("hpcc", "stat")["rss_error_pages"].get<int64_t>(),
            reader("upstream", "stat")["rss_error_pages"].get<int64_t>());
  const auto human =
      run_command(kCli + " simulate --tolerance --cpus 384 --threads 8");
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("upstream          3.4 GiB"), std::string::npos)
      << human.out;
  for (const std::string& line : testing::lines_of(human.out))
    EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(run_command(kCli + " simulate --tolerance --cpus 4").exit_code, 2)
      << "--threads is required";
  // 3 x 65536 x 131071 pages: TiB, not "98303.9 GiB".
  EXPECT_NE(run_command(kCli + " simulate --tolerance --cpus 65536 --threads 1")
                .out.find("upstream         96.0 TiB"),
            std::string::npos);
}

// On this host's CPU count, simulate's upstream (or, before 6.2, per_task)
// answer is check's answer for the running kernel: one function, two
// commands.
TEST(SimulateCli, ToleranceOnThisHostsCpusIsChecksAnswer) {
  const auto check = run_command(kCli + " check --threads 3 --json --db " +
                                 "/nonexistent/x.db --socket /nonexistent/s");
  const auto c = nlohmann::json::parse(check.out, nullptr, false);
  if (c.is_discarded() || !c.contains("tolerance"))
    GTEST_SKIP() << "check gave no tolerance: " << check.err;
  const std::string scheme =
      c["counting_scheme"] == "percpu_counter" ? "upstream" : "per_task";
  const auto s = nlohmann::json::parse(
      run_command(kCli + " simulate --tolerance --threads 3 --json --cpus " +
                  std::to_string(c["online_cpus"].get<int64_t>()))
          .out);
  for (const auto& sc : s["schemes"])
    if (sc["name"] == scheme)
      for (size_t i = 0; i < 4; ++i) {
        const auto& mine = sc["readers"][i];
        const auto& theirs = c["tolerance"]["readers"][i];
        EXPECT_EQ(mine["reader"], theirs["reader"]);
        EXPECT_EQ(mine["rss_error_pages"], theirs["rss_error_pages"])
            << mine["reader"];
        EXPECT_EQ(mine["bounded_in_time"], theirs["bounded_in_time"]);
      }
}

TEST(SimulateCli, BadArgumentsAreUsageErrors) {
  for (const char* args :
       {"--cpus 0", "--cpus 65537", "--cpus 384 --shape 8,8",
        "--cpus 4 --batch -3", "--cpus 4 --workload storm", "",
        "--cpus 4 --shape 8,x", "--cpus 4 --updates -1", "--cpus 4 --updates 0",
        "--cpus 4 --updates 99999999999"}) {
    const auto r = run_command(kCli + " simulate " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  EXPECT_NE(run_command(kCli + " simulate --cpus 0").err.find("1..65536"),
            std::string::npos);
  EXPECT_NE(run_command(kCli + " simulate --cpus 384 --shape 8,8")
                .err.find("below the CPU count 384"),
            std::string::npos);
}

TEST(SimulateCli, HelpExitsZero) {
  EXPECT_EQ(run_command(kCli + " simulate --help").exit_code, 0);
  EXPECT_EQ(run_command(kCli + " --help").exit_code, 0);
}

// CLI11 2.1 does not wrap: core/formats/help_formatter.h does, at 80.
TEST(Cli, EveryHelpFitsIn80Columns) {
  for (const char* sub : {"", "simulate", "record", "replay", "top", "show",
                          "history", "export", "status", "whatif", "check"}) {
    const auto r = run_command(kCli + " " + sub + " --help");
    ASSERT_EQ(r.exit_code, 0) << sub;
    EXPECT_GT(testing::lines_of(r.out).size(), 3u) << sub;
    for (const std::string& line : testing::lines_of(r.out))
      EXPECT_LE(line.size(), 80u) << sub << ": " << line;
  }
}

}  // namespace
}  // namespace rssaudit
