#include "cli/record_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "audit/audit_pipeline.h"
#include "audit/recorded_names.h"
#include "capture/bpf_capture.h"
#include "capture/exited_lookup.h"
#include "capture/recording.h"
#include "cli/errors.h"
#include "cli/query_support.h"
#include "cli/run_until.h"
#include "cli/units.h"
#include "core/formats/option_checks.h"
#include "os/clock.h"
#include "sampler/sampler.h"

namespace rssaudit::cli {
namespace {

struct RecordOptions {
  std::string output;
  double duration_s = 10;
  uint32_t pid = 0;
  std::string comm;
};

// The one process whose comm is `comm`; a usage error if none or several.
uint32_t pid_of_comm(const std::string& comm) {
  ProcessSampler sampler{WalkPolicy{}};
  std::vector<uint32_t> found;
  for (const uint32_t pid : sampler.pids()) {
    const IdentityResult who = sampler.identify(pid);
    if (who.state == IdentityResult::State::kAlive && who.stat->comm == comm)
      found.push_back(pid);
  }
  if (found.size() != 1)
    throw UsageError(fmt::format("--comm {}: {} processes have this name{}",
                                 comm, found.size(),
                                 found.empty() ? "" : "; use --pid"));
  return found.front();
}

void record(const RecordOptions& o) {
  CaptureOptions co;
  co.target_tgid = o.comm.empty() ? o.pid : pid_of_comm(o.comm);
  Result<std::unique_ptr<BpfCapture>, CaptureError> opened =
      BpfCapture::open(co);
  if (!opened)
    throw std::runtime_error("cannot capture: " + opened.error().message);
  const std::unique_ptr<BpfCapture> capture = std::move(opened).value();
  RecordingFile file(o.output, host_record_header(capture->possible_cpus()));
  // Each new mm is named after the drain that shows it, off the per-event
  // path: the name /proc gives then (within a poll of its first update, so
  // the name after its exec), else the one its exit left; written once no
  // exec of the process followed within MmsToName::kHoldNs.
  MmsToName to_name;
  ProcessSampler sampler{WalkPolicy{}};
  auto drain = [&] {
    capture->poll(monotonic_ns(), [&](const rss_event& e) {
      file.append(e);
      to_name.see(e);
    });
    const uint64_t now = monotonic_ns();
    for (const auto& [mm, tgid] : to_name.take()) {
      const IdentityResult who = sampler.identify(tgid);
      if (who.stat) {
        to_name.hold({mm, tgid, who.stat->comm}, now);
      } else if (const auto gone = capture->exited(tgid)) {
        to_name.hold({mm, tgid, comm_of(*gone)}, now);
      }
    }
    for (const RecordedName& name : to_name.ready(now)) file.append_name(name);
    return true;
  };
  // Said once the programs are attached: what follows is captured.
  fmt::print(stderr, "rssaudit: recording to {} for {} s; SIGINT stops\n",
             o.output, o.duration_s);
  run_until(o.duration_s, capture->doorbell(), drain);
  drain();
  for (const RecordedName& name : to_name.ready(UINT64_MAX))
    file.append_name(name);
  file.close();
  // Repeats reached this process inside the record they joined
  // (bpf/rss_event.h): the file holds each as an event of its own.
  fmt::print(stderr,
             "rssaudit: recorded {} events to {} ({} dropped; {} of them "
             "travelled as repeats)\n",
             file.events(), o.output, capture->drops(), capture->repeats());
}

struct ReplayOptions {
  std::string input;
  bool json = false;
  size_t top = 20;
  size_t mms_kept = 100'000;  // finished mms kept for the report
};

void replay(const ReplayOptions& o) {
  std::optional<AuditPipeline> pipeline;
  const ReplayOutcome r =
      replay_file(o.input, [&](const RecordHeader& h) -> ReconstructorSink& {
        return pipeline.emplace(topology_of(h), o.mms_kept);
      });
  if (!r.header)
    throw std::runtime_error(
        o.input + ": " +
        (r.error ? r.error->message : "not an rssaudit recording"));
  const RecordHeader& header = *r.header;
  std::vector<MmSummary> mms = pipeline->summaries();
  // Every mm of the recording: those live at its end and every one that
  // ended (only the last --mms-kept of which are reported).
  const uint64_t total = pipeline->live_mms() + pipeline->finished_mms();
  rank_by_error(mms);
  std::vector<std::optional<std::string>> comms = r.names.names_of(mms);
  if (mms.size() > o.top) mms.resize(o.top);
  const uint64_t checked = pipeline->fidelity_checked();
  if (o.json) {
    nlohmann::json j = {{"kernel", header.kernel_release},
                        {"host", header.host_name},
                        {"nr_cpu_ids", header.nr_cpu_ids},
                        {"batch", header.percpu_batch},
                        {"events", r.events},
                        {"updates", r.stats.updates},
                        {"exact", r.stats.exact},
                        {"ambiguous", r.stats.ambiguous},
                        {"over_mm_limit", r.stats.over_mm_limit},
                        {"bad_records", r.stats.bad_records},
                        {"fidelity_checked", checked},
                        {"fidelity_matched", pipeline->fidelity_matched()},
                        {"error", r.error ? nlohmann::json(r.error->message)
                                          : nlohmann::json(nullptr)},
                        {"mms_audited", total},
                        {"mms", nlohmann::json::array()}};
    for (size_t i = 0; i < mms.size(); ++i) {
      const MmSummary& m = mms[i];
      nlohmann::json errors;
      for (size_t i = 0; i < SchemeSet::kCount; ++i)
        errors[std::string(SchemeSet::kNames[i])] = m.largest_error[i];
      j["mms"].push_back(
          {{"tgid", m.tgid},
           {"comm", comms[i] ? nlohmann::json(*comms[i]) : nlohmann::json()},
           {"from_zero", m.from_zero},
           {"alive", m.alive},
           {"updates", m.updates},
           {"flagged", m.flagged},
           // Only an absolute value is an RSS: else unknown, never a
           // partial sum that may be negative.
           {"exact_rss_pages",
            m.absolute ? nlohmann::json(m.exact_rss) : nlohmann::json(nullptr)},
           {"kernel_rss_pages", json_or_null(m.known_kernel_rss())},
           {"drift_pages", json_or_null(m.known_drift())},
           {"peak_rss_pages", m.peak_rss},
           {"fidelity_checked", m.fidelity_checked},
           {"fidelity_matched", m.fidelity_matched},
           {"largest_error_pages", errors}});
    }
    fmt::print("{}\n", json_text(j));
  } else {
    fmt::print("{}: kernel {}, {} CPUs, batch {}, {} events, {} mms\n", o.input,
               header.kernel_release, header.nr_cpu_ids, header.percpu_batch,
               r.events, total);
    fmt::print("updates {} exact {} ambiguous {}\nfidelity {}\n",
               r.stats.updates, r.stats.exact, r.stats.ambiguous,
               fidelity_text(pipeline->fidelity_matched(), checked));
    if (r.stats.bad_records > 0)
      fmt::print(
          "{} bad records skipped: a CPU or counter out of range, or an "
          "unknown kind\n",
          r.stats.bad_records);
    if (r.stats.over_mm_limit > 0)
      fmt::print(
          "{} records skipped: their mm would have been one more than the "
          "{} audited at once\n",
          r.stats.over_mm_limit, ReconstructorOptions{}.max_mms);
    if (pipeline->finished_mms() > o.mms_kept)
      fmt::print(
          "ranked among the live and the {} newest ended mms "
          "(--mms-kept)\n",
          o.mms_kept);
    fmt::print("\n");
    if (r.names.empty() && !mms.empty())
      fmt::print(
          "the recording holds no process names (rssaudit before format 2 "
          "wrote none)\n");
    // The name last, as ps and top print COMMAND: it has no fixed width.
    fmt::print("{:>8} {:>6} {:>9} {:>10} {:>10} {:>8} {:>10} {:>9} {}\n",
               "tgid", "alive", "updates", "exact pg", "kernel pg", "drift",
               "peak pg", "max err", "comm");
    for (size_t i = 0; i < mms.size(); ++i) {
      const MmSummary& m = mms[i];
      fmt::print("{:>8} {:>6} {:>9} {:>10} {:>10} {:>8} {:>10} {:>9} {}\n",
                 m.tgid, m.alive ? "yes" : "no", m.updates,
                 m.absolute ? fmt::format("{}", m.exact_rss) : "?",
                 known_text(m.known_kernel_rss()), known_text(m.known_drift()),
                 m.peak_rss, m.largest_error[0],
                 comms[i] ? printable(*comms[i]) : "?");
    }
  }
  if (r.error)
    throw std::runtime_error(
        fmt::format("{}: {} (everything before it was replayed)", o.input,
                    r.error->message));
  // A recording rssaudit wrote holds none: the file was damaged or made
  // by something else. Replayed without them, said, and not a success.
  if (r.stats.bad_records > 0)
    throw std::runtime_error(
        fmt::format("{}: {} bad records skipped (the rest was replayed)",
                    o.input, r.stats.bad_records));
}

}  // namespace

void register_record(CLI::App& app) {
  auto o = std::make_shared<RecordOptions>();
  CLI::App* sub = app.add_subcommand(
      "record", "Save every RSS counter update to a file (root)");
  sub->add_option("-o,--output", o->output, "Recording file")->required();
  sub->add_option("--duration", o->duration_s, "Seconds to record")
      ->capture_default_str()
      ->check(seconds_in(0.001, false));
  auto* pid = sub->add_option("--pid", o->pid, "Only this process")
                  ->check(whole_in(1, 4194304, "a PID"));
  sub->add_option("--comm", o->comm, "Only the process with this name")
      ->excludes(pid);
  sub->callback([o] { record(*o); });
}

void register_replay(CLI::App& app) {
  auto o = std::make_shared<ReplayOptions>();
  CLI::App* sub = app.add_subcommand(
      "replay", "Audit a recording: per-mm exact, kernel and model values");
  sub->add_option("file", o->input, "Recording made by 'rssaudit record'")
      ->required();
  sub->add_flag("--json", o->json, "Print JSON");
  sub->add_option("--top", o->top, "Processes listed, largest error first")
      ->capture_default_str()
      ->check(whole_in(0, 10'000'000, "processes"));
  sub->add_option("--mms-kept", o->mms_kept,
                  "Ended mms kept for the ranking (the newest; all are "
                  "counted)")
      ->capture_default_str()
      ->check(whole_in(1, 10'000'000, "mms"));
  sub->callback([o] { replay(*o); });
}

}  // namespace rssaudit::cli
