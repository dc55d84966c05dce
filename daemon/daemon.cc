// The daemon polls the capture's streams on a timer: the BPF side never wakes
// it (wake-ups cost 3.5 us per event, docs/kernel.md); the period adapts to the
// rate (audit/poll_pacing.h). Everything runs on one Boost.Asio thread, so no
// state here needs a lock (a drain thread of the streams, when one runs,
// hands its records over through LiveAudit's lock-free queue alone); the
// long work (drains, sampling slices, history pieces) runs a piece at a
// time between the handlers (BackgroundWork), so that queries, scrapes and
// signals never wait behind a queue of it.
#include "daemon/daemon.h"

// clang-format off
#include <utility>  // before Asio: Boost 1.74 uses std::exchange unincluded
// clang-format on

#include <fmt/core.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>

#include "audit/audit_pipeline.h"
#include "capture/bpf_capture.h"
#include "capture/live_audit.h"
#include "capture/recording.h"
#include "core/formats/openmetrics.h"
#include "core/procfs/proc_mountinfo.h"
#include "daemon/background_work.h"
#include "daemon/control_server.h"
#include "daemon/daemon_options.h"
#include "daemon/history_recorder.h"
#include "daemon/live_view_builder.h"
#include "daemon/loop_delay.h"
#include "daemon/metrics_server.h"
#include "daemon/proc_labels.h"
#include "daemon/sampling_progress.h"
#include "daemon/service_notifier.h"
#include "daemon/summary_log.h"
#include "os/clock.h"
#include "sampler/reader_probe.h"
#include "store/growth_rate.h"
#include "store/store.h"

namespace rssaudit {
namespace {

// procfs_hidepid() of this process's mounts; nothing when unreadable.
std::optional<std::string> procfs_hidepid_here() {
  std::ifstream in("/proc/self/mountinfo");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  return procfs_hidepid(text);
}

class Daemon {
 public:
  Daemon(std::vector<std::string> args, const DaemonOptions& options,
         std::unique_ptr<BpfCapture> capture, const RunInfo& run,
         const Topology& t, std::unique_ptr<Store> store)
      : args_(std::move(args)),
        options_(options),
        run_(run),
        // poll-ms changes at the next start only: fixed for the run.
        live_(std::move(capture), t.upstream_batch,
              uint64_t{options.poll_ms} * 1'000'000,
              options.consumer_threads),
        pipeline_(t),
        store_(std::move(store)),
        sampler_(walk_policy(options)),
        recorder_(*store_, sampler_, recorder_options(options), run.page_size,
                  run.status_precise.value_or(false),
                  kernel_rss_bound(run.counting, run.nr_cpus, run.batch)),
        poll_timer_(io_),
        // Its own copy of the fd: the descriptor closes what it holds.
        doorbell_(io_, dup(live_.doorbell().fd())),
        summary_timer_(io_),
        stop_timer_(io_),
        sample_timer_(io_),
        flush_timer_(io_),
        watchdog_timer_(io_),
        probe_timer_(io_),
        stop_signals_(io_, SIGINT, SIGTERM),
        summary_signal_(io_, SIGUSR1),
        reload_signal_(io_, SIGHUP) {}

  int run() {
    if (!start_servers()) return 1;
    pipeline_.set_exit_hook([this](AuditPipeline::LiveMm& mm) {
      recorder_.on_exit(mm, realtime_ns());
    });
    recorder_.set_exited_lookup(exited_lookup());
    schedule_drain();
    watch_doorbell();
    every(
        sample_timer_, [this] { return options_.sample_s; },
        [this] {
          background_.post("tick", [this] {
            if (recorder_.tick_open()) return;  // the previous one goes on
            note_sampling_progress();
            drain();
            proc_labels_.begin_tick();
            recorder_.begin_tick(pipeline_, realtime_ns());
            post_slice();
          });
        });
    every(
        flush_timer_, [this] { return options_.flush_s; },
        [this] { background_.post("flush", [this] { flush_store(); }); });
    schedule_summaries();
    probe_loop();
    if (const auto ping = notifier_.watchdog_interval(); ping.count() > 0)
      every(
          watchdog_timer_, [ping] { return ping.count() / 1e6; },
          [this] { notifier_.watchdog(); });
    wait_stop_signal();
    wait_summary_signal();
    wait_reload_signal();
    if (options_.duration_s > 0) {
      stop_timer_.expires_after(seconds(options_.duration_s));
      stop_timer_.async_wait([this](auto ec) {
        if (!ec) stop("duration reached");
      });
    }
    for (const DiedRun& r : store_->died_runs())
      fmt::print(stderr,
                 "rssauditd: run {} (started {}) did not stop cleanly: its "
                 "rssauditd was killed, crashed or lost its host after its "
                 "last heartbeat at {}; marked died there (rows of at most "
                 "one flush interval before it, and each process's open "
                 "model-error interval, were not written)\n",
                 r.id, local_time_text(r.started_ns),
                 local_time_text(r.stopped_ns));
    fmt::print(stderr,
               "rssauditd: capturing{} into {}; SIGUSR1 prints a summary, "
               "SIGHUP reloads {}\n",
               options_.pid ? fmt::format(" pid {}", options_.pid) : "",
               store_->path(), options_.config);
    notifier_.ready(status_line());
    run_with_background(io_, background_);
    return exit_code_;
  }

 private:
  void drain() { live_.drain(pipeline_); }
  // The paced drain, timed from when the last one ran, with the sleep it
  // advised: a timer re-armed when it fired read the advice of the drain
  // before, which while behind was 0, and fired again and again until the
  // posted drain ran (64 times per turn of the loop: ~11 000 timer
  // syscalls a second at 2 M records/s, half the daemon's CPU in a PVM
  // guest). Behind, the next slice is queued at once, after the ready
  // handlers, with no timer.
  void schedule_drain() {
    const uint64_t sleep_ns = live_.next_poll_ns();
    if (sleep_ns == 0) {
      post_drain();
      return;
    }
    poll_timer_.expires_after(std::chrono::nanoseconds(sleep_ns));
    poll_timer_.async_wait([this](auto ec) {
      if (!ec && !drain_posted_) post_drain();
    });
  }
  void post_drain() {
    drain_posted_ = true;
    background_.post("drain", [this] {
      drain_posted_ = false;
      drain();
      flush_if_backlog_high();
      schedule_drain();
    });
  }
  // A stream a quarter full drains at once, whatever sleep the last rate
  // advised (bpf/capture.bpf.h `doorbell`): so a burst after a quiet spell
  // fills no stream, however small. Once a drain thread runs, it answers.
  void watch_doorbell() {
    doorbell_.async_wait(
        boost::asio::posix::stream_descriptor::wait_read, [this](auto ec) {
          if (ec || live_.consumer_threads() == 2) return;
          live_.doorbell().answer();
          if (!drain_posted_) {
            poll_timer_.cancel();
            post_drain();
          }
          watch_doorbell();
        });
  }
  // The control socket and the metrics endpoint, as configured; false
  // (having said why) when one cannot serve.
  bool start_servers() {
    if (!options_.socket.empty() && options_.socket != "none") {
      ControlServerOptions co;
      co.path = options_.socket;
      co.group = options_.socket_group;
      control_ = std::make_unique<ControlServer>(
          io_, co, [this](const LabelScope& scope) { return view(scope); });
      if (Result<void> started = control_->start(); !started) {
        fmt::print(stderr, "rssauditd: control socket: {}\n",
                   started.error().message);
        return false;
      }
    }
    if (!options_.metrics_listen.empty()) {
      const size_t colon = options_.metrics_listen.rfind(':');
      MetricsServerOptions mo;
      mo.address = options_.metrics_listen.substr(0, colon);
      mo.port = static_cast<uint16_t>(
          std::stoul(options_.metrics_listen.substr(colon + 1)));
      metrics_ = std::make_unique<MetricsServer>(
          io_, mo,
          [this](ExpositionFormat f) {
            // Grouped by comm or cgroup: every process labelled.
            return render_metrics(view(LabelScope{}), metrics_options(), f);
          },
          [this] { return unhealthy(); });
      if (Result<void> started = metrics_->start(); !started) {
        fmt::print(stderr, "rssauditd: metrics endpoint: {}\n",
                   started.error().message);
        return false;
      }
      fmt::print(stderr, "rssauditd: serving metrics on {}:{}/metrics\n",
                 mo.address, metrics_->port());
      if (hidepid_)
        fmt::print(stderr,
                   "rssauditd: /proc is mounted hidepid={}: the metrics {}\n",
                   *hidepid_,
                   options_.metrics_names_under_hidepid
                       ? "name processes and groups anyway "
                         "(metrics-names-under-hidepid)"
                       : "name no process or group (anyone who reaches "
                         "the port would read what procfs hides); "
                         "metrics-names-under-hidepid names them");
    }
    return true;
  }
  MetricsOptions metrics_options() const {
    MetricsOptions m;
    m.group_by = options_.metrics_group_by == "cgroup" ? GroupBy::kCgroup
                                                       : GroupBy::kComm;
    m.top_n = options_.metrics_top;
    m.process_series = options_.metrics_processes;
    if (hidepid_ && !options_.metrics_names_under_hidepid) {
      m.top_n = 0;  // every group folded into one, "other"
      m.process_series = 0;
    }
    m.version = RSSAUDIT_VERSION;
    return m;
  }
  // Events per second over the last sampling interval.
  void note_rate() {
    const uint64_t now = monotonic_ns();
    if (rate_since_ns_ != 0 && now > rate_since_ns_)
      events_per_s_ = double(live_.events() - rate_events_) * 1e9 /
                      double(now - rate_since_ns_);
    rate_since_ns_ = now, rate_events_ = live_.events();
  }
  // Why /healthz answers 503, or empty: the capture is drained on time.
  // (A failing history is reported by rssaudit_store_ok: the audit goes on.)
  std::string unhealthy() const {
    constexpr double kStaleS = 10;
    const double behind = lag_s();
    if (behind <= kStaleS) return {};
    return fmt::format("capture behind by {:.1f} s", behind);
  }
  // How far the audit is behind the kernel (LiveAudit::lag_ns()).
  double lag_s() const { return double(live_.lag_ns(monotonic_ns())) / 1e9; }

  DaemonHealth health() const {
    DaemonHealth h;
    h.time_ns = realtime_ns();
    h.uptime_s = double(monotonic_ns() - started_ns_) / 1e9;
    h.host = run_.host;
    h.kernel_release = run_.kernel_release;
    h.nr_cpus = run_.nr_cpus;
    h.batch = run_.batch;
    h.counting = run_.counting;
    h.status_precise = run_.status_precise;
    h.page_size = run_.page_size;
    h.events = live_.events();
    h.events_per_s = events_per_s_;
    h.drops = live_.capture().losses();
    h.ambiguous = live_.stats().ambiguous;
    h.lag_s = lag_s();
    h.losses = live_.stats().losses;
    h.loop_delay_s = double(loop_delay_.last_minute_ns(monotonic_ns())) / 1e9;
    h.bpf_ns_per_event = live_.capture().bpf_ns_per_event();
    h.fidelity_checked = pipeline_.fidelity_checked();
    h.fidelity_matched = pipeline_.fidelity_matched();
    h.live_mms = pipeline_.live_mms();
    const auto& unknown = recorder_.stats().drift_unknown;
    h.drift_unknown_moving =
        unknown[static_cast<size_t>(DriftUnknown::kMoving)];
    h.drift_unknown_exiting =
        unknown[static_cast<size_t>(DriftUnknown::kExiting)];
    h.drift_beyond_bound =
        unknown[static_cast<size_t>(DriftUnknown::kBeyondBound)];
    h.store_error = last_store_error_;
    h.store_dropped_rows = store_->dropped_rows();
    h.store_pending_rows = store_->pending_rows();
    h.store_file_bytes = store_->file_bytes();
    h.store_used_bytes = store_->used_bytes();
    h.store_cap_bytes = retention().max_bytes;
    h.store_growth_bytes_per_s = growth_.bytes_per_s();
    h.sampling_gaps = sampling_gaps_;
    return h;
  }
  LiveView view(const LabelScope& scope) {
    proc_labels_.begin_view();
    return build_live_view(
        pipeline_, health(),
        [this](uint64_t mm, uint32_t tgid) -> std::optional<ProcessLabels> {
          if (const RecordedIdentity* id = recorder_.identity(mm))
            return ProcessLabels{id->start_ticks, id->comm, id->cgroup};
          // Not recorded (filtered out, or not sampled yet): /proc.
          return proc_labels_.lookup(
              mm, tgid, [this](uint32_t pid) -> std::optional<ProcessLabels> {
                const IdentityResult who = sampler_.identify(pid);
                if (!who.stat) return std::nullopt;
                ProcessLabels l{who.stat->start_time, who.stat->comm, {}};
                if (who.cgroup && who.cgroup->v2_path)
                  l.cgroup = *who.cgroup->v2_path;
                return l;
              });
        },
        [this](int64_t bound) { return recorder_.quiet_processes(bound); },
        scope);
  }
  std::string status_line() const {
    const uint64_t dropped = store_->dropped_rows();
    const double behind = lag_s();
    return fmt::format(
        "{:.0f} events/s, {} processes audited, {} drops{}{}{}", events_per_s_,
        pipeline_.live_mms(), live_.capture().drops(),
        behind > 1 ? fmt::format(", behind by {:.0f} s", behind) : "",
        last_store_error_.empty() ? "" : ", history not written",
        dropped ? fmt::format(", {} history rows dropped", dropped) : "");
  }
  // A step of sampling (a tick begun, a slice begun or done): a stop or
  // stall of the daemon since the last step, over twice the interval and a
  // second (SamplingProgress), is recorded as a sampling gap.
  void note_sampling_progress() {
    const std::optional<SamplingGap> gap =
        progress_.step(monotonic_ns(), realtime_ns(),
                       sampling_gap_threshold_ns(options_.sample_s));
    if (!gap) return;
    ++sampling_gaps_;
    store_->add_sampling_gap(*gap);
    fmt::print(stderr,
               "rssauditd: no sample from {} to {} ({:.1f} s): the daemon "
               "was stopped or stalled; recorded as a sampling gap\n",
               local_time_text(gap->start_ns), local_time_text(gap->end_ns),
               double(gap->end_ns - gap->start_ns) / 1e9);
  }
  // One slice of the open sampling tick, at most kSampleSliceNs of /proc
  // reads, each after whatever the loop has to answer. A slice drains
  // first, so its samples pair /proc with the capture of the same moment.
  void post_slice() {
    background_.post("slice", [this] { sample_slice(); });
  }
  void sample_slice() {
    note_sampling_progress();
    drain();
    const uint64_t until = monotonic_ns() + kSampleSliceNs;
    const bool done = recorder_.continue_tick(pipeline_, realtime_ns(), until);
    note_sampling_progress();
    if (!done) return post_slice();
    const uint64_t now = monotonic_ns();
    for (const MmKey& key : recorder_.take_ended_unseen())
      live_.end_unseen(key, now);
    note_rate();
    flush_if_backlog_high();
    notifier_.status(status_line());
  }
  // Rows beyond a quarter of the backlog's bound: written now rather than
  // at the timer, so that a host of thousands of processes never takes the
  // batch to its bound between two flushes. From the loop, once per tick
  // or drain at most.
  void flush_if_backlog_high() {
    if (store_->backlog_high()) post_flush();
  }
  // A flush after what already waits in the loop (a query, a scrape).
  void post_flush() {
    background_.post("flush", [this] { flush_store(); });
  }
  // Measures how late the loop serves a timer (LoopDelay).
  void probe_loop() {
    const uint64_t due = monotonic_ns() + LoopDelay::kPeriodNs;
    probe_timer_.expires_after(std::chrono::nanoseconds(LoopDelay::kPeriodNs));
    probe_timer_.async_wait([this, due](auto ec) {
      if (ec) return;
      loop_delay_.note(due, monotonic_ns());
      probe_loop();
    });
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
    if (options_.summary_s > 0)
      every(
          summary_timer_, [this] { return options_.summary_s; },
          [this] { log_summary(); });
  }
  // Writes the batch and what was lost since the last flush, a piece per
  // turn of the loop (kFlushPieces): a 3 000-process host's batch of two
  // seconds took the loop 0.17-0.36 s in one go, and a query waited for
  // it. A failing store is reported once per kind of failure; auditing
  // goes on and the batch is kept for the next flush.
  void flush_store(size_t max_pieces = kFlushPieces) {
    const uint64_t drops = live_.capture().drops();
    uint64_t unreadable = 0;
    for (uint64_t n : sampler_.stats().read_failures) unreadable += n;
    const uint64_t ambiguous = live_.stats().ambiguous;
    if (drops != drops_ || unreadable != unreadable_ ||
        ambiguous != ambiguous_) {
      store_->add_loss(LossRow{realtime_ns(), drops - drops_,
                               unreadable - unreadable_,
                               ambiguous - ambiguous_});
      drops_ = drops, unreadable_ = unreadable, ambiguous_ = ambiguous;
    }
    const Result<void, StoreError> s = store_->flush(max_pieces);
    if (store_->reopened() != reopened_) {
      reopened_ = store_->reopened();
      fmt::print(stderr,
                 "rssauditd: {} was deleted while in use: a new database "
                 "begun there; what was written before is only in the "
                 "deleted file\n",
                 store_->path());
    }
    // Once per kind of failure: the message's row counts change each time.
    if (!s && (last_store_error_.empty() || s.error().code != last_store_code_))
      fmt::print(stderr, "rssauditd: history not written, kept in memory: {}\n",
                 s.error().message);
    else if (s && !last_store_error_.empty())
      fmt::print(stderr, "rssauditd: history written again\n");
    last_store_error_ = s ? "" : s.error().message;
    if (!s) last_store_code_ = s.error().code;
    say_dropped_rows();
    if (!s) return;
    if (store_->unwritten()) return post_flush();  // the next piece
    const uint64_t now = monotonic_ns();
    growth_.add(now, store_->grown_bytes());
    if (retained_ns_ == 0 || now - retained_ns_ >= kRetentionPeriodNs) {
      retained_ns_ = now;
      apply_retention();
    }
  }
  // Once per kind of row: the first drop of it, and that it is counted.
  void say_dropped_rows() {
    const auto& dropped = store_->dropped_by_kind();
    for (size_t k = 0; k < kRowKinds; ++k) {
      if (dropped[k] == 0 || said_dropped_[k]) continue;
      said_dropped_[k] = true;
      fmt::print(stderr,
                 "rssauditd: history rows dropped: {} kept in memory passed "
                 "{} while flushes failed; the oldest are dropped from now "
                 "on, counted in status, the metrics and the losses table, "
                 "and the exit will be 1\n",
                 kRowKindNames[k], StoreOptions{}.max_pending_rows);
    }
  }
  RetentionPolicy retention() const {
    RetentionPolicy p;
    p.max_age = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(options_.retention_days * 86400));
    p.max_bytes = static_cast<uint64_t>(options_.retention_mib * (1 << 20));
    return p;
  }
  void apply_retention() {
    if (const Result<void, StoreError> s =
            store_->apply_retention(retention(), realtime_ns());
        !s)
      fmt::print(stderr, "rssauditd: retention: {}\n", s.error().message);
  }
  void wait_stop_signal() {
    stop_signals_.async_wait([this](auto ec, int sig) {
      if (!ec) stop(sig == SIGTERM ? "SIGTERM" : "SIGINT");
    });
  }
  void wait_summary_signal() {
    summary_signal_.async_wait([this](auto ec, int) {
      if (ec) return;
      // "Now": with what the streams hold up to the signal, not what the
      // last paced drain took (up to its interval behind).
      drain();
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
    Result<DaemonOptions, OptionsError> loaded = load_daemon_options(args_);
    if (!loaded) {
      fmt::print(stderr,
                 "rssauditd: reload failed, configuration unchanged: {}\n",
                 loaded.error().message);
      notifier_.ready(status_line());
      return;
    }
    DaemonOptions next = std::move(loaded).value();
    const std::vector<std::string> kept = keep_restart_only(options_, next);
    for (const std::string& key : kept)
      fmt::print(stderr, "rssauditd: '{}' changes at the next start only\n",
                 key);
    const bool summaries_changed = next.summary_s != options_.summary_s;
    options_ = std::move(next);
    sampler_.set_policy(walk_policy(options_));
    recorder_.set_options(recorder_options(options_));
    if (summaries_changed) schedule_summaries();
    fmt::print(stderr, "rssauditd: configuration reloaded from {}\n",
               options_.config);
    notifier_.ready(status_line());
  }
  void log_summary() {
    write_summary_log(stderr, pipeline_.summaries(), live_.stats(),
                      live_.capture().losses(), live_.capture().hook_misses(),
                      live_.consumer_threads(), live_.drain_waits(),
                      live_.capture().holds(),
                      live_.capture().doorbell().rings(), lag_s(),
                      double(loop_delay_.take()) / 1e9, pipeline_,
                      recorder_.stats(), *store_, options_.top, exited_lookup(),
                      sampler_);
    write_snapshot_log(stderr, live_.stats(), live_.snapshot_stats());
    write_server_log(
        stderr, control_ ? std::optional(control_->stats()) : std::nullopt,
        metrics_ ? std::optional(metrics_->stats()) : std::nullopt);
  }
  ExitedLookup exited_lookup() {
    return [this](uint32_t tgid) { return live_.capture().exited(tgid); };
  }
  void stop(const char* why) {
    notifier_.stopping(fmt::format("stopping ({})", why));
    if (control_) control_->stop();
    if (metrics_) metrics_->stop();
    note_sampling_progress();
    drain();
    recorder_.sample(pipeline_, realtime_ns());
    live_.flush(pipeline_);
    recorder_.write_open_model_errors();
    fmt::print(stderr, "rssauditd: stopping ({})\n", why);
    store_->end_run(realtime_ns());
    flush_store(Store::kAllPieces);
    // After the last flush: the summary says what reached the database.
    log_summary();
    if (const size_t unwritten = store_->pending_rows(); unwritten > 0) {
      fmt::print(stderr, "rssauditd: {} history rows not written to {}: {}\n",
                 unwritten, store_->path(), last_store_error_);
      exit_code_ = 1;
    }
    if (const uint64_t dropped = store_->dropped_rows(); dropped > 0) {
      fmt::print(stderr,
                 "rssauditd: {} history rows were dropped (the oldest, while "
                 "flushes failed); the losses table counts them\n",
                 dropped);
      exit_code_ = 1;
    }
    io_.stop();
  }

  // Retention after a flush at most this often: a minute of growth at most
  // past the size cap.
  static constexpr uint64_t kRetentionPeriodNs = 60'000'000'000;
  // /proc reads of one sampling slice: ~150 processes here, a twentieth of
  // the second the loop may keep a query waiting.
  static constexpr uint64_t kSampleSliceNs = 50'000'000;
  // Rows a flush writes per turn of the loop: 6 ms here unloaded
  // (bench/store_bench, 5.8 us a row).
  static constexpr size_t kFlushPieces = 1;
  const std::vector<std::string> args_;
  DaemonOptions options_;
  const RunInfo run_;
  const uint64_t started_ns_ = monotonic_ns();
  LiveAudit live_;
  AuditPipeline pipeline_;
  std::unique_ptr<Store> store_;
  ProcessSampler sampler_;
  HistoryRecorder recorder_;
  uint64_t drops_ = 0, unreadable_ = 0, ambiguous_ = 0;
  uint64_t reopened_ = 0;
  uint64_t retained_ns_ = 0;  // monotonic time retention was last applied
  GrowthRate growth_;
  std::array<bool, kRowKinds> said_dropped_{};
  SamplingProgress progress_;
  uint64_t sampling_gaps_ = 0;
  // 1 when history was left unwritten at the stop, or dropped before it.
  int exit_code_ = 0;
  std::string last_store_error_;
  StoreError::Code last_store_code_{};
  uint64_t rate_since_ns_ = 0, rate_events_ = 0;
  double events_per_s_ = 0;
  ServiceNotifier notifier_;
  boost::asio::io_context io_;
  BackgroundWork background_;
  std::unique_ptr<ControlServer> control_;
  std::unique_ptr<MetricsServer> metrics_;
  ProcLabels proc_labels_;
  // What /proc hides from other users, read at the start (hidepid).
  const std::optional<std::string> hidepid_ = procfs_hidepid_here();
  boost::asio::steady_timer poll_timer_;
  boost::asio::posix::stream_descriptor doorbell_;
  bool drain_posted_ = false;  // a drain is queued: not another
  boost::asio::steady_timer summary_timer_, stop_timer_, sample_timer_,
      flush_timer_, watchdog_timer_, probe_timer_;
  LoopDelay loop_delay_;
  boost::asio::signal_set stop_signals_, summary_signal_, reload_signal_;
};

}  // namespace

int run_daemon(const std::vector<std::string>& args) {
  const Result<DaemonOptions, OptionsError> loaded = load_daemon_options(args);
  if (!loaded) {
    if (loaded.error().exit_code != 0)  // 0: --help or --version, printed
      fmt::print(stderr, "rssauditd: {}\n", loaded.error().message);
    return loaded.error().exit_code;
  }
  const DaemonOptions& options = *loaded;
  // A piece of history at most ~50 ms of the loop's time, like a drain
  // and a slice of sampling.
  auto store =
      Store::open(options.db, StoreOptions{.piece_budget_ns = 50'000'000});
  if (!store) {
    fmt::print(stderr, "rssauditd: {}\n", store.error().message);
    return 1;
  }
  // Before the capture: its child is no process to audit. Whether status
  // is a precise source decides what the history may call precise.
  const ReaderPrecision readers = probe_reader_precision();
  fmt::print(stderr, "rssauditd: RSS readers measured on this kernel: {}\n",
             reader_precision_text(readers));
  CaptureOptions co;
  co.target_tgid = options.pid;
  co.stream_bytes = options.stream_kib << 10;
  Result<std::unique_ptr<BpfCapture>, CaptureError> capture =
      BpfCapture::open(co);
  if (!capture) {
    fmt::print(stderr, "rssauditd: cannot capture: {}\n",
               capture.error().message);
    return 1;
  }
  for (const std::string& limit : (*capture)->limits())
    fmt::print(stderr, "rssauditd: {}\n", limit);
  const RecordHeader host = host_record_header((*capture)->possible_cpus());
  Topology model = topology_of(host);
  RunInfo run;
  run.host = host.host_name;
  run.kernel_release = host.kernel_release;
  run.nr_cpus = host.online_cpus;
  run.batch = host.percpu_batch;
  if (!(*capture)->support().percpu_rss) run.counting = kCountingTaskCache;
  if (readers.status != ReaderVerdict::kUnknown)
    run.status_precise = readers.status == ReaderVerdict::kPrecise;
  run.page_size = host.page_size;
  run.rssaudit_version = RSSAUDIT_VERSION;
  run.started_ns = realtime_ns();
  std::unique_ptr<Store> db = std::move(store).value();
  db->begin_run(run);
  return Daemon(args, options, std::move(capture).value(), run, model,
                std::move(db))
      .run();
}

}  // namespace rssaudit
