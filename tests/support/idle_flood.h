// Clients that connect and never ask: a thread opens one every `period`
// with `connect()` (which returns what holds the connection open) and
// keeps them all until the flood is destroyed.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace rssaudit::testing {

template <class Held>
class IdleFlood {
 public:
  IdleFlood(std::function<Held()> connect, std::chrono::milliseconds period)
      : thread_([this, connect = std::move(connect), period] {
          while (!stop_) {
            held_.push_back(connect());
            std::this_thread::sleep_for(period);
          }
        }) {}
  IdleFlood(const IdleFlood&) = delete;
  IdleFlood& operator=(const IdleFlood&) = delete;
  ~IdleFlood() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<Held> held_;  // the thread's own
  std::thread thread_;      // last: starts once the members it uses exist
};

}  // namespace rssaudit::testing
