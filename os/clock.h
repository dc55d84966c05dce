// The two clocks rssaudit reads, and the one conversion from seconds given
// on a command line or in the config file.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace rssaudit {

// CLOCK_MONOTONIC in ns: the clock of BPF's bpf_ktime_get_ns(), of the
// sampler's stamps and of systemd's MONOTONIC_USEC.
inline uint64_t monotonic_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// CLOCK_REALTIME in ns since the Unix epoch: the time of the history.
inline int64_t realtime_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A realtime_ns() value as local "YYYY-MM-DD HH:MM:SS", for people.
inline std::string local_time_text(int64_t ns) {
  const time_t t = static_cast<time_t>(ns / 1'000'000'000);
  struct tm tm = {};
  ::localtime_r(&t, &tm);
  char text[32];
  ::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

// `s` seconds as a steady_clock duration, for timers and deadlines.
inline std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace rssaudit
