// The loop's long work — drains, sampling slices, history pieces — kept in
// a queue of its own beside Asio's handlers, and run one piece at a time
// after every handler that is ready: a query, a scrape, the watchdog or a
// signal waits for at most the one piece running when it arrived, not for
// every piece queued before it. (In Asio's one queue, a status request
// under the soak's mass exit waited behind a slice, a drain and a history
// piece, 0.3-0.5 s each there: 1.05-1.42 s in three runs of eight.)
//
// A piece of each kind waits at most once: posting a kind already queued
// does nothing, so a timer firing faster than its work runs queues no
// backlog of it.
#pragma once

// clang-format off
#include <utility>  // before Asio: Boost 1.74 uses std::exchange unincluded
// clang-format on

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <deque>
#include <functional>
#include <string_view>

namespace rssaudit {

class BackgroundWork {
 public:
  // Queues `job` under `kind` (a literal: "drain", "slice", ...) unless
  // a job of that kind waits already; true when queued.
  bool post(std::string_view kind, std::function<void()> job) {
    // A handful of kinds: the queue itself says which wait.
    if (std::ranges::any_of(queue_,
                            [&](const Job& j) { return j.kind == kind; }))
      return false;
    queue_.push_back({kind, std::move(job)});
    return true;
  }
  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }
  // Runs the oldest job (which may post others, its own kind included);
  // false when none waits.
  bool run_one() {
    if (queue_.empty()) return false;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    job.fn();
    return true;
  }

 private:
  struct Job {
    std::string_view kind;  // a literal
    std::function<void()> fn;
  };
  std::deque<Job> queue_;
};

// Runs `io` and `work` until `io` is stopped: every ready handler (at most
// kReadyPerPiece in a row, so that a flood of requests cannot starve the
// capture's drain), then one piece of work; it sleeps in Asio when
// neither has anything to run.
inline void run_with_background(boost::asio::io_context& io,
                                BackgroundWork& work) {
  constexpr size_t kReadyPerPiece = 64;
  while (!io.stopped()) {
    for (size_t n = 0; n < kReadyPerPiece && io.poll_one() > 0; ++n) {
    }
    if (io.stopped()) return;
    if (!work.run_one()) io.run_one();
  }
}

}  // namespace rssaudit
