#include "cli/query_support.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "cli/errors.h"
#include "cli/time_args.h"
#include "core/schemes/scheme_set.h"
#include "core/schemes/update.h"

namespace rssaudit::cli {

void add_db_option(CLI::App& sub, std::string& db) {
  sub.add_option("--db", db, "History database written by rssauditd")
      ->capture_default_str();
}

void add_query_options(CLI::App& sub, QueryOptions& o) {
  add_db_option(sub, o.db);
  sub.add_flag("--json", o.json, "Print JSON");
  add_unit_options(sub, o);
}

std::unique_ptr<StoreReader> open_history(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw std::runtime_error(
        fmt::format("{}: no such database; is rssauditd running? default is {}",
                    path, kDefaultDb));
  return checked(StoreReader::open_read_only(path));
}

void add_window_options(CLI::App& sub, std::string& since, std::string& until) {
  sub.add_option("--since", since,
                 "Window start: 30s, 15m, 1h, 7d ago, or 'YYYY-MM-DD HH:MM' "
                 "(local time)")
      ->capture_default_str();
  sub.add_option("--until", until, "Window end, as --since, or now")
      ->capture_default_str();
}

Window parse_window(const std::string& since, const std::string& until) {
  const int64_t now = wall_now_ns();
  auto parse = [&](const char* name, const std::string& text) {
    const Result<int64_t> t = parse_time_arg(text, now);
    if (!t)
      throw UsageError(
          fmt::format("{} '{}': {}", name, text, t.error().message));
    return *t;
  };
  Window w{parse("--since", since), parse("--until", until)};
  // --until names the last instant wanted: "now" includes a sample of now.
  if (until == "now") ++w.until_ns;
  if (w.since_ns >= w.until_ns)
    throw UsageError(
        fmt::format("--since '{}' is not before --until '{}'", since, until));
  return w;
}

ProcessSummary find_process(StoreReader& reader, const std::string& path,
                            const std::string& which,
                            std::optional<int64_t> run) {
  const bool is_pid = !which.empty() && which.size() <= 10 &&
                      which.find_first_not_of("0123456789") == which.npos;
  std::vector<ProcessSummary> found =
      is_pid ? checked(reader.processes_with_pid(
                   static_cast<uint32_t>(std::stoull(which))))
             : checked(reader.processes_with_comm(which));
  std::erase_if(
      found, [&](const ProcessSummary& p) { return run && p.run_id != *run; });
  const std::string what =
      is_pid ? "pid " + which : fmt::format("comm '{}'", printable(which));
  const std::string where = run ? fmt::format(" in run {}", *run) : "";
  if (found.empty())
    throw std::runtime_error(
        fmt::format("no process with {}{} in {}", what, where, path));
  // Rows of one (pid, start time) in several runs are one process seen by
  // several daemon lifetimes: not an ambiguity.
  std::set<std::pair<uint32_t, uint64_t>> identities;
  for (const ProcessSummary& p : found)
    identities.insert({p.identity.pid, p.identity.start_ticks});
  if (identities.size() == 1) return found.front();
  if (!is_pid) {
    std::string list;
    for (const ProcessSummary& p : found)
      list += fmt::format("\n  pid {:>7}  run {}  start ticks {}  last seen {}",
                          p.identity.pid, p.run_id, p.identity.start_ticks,
                          local_time_text(p.last_seen_ns));
    throw std::runtime_error(
        fmt::format("{}{} matches {} processes; name one by PID (and --run):{}",
                    what, where, identities.size(), list));
  }
  const ProcessSummary& p = found.front();
  fmt::print(stderr,
             "rssaudit: pid {} was {} processes (pids are reused); showing "
             "the most recent: '{}', run {}, start ticks {}\n",
             which, identities.size(), printable(p.comm), p.run_id,
             p.identity.start_ticks);
  return p;
}

RunSummary find_run(StoreReader& reader, int64_t run_id) {
  for (const RunSummary& r : checked(reader.list_runs()))
    if (r.id == run_id) return r;
  throw std::runtime_error(fmt::format("run {} is missing", run_id));
}

std::string_view run_state_name(RunState state) {
  switch (state) {
    case RunState::kRunning:
      return "running";
    case RunState::kStopped:
      return "stopped";
    case RunState::kDied:
      return "died";
  }
  return "?";
}

std::string run_end_text(RunState state,
                         const std::optional<int64_t>& stopped_ns) {
  if (state == RunState::kRunning) return {};
  const std::string at = stopped_ns ? local_time_text(*stopped_ns) : "?";
  return fmt::format("rssauditd stopped at {}{}", at,
                     state == RunState::kDied ? " (died)" : "");
}

std::string run_stopped_text(RunState state,
                             const std::optional<int64_t>& stopped_ns) {
  const std::string end = run_end_text(state, stopped_ns);
  return end.empty() ? end : end + "; these values are as of then";
}

std::string counting_note(std::string_view counting) {
  if (counting != kCountingTaskCache) return {};
  return "this kernel counts RSS with atomics fed by per-task caches (before\n"
         "Linux 6.2): stat, statm and status all read the atomics and miss\n"
         "what each thread cached since its last sync, so the exact value is\n"
         "the update stream's (a page-table walk confirms it), and drift is\n"
         "what every reader shows - exact";
}

std::optional<int64_t> resident_pages(const SampleRow& r) {
  if (const std::optional<int64_t> precise = rss_of(r.precise)) return precise;
  return r.statm_resident ? r.statm_resident : r.stat_rss;
}

std::optional<int64_t> rss_bound(std::optional<int64_t> counter_bound) {
  if (!counter_bound || *counter_bound <= 0) return std::nullopt;
  return kRssCounters * *counter_bound;
}

std::optional<double> drift_to_rss_bound(std::optional<int64_t> drift,
                                         std::optional<int64_t> counter_bound) {
  const std::optional<int64_t> bound = rss_bound(counter_bound);
  if (!drift || !bound) return std::nullopt;
  return std::abs(double(*drift)) / double(*bound);
}

std::optional<double> drift_to_rss_bound(const ProcessWindow& w) {
  return drift_to_rss_bound(w.worst_drift, w.bound_per_counter);
}

std::optional<std::string> drift_unknown_cell(const StoredSample& s) {
  if (!s.row.drift_unknown) return std::nullopt;
  return std::string(drift_unknown_name(*s.row.drift_unknown));
}

nlohmann::json drift_unknown_json(const StoredSample& s) {
  const std::optional<std::string> why = drift_unknown_cell(s);
  return why ? nlohmann::json(*why) : nlohmann::json(nullptr);
}

namespace {

// The word a table shows for each DriftUnknown, after a '?'.
constexpr std::array<std::string_view, kDriftUnknownReasons>
    kDriftUnknownWords = {"moving", "exiting", "bound"};

}  // namespace

std::string drift_text(const StoredSample& s, int64_t page_size,
                       SizeUnit unit) {
  if (s.drift) return format_size(*s.drift, page_size, unit, true);
  if (s.row.drift_unknown)
    return fmt::format(
        "?{}", kDriftUnknownWords[static_cast<size_t>(*s.row.drift_unknown)]);
  return "-";
}

void DriftLegend::note(const StoredSample& s) {
  if (s.row.drift_unknown)
    seen_[static_cast<size_t>(*s.row.drift_unknown)] = true;
}

std::string DriftLegend::text(std::string_view indent) const {
  std::string out;
  for (size_t i = 0; i < kDriftUnknownReasons; ++i)
    if (seen_[i])
      out += fmt::format("{}?{}: drift unknown, {}\n", indent,
                         kDriftUnknownWords[i],
                         drift_unknown_words(static_cast<DriftUnknown>(i)));
  return out;
}

void rank(std::vector<ProcessWindow>& windows, TopSort by) {
  auto key = [by](const ProcessWindow& w) -> std::optional<double> {
    switch (by) {
      case TopSort::kDrift:
        if (!w.worst_drift) return std::nullopt;
        return std::abs(double(*w.worst_drift));
      case TopSort::kRatio:
        return drift_to_rss_bound(w);
      case TopSort::kRss:
        if (auto rss = resident_pages(w.latest.row))
          return double(*rss) * double(w.page_size);
        return std::nullopt;
    }
    return std::nullopt;
  };
  std::ranges::stable_sort(
      windows, [&](const ProcessWindow& a, const ProcessWindow& b) {
        const std::optional<double> ka = key(a), kb = key(b);
        if (ka.has_value() != kb.has_value()) return ka.has_value();
        if (ka && *ka != *kb) return *ka > *kb;
        return a.process.id < b.process.id;
      });
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json json_or_null(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json model_error_json(const ModelErrorRow& e) {
  return {{"scheme", SchemeSet::kNames[e.scheme]},
          {"start_ns", e.start_ns},
          {"end_ns", e.end_ns},
          {"largest_error_pages", e.largest_error},
          {"bound_per_counter_pages", json_or_null(e.bound)},
          {"shared_updates", e.shared_updates},
          {"bytes_per_mm", e.bytes_per_mm},
          {"read_lines_approximate",
           json_or_null(e.read_cost ? std::optional(e.read_cost->approximate)
                                    : std::nullopt)},
          {"read_lines_precise",
           json_or_null(e.read_cost ? e.read_cost->precise : std::nullopt)}};
}

std::string read_cost_text(const std::optional<ReadCost>& cost) {
  if (!cost) return "?";
  return fmt::format("{}/{}", cost->approximate,
                     cost->precise ? std::to_string(*cost->precise) : "none");
}

nlohmann::json process_identity_json(const ProcessSummary& p) {
  return {{"run_id", p.run_id},
          {"process_id", p.id},
          {"pid", p.identity.pid},
          {"start_ticks", p.identity.start_ticks},
          {"comm", p.comm}};
}

nlohmann::json process_json(const ProcessSummary& p) {
  nlohmann::json j = process_identity_json(p);
  j.update(nlohmann::json{{"cgroup", p.cgroup},
                          {"first_seen_ns", p.first_seen_ns},
                          {"last_seen_ns", p.last_seen_ns},
                          {"exit_ns", json_or_null(p.exit_ns)},
                          {"exit_residue_pages", json_or_null(p.exit_residue)},
                          {"true_peak_pages", json_or_null(p.true_peak)}});
  return j;
}

}  // namespace rssaudit::cli
