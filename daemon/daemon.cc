// The daemon polls the capture's streams on a timer: the BPF side never wakes
// it (wake-ups cost 3.5 us per event, KERNEL.md), and the period adapts to the
// rate (core/poll_pacing.h). Everything runs on one Boost.Asio thread, so no
// state here needs a lock.
#include "daemon/daemon.h"

// clang-format off
#include <utility>  // before Asio: Boost 1.74 uses std::exchange unincluded
// clang-format on

#include <fmt/core.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <chrono>

#include "core/openmetrics.h"
#include "core/poll_pacing.h"
#include "daemon/audit_pipeline.h"
#include "daemon/bpf_capture.h"
#include "daemon/control_server.h"
#include "daemon/daemon_options.h"
#include "daemon/delta_reconstructor.h"
#include "daemon/history_recorder.h"
#include "daemon/live_view_builder.h"
#include "daemon/metrics_server.h"
#include "daemon/mm_resync.h"
#include "daemon/recording.h"
#include "daemon/service_notifier.h"
#include "daemon/store.h"
#include "daemon/summary_log.h"

namespace rssaudit {
namespace {

int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

class Daemon {
 public:
  Daemon(std::vector<std::string> args, const DaemonOptions& o,
         std::unique_ptr<BpfCapture> capture, const RunInfo& run,
         const Topology& t, std::unique_ptr<Store> store)
      : args_(std::move(args)),
        o_(o),
        run_(run),
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
        watchdog_timer_(io_),
        stop_signals_(io_, SIGINT, SIGTERM),
        summary_signal_(io_, SIGUSR1),
        reload_signal_(io_, SIGHUP) {}

  int run() {
    if (!start_servers()) return 1;
    pipeline_.set_exit_hook([this](AuditPipeline::LiveMm& mm) {
      recorder_.on_exit(mm, wall_ns());
    });
    recorder_.set_exited_lookup(exited_lookup());
    every(
        poll_timer_, [this] { return double(next_poll_ns_) / 1e9; },
        [this] { drain(); });
    every(
        sample_timer_, [this] { return o_.sample_s; },
        [this] {
          drain();
          recorder_.sample(pipeline_, wall_ns());
          note_rate();
          notifier_.status(status_line());
        });
    every(
        flush_timer_, [this] { return o_.flush_s; }, [this] { flush_store(); });
    schedule_summaries();
    if (const auto ping = notifier_.watchdog_interval(); ping.count() > 0)
      every(
          watchdog_timer_, [ping] { return ping.count() / 1e6; },
          [this] { notifier_.watchdog(); });
    wait_stop_signal();
    wait_summary_signal();
    wait_reload_signal();
    if (o_.duration_s > 0) {
      stop_timer_.expires_after(seconds(o_.duration_s));
      stop_timer_.async_wait([this](auto ec) {
        if (!ec) stop("duration reached");
      });
    }
    fmt::print(stderr,
               "rssauditd: capturing{} into {}; SIGUSR1 prints a summary, "
               "SIGHUP reloads {}\n",
               o_.pid ? fmt::format(" pid {}", o_.pid) : "", store_->path(),
               o_.config);
    notifier_.ready(status_line());
    io_.run();
    return 0;
  }

 private:
  void drain() {
    // Before the poll reads the streams' heads (DeltaReconstructor::advance):
    // with the time after it, at 2 M records/s the reconstructor's queue grew
    // to a whole stream, and the daemon lost records.
    const uint64_t polled_ns = monotonic_ns();
    const int n = capture_->poll(
        [this](const rss_event& e) { reconstructor_.on_event(e, pipeline_); });
    if (n > 0) events_ += static_cast<uint64_t>(n);
    reconstructor_.on_drops(capture_->drops());
    reconstructor_.advance(polled_ns, pipeline_);
    const uint64_t now = monotonic_ns();
    next_poll_ns_ =
        next_poll_ns(pacing_, static_cast<uint64_t>(n), now - last_drain_ns_);
    last_drain_ns_ = now;
    resync_.run(reconstructor_, last_drain_ns_);
  }
  // The control socket and the metrics endpoint, as configured; false
  // (having said why) when one cannot serve.
  bool start_servers() {
    if (!o_.socket.empty() && o_.socket != "none") {
      ControlServerOptions co;
      co.path = o_.socket;
      co.group = o_.socket_group;
      control_ =
          std::make_unique<ControlServer>(io_, co, [this] { return view(); });
      if (std::string e = control_->start(); !e.empty()) {
        fmt::print(stderr, "rssauditd: control socket: {}\n", e);
        return false;
      }
    }
    if (!o_.metrics_listen.empty()) {
      const size_t colon = o_.metrics_listen.rfind(':');
      MetricsServerOptions mo;
      mo.address = o_.metrics_listen.substr(0, colon);
      mo.port = static_cast<uint16_t>(
          std::stoul(o_.metrics_listen.substr(colon + 1)));
      metrics_ =
          std::make_unique<MetricsServer>(io_, mo, [this](ExpositionFormat f) {
            return render_metrics(view(), metrics_options(), f);
          });
      if (std::string e = metrics_->start(); !e.empty()) {
        fmt::print(stderr, "rssauditd: metrics endpoint: {}\n", e);
        return false;
      }
      fmt::print(stderr, "rssauditd: serving metrics on {}:{}/metrics\n",
                 mo.address, metrics_->port());
    }
    return true;
  }
  MetricsOptions metrics_options() const {
    MetricsOptions m;
    m.group_by =
        o_.metrics_group_by == "cgroup" ? GroupBy::kCgroup : GroupBy::kComm;
    m.top_n = o_.metrics_top;
    m.version = RSSAUDIT_VERSION;
    return m;
  }
  // Events per second over the last sampling interval.
  void note_rate() {
    const uint64_t now = monotonic_ns();
    if (rate_since_ns_ != 0 && now > rate_since_ns_)
      events_per_s_ =
          double(events_ - rate_events_) * 1e9 / double(now - rate_since_ns_);
    rate_since_ns_ = now, rate_events_ = events_;
  }
  DaemonHealth health() const {
    DaemonHealth h;
    h.time_ns = wall_ns();
    h.uptime_s = double(monotonic_ns() - started_ns_) / 1e9;
    h.host = run_.host;
    h.kernel_release = run_.kernel_release;
    h.nr_cpus = run_.nr_cpus;
    h.batch = run_.batch;
    h.page_size = run_.page_size;
    h.events = events_;
    h.events_per_s = events_per_s_;
    h.drops = capture_->drops();
    h.ambiguous = reconstructor_.stats().ambiguous;
    h.lag_s = double(monotonic_ns() - last_drain_ns_) / 1e9;
    h.bpf_ns_per_event = capture_->bpf_ns_per_event();
    h.fidelity_checked = pipeline_.fidelity_checked();
    h.fidelity_matched = pipeline_.fidelity_matched();
    h.live_mms = pipeline_.live_mms();
    h.store_error = last_store_error_;
    return h;
  }
  LiveView view() {
    return build_live_view(
        pipeline_, health(),
        [this](uint64_t mm, uint32_t tgid) -> std::optional<ProcessLabels> {
          if (const RecordedIdentity* id = recorder_.identity(mm))
            return ProcessLabels{id->start_ticks, id->comm, id->cgroup};
          // Not recorded (filtered out, or not sampled yet): /proc.
          const IdentityResult who = sampler_.identify(tgid);
          if (!who.stat) return std::nullopt;
          ProcessLabels l{who.stat->start_time, who.stat->comm, {}};
          if (who.cgroup && who.cgroup->v2_path)
            l.cgroup = *who.cgroup->v2_path;
          return l;
        });
  }
  std::string status_line() const {
    return fmt::format(
        "{:.0f} events/s, {} processes audited, {} drops{}", events_per_s_,
        pipeline_.live_mms(), capture_->drops(),
        last_store_error_.empty() ? "" : ", history not written");
  }
  // Runs `fn` every `period_s()` seconds until the loop stops; the period
  // is read each time, so a reload changes it from the next tick.
  template <class Period, class Fn>
  void every(boost::asio::steady_timer& timer, Period period_s, Fn fn) {
    timer.expires_after(seconds(period_s()));
    timer.async_wait([this, &timer, period_s, fn](auto ec) {
      if (ec) return;
      fn();
      every(timer, period_s, fn);
    });
  }
  void schedule_summaries() {
    summary_timer_.cancel();
    if (o_.summary_s > 0)
      every(
          summary_timer_, [this] { return o_.summary_s; },
          [this] { log_summary(); });
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
  void wait_reload_signal() {
    reload_signal_.async_wait([this](auto ec, int) {
      if (ec) return;
      reload();
      wait_reload_signal();
    });
  }
  // Loads the config file again with the original flags. A bad file keeps
  // the running configuration whole; settings read only at start are kept
  // and named.
  void reload() {
    notifier_.reloading();
    LoadedOptions loaded = load_daemon_options(args_);
    if (!loaded.options) {
      fmt::print(stderr,
                 "rssauditd: reload failed, configuration unchanged: {}\n",
                 loaded.error);
      notifier_.ready(status_line());
      return;
    }
    DaemonOptions next = *loaded.options;
    const std::vector<std::string> kept = keep_restart_only(o_, next);
    for (const std::string& key : kept)
      fmt::print(stderr, "rssauditd: '{}' changes at the next start only\n",
                 key);
    const bool summaries_changed = next.summary_s != o_.summary_s;
    o_ = std::move(next);
    sampler_.set_policy(walk_policy(o_));
    recorder_.set_options(o_.recorder);
    if (summaries_changed) schedule_summaries();
    fmt::print(stderr, "rssauditd: configuration reloaded from {}\n",
               o_.config);
    notifier_.ready(status_line());
  }
  void log_summary() {
    write_summary_log(stderr, pipeline_.summaries(), reconstructor_.stats(),
                      capture_->drops(), pipeline_, recorder_.stats(), o_.top,
                      exited_lookup());
  }
  ExitedLookup exited_lookup() {
    return [this](uint32_t tgid) { return capture_->exited(tgid); };
  }
  void stop(const char* why) {
    notifier_.stopping(fmt::format("stopping ({})", why));
    if (control_) control_->stop();
    if (metrics_) metrics_->stop();
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
  const std::vector<std::string> args_;
  DaemonOptions o_;
  const RunInfo run_;
  const uint64_t started_ns_ = monotonic_ns();
  std::unique_ptr<BpfCapture> capture_;
  DeltaReconstructor reconstructor_;
  AuditPipeline pipeline_;
  std::unique_ptr<Store> store_;
  ProcessSampler sampler_;
  HistoryRecorder recorder_;
  MmResync resync_{
      MmResyncOptions{.page_size = uint64_t(sysconf(_SC_PAGESIZE))}};
  uint64_t drops_ = 0, unreadable_ = 0, ambiguous_ = 0, flushes_ = 0;
  std::string last_store_error_;
  uint64_t events_ = 0, last_drain_ns_ = started_ns_;
  // poll-ms changes at the next start only: fixed for the run.
  const PollPacing pacing_{1'000'000, uint64_t{o_.poll_ms} * 1'000'000,
                           capture_->stream_records() / 4};
  uint64_t next_poll_ns_ = pacing_.max_ns;
  uint64_t rate_since_ns_ = 0, rate_events_ = 0;
  double events_per_s_ = 0;
  ServiceNotifier notifier_;
  boost::asio::io_context io_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<MetricsServer> metrics_;
  boost::asio::steady_timer poll_timer_, summary_timer_, stop_timer_,
      sample_timer_, flush_timer_, watchdog_timer_;
  boost::asio::signal_set stop_signals_, summary_signal_, reload_signal_;
};

}  // namespace

int run_daemon(const std::vector<std::string>& args) {
  LoadedOptions loaded = load_daemon_options(args);
  if (!loaded.options) {
    if (loaded.exit_code == 1)
      fmt::print(stderr, "rssauditd: {}\n", loaded.error);
    return loaded.exit_code;  // CLI11 printed usage errors and --help
  }
  const DaemonOptions& o = *loaded.options;
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
  return Daemon(args, o, std::move(r.capture), run, model, std::move(db)).run();
}

}  // namespace rssaudit
