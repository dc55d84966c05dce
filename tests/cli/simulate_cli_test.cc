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

TEST(SimulateCli, BadArgumentsAreUsageErrors) {
  for (const char* args : {"--cpus 0", "--cpus 65537", "--cpus 384 --shape 8,8",
                           "--cpus 4 --batch -3", "--cpus 4 --workload storm",
                           "", "--cpus 4 --shape 8,x"}) {
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

}  // namespace
}  // namespace rssaudit
