#include "cli/whatif_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "audit/audit_pipeline.h"
#include "capture/bpf_capture.h"
#include "capture/live_audit.h"
#include "capture/recording.h"
#include "cli/errors.h"
#include "cli/query_support.h"
#include "cli/run_until.h"
#include "cli/scheme_report.h"
#include "cli/units.h"
#include "core/formats/option_checks.h"
#include "core/formats/record_format.h"
#include "core/schemes/hpcc_tree.h"
#include "sampler/reader_probe.h"
#include "sampler/sampler.h"

namespace rssaudit::cli {
namespace {

// whatif drains every 10 ms (run_until's tick), or at once when a stream
// is a quarter full.
constexpr uint64_t kLivePollNs = 10'000'000;

struct WhatifOptions {
  uint32_t pid = 0;
  double duration_s = 10;
  std::string recording;
  SyntheticRun synthetic;  // its cpus is --cpus for every source
  size_t top = 5;
  bool json = false;
  UnitOptions units;
  // Given on the command line: they choose the source, or must not be
  // mixed with another one.
  CLI::Option* pid_option = nullptr;
  CLI::Option* duration_option = nullptr;
  CLI::Option* recording_option = nullptr;
  CLI::Option* top_option = nullptr;
  std::vector<CLI::Option*> synthetic_options;  // --workload first
};

// One mm's audit as whatif reports it.
struct MmReport {
  MmSummary summary;
  std::vector<SchemeOutcome> schemes;
};

// The reconstructed updates of a recording or a live capture, fed to the
// models as `replay` does; keeps the per-scheme figures of each mm of
// process `pid` (0: every mm), taken when the mm ends or at finish(). The
// models may run on another topology than the recording host's: CPU ids
// are then folded into the model's CPUs, and the upstream model no longer
// mirrors the kernel (fidelity is meaningless).
class SchemeReports : public ReconstructorSink {
 public:
  SchemeReports(const Topology& models, uint32_t pid)
      : pipeline_(models, 0),  // reports are kept here, not as summaries
        model_cpus_(models.nr_cpus),
        pid_(pid) {
    pipeline_.set_exit_hook([this](AuditPipeline::LiveMm& mm) { keep(mm); });
  }

  // The end of the stream: mms still alive are reported as they are now.
  void finish() {
    pipeline_.for_each_live([this](AuditPipeline::LiveMm& mm) { keep(mm); });
  }

  void on_mm_created(const MmKey& mm, bool from_zero) override {
    pipeline_.on_mm_created(mm, from_zero);
  }
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    Update folded = u;
    folded.cpu %= model_cpus_;
    pipeline_.on_update(mm, folded, info);
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    LifeEvent folded = e;
    folded.cpu %= model_cpus_;
    pipeline_.on_life(mm, folded);
  }
  void on_mm_destroyed(const MmKey& mm) override {
    pipeline_.on_mm_destroyed(mm);
  }
  void on_cache_fold(const MmKey& mm, const LifeEvent& sync,
                     const UpdateInfo& info) override {
    pipeline_.on_cache_fold(mm, sync, info);
  }
  void on_baseline(const MmKey& mm, int member, std::optional<int64_t> pages,
                   std::optional<int64_t> kernel_count) override {
    pipeline_.on_baseline(mm, member, pages, kernel_count);
  }
  void on_loss() override { pipeline_.on_loss(); }

  const AuditPipeline& pipeline() const { return pipeline_; }
  std::vector<MmReport>& reports() { return reports_; }

 private:
  void keep(AuditPipeline::LiveMm& mm) {
    if (!mm.summary.updates) return;  // nothing to model
    if (pid_ && mm.summary.tgid != pid_) return;
    reports_.push_back(MmReport{mm.summary, mm_outcomes(mm.audit)});
  }

  AuditPipeline pipeline_;
  uint32_t model_cpus_;
  uint32_t pid_;
  std::vector<MmReport> reports_;
};

// Where the stream came from, for the report.
struct StreamSource {
  std::string kind;  // "recording" or "live"
  std::string name;  // the file, or "pid N (comm)"
  RecordHeader header;
  Topology models;
  bool models_as_recorded = true;
  uint64_t events = 0;
  ReconstructorStats stats;
  uint64_t drops = 0;                    // live: records lost in capture
  RecordedNames names;                   // recording: who each mm belonged to
  std::optional<std::string> live_comm;  // live: the pid's name at the end
  std::optional<RecordError> error;
};

// The models' topology: the recording host's, or --cpus N with the kernel's
// batch for N CPUs; --shape/--batch apply to HPCC either way.
Topology models_for(const WhatifOptions& o, const RecordHeader& h,
                    bool& as_recorded) {
  as_recorded = o.synthetic.cpus == -1;
  if (as_recorded) return with_model_options(topology_of(h), o.synthetic.model);
  return model_topology(o.synthetic.model, o.synthetic.cpus);
}

nlohmann::json mm_json(const MmReport& r,
                       const std::optional<std::string>& comm,
                       bool with_fidelity, int64_t page_size) {
  const MmSummary& m = r.summary;
  nlohmann::json j = {
      {"tgid", m.tgid},
      {"comm", comm ? nlohmann::json(*comm) : nlohmann::json()},
      {"alive", m.alive},
      {"from_zero", m.from_zero},
      {"updates", m.updates},
      {"flagged", m.flagged},
      {"exact_rss_pages", m.exact_rss},
      // Unknown (null) without an absolute value: the mm existed before
      // the capture and no snapshot made it known (always so in a
      // recording).
      {"peak_rss_pages",
       m.absolute ? nlohmann::json(m.peak_rss) : nlohmann::json(nullptr)},
      {"schemes", schemes_json(r.schemes, m.updates, page_size)}};
  if (with_fidelity) {
    j["fidelity_checked"] = m.fidelity_checked;
    j["fidelity_matched"] = m.fidelity_matched;
  }
  return j;
}

void print_report(const WhatifOptions& o, const StreamSource& s,
                  SchemeReports& audit) {
  std::vector<MmReport>& mms = audit.reports();
  // Most active first: the mms whose figures rest on the most updates.
  std::stable_sort(mms.begin(), mms.end(),
                   [](const MmReport& a, const MmReport& b) {
                     return a.summary.updates > b.summary.updates;
                   });
  const size_t shown = o.pid ? mms.size() : std::min(o.top, mms.size());
  std::vector<MmSummary> summaries;
  for (const MmReport& r : mms) summaries.push_back(r.summary);
  // Live: the pid's mm alive at the end bears its name; one an exec
  // left had another, not known.
  std::vector<std::optional<std::string>> comms = s.names.names_of(summaries);
  if (s.kind == "live") {
    for (size_t i = 0; i < mms.size(); ++i)
      if (mms[i].summary.alive) comms[i] = s.live_comm;
  }
  const int64_t page_size = s.header.page_size ? s.header.page_size : kPageSize;
  const ReconstructorStats& st = s.stats;
  const AuditPipeline& p = audit.pipeline();
  if (o.json) {
    nlohmann::json j = {
        {"source", s.kind},
        {"kernel", s.header.kernel_release},
        {"host", s.header.host_name},
        {"nr_cpu_ids", s.header.nr_cpu_ids},
        {"batch", s.header.percpu_batch},
        {"page_size", page_size},
        {"events", s.events},
        {"updates", st.updates},
        {"ambiguous", st.ambiguous},
        {"model_cpus", s.models.nr_cpus},
        {"model_upstream_batch", s.models.upstream_batch},
        {"hpcc_batch", s.models.hpcc_batch},
        {"hpcc_shape", hpcc_shape(s.models)},
        {"models_as_recorded", s.models_as_recorded},
        {"fidelity_checked", s.models_as_recorded
                                 ? nlohmann::json(p.fidelity_checked())
                                 : nlohmann::json(nullptr)},
        {"fidelity_matched", s.models_as_recorded
                                 ? nlohmann::json(p.fidelity_matched())
                                 : nlohmann::json(nullptr)},
        {"mms_audited", mms.size()},
        {"error",
         s.error ? nlohmann::json(s.error->message) : nlohmann::json(nullptr)},
        {"mms", nlohmann::json::array()}};
    if (s.kind == "live") {
      j["pid"] = o.pid;
      j["dropped"] = s.drops;
    } else {
      j["recording"] = s.name;
    }
    for (size_t i = 0; i < shown; ++i)
      j["mms"].push_back(
          mm_json(mms[i], comms[i], s.models_as_recorded, page_size));
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("{}: kernel {}, {} CPUs, batch {}\n", s.name,
             s.header.kernel_release, s.header.nr_cpu_ids,
             s.header.percpu_batch);
  fmt::print("{} events, {} updates ({} ambiguous), {} mm{}{}\n", s.events,
             st.updates, st.ambiguous, mms.size(), mms.size() == 1 ? "" : "s",
             s.kind == "live" ? fmt::format(", {} dropped", s.drops) : "");
  if (s.models_as_recorded) {
    fmt::print("models on the host's {} CPUs\nupstream fidelity {}\n",
               s.models.nr_cpus,
               fidelity_text(p.fidelity_matched(), p.fidelity_checked()));
  } else {
    fmt::print(
        "models as if on {} CPUs (batch {}): fidelity to the kernel not "
        "checked\n",
        s.models.nr_cpus, s.models.upstream_batch);
  }
  fmt::print("hpcc batch {}, shape {}\n", s.models.hpcc_batch,
             shape_text(hpcc_shape(s.models)));
  for (size_t i = 0; i < shown; ++i) {
    const MmSummary& m = mms[i].summary;
    fmt::print(
        "\npid {} ({}), mm {} of {}: {} updates ({} flagged), peak {}, {}\n",
        m.tgid, comms[i] ? printable(*comms[i]) : "?", i + 1, mms.size(),
        m.updates, m.flagged,
        m.absolute ? format_size(m.peak_rss, page_size, o.units.unit())
                   : std::string("unknown"),
        m.alive ? "alive" : "ended");
    if (!m.from_zero)
      fmt::print(
          "  existed before the capture: figures from its first "
          "update seen\n");
    print_schemes(mms[i].schemes, m.updates, page_size, o.units.unit());
  }
  if (shown < mms.size())
    fmt::print("\n{} more mms; --top N or --pid P to see them\n",
               mms.size() - shown);
}

// Nothing to report for the chosen process: a failure naming it.
void require_mms(const WhatifOptions& o, const StreamSource& s,
                 SchemeReports& audit) {
  if (!audit.reports().empty()) return;
  if (o.pid)
    throw std::runtime_error(fmt::format(
        "--pid {}: no RSS counter update of this process in {}", o.pid,
        s.kind == "live" ? fmt::format("{} s", o.duration_s) : s.name));
  throw std::runtime_error(
      fmt::format("{}: no RSS counter update to model", s.name));
}

void whatif_recording(const WhatifOptions& o) {
  StreamSource s;
  s.kind = "recording";
  s.name = o.recording;
  std::optional<SchemeReports> audit;
  ReplayOutcome r;
  try {
    r = replay_file(o.recording,
                    [&](const RecordHeader& h) -> ReconstructorSink& {
                      s.header = h;
                      s.models = models_for(o, h, s.models_as_recorded);
                      return audit.emplace(s.models, o.pid);
                    });
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("--recording: {}", e.what()));
  }
  s.events = r.events;
  s.stats = r.stats;
  s.names = std::move(r.names);
  s.error = r.error;
  if (!audit)
    throw std::runtime_error(
        fmt::format("--recording {}: {}", o.recording,
                    s.error ? s.error->message : "not an rssaudit recording"));
  audit->finish();
  if (!s.error) require_mms(o, s, *audit);
  print_report(o, s, *audit);
  if (s.error)
    throw std::runtime_error(
        fmt::format("{}: {} (everything before it was audited)", o.recording,
                    s.error->message));
}

// A zombie has released its mm: nothing more can happen to it.
bool process_gone(ProcessSampler& sampler, uint32_t pid) {
  return sampler.identify(pid).state != IdentityResult::State::kAlive;
}

std::string comm_of(ProcessSampler& sampler, uint32_t pid) {
  const IdentityResult who = sampler.identify(pid);
  return printable(who.stat ? who.stat->comm : "");
}

void whatif_live(const WhatifOptions& o) {
  ProcessSampler sampler{WalkPolicy{}};
  if (process_gone(sampler, o.pid))
    throw UsageError(fmt::format("--pid {}: no such process", o.pid));
  StreamSource s;
  s.kind = "live";
  s.name = fmt::format("pid {} ({})", o.pid, comm_of(sampler, o.pid));
  CaptureOptions co;
  co.target_tgid = o.pid;
  Result<std::unique_ptr<BpfCapture>, CaptureError> capture =
      BpfCapture::open(co);
  if (!capture)
    throw std::runtime_error("cannot capture: " + capture.error().message);
  s.header = host_record_header((*capture)->possible_cpus());
  s.models = models_for(o, s.header, s.models_as_recorded);
  SchemeReports audit(s.models, o.pid);
  LiveAudit live(std::move(capture).value(), s.header.percpu_batch,
                 kLivePollNs);
  // Said once the programs are attached: what follows is captured.
  fmt::print(stderr, "rssaudit: auditing {} for up to {} s; SIGINT stops\n",
             s.name, o.duration_s);
  // Stops early once the process is gone: its mm can change no more.
  unsigned tick = 0;
  run_until(o.duration_s, live.doorbell(), [&] {
    live.drain(audit);
    return ++tick % 10 != 0 || !process_gone(sampler, o.pid);
  });
  live.drain(audit);
  live.flush(audit);
  audit.finish();
  // Named after an exec during the capture (a shell's child becomes
  // python3), as long as it still runs.
  if (!process_gone(sampler, o.pid)) {
    s.live_comm = comm_of(sampler, o.pid);
    s.name = fmt::format("pid {} ({})", o.pid, *s.live_comm);
  }
  s.events = live.events();
  s.stats = live.stats();
  s.drops = live.capture().drops();
  require_mms(o, s, audit);
  print_report(o, s, audit);
  if (s.drops)
    fmt::print(stderr,
               "rssaudit: {} records lost in capture: the figures "
               "miss those updates\n",
               s.drops);
}

void whatif(const WhatifOptions& o) {
  const bool recording = o.recording_option->count() > 0;
  const bool synthetic = o.synthetic_options.front()->count() > 0;
  // --pid is the source only alone; otherwise it filters or is refused.
  const bool live = o.pid_option->count() && !recording && !synthetic;
  if (live + recording + synthetic != 1)
    throw UsageError(
        "whatif: choose one source: --pid P (live), --recording FILE, or "
        "--workload NAME --cpus N");
  if (synthetic) {
    if (o.pid_option->count())
      throw UsageError("whatif: --pid does not apply to --workload");
    return run_synthetic(o.synthetic, "whatif", o.json, o.units.unit(),
                         "workload");
  }
  for (CLI::Option* opt : o.synthetic_options)
    if (opt->count())
      throw UsageError(fmt::format("whatif: {} applies to --workload only",
                                   opt->get_name()));
  if (o.top_option->count() && o.pid)
    throw UsageError("whatif: --top and --pid are exclusive");
  if (recording) {
    if (o.duration_option->count())
      throw UsageError("whatif: --duration applies to a live --pid only");
    return whatif_recording(o);
  }
  whatif_live(o);
}

}  // namespace

void register_whatif(CLI::App& app) {
  auto o = std::make_shared<WhatifOptions>();
  CLI::App* sub = app.add_subcommand(
      "whatif",
      "Per counting scheme: bound, largest and final error, shared updates "
      "and memory, for a live process (root), a recording or a synthetic "
      "workload");
  o->pid_option =
      sub->add_option(
             "--pid", o->pid,
             "Live: capture this process (root); with --recording: its mms "
             "only")
          ->check(whole_in(1, 4194304, "a PID"));
  o->duration_option =
      sub->add_option("--duration", o->duration_s, "Live: seconds to capture")
          ->capture_default_str()
          ->check(seconds_in(0.001, false));
  o->recording_option = sub->add_option("--recording", o->recording,
                                        "A file made by 'rssaudit record'");
  sub->add_option("--cpus", o->synthetic.cpus,
                  "CPUs of the models, 1..65536 (required with --workload; "
                  "for a live process or a recording: re-evaluate as if the "
                  "host had N CPUs)");
  o->synthetic_options = add_synthetic_options(*sub, o->synthetic);
  add_model_options(*sub, o->synthetic.model);
  o->top_option = sub->add_option("--top", o->top, "Most active mms listed")
                      ->capture_default_str()
                      ->check(whole_in(0, 10'000'000, "mms"));
  sub->add_flag("--json", o->json, "Print JSON");
  add_unit_options(*sub, o->units);
  sub->callback([o] { whatif(*o); });
}

}  // namespace rssaudit::cli
