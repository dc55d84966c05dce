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
#include "daemon/history_recorder.h"
#include "daemon/recording.h"
#include "daemon/store.h"
#include "daemon/summary_log.h"

namespace rssaudit {
namespace {

struct DaemonOptions {
  double duration_s = 0;  // 0: until SIGTERM/SIGINT
  uint32_t pid = 0;
  unsigned poll_ms = 10;
  double summary_s = 0;
  size_t top = 20;
  std::string db = "rssaudit.db";
  double sample_s = 1;
  double flush_s = 5;
  RecorderOptions recorder;
  std::vector<std::string> walk;  // "all" or pids
  double walk_interval_s = 60;
  uint64_t walk_min_rss_pages = 0;
  double retention_days = 30;
  double retention_mib = 0;
};

int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

WalkPolicy walk_policy(const DaemonOptions& o) {
  WalkPolicy p;
  for (const std::string& w : o.walk) {
    if (w == "all")
      p.all = true;
    else
      p.pids.insert(static_cast<uint32_t>(std::stoul(w)));
  }
  p.min_interval_ns = static_cast<uint64_t>(o.walk_interval_s * 1e9);
  p.min_rss_pages = o.walk_min_rss_pages;
  return p;
}

class Daemon {
 public:
  Daemon(const DaemonOptions& o, std::unique_ptr<BpfCapture> capture,
         const Topology& t, std::unique_ptr<Store> store)
      : o_(o),
        capture_(std::move(capture)),
        reconstructor_(
            ReconstructorOptions{capture_->possible_cpus(), t.upstream_batch}),
        pipeline_(t),
        store_(std::move(store)),
        sampler_(walk_policy(o)),
        recorder_(*store_, sampler_, o.recorder, sysconf(_SC_PAGESIZE)),
        poll_timer_(io_),
        summary_timer_(io_),
        stop_timer_(io_),
        sample_timer_(io_),
        flush_timer_(io_),
        stop_signals_(io_, SIGINT, SIGTERM),
        summary_signal_(io_, SIGUSR1) {}

  int run() {
    pipeline_.set_exit_hook([this](AuditPipeline::LiveMm& mm) {
      recorder_.on_exit(mm, wall_ns());
    });
    every(poll_timer_, o_.poll_ms / 1000.0, [this] { drain(); });
    every(sample_timer_, o_.sample_s, [this] {
      drain();
      recorder_.sample(pipeline_, wall_ns());
    });
    every(flush_timer_, o_.flush_s, [this] { flush_store(); });
    if (o_.summary_s > 0)
      every(summary_timer_, o_.summary_s, [this] { log_summary(); });
    wait_stop_signal();
    wait_summary_signal();
    if (o_.duration_s > 0) {
      stop_timer_.expires_after(seconds(o_.duration_s));
      stop_timer_.async_wait([this](auto ec) {
        if (!ec) stop("duration reached");
      });
    }
    fmt::print(stderr,
               "rssauditd: capturing{} into {}; SIGUSR1 prints a summary\n",
               o_.pid ? fmt::format(" pid {}", o_.pid) : "", store_->path());
    io_.run();
    return 0;
  }

 private:
  void drain() {
    capture_->poll(
        [this](const rss_event& e) { reconstructor_.on_event(e, pipeline_); });
    reconstructor_.advance(monotonic_ns(), pipeline_);
  }
  // Runs `fn` every `period_s` seconds until the loop stops.
  template <class Fn>
  void every(boost::asio::steady_timer& timer, double period_s, Fn fn) {
    timer.expires_after(seconds(period_s));
    timer.async_wait([this, &timer, period_s, fn](auto ec) {
      if (ec) return;
      fn();
      every(timer, period_s, fn);
    });
  }
  // Writes the batch and what was lost since the last flush. A failing
  // store is reported once per kind of failure; auditing goes on and the
  // batch is kept for the next flush.
  void flush_store() {
    const uint64_t drops = capture_->drops();
    uint64_t unreadable = 0;
    for (uint64_t n : sampler_.stats().read_failures) unreadable += n;
    const uint64_t ambiguous = reconstructor_.stats().ambiguous;
    if (drops != drops_ || unreadable != unreadable_ ||
        ambiguous != ambiguous_) {
      store_->add_loss(LossRow{wall_ns(), drops - drops_,
                               unreadable - unreadable_,
                               ambiguous - ambiguous_});
      drops_ = drops, unreadable_ = unreadable, ambiguous_ = ambiguous;
    }
    const StoreStatus s = store_->flush();
    if (!s.ok() && s.message != last_store_error_)
      fmt::print(stderr, "rssauditd: history not written, kept in memory: {}\n",
                 s.message);
    else if (s.ok() && !last_store_error_.empty())
      fmt::print(stderr, "rssauditd: history written again\n");
    last_store_error_ = s.ok() ? "" : s.message;
    if (s.ok() && flushes_++ % kFlushesPerRetention == 0) apply_retention();
  }
  void apply_retention() {
    RetentionPolicy p;
    p.max_age = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(o_.retention_days * 86400));
    p.max_bytes = static_cast<uint64_t>(o_.retention_mib * (1 << 20));
    if (const StoreStatus s = store_->apply_retention(p, wall_ns()); !s.ok())
      fmt::print(stderr, "rssauditd: retention: {}\n", s.message);
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
    recorder_.sample(pipeline_, wall_ns());
    reconstructor_.flush(pipeline_);
    fmt::print(stderr, "rssauditd: stopping ({})\n", why);
    log_summary();
    store_->end_run(wall_ns());
    flush_store();
    io_.stop();
  }

  static constexpr uint64_t kFlushesPerRetention = 720;
  DaemonOptions o_;
  std::unique_ptr<BpfCapture> capture_;
  DeltaReconstructor reconstructor_;
  AuditPipeline pipeline_;
  std::unique_ptr<Store> store_;
  ProcessSampler sampler_;
  HistoryRecorder recorder_;
  uint64_t drops_ = 0, unreadable_ = 0, ambiguous_ = 0, flushes_ = 0;
  std::string last_store_error_;
  boost::asio::io_context io_;
  boost::asio::steady_timer poll_timer_, summary_timer_, stop_timer_,
      sample_timer_, flush_timer_;
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
  app.add_option("--db", o.db, "History database (SQLite)")
      ->capture_default_str();
  app.add_option("--sample-interval", o.sample_s,
                 "Seconds between /proc samples of audited processes")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--flush-interval", o.flush_s,
                 "Seconds between database transactions")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--comm", o.recorder.comm, "Record only processes named so");
  app.add_option("--min-rss", o.recorder.min_rss_pages,
                 "Record only processes with at least this many pages");
  app.add_option("--walk", o.walk,
                 "Page-table walks (smaps_rollup, pagemap): 'all' or PIDs")
      ->delimiter(',');
  app.add_option("--walk-interval", o.walk_interval_s,
                 "Minimum seconds between walks of one process")
      ->capture_default_str();
  app.add_option("--walk-min-rss", o.walk_min_rss_pages,
                 "Walk only processes with at least this many pages");
  app.add_option("--retention-days", o.retention_days,
                 "Delete history older than this (0: keep)")
      ->capture_default_str();
  app.add_option("--retention-mib", o.retention_mib,
                 "Keep the history under this size (0: no limit)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  for (const std::string& w : o.walk) {
    if (w != "all" && w.find_first_not_of("0123456789") != std::string::npos) {
      fmt::print(stderr, "rssauditd: --walk takes 'all' or PIDs, got '{}'\n",
                 w);
      return 2;
    }
  }
  auto store = Store::open(o.db, StoreOptions{});
  if (!store.ok()) {
    fmt::print(stderr, "rssauditd: {}\n", store.status.message);
    return 1;
  }
  CaptureOptions co;
  co.target_tgid = o.pid;
  BpfCapture::OpenResult r = BpfCapture::open(co);
  if (!r.capture) {
    fmt::print(stderr, "rssauditd: cannot capture: {}\n", r.error);
    return 1;
  }
  const RecordHeader host = host_record_header(r.capture->possible_cpus());
  Topology model = topology_of(host);
  RunInfo run;
  run.host = host.host_name;
  run.kernel_release = host.kernel_release;
  run.nr_cpus = host.online_cpus;
  run.batch = host.percpu_batch;
  run.page_size = host.page_size;
  run.rssaudit_version = RSSAUDIT_VERSION;
  run.started_ns = wall_ns();
  std::unique_ptr<Store> db = std::move(store.value);
  db->begin_run(run);
  return Daemon(o, std::move(r.capture), model, std::move(db)).run();
}
