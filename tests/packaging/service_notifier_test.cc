// ServiceNotifier against a stand-in for systemd: a datagram socket named by
// NOTIFY_SOCKET, read back message by message.
#include "daemon/service_notifier.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "tests/support/notify_listener.h"

namespace rssaudit {
namespace {

using namespace std::chrono_literals;
using testing::NotifyListener;

uint64_t monotonic_usec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000 + uint64_t(ts.tv_nsec) / 1'000;
}

class ServiceNotifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(listener_.error(), "");
    setenv("NOTIFY_SOCKET", listener_.path().c_str(), 1);
    setenv("WATCHDOG_USEC", "4000000", 1);
    setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  }
  void TearDown() override {
    for (const char* v : {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"})
      unsetenv(v);
  }
  // The next datagram's text; fails the test if none arrives or it came
  // from another process.
  std::string next() {
    const auto note = listener_.receive(2s);
    if (!note) {
      ADD_FAILURE() << "no notification arrived";
      return "";
    }
    EXPECT_EQ(note->pid, getpid()) << "NotifyAccess=main: sent by us";
    return note->text;
  }
  bool silent() { return !listener_.receive(100ms); }

  NotifyListener listener_;
};

TEST_F(ServiceNotifierTest, ReadyCarriesTheStatusLine) {
  ServiceNotifier n;
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.ready("capturing; 0 processes"), 1);
  EXPECT_EQ(next(), "READY=1\nSTATUS=capturing; 0 processes");
}

TEST_F(ServiceNotifierTest, StatusIsOneLineEvenWhenTheTextIsNot) {
  ServiceNotifier n;
  EXPECT_EQ(n.status("12000 events/s\n41 processes\r"), 1);
  EXPECT_EQ(next(), "STATUS=12000 events/s 41 processes ");
}

TEST_F(ServiceNotifierTest, WatchdogPingsAtHalfTheManagersTimeout) {
  ServiceNotifier n;
  EXPECT_EQ(n.watchdog_timeout(), 4s);
  EXPECT_EQ(n.watchdog_interval(), 2s);
  EXPECT_EQ(n.watchdog(), 1);
  EXPECT_EQ(next(), "WATCHDOG=1");
}

TEST_F(ServiceNotifierTest, ReloadIsTimestampedThenEndsWithReady) {
  ServiceNotifier n;
  const uint64_t before = monotonic_usec();
  EXPECT_EQ(n.reloading(), 1);
  const uint64_t after = monotonic_usec();
  const std::string reload = next();
  const std::string prefix = "RELOADING=1\nMONOTONIC_USEC=";
  ASSERT_EQ(reload.substr(0, prefix.size()), prefix) << reload;
  const uint64_t stamp = std::stoull(reload.substr(prefix.size()));
  EXPECT_GE(stamp, before);
  EXPECT_LE(stamp, after);
  EXPECT_EQ(n.ready("configuration reloaded"), 1);
  EXPECT_EQ(next(), "READY=1\nSTATUS=configuration reloaded");
}

TEST_F(ServiceNotifierTest, StoppingWithAndWithoutStatus) {
  ServiceNotifier n;
  EXPECT_EQ(n.stopping("SIGTERM: flushing the history"), 1);
  EXPECT_EQ(next(), "STOPPING=1\nSTATUS=SIGTERM: flushing the history");
  EXPECT_EQ(n.stopping(), 1);
  EXPECT_EQ(next(), "STOPPING=1");
}

TEST_F(ServiceNotifierTest, KeepsTheEnvironmentForLaterNotifiers) {
  ServiceNotifier first;
  first.ready("up");
  next();
  ASSERT_NE(getenv("NOTIFY_SOCKET"), nullptr);
  ServiceNotifier second;
  EXPECT_TRUE(second.enabled());
  EXPECT_EQ(second.watchdog_timeout(), 4s);
}

TEST_F(ServiceNotifierTest, EverythingIsANoOpWithoutNotifySocket) {
  unsetenv("NOTIFY_SOCKET");
  ServiceNotifier n;
  EXPECT_FALSE(n.enabled());
  EXPECT_EQ(n.watchdog_timeout(), 0us) << "nobody to ping";
  EXPECT_EQ(n.watchdog_interval(), 0us);
  EXPECT_EQ(n.ready("x"), 0);
  EXPECT_EQ(n.status("x"), 0);
  EXPECT_EQ(n.watchdog(), 0);
  EXPECT_EQ(n.reloading(), 0);
  EXPECT_EQ(n.stopping("x"), 0);
  EXPECT_TRUE(silent());
}

TEST_F(ServiceNotifierTest, NoWatchdogWhenMeantForAnotherProcess) {
  // WATCHDOG_PID names the main process; a child that inherited the
  // environment must not ping on its behalf.
  setenv("WATCHDOG_PID", std::to_string(getppid()).c_str(), 1);
  ServiceNotifier n;
  EXPECT_EQ(n.watchdog_timeout(), 0us);
  EXPECT_EQ(n.watchdog(), 0);
  EXPECT_TRUE(silent());
  EXPECT_EQ(n.ready("up"), 1) << "other notifications still go out";
  EXPECT_EQ(next(), "READY=1\nSTATUS=up");
}

TEST_F(ServiceNotifierTest, NoWatchdogWithoutWatchdogSec) {
  unsetenv("WATCHDOG_USEC");
  ServiceNotifier n;
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_timeout(), 0us);
  EXPECT_EQ(n.watchdog(), 0);
  EXPECT_TRUE(silent());
}

TEST_F(ServiceNotifierTest, WatchdogForAnyPidWhenWatchdogPidIsUnset) {
  unsetenv("WATCHDOG_PID");
  ServiceNotifier n;
  EXPECT_EQ(n.watchdog_timeout(), 4s);
}

TEST_F(ServiceNotifierTest, AnAbsentListenerIsAnErrorNotACrash) {
  const std::string gone = (listener_.dir() / "nobody.sock").string();
  setenv("NOTIFY_SOCKET", gone.c_str(), 1);
  ServiceNotifier n;
  EXPECT_LT(n.ready("x"), 0);
  EXPECT_LT(n.watchdog(), 0);
}

}  // namespace
}  // namespace rssaudit
