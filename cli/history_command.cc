#include "cli/history_command.h"

#include <fmt/core.h>

#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/query_support.h"
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
};

// Column headings that fit 7 characters, in SchemeSet::kNames order.
constexpr std::array<std::string_view, 6> kSchemeHeadings = {
    "upstrm", "hpcc", "pertask", "percpu", "lazy", "syncq"};
static_assert(kSchemeHeadings.size() == SchemeSet::kCount);

using SchemeErrors = std::array<std::optional<int64_t>, SchemeSet::kCount>;

// Per sample, each scheme's error over the interval that ended last at or
// before the sample (the daemon writes both at the same instant).
std::vector<SchemeErrors> errors_at(const std::vector<StoredSample>& samples,
                                    const std::vector<ModelErrorRow>& rows) {
  std::vector<SchemeErrors> out;
  SchemeErrors current{};
  size_t next = 0;
  for (const StoredSample& s : samples) {
    for (; next < rows.size() && rows[next].end_ns <= s.row.time_ns; ++next)
      current[rows[next].scheme] = rows[next].largest_error;
    out.push_back(current);
  }
  return out;
}

void run(const HistoryOptions& o) {
  const Window window = parse_window(o.since, o.until);
  std::unique_ptr<StoreReader> reader = open_history(o.query.db);
  const ProcessSummary p = find_process(*reader, o.query.db, o.which, o.run);
  const RunInfo run = run_info(*reader, p.run_id);
  const int64_t page_size = run.page_size;
  const std::vector<StoredSample> samples =
      checked(reader->process_history(p.id, window.since_ns, window.until_ns));
  // Intervals that ended before the window still cover its first samples.
  const std::vector<ModelErrorRow> rows =
      checked(reader->model_errors(p.id, 0, window.until_ns));
  const std::vector<SchemeErrors> errors = errors_at(samples, rows);
  if (o.query.json) {
    nlohmann::json j = process_identity_json(p);
    j.update(nlohmann::json{{"page_size", page_size},
                            {"counting", run.counting},
                            {"since_ns", window.since_ns},
                            {"until_ns", window.until_ns},
                            {"samples", nlohmann::json::array()}});
    for (size_t i = 0; i < samples.size(); ++i) {
      const SampleRow& r = samples[i].row;
      nlohmann::json e = nlohmann::json::object();
      for (size_t k = 0; k < SchemeSet::kCount; ++k)
        e[std::string(SchemeSet::kNames[k])] = json_or_null(errors[i][k]);
      j["samples"].push_back(
          {{"time_ns", r.time_ns},
           {"rss_pages", json_or_null(resident_pages(r))},
           {"drift_pages", json_or_null(samples[i].drift)},
           {"threads", json_or_null(r.threads)},
           {"fidelity_checked", json_or_null(r.fidelity_checked)},
           {"fidelity_matched", json_or_null(r.fidelity_matched)},
           {"largest_error_pages", e}});
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("pid {} '{}', run {}, start ticks {}\n", p.identity.pid,
             printable(p.comm), p.run_id, p.identity.start_ticks);
  fmt::print("{} samples, {} .. {}\n", samples.size(),
             local_time_text(window.since_ns),
             local_time_text(window.until_ns));
  if (const std::string note = counting_note(run.counting); !note.empty())
    fmt::print("{}\n", note);
  if (samples.empty()) return;
  fmt::print("{:>78}\n", "largest model error per interval, pages");
  fmt::print("{:<8}{:>11}{:>11}", "time", "rss", "drift");
  for (std::string_view h : kSchemeHeadings) fmt::print("{:>8}", h);
  fmt::print("\n");
  const SizeUnit unit = o.query.unit();
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
               samples[i].drift
                   ? format_size(*samples[i].drift, page_size, unit, true)
                   : "-");
    for (const std::optional<int64_t>& e : errors[i])
      fmt::print("{:>8}", e ? std::to_string(*e) : "-");
    fmt::print("\n");
  }
}

}  // namespace

void register_history(CLI::App& app) {
  auto o = std::make_shared<HistoryOptions>();
  CLI::App* sub = app.add_subcommand(
      "history", "Drift and model errors of one process over time");
  sub->add_option("process", o->which, "PID or comm")->required();
  sub->add_option("--run", o->run, "Only the process seen by this run");
  add_window_options(*sub, o->since, o->until);
  add_query_options(*sub, o->query);
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
