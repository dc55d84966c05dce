// Tells the service manager (systemd, Type=notify) how rssauditd is doing:
// ready, a one-line status, watchdog pings, reloading, stopping. A thin
// layer over libsystemd's sd_notify, so the protocol details (abstract
// sockets, credentials) stay libsystemd's. Outside a Type=notify service
// NOTIFY_SOCKET is unset and every call is a no-op, so the daemon calls it
// unconditionally.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace rssaudit {

class ServiceNotifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID once: the daemon
  // constructs one notifier at start, before any thread exists.
  ServiceNotifier();

  // A service manager listens (NOTIFY_SOCKET is set).
  bool enabled() const { return enabled_; }

  // The manager's watchdog timeout for this process (WatchdogSec=), zero
  // when there is none or it is meant for another process (WATCHDOG_PID).
  std::chrono::microseconds watchdog_timeout() const {
    return watchdog_timeout_;
  }
  // How often to call watchdog(): half the timeout, as sd_watchdog_enabled(3)
  // advises, so one late timer tick does not get the daemon killed. Zero:
  // no pings wanted.
  std::chrono::microseconds watchdog_interval() const {
    return watchdog_timeout_ / 2;
  }

  // Each call returns what sd_notify does: 1 sent, 0 no manager listening,
  // a negative errno when sending failed (worth one log line; the service
  // goes on).

  // READY=1 with STATUS=: capture attached and the database open. Also
  // ends a reload (after reloading()).
  int ready(std::string_view status);
  // STATUS=: one line for `systemctl status`.
  int status(std::string_view text);
  // WATCHDOG=1: the event loop still turns.
  int watchdog();
  // RELOADING=1 with MONOTONIC_USEC= (systemd 253+ wants the timestamp to
  // tell this reload from an earlier one; older versions ignore it). Follow
  // with ready() once the configuration is applied.
  int reloading();
  // STOPPING=1, with STATUS= when `status` is not empty: shutdown started.
  int stopping(std::string_view status = {});

  // STATUS= text as sent: a newline would start a new assignment in the
  // datagram, so line breaks become spaces.
  static std::string status_line(std::string_view text);

 private:
  int send(const std::string& state);

  bool enabled_ = false;
  std::chrono::microseconds watchdog_timeout_{0};
};

}  // namespace rssaudit
