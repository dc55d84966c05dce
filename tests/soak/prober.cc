// The soak test's prober (README.md): a long-lived client timing the
// daemon's answers, as a monitoring agent or Prometheus holds one, so that
// the figures are the daemon's and not the cost of starting a process on a
// saturated host (run.sh times `rssaudit status` too, start included).
//
//   soak_prober SOCKET PORT PERIOD_MS STATUS_OUT SCRAPE_OUT STOP_FILE
//
// Two threads, each until STOP_FILE exists: one asks the control socket for
// health (the request `rssaudit status` sends), one GETs /metrics over a
// new connection; each appends "START END RC" (wall-clock seconds, RC 0 for
// an answer, 1 for a failure or none within 10 s) to its file, then sleeps
// PERIOD_MS.
#include <fmt/core.h>
#include <sys/stat.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "cli/daemon_client.h"
#include "tests/daemon/http_test_client.h"

namespace {

using Clock = std::chrono::system_clock;
constexpr std::chrono::seconds kDeadline{10};  // run.sh's `timeout 10`

double now_s() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Runs `probe` every `period` until `stop` exists, a line per probe to
// `out` (flushed: run.sh reads the file after killing the prober).
void probe_loop(const std::function<bool()>& probe, const std::string& out,
                std::chrono::milliseconds period, const std::string& stop) {
  std::FILE* f = std::fopen(out.c_str(), "a");
  if (!f) {
    std::perror(out.c_str());
    std::exit(2);
  }
  while (!exists(stop)) {
    const double start = now_s();
    bool ok = false;
    try {
      ok = probe();
    } catch (const std::exception&) {
      ok = false;
    }
    fmt::print(f, "{:.6f} {:.6f} {}\n", start, now_s(), ok ? 0 : 1);
    std::fflush(f);
    std::this_thread::sleep_for(period);
  }
  std::fclose(f);
}

int number(std::string_view text, const char* name) {
  int value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value <= 0) {
    fmt::print(stderr, "soak_prober: {} '{}' is not a positive number\n", name,
               text);
    std::exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rssaudit;
  if (argc != 7) {
    std::fputs(
        "usage: soak_prober SOCKET PORT PERIOD_MS STATUS_OUT SCRAPE_OUT "
        "STOP_FILE\n",
        stderr);
    return 2;
  }
  const std::string socket = argv[1];
  const auto port = static_cast<uint16_t>(number(argv[2], "PORT"));
  const std::chrono::milliseconds period(number(argv[3], "PERIOD_MS"));
  const std::string stop = argv[6];
  std::thread status([&] {
    probe_loop(
        [&] {
          cli::ask_daemon(socket, Request{HealthRequest{}, {}}, kDeadline);
          return true;
        },
        argv[4], period, stop);
  });
  std::thread scrape([&] {
    probe_loop(
        [&] {
          const testing::HttpResult r = testing::http_request(
              port, testing::http::verb::get, "/metrics", "", "", kDeadline);
          return !r.ec && r.response.result_int() == 200 &&
                 r.response.body().find("rssaudit_events_total") !=
                     std::string::npos;
        },
        argv[5], period, stop);
  });
  status.join();
  scrape.join();
  return 0;
}
