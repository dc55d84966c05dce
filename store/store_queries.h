// Read-only access to the history database, for the CLI: opens the file so
// that SQLite itself refuses every write, and answers the few questions the
// subcommands ask. Safe while rssauditd writes (WAL readers never block it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "store/store_db.h"
#include "store/store_rows.h"

namespace rssaudit {

// How a run stands, from the database and whether an rssauditd holds it.
enum class RunState : uint8_t {
  kRunning,  // unended, the newest run, and its rssauditd holds the file
  kStopped,  // its rssauditd ended it
  // Its rssauditd stopped without ending it (killed, crashed, its host went
  // down): marked so by the next one to open the database (runs.end_reason
  // 'died'), or unended while no rssauditd holds the file or a newer run
  // began.
  kDied,
};

struct RunSummary {
  int64_t id = 0;
  RunInfo info;
  std::optional<int64_t> ended_ns;  // as stored
  int64_t processes = 0;
  RunState state = RunState::kRunning;
  // When its values stopped: its end, or for a run that died unmarked its
  // last heartbeat (before schema 9: its newest sighting of a process).
  // Empty while running.
  std::optional<int64_t> stopped_ns;
};

struct ProcessSummary {
  int64_t id = 0;
  int64_t run_id = 0;
  ProcessIdentity identity;
  std::string comm;
  std::string cgroup;
  int64_t first_seen_ns = 0;
  int64_t last_seen_ns = 0;
  std::optional<int64_t> exit_ns;
  std::optional<int64_t> exit_residue;
  std::optional<int64_t> true_peak;  // pages, the whole life's; at its end
};

// The sample of one process with the largest |drift| in a window.
struct DriftEntry {
  ProcessSummary process;
  int64_t drift_pages = 0;  // signed: approximate - precise
  int64_t drift_bytes = 0;
  int64_t at_ns = 0;
  int64_t samples = 0;  // of this process in the window
};

struct StoredSample {
  SampleRow row;
  std::optional<int64_t> drift;  // as stored: rss_drift(row)
};

// One process's samples in a window, summed up for `rssaudit top`.
struct ProcessWindow {
  ProcessSummary process;
  int64_t page_size = 0;  // bytes, of the process's run
  int64_t samples = 0;
  StoredSample latest;  // the newest sample in the window
  // The sample with the largest |drift| (signed); empty when no sample of
  // the window has a drift.
  std::optional<int64_t> worst_drift;
  int64_t worst_at_ns = 0;
  // The kernel's bound per counter, from its run's CPUs and batch
  // (percpu_counter: nr_cpus x (batch - 1)); empty before 6.2, whose
  // per-task caches have none.
  std::optional<int64_t> bound_per_counter;
  // Its run's kernel counted with per-task caches (runs.counting): no
  // /proc value is precise there; drift is against the update stream.
  bool task_cache = false;
  // Its run's state and stop (RunSummary): a process of a run that is not
  // running and did not exit is not known to run; its values are as of the
  // stop.
  RunState run_state = RunState::kRunning;
  std::optional<int64_t> run_stopped_ns;
  // Not the store's: set by a query that found its pid gone from this
  // host's /proc while its run runs and no exit is recorded
  // (cli/gone_processes.h).
  bool gone = false;
};

// A sampling gap of one run (schema/009).
struct StoredGap {
  int64_t run_id = 0;
  SamplingGap gap;
};

// Per scheme over a window: the interval with the largest error.
struct SchemeWindow {
  size_t scheme = 0;  // index into SchemeSet::kNames
  int64_t largest_error = 0;
  std::optional<int64_t> bound;  // of that interval
  int64_t intervals = 0;
  int64_t process_id = 0;             // whose interval it was
  std::optional<ReadCost> read_cost;  // of that interval; empty: unmeasured
};

class StoreReader {
 public:
  // Fails, naming the file, unless it is an rssaudit database at this
  // build's schema version.
  static Result<std::unique_ptr<StoreReader>, StoreError> open_read_only(
      const std::string& path);

  // Every run, oldest first, with its state.
  Result<std::vector<RunSummary>, StoreError> list_runs();
  // Sampling gaps that overlap [since_ns, until_ns), oldest first.
  Result<std::vector<StoredGap>, StoreError> sampling_gaps(int64_t since_ns,
                                                           int64_t until_ns);
  // Every process with this pid, in every run, newest first.
  Result<std::vector<ProcessSummary>, StoreError> processes_with_pid(
      uint32_t pid);
  // Every process with this comm, in every run, newest first.
  Result<std::vector<ProcessSummary>, StoreError> processes_with_comm(
      const std::string& comm);
  // Processes with a sample or a model error in [since_ns, until_ns), by id.
  Result<std::vector<ProcessSummary>, StoreError> processes_seen(
      int64_t since_ns, int64_t until_ns);
  // Processes ranked by their largest |drift| in [since_ns, until_ns).
  Result<std::vector<DriftEntry>, StoreError> top_drift(int64_t since_ns,
                                                        int64_t until_ns,
                                                        size_t limit);
  // The samples of one process in [since_ns, until_ns), oldest first.
  Result<std::vector<StoredSample>, StoreError> process_history(
      int64_t process_id, int64_t since_ns, int64_t until_ns);
  // Every process with a sample in [since_ns, until_ns), in id order.
  Result<std::vector<ProcessWindow>, StoreError> process_windows(
      int64_t since_ns, int64_t until_ns);
  // The newest sample of one process; empty if it has none.
  Result<std::optional<StoredSample>, StoreError> latest_sample(
      int64_t process_id);
  // Calls `visit` for each sample of [since_ns, until_ns) without holding
  // them all, by time then process.
  Result<void, StoreError> for_each_sample(
      int64_t since_ns, int64_t until_ns,
      const std::function<void(const StoredSample&)>& visit);
  Result<int64_t, StoreError> count_samples(int64_t since_ns, int64_t until_ns);
  // The samples of [since_ns, until_ns) whose drift is unknown although
  // their sources were read, by DriftUnknown.
  Result<std::array<int64_t, kDriftUnknownReasons>, StoreError>
  count_drift_unknown(int64_t since_ns, int64_t until_ns);

  // The newest model_errors row of each scheme for one process, in
  // SchemeSet::kNames order (schemes without a row are left out).
  Result<std::vector<ModelErrorRow>, StoreError> latest_model_errors(
      int64_t process_id);
  // model_errors rows whose interval ended in [since_ns, until_ns), of one
  // process or of all, by end time. Rows of unknown schemes are skipped.
  Result<std::vector<ModelErrorRow>, StoreError> model_errors(
      std::optional<int64_t> process_id, int64_t since_ns, int64_t until_ns);
  // Per scheme, the interval ending in [since_ns, until_ns) with the
  // largest error, in SchemeSet::kNames order.
  Result<std::vector<SchemeWindow>, StoreError> scheme_errors(int64_t since_ns,
                                                              int64_t until_ns);

 private:
  StoreReader(std::unique_ptr<Database> db, std::optional<bool> writer_holds)
      : db_(std::move(db)), writer_holds_(writer_holds) {}
  // Prepares `sql`, binds its parameters with bind(statement) and returns
  // read(statement) of each row, in order.
  template <class Bind, class Read>
  auto rows(std::string_view sql, Bind&& bind, Read&& read)
      -> Result<std::vector<std::invoke_result_t<Read&, const Statement&>>,
                StoreError>;
  // The processes selected by `tail` (SQL following "FROM processes p"),
  // after bind(statement) bound its parameters.
  template <class Bind>
  Result<std::vector<ProcessSummary>, StoreError> select_processes(
      std::string_view tail, Bind&& bind);

  std::unique_ptr<Database> db_;
  // Whether an rssauditd held the file when it was opened; empty: could not
  // tell (then an unended newest run counts as running).
  std::optional<bool> writer_holds_;
};

}  // namespace rssaudit
