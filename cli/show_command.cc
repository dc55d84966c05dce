#include "cli/show_command.h"

#include <fmt/core.h>

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/live_queries.h"
#include "cli/query_support.h"
#include "cli/time_args.h"
#include "core/schemes/scheme_set.h"

namespace rssaudit::cli {
namespace {

struct ShowOptions {
  QueryOptions query;
  LiveOptions live;
  std::string which;
  std::optional<int64_t> run;
};

std::optional<int64_t> difference(const std::optional<int64_t>& a,
                                  const std::optional<int64_t>& b) {
  if (!a || !b) return std::nullopt;
  return *a - *b;
}

struct Sources {
  std::string name;
  MemberPages members{};  // empty: a source of the total only
  std::optional<int64_t> rss;
};

std::vector<Sources> sources_of(const SampleRow& r) {
  return {{"approx", r.approximate, rss_of(r.approximate)},
          {"stat", {}, r.stat_rss},
          {"precise", r.precise, rss_of(r.precise)},
          {"statm", {}, r.statm_resident},
          {"exact", r.exact, rss_of(r.exact)},
          {"walk", r.walk, r.walk_rss}};
}

nlohmann::json json_of(const ProcessSummary& p, const RunSummary& run_row,
                       const std::optional<StoredSample>& sample,
                       const std::vector<ModelErrorRow>& errors) {
  const RunInfo& run = run_row.info;
  nlohmann::json j = process_json(p);
  j.update(nlohmann::json{{"page_size", run.page_size},
                          {"counting", run.counting},
                          {"run_state", run_state_name(run_row.state)},
                          {"run_stopped_ns", json_or_null(run_row.stopped_ns)},
                          {"sample", nullptr},
                          {"model_errors", nlohmann::json::array()}});
  if (sample) {
    const SampleRow& r = sample->row;
    nlohmann::json s = {
        {"time_ns", r.time_ns},
        {"threads", json_or_null(r.threads)},
        {"fidelity_checked", json_or_null(r.fidelity_checked)},
        {"fidelity_matched", json_or_null(r.fidelity_matched)},
        {"drift_pages", json_or_null(sample->drift)},
        {"drift_unknown", drift_unknown_json(*sample)},
        {"vm_hwm_pages", json_or_null(r.vm_hwm)},
        {"true_peak_pages", json_or_null(r.true_peak)},
        {"peak_gap_pages", json_or_null(difference(r.true_peak, r.vm_hwm))},
        // Before 6.2 no /proc value is precise: the stream is the truth.
        {"walk_gap_pages",
         json_or_null(difference(run.counting == kCountingTaskCache
                                     ? rss_of(r.exact)
                                     : rss_of(r.precise),
                                 r.walk_rss))}};
    for (const Sources& src : sources_of(r)) {
      nlohmann::json m = {{"rss_pages", json_or_null(src.rss)}};
      for (int i = 0; i < kMembers; ++i)
        m[std::string(kMemberNames[i]) + "_pages"] =
            json_or_null(src.members[i]);
      s["sources"][src.name] = m;
    }
    j["sample"] = s;
  }
  for (const ModelErrorRow& e : errors)
    j["model_errors"].push_back(model_error_json(e));
  return j;
}

void print_sources(const StoredSample& sample, const RunInfo& run,
                   SizeUnit unit, const std::vector<ModelErrorRow>& errors) {
  const int64_t page_size = run.page_size;
  const bool task_cache = run.counting == kCountingTaskCache;
  const SampleRow& r = sample.row;
  auto size = [&](const std::optional<int64_t>& pages, bool sign = false) {
    return pages ? format_size(*pages, page_size, unit, sign) : "-";
  };
  const std::vector<Sources> sources = sources_of(r);
  constexpr std::string_view kRow =
      "{:<7}{:>12}{:>12}{:>12}{:>12}{:>12}{:>12}\n";
  fmt::print(kRow, "", "approx BPF", "stat", "precise", "statm", "exact",
             "walk");
  for (int m = 0; m < kMembers; ++m) {
    std::array<std::string, 6> cells;
    for (size_t i = 0; i < sources.size(); ++i)
      cells[i] = sources[i].name == "stat" || sources[i].name == "statm"
                     ? ""
                     : size(sources[i].members[m]);
    fmt::print(kRow, kMemberNames[m], cells[0], cells[1], cells[2], cells[3],
               cells[4], cells[5]);
  }
  fmt::print(kRow, "rss", size(sources[0].rss), size(sources[1].rss),
             size(sources[2].rss), size(sources[3].rss), size(sources[4].rss),
             size(sources[5].rss));
  const std::optional<int64_t> counter_bound =
      kernel_bound_per_counter(run.counting, run.nr_cpus, run.batch);
  std::string drift = size(sample.drift, true);
  if (const auto ratio = drift_to_rss_bound(sample.drift, counter_bound))
    drift += fmt::format(" ({:.1f}% of the kernel's RSS bound {})",
                         100.0 * *ratio, size(rss_bound(counter_bound)));
  if (r.drift_unknown)
    drift = fmt::format("unknown, {}", drift_unknown_words(*r.drift_unknown));
  if (task_cache) {
    // status and statm read the atomics too: no precise /proc value.
    fmt::print("\ndrift (kernel readers - exact): {}\n", drift);
    fmt::print("walk gap (exact - walk):        {}\n",
               size(difference(rss_of(r.exact), r.walk_rss), true));
  } else {
    fmt::print("\ndrift (approximate - precise): {}\n", drift);
    fmt::print("walk gap (precise - walk):     {}\n",
               size(difference(rss_of(r.precise), r.walk_rss), true));
  }
  fmt::print("peak: VmHWM {}, true peak {}, gap (true - VmHWM) {}\n",
             size(r.vm_hwm), size(r.true_peak),
             size(difference(r.true_peak, r.vm_hwm), true));
  if (errors.empty()) return;
  fmt::print("\nmodels, newest interval, largest error of a counter:\n");
  constexpr std::string_view kModelRow = "{:<12}{:>14}{:>14}{:>12}{:>11}  {}\n";
  fmt::print(kModelRow, "scheme", "largest error", "bound/counter",
             "error/bound", "read lines", "interval end");
  for (const ModelErrorRow& e : errors) {
    fmt::print(kModelRow, SchemeSet::kNames[e.scheme], size(e.largest_error),
               e.bound ? size(e.bound) : "none",
               e.bound && *e.bound > 0
                   ? fmt::format("{:.1f}%", 100.0 * double(e.largest_error) /
                                                double(*e.bound))
                   : "-",
               read_cost_text(e.read_cost),
               local_time_text(e.end_ns).substr(11));
  }
  fmt::print(
      "read lines: cache lines one read of a counter touches, approximate/"
      "precise\n");
}

void run(const ShowOptions& o) {
  if (o.live.enabled) return run_show_live(o.live, o.query, o.which);
  std::unique_ptr<StoreReader> reader = open_history(o.query.db);
  const ProcessSummary p = find_process(*reader, o.query.db, o.which, o.run);
  const RunSummary run_row = find_run(*reader, p.run_id);
  const RunInfo& run = run_row.info;
  const int64_t page_size = run.page_size;
  const std::optional<StoredSample> sample =
      checked(reader->latest_sample(p.id));
  const std::vector<ModelErrorRow> errors =
      checked(reader->latest_model_errors(p.id));
  if (o.query.json) {
    fmt::print("{}\n", json_text(json_of(p, run_row, sample, errors)));
    return;
  }
  fmt::print("pid {} '{}', run {}, start ticks {}{}\n", p.identity.pid,
             printable(p.comm), p.run_id, p.identity.start_ticks,
             p.exit_ns ? ", exited " + local_time_text(*p.exit_ns) : "");
  // Not exited, but no rssauditd watches it since: not known to run.
  if (!p.exit_ns && run_row.state != RunState::kRunning) {
    fmt::print("{}\n", run_stopped_text(run_row.state, run_row.stopped_ns));
    if (run_row.state == RunState::kDied) fmt::print("{}\n", kRunDiedNote);
  }
  if (!p.cgroup.empty()) fmt::print("cgroup {}\n", printable(p.cgroup));
  if (p.true_peak)  // its whole life's, even one shorter than a tick
    fmt::print("true peak RSS over its life: {}\n",
               format_size(*p.true_peak, page_size, o.query.unit(), false));
  if (!sample) {
    fmt::print("no sample stored (seen {} .. {})\n",
               local_time_text(p.first_seen_ns),
               local_time_text(p.last_seen_ns));
    return;
  }
  const SampleRow& r = sample->row;
  // Not measured (NULL) is said as such, never as 0 of 0.
  const std::string fidelity =
      r.fidelity_checked && r.fidelity_matched
          ? fmt::format("model fidelity {}/{} in its interval",
                        *r.fidelity_matched, *r.fidelity_checked)
          : "model fidelity not measured";
  fmt::print("latest sample {}, {} threads, {}\n\n", local_time_text(r.time_ns),
             r.threads ? std::to_string(*r.threads) : "?", fidelity);
  if (const std::string note = counting_note(run.counting); !note.empty())
    fmt::print("{}\n\n", note);
  print_sources(*sample, run, o.query.unit(), errors);
}

}  // namespace

void register_show(CLI::App& app) {
  auto o = std::make_shared<ShowOptions>();
  CLI::App* sub = app.add_subcommand(
      "show", "Every RSS source of one process side by side, with bounds");
  sub->add_option("process", o->which, "PID or comm")->required();
  sub->add_option("--run", o->run, "Only the process seen by this run");
  add_query_options(*sub, o->query);
  add_live_options(*sub, o->live);
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
