#include "daemon/metrics_server.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/http_test_client.h"
#include "tests/daemon/metrics_server_fixture.h"
#include "tests/support/idle_flood.h"

namespace rssaudit {
namespace {

using testing::http_request;
using testing::raw_exchange;
using testing::ServerOnLoop;
namespace asio = testing::asio;
namespace beast = testing::beast;
namespace http = testing::http;
using tcp = testing::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string body_for(ExpositionFormat f) {
  return f == ExpositionFormat::kOpenMetrics ? "om 1\n# EOF\n" : "text 1\n";
}

// Polls `done` until true or the client deadline passes.
template <class Fn>
bool eventually(Fn done) {
  const auto deadline = Clock::now() + testing::kClientDeadline;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return done();
}

tcp::endpoint loopback(uint16_t port) {
  return {asio::ip::make_address("127.0.0.1"), port};
}

// A new connection to `port` each call, for IdleFlood.
std::function<tcp::socket()> connector(asio::io_context& io, uint16_t port) {
  return [&io, port] {
    tcp::socket c(io);
    c.connect(loopback(port));
    return c;
  };
}

// One kept-alive connection, requests one at a time, each with the client
// deadline.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(uint16_t port) : stream_(io_) {
    stream_.connect(loopback(port));
  }

  testing::HttpResult get(const std::string& target) {
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    testing::HttpResult r;
    stream_.expires_after(testing::kClientDeadline);
    http::async_write(stream_, req, [&](beast::error_code ec, size_t) {
      if (ec) {
        r.ec = ec;
        return;
      }
      http::async_read(stream_, buffer_, r.response,
                       [&](beast::error_code ec, size_t) { r.ec = ec; });
    });
    io_.restart();
    io_.run();
    return r;
  }

 private:
  asio::io_context io_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

// What the server sends until it closes, within the client deadline.
std::string read_until_closed(tcp::socket& socket) {
  const auto deadline = Clock::now() + testing::kClientDeadline;
  std::string received;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    pollfd p{socket.native_handle(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1)
      return received;
    char chunk[4096];
    beast::error_code ec;
    received.append(chunk, socket.read_some(asio::buffer(chunk), ec));
    if (ec) return received;
  }
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

// Scrapers asking as fast as they can cost one render per format per
// interval: the rest get the last body, each format its own.
TEST(MetricsServer, ScrapesWithinTheIntervalGetTheLastBodyUnrendered) {
  int n = 0;
  ServerOnLoop s({.min_render_interval = milliseconds(300),
                  .max_scrapes_per_peer_second = 100},
                 [&n](ExpositionFormat f) {
                   return fmt::format(
                       "{} {}\n",
                       f == ExpositionFormat::kOpenMetrics ? "om" : "text",
                       ++n);
                 });
  ASSERT_EQ(s.start_error(), "");
  KeepAliveClient client(s.port());
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(client.get("/metrics").response.body(), "text 1\n");
  EXPECT_EQ(
      http_request(s.port(), http::verb::get, "/metrics", kPrometheusAccept)
          .response.body(),
      "om 2\n");
  EXPECT_EQ(s.stats().renders, 2u);
  EXPECT_EQ(s.stats().reused, 4u);
  std::this_thread::sleep_for(milliseconds(350));
  EXPECT_EQ(client.get("/metrics").response.body(), "text 3\n");
  EXPECT_EQ(s.renders(), 3);
}

// A peer asking back to back gets a 429 of a few bytes past its share of
// the second, saying when to come back; other paths are not counted.
TEST(MetricsServer, APeerScrapingTooOftenGets429WithRetryAfter) {
  ServerOnLoop s({.max_scrapes_per_peer_second = 2}, body_for);
  ASSERT_EQ(s.start_error(), "");
  KeepAliveClient client(s.port());
  int ok = 0, throttled = 0;
  // Six in far less than a second span at most two seconds: at most four
  // answered.
  for (int i = 0; i < 6; ++i) {
    const auto r = client.get("/metrics").response;
    EXPECT_EQ(client.get("/healthz").response.result(), http::status::ok);
    if (r.result() == http::status::ok) {
      ++ok;
      continue;
    }
    ++throttled;
    EXPECT_EQ(r.result(), http::status::too_many_requests);
    EXPECT_EQ(r[http::field::retry_after], "1");
    EXPECT_EQ(r.body(),
              "too many scrapes from 127.0.0.1: at most 2 a second\n");
  }
  EXPECT_LE(ok, 4);
  EXPECT_GE(throttled, 2);
  EXPECT_EQ(s.stats().throttled, uint64_t(throttled));
  std::this_thread::sleep_for(milliseconds(1100));
  EXPECT_EQ(client.get("/metrics").response.result(), http::status::ok);
}

// Over its limit a scrape's 429 waits for the next second, when the peer
// may scrape again: a client asking back to back on one kept-alive
// connection got thousands of 429s a second (9 600 a second from eight:
// the daemon from 6 to 34 points of a CPU), now two answers a second.
TEST(MetricsServer, AThrottledScrapeIsAnsweredAtTheNextSecond) {
  ServerOnLoop s({.max_scrapes_per_peer_second = 1}, body_for);
  ASSERT_EQ(s.start_error(), "");
  KeepAliveClient client(s.port());
  const auto until = std::chrono::steady_clock::now() + milliseconds(2500);
  int answers = 0;
  while (std::chrono::steady_clock::now() < until) {
    const auto asked = std::chrono::steady_clock::now();
    const auto r = client.get("/metrics").response;
    ++answers;
    if (r.result() == http::status::too_many_requests) {
      EXPECT_GE(std::chrono::steady_clock::now() - asked, milliseconds(1))
          << "held to the next second";
    }
  }
  EXPECT_LE(answers, 8) << "2.5 s of asking back to back";
  EXPECT_GE(s.stats().throttled, 2u);
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

// Idle clients holding every slot, and more arriving all the time, do not
// delay a scrape: each is answered long before any idle client could time
// out.
TEST(MetricsServer, IdleClientsDoNotDelayScrapes) {
  const MetricsServerOptions o{
      .timeout = std::chrono::seconds(5),
      .first_request_timeout = std::chrono::seconds(5)};
  ServerOnLoop s(o, body_for);
  asio::io_context io;
  std::vector<tcp::socket> idle;
  for (size_t i = 0; i < o.max_connections; ++i)
    idle.emplace_back(io).connect(loopback(s.port()));
  asio::io_context flood_io;
  testing::IdleFlood<tcp::socket> flood(connector(flood_io, s.port()),
                                        milliseconds(50));
  for (int i = 0; i < 10; ++i) {
    const auto asked = Clock::now();
    const auto r = http_request(s.port(), http::verb::get, "/metrics");
    ASSERT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.response.result(), http::status::ok);
    EXPECT_LT(Clock::now() - asked, o.timeout / 2);
    std::this_thread::sleep_for(milliseconds(50));
  }
  const MetricsServerStats stats = s.stats();
  EXPECT_GT(stats.evicted, 0u);
  EXPECT_EQ(stats.over_limit, 0u);
}

// Idle clients are displaced first: one sending its request byte by byte
// while they keep arriving is answered.
TEST(MetricsServer, AClientPartWayThroughARequestOutlastsIdleOnes) {
  const MetricsServerOptions o{
      .timeout = std::chrono::seconds(5),
      .first_request_timeout = std::chrono::seconds(5)};
  ServerOnLoop s(o, body_for);
  // Older than the slow client: without the rule it would go first after
  // them.
  asio::io_context io;
  std::vector<tcp::socket> idle;
  for (size_t i = 0; i + 1 < o.max_connections; ++i)
    idle.emplace_back(io).connect(loopback(s.port()));
  ASSERT_TRUE(
      eventually([&] { return s.stats().accepted == o.max_connections - 1; }));
  tcp::socket slow(io);
  slow.connect(loopback(s.port()));
  asio::io_context flood_io;
  testing::IdleFlood<tcp::socket> flood(connector(flood_io, s.port()),
                                        milliseconds(50));
  for (char byte : std::string("GET /healthz HTTP/1.1\r\nHost: x\r\n"
                               "Connection: close\r\n\r\n")) {
    beast::error_code ec;
    asio::write(slow, asio::buffer(&byte, 1), ec);
    ASSERT_FALSE(ec) << "displaced: " << ec.message();
    std::this_thread::sleep_for(milliseconds(40));
  }
  const std::string answer = read_until_closed(slow);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 ")) << "displaced: " << answer;
  EXPECT_GT(s.stats().evicted, 0u);
}

// Only a connection in the middle of being answered is never displaced: with
// every slot taken by one, a newcomer gets a 503.
TEST(MetricsServer, ANewcomerGets503OnlyWhileAllAreBeingAnswered) {
  // A body far larger than loopback socket buffers: a client that does not
  // read it keeps its connection being answered.
  ServerOnLoop s({.max_connections = 2, .min_render_interval = milliseconds(0)},
                 [](ExpositionFormat) { return std::string(32 << 20, 'x'); });
  asio::io_context io;
  std::vector<tcp::socket> stuck;
  for (int i = 0; i < 2; ++i) {
    stuck.emplace_back(io).connect(loopback(s.port()));
    asio::write(stuck.back(),
                asio::buffer(std::string_view("GET /metrics HTTP/1.1\r\n"
                                              "Host: x\r\n\r\n")));
  }
  ASSERT_TRUE(eventually([&] { return s.renders() == 2; }));
  const auto refused = raw_exchange(s.port(), "");
  EXPECT_TRUE(refused.received.starts_with("HTTP/1.1 503 "))
      << refused.received;
  EXPECT_NE(refused.received.find("too many connections (limit 2)"),
            std::string::npos);
  stuck.pop_back();  // its answer fails: the slot is free
  EXPECT_TRUE(eventually([&] {
    return http_request(s.port(), http::verb::get, "/healthz")
               .response.result() == http::status::ok;
  }));
  const MetricsServerStats stats = s.stats();
  EXPECT_GE(stats.over_limit, 1u);
  EXPECT_EQ(stats.evicted, 0u);
}

// A client gets first_request_timeout to send its first request, then the
// full timeout between requests.
TEST(MetricsServer, AClientMustAskSoonAfterConnectingThenMayIdle) {
  const MetricsServerOptions o{.first_request_timeout =
                                   std::chrono::seconds(1)};
  ServerOnLoop s(o, body_for);  // timeout: 10 s
  KeepAliveClient established(s.port());
  EXPECT_EQ(established.get("/healthz").response.result(), http::status::ok);
  const auto silent = raw_exchange(s.port(), "");
  EXPECT_EQ(silent.ec, asio::error::eof) << "kept for the timeout";
  std::this_thread::sleep_for(o.first_request_timeout * 3 / 2);
  EXPECT_EQ(established.get("/healthz").response.result(), http::status::ok);
  EXPECT_EQ(s.stats().timeouts, 1u);
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
