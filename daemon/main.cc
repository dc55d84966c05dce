// rssauditd: captures every RSS counter update and audits it per mm, on a
// Boost.Asio event loop that polls the ring buffer on a timer (the BPF side
// never wakes us: wake-ups cost 3.5 us per event, KERNEL.md).
#include <fmt/core.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <chrono>
#include <thread>

#include "daemon/audit_pipeline.h"
#include "daemon/bpf_capture.h"
#include "daemon/delta_reconstructor.h"
#include "daemon/summary_log.h"

namespace rssaudit {
namespace {

struct DaemonOptions {
  double duration_s = 0;  // 0: until SIGTERM/SIGINT
  uint32_t pid = 0;
  unsigned poll_ms = 10;
  double summary_s = 0;
  size_t top = 20;
};

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class Daemon {
 public:
  Daemon(const DaemonOptions& o, std::unique_ptr<BpfCapture> capture,
         const Topology& t)
      : o_(o),
        capture_(std::move(capture)),
        reconstructor_(
            ReconstructorOptions{capture_->possible_cpus(), t.upstream_batch}),
        pipeline_(t),
        poll_timer_(io_),
        summary_timer_(io_),
        stop_timer_(io_),
        stop_signals_(io_, SIGINT, SIGTERM),
        summary_signal_(io_, SIGUSR1) {}

  int run() {
    schedule_poll();
    wait_stop_signal();
    wait_summary_signal();
    if (o_.summary_s > 0) schedule_summary();
    if (o_.duration_s > 0) {
      stop_timer_.expires_after(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(o_.duration_s)));
      stop_timer_.async_wait([this](auto ec) {
        if (!ec) stop("duration reached");
      });
    }
    fmt::print(stderr, "rssauditd: capturing{}; SIGUSR1 prints a summary\n",
               o_.pid ? fmt::format(" pid {}", o_.pid) : "");
    io_.run();
    return 0;
  }

 private:
  void drain() {
    capture_->poll(
        [this](const rss_event& e) { reconstructor_.on_event(e, pipeline_); });
    reconstructor_.advance(monotonic_ns(), pipeline_);
  }
  void schedule_poll() {
    poll_timer_.expires_after(std::chrono::milliseconds(o_.poll_ms));
    poll_timer_.async_wait([this](auto ec) {
      if (ec) return;
      drain();
      schedule_poll();
    });
  }
  void schedule_summary() {
    summary_timer_.expires_after(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(o_.summary_s)));
    summary_timer_.async_wait([this](auto ec) {
      if (ec) return;
      log_summary();
      schedule_summary();
    });
  }
  void wait_stop_signal() {
    stop_signals_.async_wait([this](auto ec, int sig) {
      if (!ec) stop(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    });
  }
  void wait_summary_signal() {
    summary_signal_.async_wait([this](auto ec, int) {
      if (ec) return;
      log_summary();
      wait_summary_signal();
    });
  }
  void log_summary() {
    write_summary_log(stderr, pipeline_.summaries(), reconstructor_.stats(),
                      capture_->drops(), pipeline_, o_.top);
  }
  void stop(const char* why) {
    drain();
    reconstructor_.flush(pipeline_);
    fmt::print(stderr, "rssauditd: stopping ({})\n", why);
    log_summary();
    io_.stop();
  }

  DaemonOptions o_;
  std::unique_ptr<BpfCapture> capture_;
  DeltaReconstructor reconstructor_;
  AuditPipeline pipeline_;
  boost::asio::io_context io_;
  boost::asio::steady_timer poll_timer_, summary_timer_, stop_timer_;
  boost::asio::signal_set stop_signals_, summary_signal_;
};

}  // namespace
}  // namespace rssaudit

int main(int argc, char** argv) {
  using namespace rssaudit;
  DaemonOptions o;
  CLI::App app{"rssauditd: audits every RSS counter update of this host"};
  app.add_option("--duration", o.duration_s,
                 "Stop after this many seconds (default: until SIGTERM)");
  app.add_option("--pid", o.pid, "Audit only this process");
  app.add_option("--poll-ms", o.poll_ms, "Ring-buffer poll period")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--summary-interval", o.summary_s,
                 "Log a summary every this many seconds (0: off)");
  app.add_option("--top", o.top, "Processes listed in a summary")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  CaptureOptions co;
  co.target_tgid = o.pid;
  BpfCapture::OpenResult r = BpfCapture::open(co);
  if (!r.capture) {
    fmt::print(stderr, "rssauditd: cannot capture: {}\n", r.error);
    return 1;
  }
  const Topology t = Topology::for_cpus(std::thread::hardware_concurrency());
  Topology model = Topology::for_cpus(r.capture->possible_cpus());
  model.upstream_batch = t.upstream_batch;  // batch follows online CPUs
  return Daemon(o, std::move(r.capture), model).run();
}
