#include "daemon/background_work.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <string>
#include <vector>

namespace rssaudit {
namespace {

// A handler that becomes ready while a piece of work runs (a request
// arriving mid-drain) runs before the next piece, though that piece was
// queued first.
TEST(BackgroundWork, AReadyHandlerRunsBeforeTheNextPieceQueuedBeforeIt) {
  boost::asio::io_context io;
  BackgroundWork work;
  std::vector<std::string> ran;
  work.post("drain", [&] {
    ran.push_back("drain");
    boost::asio::post(io, [&] { ran.push_back("request"); });
  });
  work.post("slice", [&] {
    ran.push_back("slice");
    io.stop();
  });
  auto guard = boost::asio::make_work_guard(io);
  run_with_background(io, work);
  EXPECT_EQ(ran, (std::vector<std::string>{"drain", "request", "slice"}));
}

TEST(BackgroundWork, AKindWaitsOnceAndMayQueueItselfAgainWhileRunning) {
  BackgroundWork work;
  int drains = 0, slices = 0;
  EXPECT_TRUE(work.post("drain", [&] { ++drains; }));
  EXPECT_FALSE(work.post("drain", [&] { drains += 100; }));  // waits already
  std::function<void()> slice = [&] {
    if (++slices < 3) work.post("slice", slice);  // the next slice
  };
  EXPECT_TRUE(work.post("slice", slice));
  EXPECT_EQ(work.size(), 2u);
  while (work.run_one()) {
  }
  EXPECT_EQ(drains, 1);
  EXPECT_EQ(slices, 3);
  EXPECT_TRUE(work.empty());
  EXPECT_FALSE(work.run_one());
}

// Handlers that keep coming (a client flooding requests) leave room for
// the work: a piece runs after at most a bounded run of ready handlers.
TEST(BackgroundWork, AFloodOfHandlersCannotStarveTheWork) {
  boost::asio::io_context io;
  BackgroundWork work;
  size_t handled = 0;
  std::function<void()> flood = [&] {
    ++handled;
    boost::asio::post(io, flood);
  };
  boost::asio::post(io, flood);
  work.post("drain", [&] { io.stop(); });
  run_with_background(io, work);
  EXPECT_TRUE(work.empty());
  EXPECT_GT(handled, 0u);
  EXPECT_LE(handled, 1000u);
}

// Nothing to run: the loop sleeps in Asio until a timer or a request
// wakes it, and ends when the io_context stops.
TEST(BackgroundWork, EndsWhenTheLoopStops) {
  boost::asio::io_context io;
  BackgroundWork work;
  bool ran = false;
  boost::asio::post(io, [&] {
    work.post("flush", [&] {
      ran = true;
      io.stop();
    });
  });
  auto guard = boost::asio::make_work_guard(io);
  run_with_background(io, work);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(io.stopped());
}

}  // namespace
}  // namespace rssaudit
