#include "cli/history_command.h"

#include <fmt/core.h>

#include <array>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/errors.h"
#include "cli/query_support.h"
#include "cli/table_cells.h"
#include "cli/time_args.h"
#include "core/schemes/scheme_set.h"

namespace rssaudit::cli {
namespace {

struct HistoryOptions {
  QueryOptions query;
  std::string which;
  std::optional<int64_t> run;
  std::string since = "1h";
  std::string until = "now";
  std::string step;  // --step: one line per step; empty: every sample
  std::string format = "text";  // or csv, json (as --json)
  FieldSelection fields;
};

// Column headings that fit 7 characters, in SchemeSet::kNames order.
constexpr std::array<std::string_view, 6> kSchemeHeadings = {
    "upstrm", "hpcc", "pertask", "percpu", "lazy", "syncq"};
static_assert(kSchemeHeadings.size() == SchemeSet::kCount);

using SchemeErrors = std::array<std::optional<int64_t>, SchemeSet::kCount>;

// Per sample, each scheme's largest error over the model-error interval
// holding it: an interval covers (start_ns, end_ns], a process's first one
// [t, t]; every scheme's rows of an interval share its times. A sample of an
// interval not written yet (still open in the daemon) has none.
std::vector<SchemeErrors> errors_at(const std::vector<StoredSample>& samples,
                                    const std::vector<ModelErrorRow>& rows) {
  std::vector<SchemeErrors> out;
  size_t next = 0;
  for (const StoredSample& s : samples) {
    const int64_t t = s.row.time_ns;
    while (next < rows.size() && rows[next].end_ns < t) ++next;
    SchemeErrors e{};
    for (size_t k = next;
         k < rows.size() && rows[k].end_ns == rows[next].end_ns; ++k)
      if (rows[k].start_ns < t || rows[k].start_ns == t)
        e[rows[k].scheme] = rows[k].largest_error;
    out.push_back(e);
  }
  return out;
}

// The window's sampling gaps of the process's run, for a person.
void print_gaps(const std::vector<StoredGap>& gaps) {
  for (const StoredGap& g : gaps)
    fmt::print(
        "no sample from {} to {} ({:.1f} s): rssauditd was stopped or "
        "stalled\n",
        local_time_text(g.gap.start_ns), local_time_text(g.gap.end_ns),
        double(g.gap.end_ns - g.gap.start_ns) / 1e9);
}

// One sample per `step_ns` of time (from the epoch, so steps fall on whole
// minutes or hours): the one with the largest |drift| (the peak a plot must
// not lose), each scheme's error the largest of the step. `errors` keeps
// step with `samples`.
void downsample(std::vector<StoredSample>& samples,
                std::vector<SchemeErrors>& errors, int64_t step_ns) {
  std::vector<StoredSample> kept;
  std::vector<SchemeErrors> kept_errors;
  for (size_t i = 0; i < samples.size(); ++i) {
    const bool same = !kept.empty() && kept.back().row.time_ns / step_ns ==
                                           samples[i].row.time_ns / step_ns;
    if (!same) {
      kept.push_back(samples[i]);
      kept_errors.push_back(errors[i]);
      continue;
    }
    auto magnitude = [](const StoredSample& s) {
      return s.drift ? std::llabs(*s.drift) : -1;
    };
    if (magnitude(samples[i]) > magnitude(kept.back()))
      kept.back() = samples[i];
    for (size_t k = 0; k < SchemeSet::kCount; ++k)
      if (errors[i][k])
        kept_errors.back()[k] =
            std::max(kept_errors.back()[k].value_or(0), *errors[i][k]);
  }
  samples = std::move(kept);
  errors = std::move(kept_errors);
}

// A sample as a CSV row: bytes, empty when unknown; each scheme's largest
// error of a counter over the interval.
Row sample_row(const StoredSample& s, const SchemeErrors& errors,
               int64_t page_size) {
  auto bytes = [&](const std::optional<int64_t>& pages) {
    return cell(pages ? std::optional(*pages * page_size) : std::nullopt);
  };
  Row row = {{"time_ns", s.row.time_ns},
             {"time_utc", utc_time_text(s.row.time_ns)},
             {"rss_bytes", bytes(resident_pages(s.row))},
             {"drift_bytes", bytes(s.drift)},
             {"drift_unknown", cell(drift_unknown_cell(s))},
             {"threads", cell(s.row.threads)},
             {"fidelity_checked", cell(s.row.fidelity_checked)},
             {"fidelity_matched", cell(s.row.fidelity_matched)}};
  for (size_t k = 0; k < SchemeSet::kCount; ++k)
    row.emplace_back(fmt::format("{}_error_bytes", SchemeSet::kNames[k]),
                     bytes(errors[k]));
  return row;
}

void run(const HistoryOptions& o) {
  std::optional<int64_t> step_ns;
  if (!o.step.empty()) {
    const Result<int64_t> parsed = duration_ns(o.step);
    if (!parsed)
      throw UsageError(
          fmt::format("--step {}: {}", o.step, parsed.error().message));
    step_ns = *parsed;
  }
  const Window window = parse_window(o.since, o.until);
  std::unique_ptr<StoreReader> reader = open_history(o.query.db);
  const ProcessSummary p = find_process(*reader, o.query.db, o.which, o.run);
  const RunSummary run_row = find_run(*reader, p.run_id);
  const RunInfo& run = run_row.info;
  const int64_t page_size = run.page_size;
  std::vector<StoredGap> gaps =
      checked(reader->sampling_gaps(window.since_ns, window.until_ns));
  std::erase_if(gaps, [&](const StoredGap& g) {
    return g.run_id != p.run_id || g.gap.end_ns <= p.first_seen_ns ||
           g.gap.start_ns >= p.last_seen_ns;
  });
  const std::string stopped =
      p.exit_ns ? "" : run_stopped_text(run_row.state, run_row.stopped_ns);
  std::vector<StoredSample> samples =
      checked(reader->process_history(p.id, window.since_ns, window.until_ns));
  const size_t sampled = samples.size();
  // Intervals that ended before the window still cover its first samples.
  const std::vector<ModelErrorRow> rows =
      checked(reader->model_errors(p.id, 0, window.until_ns));
  std::vector<SchemeErrors> errors = errors_at(samples, rows);
  if (step_ns) downsample(samples, errors, *step_ns);
  if (o.format == "csv") {
    const Row header = sample_row(StoredSample{}, SchemeErrors{}, page_size);
    const std::vector<size_t> columns = o.fields.pick(header);
    write_csv_header(std::cout, header, columns);
    for (size_t i = 0; i < samples.size(); ++i)
      write_csv_line(std::cout, sample_row(samples[i], errors[i], page_size),
                     columns);
    return;
  }
  if (o.query.json || o.format == "json") {
    nlohmann::json j = process_identity_json(p);
    j.update(
        nlohmann::json{{"page_size", page_size},
                       {"counting", run.counting},
                       {"since_ns", window.since_ns},
                       {"until_ns", window.until_ns},
                       {"step_ns", json_or_null(step_ns)},
                       {"samples_in_window", sampled},
                       {"run_state", run_state_name(run_row.state)},
                       {"run_stopped_ns", json_or_null(run_row.stopped_ns)},
                       {"sampling_gaps", nlohmann::json::array()},
                       {"samples", nlohmann::json::array()}});
    for (const StoredGap& g : gaps)
      j["sampling_gaps"].push_back(
          {{"start_ns", g.gap.start_ns}, {"end_ns", g.gap.end_ns}});
    for (size_t i = 0; i < samples.size(); ++i) {
      const SampleRow& r = samples[i].row;
      nlohmann::json e = nlohmann::json::object();
      for (size_t k = 0; k < SchemeSet::kCount; ++k)
        e[std::string(SchemeSet::kNames[k])] = json_or_null(errors[i][k]);
      j["samples"].push_back(
          {{"time_ns", r.time_ns},
           {"rss_pages", json_or_null(resident_pages(r))},
           {"drift_pages", json_or_null(samples[i].drift)},
           {"drift_unknown", drift_unknown_json(samples[i])},
           {"threads", json_or_null(r.threads)},
           {"fidelity_checked", json_or_null(r.fidelity_checked)},
           {"fidelity_matched", json_or_null(r.fidelity_matched)},
           {"largest_error_pages", e}});
    }
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("pid {} '{}', run {}, start ticks {}\n", p.identity.pid,
             printable(p.comm), p.run_id, p.identity.start_ticks);
  fmt::print("{} samples, {} .. {}\n", sampled,
             local_time_text(window.since_ns),
             local_time_text(window.until_ns));
  if (step_ns)
    fmt::print(
        "one line per {}: the sample with the largest |drift|, the "
        "largest errors\n",
        o.step);
  if (const std::string note = counting_note(run.counting); !note.empty())
    fmt::print("{}\n", note);
  if (!stopped.empty()) fmt::print("{}\n", stopped);
  if (!stopped.empty() && run_row.state == RunState::kDied)
    fmt::print("{}\n", kRunDiedNote);
  print_gaps(gaps);
  if (samples.empty()) return;
  fmt::print("{:>78}\n", "largest model error per interval, pages");
  fmt::print("{:<8}{:>11}{:>11}", "time", "rss", "drift");
  for (std::string_view h : kSchemeHeadings) fmt::print("{:>8}", h);
  fmt::print("\n");
  const SizeUnit unit = o.query.unit();
  DriftLegend legend;
  std::string day;
  for (size_t i = 0; i < samples.size(); ++i) {
    const SampleRow& r = samples[i].row;
    const std::string when = local_time_text(r.time_ns);
    // A date line whenever the day changes keeps the time column short.
    if (when.substr(0, 10) != day) {
      day = when.substr(0, 10);
      fmt::print("{}\n", day);
    }
    const std::optional<int64_t> rss = resident_pages(r);
    fmt::print("{:<8}{:>11}{:>11}", when.substr(11),
               rss ? format_size(*rss, page_size, unit) : "-",
               drift_text(samples[i], page_size, unit));
    legend.note(samples[i]);
    for (const std::optional<int64_t>& e : errors[i])
      fmt::print("{:>8}", e ? std::to_string(*e) : "-");
    fmt::print("\n");
  }
  fmt::print("{}", legend.text());
}

}  // namespace

void register_history(CLI::App& app) {
  auto o = std::make_shared<HistoryOptions>();
  CLI::App* sub = app.add_subcommand(
      "history", "Drift and model errors of one process over time");
  sub->add_option("process", o->which, "PID or comm")->required();
  sub->add_option("--run", o->run, "Only the process seen by this run");
  add_window_options(*sub, o->since, o->until);
  sub->add_option("--step", o->step,
                  "One line per step (30s, 5m, 1h): the sample with the "
                  "largest |drift|");
  add_query_options(*sub, o->query);
  o->fields.add_options(*sub, o->format, "sample");
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
