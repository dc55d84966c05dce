// The optional metrics endpoint: a small HTTP/1.1 server for Prometheus
// scrapes on the daemon's own single-threaded io_context. It answers
// `GET /metrics` by calling the render callback on the loop thread, so the
// callback may read the daemon's state without locks; `GET /healthz` with
// 200 "ok" or 503 and the health callback's reason (for load balancers and
// probes); `GET /` with the list of both; other paths 404, other methods
// 405.
//
// It faces the network, so everything is bounded: request size, time per
// request, number of open connections. Garbage gets a 4xx or a closed socket,
// never a crash. Idle clients cannot delay a scrape: when every slot is
// taken, a newcomer displaces a connection waiting for a request — first one
// holding a throttled scrape's 429, then one that has sent nothing of it,
// then one part-way through it; within each, the one that has waited
// longest. A connection being answered is never
// displaced: only when all of them are does the newcomer get a 503.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/formats/openmetrics.h"
#include "core/result.h"

namespace rssaudit {

struct MetricsServerOptions {
  std::string address = "127.0.0.1";  // loopback unless asked otherwise
  uint16_t port = 0;                  // 0: an ephemeral port, see port()
  size_t max_connections = 16;
  // Headers and body of one request together.
  size_t max_request_bytes = 8192;
  // For reading one whole request, and for writing one answer: a client
  // that trickles bytes is cut off, and an idle keep-alive connection too.
  std::chrono::milliseconds timeout{10'000};
  // For the first request of a connection (never longer than timeout):
  // scrapers send it as they connect, so a slot is not held longer by one
  // that does not.
  std::chrono::milliseconds first_request_timeout{2'000};
  // A scrape within this long of the last render of its format gets that
  // body again: however many clients scrape however often, the daemon
  // renders each format at most once per interval (Prometheus scrapes
  // every 15 s or more; eight loops scraping as fast as they could cost
  // the daemon 23 points of a CPU rendering every time). 0: every scrape
  // renders.
  std::chrono::milliseconds min_render_interval{1'000};
  // Scrapes of /metrics answered per peer address in one second; beyond,
  // 429 Too Many Requests (a few bytes) at the start of the next second
  // (writing the body to clients asking back to back still cost a few
  // points of a CPU, and an immediate 429 to a kept-alive client 28).
  // A Prometheus pair on one host scrapes far less often.
  size_t max_scrapes_per_peer_second = 10;
};

// What the server has done about its limits, for the daemon's summaries.
struct MetricsServerStats {
  uint64_t accepted = 0;
  uint64_t over_limit = 0;  // refused: every connection was being answered
  uint64_t evicted = 0;     // closed to make room for a newcomer
  uint64_t timeouts = 0;
  uint64_t renders = 0;    // scrapes answered with a body rendered for them
  uint64_t reused = 0;     // scrapes answered with the last body (the interval)
  uint64_t throttled = 0;  // scrapes answered 429: their peer asked too often
};

class MetricsServer {
 public:
  // The scrape body in the format the client negotiated (Accept header).
  using Render = std::function<std::string(ExpositionFormat)>;
  // Why the daemon is unhealthy now, or empty when it is healthy; called
  // on the loop thread. None given: always healthy.
  using Health = std::function<std::string()>;

  MetricsServer(boost::asio::io_context& io, MetricsServerOptions options,
                Render render, Health health = {});
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  ~MetricsServer();  // stop()

  // Binds and listens, or says why not, naming address:port. Call on the
  // loop thread (or before the loop runs).
  Result<void> start();
  // The bound port (the ephemeral one when options.port was 0); 0 before
  // start() succeeded.
  uint16_t port() const;
  // Call on the loop thread.
  MetricsServerStats stats() const;
  // Closes the listener and every connection; pending handlers complete
  // with operation_aborted on the loop. Idempotent.
  void stop();

  struct State;  // shared with the connections, which may outlive *this

 private:
  std::shared_ptr<State> state_;
};

}  // namespace rssaudit
