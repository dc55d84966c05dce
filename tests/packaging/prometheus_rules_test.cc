// What packaging/ ships for Prometheus and Grafana: the rules pass
// `promtool check rules` and their own `promtool test rules` (each alert
// fires on the series meant to fire it, none on a healthy host), and every
// series the rules and the dashboard query is one rssauditd exports (or a
// rule records), so a renamed metric cannot leave them silently empty.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "core/formats/openmetrics.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
const fs::path kPackaging = RSSAUDIT_PACKAGING_DIR;

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

// A scrape with every family present: known drifts and bounds, per-process
// series, the BPF cost.
std::string full_scrape() {
  LiveView v;
  v.health.batch = 64;
  v.health.nr_cpus = 4;
  v.health.bpf_ns_per_event = 150;
  v.health.fidelity_checked = 10;
  v.health.fidelity_matched = 10;
  v.health.host_worst_case = 756;
  LiveProcess p;
  p.pid = 7;
  p.comm = "java";
  p.exact_rss = 1000;
  p.kernel_rss = 1010;
  p.rss_bound = 756;
  p.from_zero = p.kernel_known = true;
  p.fidelity_checked = p.fidelity_matched = 10;
  v.processes = {p};
  return render_prometheus_text(v, {.process_series = 1, .version = "x"});
}

// The rssaudit_* names `text` uses, and the recording rules' level:name:op
// names apart.
std::set<std::string> names_in(const std::string& text,
                               const std::regex& pattern) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
       it != std::sregex_iterator(); ++it)
    out.insert((*it)[0]);
  return out;
}

const std::regex kRecorded(R"(\b[a-z]+:rssaudit_[a-z_]+(:[a-z0-9_]+)?)");
const std::regex kMetric(R"(\brssaudit_[a-z_]+\b)");

// The exported metric names `text` queries: recorded names set aside.
std::set<std::string> metrics_in(const std::string& text) {
  return names_in(std::regex_replace(text, kRecorded, ""), kMetric);
}

TEST(PrometheusRules, PassPromtoolCheckAndTheirOwnTests) {
  if (!have_promtool())
    GTEST_SKIP() << "promtool not found: install the Debian package "
                    "'prometheus'";
  const fs::path dir = kPackaging / "prometheus";
  const auto check = testing::run_command(
      "cd " + dir.string() + " && promtool check rules rssaudit-rules.yml");
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const auto test = testing::run_command(
      "cd " + dir.string() + " && promtool test rules rssaudit-rules.test.yml");
  EXPECT_EQ(test.exit_code, 0) << test.out << test.err;
  EXPECT_NE(test.out.find("SUCCESS"), std::string::npos) << test.out;
}

TEST(PrometheusRules, QueryOnlySeriesRssauditdExports) {
  const std::string scrape = full_scrape();
  const std::string rules =
      testing::slurp(kPackaging / "prometheus" / "rssaudit-rules.yml");
  for (const std::string& name : metrics_in(rules))
    EXPECT_NE(scrape.find("\n" + name), std::string::npos)
        << name << " is queried by the rules but not exported";
}

TEST(GrafanaDashboard, IsAValidDashboardOverExportedSeries) {
  const std::string text =
      testing::slurp(kPackaging / "grafana" / "rssaudit-dashboard.json");
  const auto d = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(d.is_discarded()) << "not JSON";
  EXPECT_FALSE(d.value("title", "").empty());
  EXPECT_FALSE(d.value("uid", "").empty());
  EXPECT_GE(d.value("schemaVersion", 0), 30);
  ASSERT_TRUE(d["panels"].is_array() && !d["panels"].empty());
  const std::string scrape = full_scrape();
  const std::string rules =
      testing::slurp(kPackaging / "prometheus" / "rssaudit-rules.yml");
  std::set<int> ids;
  for (const auto& p : d["panels"]) {
    const std::string title = p.value("title", "");
    EXPECT_FALSE(title.empty());
    EXPECT_FALSE(p.value("description", "").empty()) << title;
    EXPECT_TRUE(ids.insert(p.value("id", -1)).second) << "panel id " << title;
    const auto& g = p["gridPos"];
    EXPECT_LE(g.value("x", 99) + g.value("w", 99), 24) << title;
    ASSERT_TRUE(p["targets"].is_array() && !p["targets"].empty()) << title;
    for (const auto& t : p["targets"]) {
      const std::string expr = t.value("expr", "");
      EXPECT_FALSE(expr.empty()) << title;
      EXPECT_FALSE(t.value("refId", "").empty()) << title;
      for (const std::string& name : metrics_in(expr))
        EXPECT_NE(scrape.find("\n" + name), std::string::npos)
            << title << ": " << name << " is not exported";
      for (const std::string& name : names_in(expr, kRecorded))
        EXPECT_NE(rules.find("record: " + name), std::string::npos)
            << title << ": " << name << " is recorded by no rule";
    }
  }
}

}  // namespace
}  // namespace rssaudit
