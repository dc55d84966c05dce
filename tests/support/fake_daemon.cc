// A stand-in for rssauditd in CLI tests: serves a fixed LiveView, read from
// a JSON file (core/formats/live_view_json.h), through the real ControlServer.
//
//   fake_daemon SOCKET_PATH VIEW_JSON_FILE
//
// Prints "ready" once it listens; SIGTERM or SIGINT stops it, removing the
// socket.
#include <fmt/core.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/formats/live_view_json.h"
#include "daemon/control_server.h"

int main(int argc, char** argv) {
  using namespace rssaudit;
  if (argc != 3) {
    fmt::print(stderr, "usage: fake_daemon SOCKET_PATH VIEW_JSON_FILE\n");
    return 2;
  }
  std::ifstream in(argv[2]);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  Result<LiveView> view = live_view_from_json(j);
  if (!view) {
    fmt::print(stderr, "fake_daemon: {}: {}\n", argv[2],
               j.is_discarded() ? "invalid JSON" : view.error().message);
    return 1;
  }
  boost::asio::io_context io;
  ControlServerOptions options;
  options.path = argv[1];
  ControlServer server(io, options, [&](const LabelScope&) { return *view; });
  if (const Result<void> started = server.start(); !started) {
    fmt::print(stderr, "fake_daemon: {}\n", started.error().message);
    return 1;
  }
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code, int) {
    server.stop();
    io.stop();
  });
  fmt::print("ready\n");
  std::fflush(stdout);
  io.run();
  return 0;
}
