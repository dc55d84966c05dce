// Runs a MetricsServer on its own loop thread, as the daemon runs it on its
// single-threaded loop, while the test thread plays the client.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "daemon/metrics_server.h"

namespace rssaudit::testing {

class ServerOnLoop {
 public:
  // Starts the server before the loop runs (allowed: nothing else touches
  // it yet); start_error() says why when it failed.
  ServerOnLoop(MetricsServerOptions options, MetricsServer::Render render,
               MetricsServer::Health health = {})
      : server_(
            io_, std::move(options),
            [this, render = std::move(render)](ExpositionFormat f) {
              if (std::this_thread::get_id() != loop_id_) {
                off_loop_renders_ = true;
              }
              ++renders_;
              return render(f);
            },
            std::move(health)) {
    if (Result<void> started = server_.start(); !started)
      start_error_ = started.error().message;
    loop_ = std::thread([this] {
      loop_id_ = std::this_thread::get_id();  // read by renders, same thread
      io_.run();
    });
  }
  ~ServerOnLoop() {
    stop();
    guard_.reset();
    loop_.join();
  }

  // stop() on the loop thread, as the daemon would call it; returns once it
  // ran.
  void stop() {
    std::atomic<bool> done = false;
    boost::asio::post(io_, [&] {
      server_.stop();
      done = true;
      done.notify_one();
    });
    done.wait(false);
  }

  // The server's stats, read on the loop thread.
  MetricsServerStats stats() {
    std::promise<MetricsServerStats> read;
    boost::asio::post(io_, [&] { read.set_value(server_.stats()); });
    return read.get_future().get();
  }

  const std::string& start_error() const { return start_error_; }
  uint16_t port() const { return server_.port(); }
  int renders() const { return renders_; }
  bool off_loop_renders() const { return off_loop_renders_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
      guard_ = boost::asio::make_work_guard(io_);
  std::atomic<int> renders_ = 0;
  std::atomic<bool> off_loop_renders_ = false;
  std::thread loop_;
  std::thread::id loop_id_;
  MetricsServer server_;
  std::string start_error_;
};

}  // namespace rssaudit::testing
