// A Beast HTTP client for tests, and a raw-bytes one for abuse: every
// exchange runs on its own io_context with a deadline, so a server that
// never answers fails the test instead of hanging it.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <string>

namespace rssaudit::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

inline constexpr std::chrono::seconds kClientDeadline{5};

struct HttpResult {
  beast::error_code ec;  // beast::error::timeout: no answer by the deadline
  http::response<http::string_body> response;
};

inline HttpResult http_request(
    uint16_t port, http::verb method, const std::string& target,
    const std::string& accept = "", const std::string& body = "",
    std::chrono::seconds deadline = kClientDeadline) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!accept.empty()) req.set(http::field::accept, accept);
  if (!body.empty()) req.body() = body;
  req.prepare_payload();
  HttpResult r;
  beast::flat_buffer buffer;
  const tcp::endpoint to{asio::ip::make_address("127.0.0.1"), port};
  stream.expires_after(deadline);
  stream.async_connect(to, [&](beast::error_code ec) {
    if (ec) {
      r.ec = ec;
      return;
    }
    http::async_write(stream, req, [&](beast::error_code ec, size_t) {
      if (ec) {
        r.ec = ec;
        return;
      }
      http::async_read(stream, buffer, r.response,
                       [&](beast::error_code ec, size_t) { r.ec = ec; });
    });
  });
  io.run();
  return r;
}

struct RawResult {
  beast::error_code ec;  // how reading ended: eof, a reset, or timeout
  std::string received;
};

// Connects, writes `bytes` (a failed write is fine: the server may hang up
// first), and reads until the server closes or the deadline passes.
inline RawResult raw_exchange(uint16_t port, const std::string& bytes) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  RawResult r;
  std::string chunk(4096, '\0');
  std::function<void()> read_more = [&] {
    stream.async_read_some(asio::buffer(chunk),
                           [&](beast::error_code ec, size_t n) {
                             r.received.append(chunk, 0, n);
                             if (ec) {
                               r.ec = ec;
                               return;
                             }
                             read_more();
                           });
  };
  stream.expires_after(kClientDeadline);
  stream.async_connect(tcp::endpoint{asio::ip::make_address("127.0.0.1"), port},
                       [&](beast::error_code ec) {
                         if (ec) {
                           r.ec = ec;
                           return;
                         }
                         asio::async_write(stream, asio::buffer(bytes),
                                           [](beast::error_code, size_t) {});
                         read_more();
                       });
  io.run();
  return r;
}

}  // namespace rssaudit::testing
