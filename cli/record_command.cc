#include "cli/record_command.h"

#include <fmt/core.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/errors.h"
#include "cli/query_support.h"
#include "cli/units.h"
#include "daemon/bpf_capture.h"
#include "daemon/recording.h"

namespace rssaudit::cli {
namespace {

std::atomic<bool> interrupted{false};

struct RecordOptions {
  std::string output;
  double duration_s = 10;
  uint32_t pid = 0;
  std::string comm;
};

// The one process whose comm is `comm`; a usage error if none or several.
uint32_t pid_of_comm(const std::string& comm) {
  std::vector<uint32_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "comm");
    std::string c;
    if (std::getline(in, c) && c == comm) found.push_back(std::stoul(name));
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
  BpfCapture::OpenResult r = BpfCapture::open(co);
  if (!r.capture) throw std::runtime_error("cannot capture: " + r.error);
  RecordingFile file(o.output, host_record_header(r.capture->possible_cpus()));
  std::signal(SIGINT, [](int) { interrupted = true; });
  std::signal(SIGTERM, [](int) { interrupted = true; });
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::duration<double>(o.duration_s));
  while (!interrupted && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r.capture->poll([&](const rss_event& e) { file.append(e); });
  }
  r.capture->poll([&](const rss_event& e) { file.append(e); });
  file.close();
  fmt::print(stderr, "rssaudit: recorded {} events to {} ({} dropped)\n",
             file.events(), o.output, r.capture->drops());
}

struct ReplayOptions {
  std::string input;
  bool json = false;
  size_t top = 20;
};

void replay(const ReplayOptions& o) {
  std::optional<AuditPipeline> pipeline;
  const ReplayOutcome r = replay_file(o.input, pipeline);
  if (r.error && !pipeline)
    throw std::runtime_error(o.input + ": " + r.error->message);
  std::vector<MmSummary> mms = pipeline->summaries();
  rank_by_error(mms);
  const uint64_t checked = pipeline->fidelity_checked();
  if (o.json) {
    nlohmann::json j = {{"kernel", r.header.kernel_release},
                        {"host", r.header.host_name},
                        {"nr_cpu_ids", r.header.nr_cpu_ids},
                        {"batch", r.header.percpu_batch},
                        {"events", r.events},
                        {"updates", r.stats.updates},
                        {"exact", r.stats.exact},
                        {"ambiguous", r.stats.ambiguous},
                        {"fidelity_checked", checked},
                        {"fidelity_matched", pipeline->fidelity_matched()},
                        {"error", r.error ? nlohmann::json(r.error->message)
                                          : nlohmann::json(nullptr)},
                        {"mms", nlohmann::json::array()}};
    for (const MmSummary& m : mms) {
      nlohmann::json errors;
      for (size_t i = 0; i < SchemeSet::kCount; ++i)
        errors[std::string(SchemeSet::kNames[i])] = m.largest_error[i];
      j["mms"].push_back(
          {{"tgid", m.tgid},
           {"from_zero", m.from_zero},
           {"alive", m.alive},
           {"updates", m.updates},
           {"flagged", m.flagged},
           {"exact_rss_pages", m.exact_rss},
           {"kernel_rss_pages", json_or_null(m.known_kernel_rss())},
           {"drift_pages", json_or_null(m.known_drift())},
           {"peak_rss_pages", m.peak_rss},
           {"fidelity_checked", m.fidelity_checked},
           {"fidelity_matched", m.fidelity_matched},
           {"largest_error_pages", errors}});
    }
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}: kernel {}, {} CPUs, batch {}, {} events, {} mms\n", o.input,
               r.header.kernel_release, r.header.nr_cpu_ids,
               r.header.percpu_batch, r.events, mms.size());
    fmt::print("updates {} exact {} ambiguous {}\nfidelity {}\n\n",
               r.stats.updates, r.stats.exact, r.stats.ambiguous,
               fidelity_text(pipeline->fidelity_matched(), checked));
    fmt::print("{:>8} {:>6} {:>9} {:>10} {:>10} {:>8} {:>10} {:>9}\n", "tgid",
               "alive", "updates", "exact pg", "kernel pg", "drift", "peak pg",
               "max err");
    for (size_t i = 0; i < std::min(o.top, mms.size()); ++i) {
      const MmSummary& m = mms[i];
      fmt::print("{:>8} {:>6} {:>9} {:>10} {:>10} {:>8} {:>10} {:>9}\n", m.tgid,
                 m.alive ? "yes" : "no", m.updates,
                 m.absolute ? fmt::format("{}", m.exact_rss) : "?",
                 known_text(m.known_kernel_rss()), known_text(m.known_drift()),
                 m.peak_rss, m.largest_error[0]);
    }
  }
  if (r.error)
    throw std::runtime_error(
        fmt::format("{}: {} (everything before it was replayed)", o.input,
                    r.error->message));
}

}  // namespace

void register_record(CLI::App& app) {
  auto o = std::make_shared<RecordOptions>();
  CLI::App* sub = app.add_subcommand(
      "record", "Save every RSS counter update to a file (root)");
  sub->add_option("-o,--output", o->output, "Recording file")->required();
  sub->add_option("--duration", o->duration_s, "Seconds to record")
      ->capture_default_str();
  auto* pid = sub->add_option("--pid", o->pid, "Only this process");
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
      ->capture_default_str();
  sub->callback([o] { replay(*o); });
}

}  // namespace rssaudit::cli
