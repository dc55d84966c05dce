// What the database queries (top, show, history, export) share: the --db,
// --json and unit options, opening the history read-only, time windows,
// and finding the process a PID|COMM argument names.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "cli/units.h"
#include "core/formats/printable_text.h"
#include "store/store_queries.h"

namespace rssaudit::cli {

// mm->rss_stat members by Member index, as the outputs name them.
inline constexpr std::array<std::string_view, kMembers> kMemberNames = {
    "file", "anon", "swap", "shmem"};

// rssauditd's default database, relative to where it was started.
inline constexpr const char* kDefaultDb = "./rssaudit.db";

struct QueryOptions : UnitOptions {
  std::string db = kDefaultDb;
  bool json = false;
};

void add_db_option(CLI::App& sub, std::string& db);
// --db, --json, --pages and --bytes.
void add_query_options(CLI::App& sub, QueryOptions& o);

// The database at `path`, read-only; fails with one line naming the path.
std::unique_ptr<StoreReader> open_history(const std::string& path);

// The value of a query, or its failure (which names the file) thrown.
template <class T>
T checked(Result<T, StoreError> r) {
  if (!r) throw std::runtime_error(r.error().message);
  return std::move(r).value();
}

struct Window {
  int64_t since_ns = 0;
  int64_t until_ns = 0;
};

// --since and --until, defaulting to `since` and now.
void add_window_options(CLI::App& sub, std::string& since, std::string& until);

// --since/--until as a window; a UsageError names the bad argument.
Window parse_window(const std::string& since, const std::string& until);

// The process `which` (a pid, else a comm) names in the database at
// `path`, in run `run` if given.
// Several processes with the pid: the most recent, said on stderr. Several
// with the comm: a failure listing them.
ProcessSummary find_process(StoreReader& reader, const std::string& path,
                            const std::string& which,
                            std::optional<int64_t> run);

// Run `run_id`: what it recorded of its host (page size, counting scheme)
// and how it stands.
RunSummary find_run(StoreReader& reader, int64_t run_id);

// "running", "stopped" or "died", as JSON outputs name a run's state.
std::string_view run_state_name(RunState state);
// How a run that is not running ended: "rssauditd stopped at T", and
// " (died)" when it did; empty while it runs.
std::string run_end_text(RunState state,
                         const std::optional<int64_t>& stopped_ns);
// For the values of such a run: run_end_text() and "; these values are as
// of then", in 80 columns. Empty while it runs.
std::string run_stopped_text(RunState state,
                             const std::optional<int64_t>& stopped_ns);
// What "died" means, in one line for the outputs that name a died run.
inline constexpr std::string_view kRunDiedNote =
    "died: killed or crashed; rows of up to a flush interval before it were "
    "lost";

// Before 6.2 (RunInfo::counting kCountingTaskCache) which source is exact,
// for a human, in lines of at most 80 columns: every reader reads the
// atomics there. Empty otherwise.
std::string counting_note(std::string_view counting);

// Resident pages as VmRSS counts them (precise file + anon + shmem), else
// statm's resident, else stat's approximate RSS.
std::optional<int64_t> resident_pages(const SampleRow& r);

// |RSS drift| / the kernel's bound on it, when both are known: the stored
// bound is per counter, and the RSS is kRssCounters of them.
std::optional<int64_t> rss_bound(std::optional<int64_t> counter_bound);
std::optional<double> drift_to_rss_bound(std::optional<int64_t> drift,
                                         std::optional<int64_t> counter_bound);
// The same for the window's largest drift.
std::optional<double> drift_to_rss_bound(const ProcessWindow& w);

// Why a stored sample's drift is unknown although its sources were read,
// as stored ("moving"), for CSV and JSON; empty (null) otherwise.
std::optional<std::string> drift_unknown_cell(const StoredSample& s);
nlohmann::json drift_unknown_json(const StoredSample& s);

// A stored drift in a table: its size; else, where its sources were read,
// '?' and why it is unknown in a word ("?moving", "?exiting", "?bound"),
// which the table's DriftLegend explains; else "-".
std::string drift_text(const StoredSample& s, int64_t page_size, SizeUnit unit);

// The reasons for unknown drifts a table showed, to say below it in plain
// words.
class DriftLegend {
 public:
  void note(const StoredSample& s);
  // One line per reason noted ("?moving: drift unknown, the counters moved
  // while /proc was read"), each starting with `indent`; empty if none.
  std::string text(std::string_view indent = "") const;

 private:
  std::array<bool, kDriftUnknownReasons> seen_{};
};

enum class TopSort { kDrift, kRatio, kRss };
// Largest first; processes without the value last, then by id.
void rank(std::vector<ProcessWindow>& windows, TopSort by);

// `j` as JSON text: bytes that are not UTF-8 (a process may name itself
// "\xff") become U+FFFD instead of failing the output half-written.
// `indent` < 0: one line.
std::string json_text(const nlohmann::json& j, int indent = 2);

// A JSON number, or null for a source that was not read.
nlohmann::json json_or_null(const std::optional<int64_t>& v);

// One model_errors row as show and export print it: `scheme`, `start_ns`,
// `end_ns`, `largest_error_pages`, `bound_per_counter_pages` (null: none),
// `shared_updates`, `bytes_per_mm`, `read_lines_approximate` (null: a row
// from before it was measured) and `read_lines_precise` (null: no precise
// read, or unmeasured).
nlohmann::json model_error_json(const ModelErrorRow& e);
// "approximate/precise" cache lines; "1/none" without a precise read, "?"
// when not measured.
std::string read_cost_text(const std::optional<ReadCost>& cost);

// Which process `p` is, as every JSON output names it: `run_id`,
// `process_id`, `pid`, `start_ticks`, `comm`.
nlohmann::json process_identity_json(const ProcessSummary& p);

// The whole process row: process_identity_json() and `cgroup`,
// `first_seen_ns`, `last_seen_ns`, `exit_ns`, `exit_residue_pages`.
nlohmann::json process_json(const ProcessSummary& p);

}  // namespace rssaudit::cli
