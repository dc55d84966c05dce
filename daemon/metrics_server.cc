#include "daemon/metrics_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <optional>
#include <unordered_map>
#include <utility>

namespace rssaudit {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class MetricsConnection;

struct MetricsServer::State : std::enable_shared_from_this<State> {
  State(asio::io_context& io, MetricsServerOptions o, Render r, Health h)
      : options(std::move(o)),
        render(std::move(r)),
        health(std::move(h)),
        acceptor(io),
        retry(io) {}

  void accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  // Closes the connection a newcomer displaces, if any may be.
  bool make_room();
  // A connection ended: its slot is free again.
  void release(MetricsConnection* c);
  // The scrape body in `format`: rendered, or the last one when it is
  // younger than options.min_render_interval.
  const std::string& body(ExpositionFormat format);
  // Whether a scrape from `peer` is within its share of this second.
  bool scrape_allowed(const std::string& peer);

  MetricsServerOptions options;
  Render render;
  Health health;
  tcp::acceptor acceptor;
  asio::steady_timer retry;  // after an accept error such as EMFILE
  uint16_t port = 0;
  bool accepting = false;  // an async_accept is pending
  bool stopped = false;
  MetricsServerStats stats;
  uint64_t waits = 0;  // orders the connections' waits for a request
  std::unordered_map<MetricsConnection*, std::weak_ptr<MetricsConnection>>
      connections;
  struct Rendered {
    std::string body;
    std::optional<std::chrono::steady_clock::time_point> at;
  };
  std::array<Rendered, 2> rendered;  // by ExpositionFormat
  struct PeerSecond {
    int64_t second = 0;
    size_t scrapes = 0;
  };
  std::unordered_map<std::string, PeerSecond> peers;  // by address
};

namespace {

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response text_response(http::status status, unsigned version,
                       std::string body) {
  Response res{status, version};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

// Beast 1.74 hands out boost::string_view.
std::string_view std_view(beast::string_view s) { return {s.data(), s.size()}; }

// The error answer to a request that could not be parsed, by why.
http::status parse_failure_status(const beast::error_code& ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return http::status::request_header_fields_too_large;
  }
  if (ec == http::error::body_limit) return http::status::payload_too_large;
  return http::status::bad_request;
}

// One 503 to a client we cannot serve now, then close. Non-blocking: it fits
// a fresh connection's socket buffer, and a refused client must not hold the
// loop.
void refuse(tcp::socket& socket, size_t limit) {
  beast::error_code ec;
  socket.non_blocking(true, ec);
  auto res = text_response(
      http::status::service_unavailable, 11,
      fmt::format("too many connections (limit {}); try again\n", limit));
  res.keep_alive(false);
  res.prepare_payload();
  http::write(socket, res, ec);
  socket.close(ec);
}

}  // namespace

// One client connection: reads requests one at a time (keep-alive), answers
// each, and ends on error, timeout, or when either side asks to close.
class MetricsConnection
    : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(std::shared_ptr<MetricsServer::State> state,
                    tcp::socket socket)
      : state_(std::move(state)),
        stream_(std::move(socket)),
        hold_(stream_.get_executor()),
        buffer_(state_->options.max_request_bytes) {}
  ~MetricsConnection() { state_->release(this); }

  // One deadline for the whole request, however it trickles in.
  void await_request() {
    const MetricsServerOptions& o = state_->options;
    phase_ = Phase::kIdle;
    waiting_since_ = ++state_->waits;
    parser_.emplace();
    // Both limits, and the buffer's, so no request can grow memory further.
    parser_->header_limit(o.max_request_bytes);
    parser_->body_limit(o.max_request_bytes);
    stream_.expires_after(
        answered_ ? o.timeout : std::min(o.first_request_timeout, o.timeout));
    if (buffer_.size() > 0) return receive();  // pipelined
    // The first bytes on their own: until they come the connection is idle,
    // the first kind a newcomer displaces.
    stream_.async_read_some(
        buffer_.prepare(buffer_.max_size()),
        [self = shared_from_this()](beast::error_code ec, size_t n) {
          self->on_first_bytes(ec, n);
        });
  }

  void close() {
    closed_ = true;
    hold_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  // Whether a newcomer may displace this connection, and in what order
  // (metrics_server.h): the lowest rank first.
  bool evictable() const { return phase_ != Phase::kAnswering; }
  std::pair<bool, uint64_t> eviction_rank() const {
    return {phase_ == Phase::kReceiving, waiting_since_};  // held: {false, 0}
  }

 private:
  enum class Phase {
    kIdle,       // waiting for a request, none of it received
    kReceiving,  // part of a request received
    kAnswering,  // a request read, its answer not yet written
    kHeld,       // a scrape over its peer's limit, its 429 held (hold())
  };

  // A completion with nothing left to do: the server stopped or this
  // connection was closed (a queued completion may still report success).
  bool ended(const beast::error_code& ec) const {
    return state_->stopped || closed_ || ec == asio::error::operation_aborted;
  }

  // The client's address, as the per-peer limit counts it.
  std::string peer_address() const {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    return ec ? "?" : peer.address().to_string();
  }

  // The stream failed (EOF, reset, timeout): nothing more can be said.
  void hang_up(const beast::error_code& ec) {
    if (ec == beast::error::timeout) ++state_->stats.timeouts;
    close();
  }

  void on_first_bytes(beast::error_code ec, size_t n) {
    if (ended(ec)) return;
    if (ec) return hang_up(ec);
    buffer_.commit(n);
    receive();
  }

  void receive() {
    phase_ = Phase::kReceiving;
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->on_read(ec);
                     });
  }

  void on_read(beast::error_code ec) {
    if (ended(ec)) return;
    if (ec == http::error::end_of_stream || ec == beast::error::timeout) {
      return hang_up(ec);
    }
    if (ec) {
      // Malformed or oversized: say so once, then hang up, since the rest
      // of the stream cannot be framed.
      auto res =
          text_response(parse_failure_status(ec), 11, ec.message() + "\n");
      res.keep_alive(false);
      return write(std::move(res));
    }
    Response res = answer(parser_->get());
    if (res.result() == http::status::too_many_requests) return hold(res);
    write(std::move(res));
  }

  // A scrape over its peer's limit is answered at the start of the next
  // second, when the peer may scrape again: answered at once, a client
  // asking back to back on a kept-alive connection got 9 600 of them a
  // second and took the daemon from 6 to 34 points of a CPU. While held
  // the connection is the first a newcomer displaces: it holds no slot
  // another scraper needs.
  void hold(Response res) {
    phase_ = Phase::kHeld;
    waiting_since_ = 0;
    response_ = std::move(res);
    const auto now = std::chrono::steady_clock::now();
    hold_.expires_after(std::chrono::seconds(1) -
                        now.time_since_epoch() % std::chrono::seconds(1));
    hold_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (self->ended(ec)) return;
      self->write(std::move(*self->response_));
    });
  }

  Response answer(const Request& req) const {
    const std::string_view target = std_view(req.target());
    const std::string_view path = target.substr(0, target.find('?'));
    Response res;
    if (path != "/metrics" && path != "/healthz" && path != "/") {
      res = text_response(http::status::not_found, req.version(),
                          "not found: try /metrics or /healthz\n");
    } else if (req.method() != http::verb::get) {
      res = text_response(http::status::method_not_allowed, req.version(),
                          "only GET\n");
      res.set(http::field::allow, "GET");
    } else if (path == "/") {
      res = text_response(http::status::ok, req.version(),
                          "rssauditd: /metrics (OpenMetrics, Prometheus "
                          "text), /healthz\n");
    } else if (path == "/healthz") {
      const std::string why = state_->health ? state_->health() : "";
      res = why.empty() ? text_response(http::status::ok, req.version(), "ok\n")
                        : text_response(http::status::service_unavailable,
                                        req.version(), why + "\n");
    } else if (const std::string peer = peer_address();
               !state_->scrape_allowed(peer)) {
      res = text_response(
          http::status::too_many_requests, req.version(),
          fmt::format("too many scrapes from {}: at most {} a second\n", peer,
                      state_->options.max_scrapes_per_peer_second));
      res.set(http::field::retry_after, "1");
    } else {
      const auto format = negotiate_format(std_view(req[http::field::accept]));
      try {
        res = Response{http::status::ok, req.version()};
        res.body() = state_->body(format);
        res.set(http::field::content_type, std::string(content_type(format)));
      } catch (const std::exception& e) {
        res = text_response(http::status::internal_server_error, req.version(),
                            std::string(e.what()) + "\n");
      }
    }
    res.keep_alive(req.keep_alive());
    return res;
  }

  void write(Response res) {
    phase_ = Phase::kAnswering;
    res.prepare_payload();
    response_ = std::move(res);
    stream_.expires_after(state_->options.timeout);
    http::async_write(
        stream_, *response_,
        [self = shared_from_this()](beast::error_code ec, size_t) {
          self->on_write(ec);
        });
  }

  void on_write(beast::error_code ec) {
    if (ended(ec)) return;
    if (ec) return hang_up(ec);
    if (!response_->keep_alive()) return close();
    answered_ = true;
    await_request();
  }

  std::shared_ptr<MetricsServer::State> state_;
  beast::tcp_stream stream_;
  asio::steady_timer hold_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<Response> response_;
  Phase phase_ = Phase::kIdle;
  uint64_t waiting_since_ = 0;  // State::waits when the wait began
  bool answered_ = false;       // a request was answered: no longer new
  bool closed_ = false;
};

void MetricsServer::State::accept() {
  if (stopped || accepting) return;
  accepting = true;
  acceptor.async_accept(
      [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
        self->on_accept(ec, std::move(socket));
      });
}

void MetricsServer::State::on_accept(beast::error_code ec, tcp::socket socket) {
  accepting = false;
  if (stopped || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of descriptors, say: retrying at once would spin the loop.
    retry.expires_after(std::chrono::milliseconds(100));
    retry.async_wait([self = shared_from_this()](beast::error_code e) {
      if (!e) self->accept();
    });
    return;
  }
  ++stats.accepted;
  if (connections.size() >= options.max_connections && !make_room()) {
    ++stats.over_limit;
    refuse(socket, options.max_connections);
  } else {
    auto c = std::make_shared<MetricsConnection>(shared_from_this(),
                                                 std::move(socket));
    connections.emplace(c.get(), c);
    c->await_request();
  }
  accept();
}

bool MetricsServer::State::make_room() {
  std::shared_ptr<MetricsConnection> victim;
  for (auto& [_, weak] : connections) {
    auto c = weak.lock();
    if (c && c->evictable() &&
        (!victim || c->eviction_rank() < victim->eviction_rank()))
      victim = std::move(c);
  }
  if (!victim) return false;
  ++stats.evicted;
  connections.erase(victim.get());
  victim->close();
  return true;
}

void MetricsServer::State::release(MetricsConnection* c) {
  connections.erase(c);
}

bool MetricsServer::State::scrape_allowed(const std::string& peer) {
  const int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count();
  // Bounded however many addresses ask: past seconds are forgotten.
  if (peers.size() >= 4096)
    std::erase_if(peers,
                  [&](const auto& p) { return p.second.second != second; });
  PeerSecond& p = peers[peer];
  if (p.second != second) p = PeerSecond{second, 0};
  if (p.scrapes >= options.max_scrapes_per_peer_second) {
    ++stats.throttled;
    return false;
  }
  ++p.scrapes;
  return true;
}

const std::string& MetricsServer::State::body(ExpositionFormat format) {
  Rendered& r = rendered[static_cast<size_t>(format)];
  const auto now = std::chrono::steady_clock::now();
  if (r.at && now - *r.at < options.min_render_interval) {
    ++stats.reused;
    return r.body;
  }
  r.body = render(format);  // may throw (a 500): nothing is kept then
  r.at = now;
  ++stats.renders;
  return r.body;
}

MetricsServer::MetricsServer(asio::io_context& io, MetricsServerOptions options,
                             Render render, Health health)
    : state_(std::make_shared<State>(io, std::move(options), std::move(render),
                                     std::move(health))) {}

MetricsServer::~MetricsServer() { stop(); }

Result<void> MetricsServer::start() {
  auto& s = *state_;
  const auto& o = s.options;
  const auto where = [&](const beast::error_code& ec) {
    const bool v6 = o.address.find(':') != std::string::npos;
    return unexpected(
        Error{fmt::format("metrics endpoint {}{}{}:{}: {}", v6 ? "[" : "",
                          o.address, v6 ? "]" : "", o.port, ec.message())});
  };
  beast::error_code ec;
  const auto address = asio::ip::make_address(o.address, ec);
  if (ec) return where(ec);
  const tcp::endpoint endpoint{address, o.port};
  // Each step reports into ec; the first failure skips the rest.
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) s.port = s.acceptor.local_endpoint(ec).port();
  if (ec) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    return where(ec);
  }
  s.stopped = false;
  s.accept();
  return {};
}

uint16_t MetricsServer::port() const { return state_->port; }

MetricsServerStats MetricsServer::stats() const { return state_->stats; }

void MetricsServer::stop() {
  auto& s = *state_;
  s.stopped = true;
  beast::error_code ignored;
  s.acceptor.close(ignored);
  s.retry.cancel();
  // Copied first: a connection that ends releases itself from the map.
  std::vector<std::shared_ptr<MetricsConnection>> open;
  for (auto& [_, weak] : s.connections) {
    if (auto c = weak.lock()) open.push_back(std::move(c));
  }
  for (auto& c : open) c->close();
}

}  // namespace rssaudit
