#include "cli/top_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "cli/errors.h"
#include "cli/gone_processes.h"
#include "cli/host_rss.h"
#include "cli/live_queries.h"
#include "cli/query_support.h"
#include "cli/table_cells.h"
#include "cli/time_args.h"
#include "cli/top_filter.h"
#include "core/formats/option_checks.h"

namespace rssaudit::cli {
namespace {

struct TopOptions {
  QueryOptions query;
  LiveOptions live;
  std::string since = "1h";
  std::string until = "now";
  std::string sort = "drift";
  size_t limit = 20;
  TopFilter filter;
  double watch_s = 0;           // --watch: redraw every so often (live)
  std::string format = "text";  // or csv, json (as --json)
  FieldSelection fields;
};

// Where a process of the window stands at its end: gone, not known to run
// (its rssauditd stopped before it exited: its values are as of the stop),
// or running.
enum class Standing { kRunning, kExited, kRunStopped };

Standing standing_of(const ProcessWindow& w, int64_t until_ns) {
  if ((w.process.exit_ns && *w.process.exit_ns < until_ns) || w.gone)
    return Standing::kExited;
  if (w.run_state != RunState::kRunning) return Standing::kRunStopped;
  return Standing::kRunning;
}

// A window as a CSV row: machine values, bytes, empty when unknown.
Row window_cells(const ProcessWindow& w, Standing standing) {
  const std::optional<int64_t> rss = resident_pages(w.latest.row);
  auto bytes = [&](const std::optional<int64_t>& pages) {
    return cell(pages ? std::optional(*pages * w.page_size) : std::nullopt);
  };
  const std::optional<double> ratio = drift_to_rss_bound(w);
  return {{"run_id", w.process.run_id},
          {"process_id", w.process.id},
          {"pid", int64_t{w.process.identity.pid}},
          {"start_ticks", static_cast<int64_t>(w.process.identity.start_ticks)},
          {"comm", w.process.comm},
          {"cgroup", w.process.cgroup},
          {"exited", int64_t{standing == Standing::kExited}},
          {"gone_from_proc", int64_t{w.gone}},
          {"run_stopped", int64_t{standing == Standing::kRunStopped}},
          {"rss_bytes", bytes(rss)},
          {"drift_bytes", bytes(w.latest.drift)},
          {"drift_unknown", cell(drift_unknown_cell(w.latest))},
          {"max_drift_bytes", bytes(w.worst_drift)},
          {"rss_bound_bytes", bytes(rss_bound(w.bound_per_counter))},
          {"drift_to_rss_bound_ppm",
           cell(ratio ? std::optional(static_cast<int64_t>(*ratio * 1e6))
                      : std::nullopt)},
          {"samples", w.samples},
          {"last_sample_ns", w.latest.row.time_ns}};
}

std::string ratio_text(const ProcessWindow& w) {
  const std::optional<double> r = drift_to_rss_bound(w);
  return r ? fmt::format("{:.1f}%", 100 * *r) : "-";
}

nlohmann::json window_json(const ProcessWindow& w) {
  const ProcessSummary& p = w.process;
  const std::optional<int64_t> rss = resident_pages(w.latest.row);
  const std::optional<double> ratio = drift_to_rss_bound(w);
  auto bytes = [&](const std::optional<int64_t>& pages) {
    return pages ? nlohmann::json(*pages * w.page_size)
                 : nlohmann::json(nullptr);
  };
  nlohmann::json j = process_identity_json(p);
  j.update(nlohmann::json{
      {"page_size", w.page_size},
      {"counting", w.task_cache ? kCountingTaskCache : kCountingPercpu},
      {"rss_pages", json_or_null(rss)},
      {"rss_bytes", bytes(rss)},
      {"drift_pages", json_or_null(w.latest.drift)},
      {"drift_bytes", bytes(w.latest.drift)},
      {"drift_unknown", drift_unknown_json(w.latest)},
      {"max_drift_pages", json_or_null(w.worst_drift)},
      {"max_drift_bytes", bytes(w.worst_drift)},
      {"max_drift_ns",
       w.worst_drift ? nlohmann::json(w.worst_at_ns) : nlohmann::json(nullptr)},
      {"bound_per_counter_pages", json_or_null(w.bound_per_counter)},
      {"rss_bound_pages", json_or_null(rss_bound(w.bound_per_counter))},
      {"drift_to_rss_bound",
       ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr)},
      {"samples", w.samples},
      {"last_sample_ns", w.latest.row.time_ns},
      {"run_state", run_state_name(w.run_state)},
      {"run_stopped_ns", json_or_null(w.run_stopped_ns)},
      {"gone_from_proc", w.gone}});
  return j;
}

// Per run whose processes are listed as stopped with it: when, and how.
std::vector<std::string> stop_lines(const std::vector<ProcessWindow>& stopped) {
  std::vector<std::string> out;
  std::set<int64_t> said;
  for (const ProcessWindow& w : stopped)
    if (said.insert(w.process.run_id).second)
      out.push_back(fmt::format("run {}: {}", w.process.run_id,
                                run_end_text(w.run_state, w.run_stopped_ns)));
  return out;
}

// The rows; the reasons of the unknown drifts they show go to `legend`.
void print_rows(const std::vector<ProcessWindow>& windows, SizeUnit unit,
                DriftLegend& legend) {
  constexpr std::string_view kRow =
      "{:>7} {:<15} {:>11} {:>11} {:>12} {:>6} {:>7}\n";
  fmt::print(kRow, "PID", "COMM", "RSS", "DRIFT", "MAX |DRIFT|", "/BOUND",
             "SAMPLES");
  for (const ProcessWindow& w : windows) {
    auto size = [&](const std::optional<int64_t>& pages, bool sign) {
      return pages ? format_size(*pages, w.page_size, unit, sign) : "-";
    };
    fmt::print(kRow, w.process.identity.pid,
               printable(w.process.comm).substr(0, 15),
               size(resident_pages(w.latest.row), false),
               drift_text(w.latest, w.page_size, unit),
               size(w.worst_drift, true), ratio_text(w), w.samples);
    legend.note(w.latest);
  }
}

void run(TopOptions o) {
  if (o.format == "json") o.query.json = true;
  if (o.live.enabled) {
    if (o.format == "csv")
      throw UsageError(
          "top --live: --format text or json (csv: over the "
          "database)");
    if (o.watch_s <= 0)
      return run_top_live(o.live, o.query, o.sort, o.limit, o.filter);
    // As top(1) does: redraw every interval until interrupted.
    for (;;) {
      fmt::print("\x1b[H\x1b[2J");
      run_top_live(o.live, o.query, o.sort, o.limit, o.filter);
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::duration<double>(o.watch_s));
    }
  }
  const Window window = parse_window(o.since, o.until);
  std::unique_ptr<StoreReader> reader = open_history(o.query.db);
  std::vector<ProcessWindow> all =
      checked(reader->process_windows(window.since_ns, window.until_ns));
  const size_t gone = mark_gone(all, *reader, this_host_name());
  const HostRss host = host_rss(all, window.until_ns);
  // The host figures are the newest run's: as of its stop, if it stopped.
  const auto newest = std::ranges::max_element(
      all, {}, [](const ProcessWindow& w) { return w.process.run_id; });
  const bool any_sampled = newest != all.end();
  const RunState host_state =
      any_sampled ? newest->run_state : RunState::kRunning;
  const std::optional<int64_t> host_stopped_ns =
      any_sampled ? newest->run_stopped_ns : std::nullopt;
  const bool task_cache = std::ranges::any_of(
      all, [](const ProcessWindow& w) { return w.task_cache; });
  // Named processes passing the filters: living ones ranked, exited and
  // those of stopped runs apart.
  std::vector<ProcessWindow> living, exited, stopped;
  size_t nameless = 0;
  for (ProcessWindow& w : all) {
    if (TopFilter::nameless(w.process.identity.pid, w.process.comm)) {
      ++nameless;
      continue;
    }
    const std::optional<int64_t> rss = resident_pages(w.latest.row);
    if (!o.filter.passes(
            w.process.comm, w.process.cgroup,
            rss ? std::optional(*rss * w.page_size) : std::nullopt))
      continue;
    switch (standing_of(w, window.until_ns)) {
      case Standing::kRunning:
        living.push_back(std::move(w));
        break;
      case Standing::kExited:
        exited.push_back(std::move(w));
        break;
      case Standing::kRunStopped:
        stopped.push_back(std::move(w));
        break;
    }
  }
  const size_t listed = living.size();
  const TopSort by = o.sort == "ratio" ? TopSort::kRatio
                     : o.sort == "rss" ? TopSort::kRss
                                       : TopSort::kDrift;
  for (std::vector<ProcessWindow>* group : {&living, &exited, &stopped}) {
    rank(*group, by);
    if (group->size() > o.limit) group->resize(o.limit);
  }
  if (o.format == "csv") {
    const Row header = window_cells(ProcessWindow{}, Standing::kRunning);
    const std::vector<size_t> columns = o.fields.pick(header);
    write_csv_header(std::cout, header, columns);
    for (const auto& [group, standing] :
         {std::pair{&living, Standing::kRunning},
          std::pair{&exited, Standing::kExited},
          std::pair{&stopped, Standing::kRunStopped}})
      for (const ProcessWindow& w : *group)
        write_csv_line(std::cout, window_cells(w, standing), columns);
    return;
  }
  if (o.query.json) {
    nlohmann::json j = {
        {"since_ns", window.since_ns},
        {"until_ns", window.until_ns},
        {"host_rss", host_rss_json(host)},
        {"host_run_state", any_sampled
                               ? nlohmann::json(run_state_name(host_state))
                               : nlohmann::json(nullptr)},
        {"host_run_stopped_ns", json_or_null(host_stopped_ns)},
        {"processes_with_samples", listed},
        {"nameless_processes", nameless},
        {"gone_from_proc", gone},
        {"processes", nlohmann::json::array()},
        {"exited", nlohmann::json::array()},
        {"run_stopped", nlohmann::json::array()}};
    for (const ProcessWindow& w : living)
      j["processes"].push_back(window_json(w));
    for (const ProcessWindow& w : exited) j["exited"].push_back(window_json(w));
    for (const ProcessWindow& w : stopped)
      j["run_stopped"].push_back(window_json(w));
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("{} .. {}: {} of {} running processes sampled\n",
             local_time_text(window.since_ns), local_time_text(window.until_ns),
             living.size(), listed);
  if (any_sampled) {
    const auto host_text = host_lines(host, o.query.unit());
    fmt::print("host, newest samples: {}\n      {}\n", host_text[0],
               host_text[1]);
    if (host_state != RunState::kRunning)
      fmt::print("      as of {}, when rssauditd stopped{}\n",
                 host_stopped_ns ? local_time_text(*host_stopped_ns) : "?",
                 host_state == RunState::kDied ? " (died)" : "");
  }
  if (living.empty() && exited.empty() && stopped.empty()) return;
  if (task_cache) fmt::print("{}\n", counting_note(kCountingTaskCache));
  DriftLegend legend;
  if (!living.empty() || stopped.empty())
    print_rows(living, o.query.unit(), legend);
  if (!stopped.empty()) {
    fmt::print(
        "not known to run (rssauditd stopped before they exited), as of "
        "then:\n");
    for (const std::string& line : stop_lines(stopped))
      fmt::print("  {}\n", line);
    if (std::ranges::any_of(stopped, [](const ProcessWindow& w) {
          return w.run_state == RunState::kDied;
        }))
      fmt::print("  {}\n", kRunDiedNote);
    print_rows(stopped, o.query.unit(), legend);
  }
  if (!exited.empty()) {
    fmt::print("exited in the window:\n");
    if (const auto shown = std::ranges::count_if(
            exited, [](const ProcessWindow& w) { return w.gone; }))
      fmt::print(
          "  ({} of them gone from /proc now, their exit not recorded yet)\n",
          shown);
    print_rows(exited, o.query.unit(), legend);
  }
  fmt::print(
      "/BOUND: max |drift| over the kernel's RSS bound, 3 counters of\n"
      "        CPUs x (batch - 1) pages each. -: unknown (no precise source\n"
      "        read; before 6.2 no bound)\n{}",
      legend.text());
  if (nameless > 0)
    fmt::print("({} processes without a name or pid not listed)\n", nameless);
}

}  // namespace

void register_top(CLI::App& app) {
  auto o = std::make_shared<TopOptions>();
  CLI::App* sub = app.add_subcommand(
      "top", "Processes ranked by RSS drift (approximate - precise)");
  add_query_options(*sub, o->query);
  add_window_options(*sub, o->since, o->until);
  sub->add_option("--sort", o->sort,
                  "drift (largest |drift|), ratio (drift / the kernel's "
                  "bound) or rss")
      ->check(CLI::IsMember({"drift", "ratio", "rss"}))
      ->capture_default_str();
  sub->add_option("-n", o->limit, "Processes shown")
      ->capture_default_str()
      ->check(whole_in(0, 10'000'000, "processes"));
  o->filter.add_options(*sub);
  o->fields.add_options(*sub, o->format, "process");
  add_live_options(*sub, o->live);
  sub->add_option("--watch", o->watch_s,
                  "With --live: redraw every SECONDS until interrupted, as "
                  "top(1) does")
      ->check(finite_in(0.1, 86400, false, "seconds"))
      ->needs(sub->get_option("--live"));
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
