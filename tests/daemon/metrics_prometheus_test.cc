// A real Prometheus (Debian package `prometheus`) scrapes our endpoint on
// loopback: the end-to-end check that what we render parses, negotiates and
// keeps its label values through a real server's parser.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/formats/openmetrics.h"
#include "tests/daemon/http_test_client.h"
#include "tests/daemon/metrics_server_fixture.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using testing::http_request;
namespace http = testing::http;

constexpr auto kDeadline = std::chrono::seconds(90);
const std::string kWeirdComm = "a\"b\\c\nd e";

LiveView view() {
  LiveView v;
  v.health.host = "it";
  v.health.live_mms = 42;
  LiveProcess p;
  p.pid = 7;
  p.comm = kWeirdComm;
  p.exact_rss = 100;
  p.kernel_rss = 109;
  p.rss_bound = 756;
  p.from_zero = true;  // else its drift is unknown and not exported
  p.kernel_known = true;
  v.processes = {p};
  return v;
}

uint16_t free_port() {
  testing::asio::io_context io;
  testing::tcp::acceptor a(io,
                           {testing::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();  // freed on return; reused at once below
}

// A Prometheus child process, killed and reaped however the test ends.
class Prometheus {
 public:
  Prometheus(const fs::path& dir, uint16_t scrape_port) : dir_(dir) {
    port_ = free_port();
    std::ofstream(dir / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
           "scrape_configs:\n  - job_name: rssaudit\n    static_configs:\n"
           "      - targets: ['127.0.0.1:"
        << scrape_port << "']\n";
    const std::string config =
        "--config.file=" + (dir / "prometheus.yml").string();
    const std::string tsdb = "--storage.tsdb.path=" + (dir / "tsdb").string();
    const std::string listen =
        "--web.listen-address=127.0.0.1:" + std::to_string(port_);
    const std::string log = (dir / "prometheus.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      execlp("prometheus", "prometheus", config.c_str(), tsdb.c_str(),
             listen.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Prometheus() {
    if (pid_ <= 0 || exited()) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && !exited(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!exited()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool exited() {
    if (reaped_) return true;
    reaped_ = waitpid(pid_, nullptr, WNOHANG) == pid_;
    return reaped_;
  }
  std::string log() const { return testing::slurp(dir_ / "prometheus.log"); }
  // data of a /api/v1 answer, or null while Prometheus is not ready.
  nlohmann::json api(const std::string& target) const {
    const auto r = http_request(port_, http::verb::get, target);
    if (r.ec || r.response.result() != http::status::ok) return nullptr;
    const auto j = nlohmann::json::parse(r.response.body(), nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success") return nullptr;
    return j["data"];
  }

 private:
  fs::path dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

TEST(MetricsPrometheus, RealPrometheusScrapesOurEndpointOnLoopback) {
  if (std::system("command -v prometheus >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "prometheus not found: install the Debian package "
                    "'prometheus'";
  }
  char tmpl[] = "/tmp/rssaudit-prom-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;

  std::atomic<bool> asked_openmetrics = false;
  testing::ServerOnLoop server({}, [&](ExpositionFormat f) {
    asked_openmetrics =
        asked_openmetrics || f == ExpositionFormat::kOpenMetrics;
    return render_metrics(view(), {.process_series = 5}, f);
  });
  ASSERT_EQ(server.start_error(), "");
  {
    Prometheus prom(dir, server.port());
    bool up = false;
    nlohmann::json live_mms, drift;
    // Polled: Prometheus starts, then scrapes once a second.
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < deadline && !prom.exited()) {
      if (!up) {
        const auto targets = prom.api("/api/v1/targets");
        up = targets.is_object() && !targets["activeTargets"].empty() &&
             targets["activeTargets"][0].value("health", "") == "up";
      }
      if (up) {
        live_mms = prom.api("/api/v1/query?query=rssaudit_live_mms");
        drift = prom.api("/api/v1/query?query=rssaudit_process_drift_bytes");
        if (live_mms.is_object() && !live_mms["result"].empty() &&
            drift.is_object() && !drift["result"].empty()) {
          break;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    ASSERT_TRUE(up) << prom.log();
    ASSERT_TRUE(live_mms.is_object() && !live_mms["result"].empty())
        << prom.log();
    EXPECT_EQ(live_mms["result"][0]["value"][1], "42");
    ASSERT_FALSE(drift["result"].empty());
    EXPECT_EQ(drift["result"][0]["metric"]["comm"], kWeirdComm);
    EXPECT_EQ(drift["result"][0]["metric"]["pid"], "7");
    EXPECT_EQ(drift["result"][0]["value"][1], std::to_string(9 * 4096));
  }
  // Measured, not assumed: Prometheus 2.42 negotiates OpenMetrics.
  EXPECT_TRUE(asked_openmetrics);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rssaudit
