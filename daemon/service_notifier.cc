#include "daemon/service_notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "os/clock.h"

namespace rssaudit {

ServiceNotifier::ServiceNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  // Without a socket nobody would receive the pings, so no watchdog either.
  // The environment is kept (unset_environment = 0): a reload or a second
  // notifier must still find it.
  uint64_t usec = 0;
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0)
    watchdog_timeout_ = std::chrono::microseconds(usec);
}

std::string ServiceNotifier::status_line(std::string_view text) {
  std::string line(text);
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  return line;
}

int ServiceNotifier::ready(std::string_view status) {
  return send("READY=1\nSTATUS=" + status_line(status));
}

int ServiceNotifier::status(std::string_view text) {
  return send("STATUS=" + status_line(text));
}

int ServiceNotifier::watchdog() {
  if (watchdog_timeout_.count() == 0) return 0;
  return send("WATCHDOG=1");
}

int ServiceNotifier::reloading() {
  // CLOCK_MONOTONIC, the clock systemd compares MONOTONIC_USEC against.
  const uint64_t usec = monotonic_ns() / 1'000;
  return send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

int ServiceNotifier::stopping(std::string_view status) {
  std::string state = "STOPPING=1";
  if (!status.empty()) state += "\nSTATUS=" + status_line(status);
  return send(state);
}

int ServiceNotifier::send(const std::string& state) {
  if (!enabled_) return 0;
  return sd_notify(0, state.c_str());
}

}  // namespace rssaudit
