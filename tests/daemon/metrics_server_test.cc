#include "daemon/metrics_server.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <string>
#include <vector>

#include "tests/daemon/http_test_client.h"
#include "tests/daemon/metrics_server_fixture.h"

namespace rssaudit {
namespace {

using testing::http_request;
using testing::raw_exchange;
using testing::ServerOnLoop;
namespace http = testing::http;

std::string body_for(ExpositionFormat f) {
  return f == ExpositionFormat::kOpenMetrics ? "om 1\n# EOF\n" : "text 1\n";
}

constexpr const char* kPrometheusAccept =
    "application/openmetrics-text;version=1.0.0,"
    "application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

TEST(MetricsServer, AnswersGetMetricsInTheNegotiatedFormatOnTheLoopThread) {
  ServerOnLoop s({}, body_for);
  ASSERT_EQ(s.start_error(), "");
  ASSERT_NE(s.port(), 0);

  auto r =
      http_request(s.port(), http::verb::get, "/metrics", kPrometheusAccept);
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response.result(), http::status::ok);
  EXPECT_EQ(r.response[http::field::content_type],
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(r.response.body(), "om 1\n# EOF\n");

  r = http_request(s.port(), http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response[http::field::content_type],
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.response.body(), "text 1\n");
  EXPECT_EQ(s.renders(), 2);
  EXPECT_FALSE(s.off_loop_renders());
}

TEST(MetricsServer, UnknownPathIs404) {
  ServerOnLoop s({}, body_for);
  const auto r = http_request(s.port(), http::verb::get, "/metricz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response.result(), http::status::not_found);
  EXPECT_EQ(s.renders(), 0);
}

// /healthz for probes: 200 "ok", or 503 with the daemon's reason; / lists
// both. Neither renders the metrics.
TEST(MetricsServer, HealthzSaysWhyAndTheIndexListsThePaths) {
  std::atomic<bool> sick = false;
  ServerOnLoop s({}, body_for, [&]() -> std::string {
    return sick ? "capture not drained for 12.0 s" : "";
  });
  auto r = http_request(s.port(), http::verb::get, "/healthz");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response.result(), http::status::ok);
  EXPECT_EQ(r.response.body(), "ok\n");
  sick = true;
  r = http_request(s.port(), http::verb::get, "/healthz");
  EXPECT_EQ(r.response.result(), http::status::service_unavailable);
  EXPECT_EQ(r.response.body(), "capture not drained for 12.0 s\n");
  r = http_request(s.port(), http::verb::get, "/");
  EXPECT_EQ(r.response.result(), http::status::ok);
  EXPECT_NE(r.response.body().find("/metrics"), std::string::npos);
  EXPECT_NE(r.response.body().find("/healthz"), std::string::npos);
  EXPECT_EQ(s.renders(), 0);
}

TEST(MetricsServer, OtherMethodsAre405WithAllow) {
  ServerOnLoop s({}, body_for);
  for (auto verb : {http::verb::post, http::verb::put, http::verb::head,
                    http::verb::delete_}) {
    const auto r = http_request(s.port(), verb, "/metrics", "",
                                verb == http::verb::post ? "x=1" : "");
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.response.result(), http::status::method_not_allowed);
    EXPECT_EQ(r.response[http::field::allow], "GET");
  }
  EXPECT_EQ(s.renders(), 0);
}

TEST(MetricsServer, GarbageGets400AndTheServerStillAnswers) {
  ServerOnLoop s({}, body_for);
  const auto raw =
      raw_exchange(s.port(), std::string("\0\xff GARBAGE\r\n\r\n", 15));
  EXPECT_NE(raw.ec, testing::beast::error::timeout);
  EXPECT_EQ(raw.received.rfind("HTTP/1.1 400 ", 0), 0u) << raw.received;
  const auto r = http_request(s.port(), http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response.result(), http::status::ok);
}

TEST(MetricsServer, OversizedRequestsAreCutOffAndTheServerStillAnswers) {
  ServerOnLoop s({.max_request_bytes = 4096}, body_for);
  const std::string huge_header =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " +
      std::string(1 << 20, 'a') + "\r\n\r\n";
  const std::string huge_body =
      "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
      std::string(100000, 'b');
  for (const auto& bytes : {huge_header, huge_body}) {
    const auto raw = raw_exchange(s.port(), bytes);
    // The server hangs up at once: an answer (431/413) or, with our bytes
    // still unread, a reset. Never a wait for the timeout.
    EXPECT_NE(raw.ec, testing::beast::error::timeout);
    if (!raw.received.empty()) {
      EXPECT_TRUE(raw.received.starts_with("HTTP/1.1 431 ") ||
                  raw.received.starts_with("HTTP/1.1 413 "))
          << raw.received.substr(0, 80);
    }
  }
  const auto r = http_request(s.port(), http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response.result(), http::status::ok);
  EXPECT_EQ(s.renders(), 1);
}

TEST(MetricsServer, ClosesAConnectionThatTricklesAPartialRequest) {
  ServerOnLoop s({.timeout = std::chrono::milliseconds(200)}, body_for);
  const auto raw = raw_exchange(s.port(), "GET /met");
  // A clean close by the server well before the client's own deadline.
  EXPECT_EQ(raw.ec, testing::asio::error::eof) << raw.ec.message();
  EXPECT_EQ(raw.received, "");
}

// With every slot held by an idle client, a scrape is answered only once the
// server has timed one of them out.
TEST(MetricsServer, BoundsOpenConnections) {
  ServerOnLoop s(
      {.max_connections = 2, .timeout = std::chrono::milliseconds(300)},
      body_for);
  testing::asio::io_context io;
  std::vector<testing::tcp::socket> idle;
  for (int i = 0; i < 2; ++i) {
    idle.emplace_back(io).connect(
        {testing::asio::ip::make_address("127.0.0.1"), s.port()});
  }
  const auto r = http_request(s.port(), http::verb::get, "/metrics");
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.response.result(), http::status::ok);
  int closed_by_server = 0;
  for (auto& sock : idle) {
    pollfd p{sock.native_handle(), POLLIN, 0};
    closed_by_server += ::poll(&p, 1, 0) == 1 ? 1 : 0;  // readable: EOF
  }
  EXPECT_GE(closed_by_server, 1);
}

TEST(MetricsServer, StopClosesListenerAndConnections) {
  ServerOnLoop s({}, body_for);
  testing::asio::io_context io;
  testing::tcp::socket client(io);
  client.connect({testing::asio::ip::make_address("127.0.0.1"), s.port()});
  s.stop();
  pollfd p{client.native_handle(), POLLIN, 5000};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);  // EOF or reset, not silence
  const auto r = http_request(s.port(), http::verb::get, "/metrics");
  EXPECT_EQ(r.ec, testing::asio::error::connection_refused);
}

TEST(MetricsServer, BindFailureNamesAddressAndPort) {
  testing::asio::io_context io;
  testing::tcp::acceptor taken(
      io, {testing::asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = taken.local_endpoint().port();
  MetricsServer server(io, {.port = port}, body_for);
  const Result<void> started = server.start();
  const std::string error = started ? "" : started.error().message;
  EXPECT_NE(error.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << error;
  EXPECT_EQ(server.port(), 0);

  MetricsServer bad(io, {.address = "not-an-address"}, body_for);
  EXPECT_NE(bad.start().error().message.find("not-an-address:0"),
            std::string::npos);
}

}  // namespace
}  // namespace rssaudit
