// Read-only access to the history database, for the CLI: opens the file so
// that SQLite itself refuses every write, and answers the few questions the
// subcommands ask. Safe while rssauditd writes (WAL readers never block it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/store_db.h"
#include "daemon/store_rows.h"

namespace rssaudit {

struct RunSummary {
  int64_t id = 0;
  RunInfo info;
  std::optional<int64_t> ended_ns;
  int64_t processes = 0;
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

class StoreReader {
 public:
  // Fails, naming the file, unless it is an rssaudit database at this
  // build's schema version.
  static StoreResult<std::unique_ptr<StoreReader>> open_read_only(
      const std::string& path);

  StoreResult<std::vector<RunSummary>> list_runs();
  // Every process with this pid, in every run, newest first.
  StoreResult<std::vector<ProcessSummary>> processes_with_pid(uint32_t pid);
  // Processes ranked by their largest |drift| in [since_ns, until_ns).
  StoreResult<std::vector<DriftEntry>> top_drift(int64_t since_ns,
                                                 int64_t until_ns,
                                                 size_t limit);
  // The samples of one process in [since_ns, until_ns), oldest first.
  StoreResult<std::vector<StoredSample>> process_history(int64_t process_id,
                                                         int64_t since_ns,
                                                         int64_t until_ns);

 private:
  explicit StoreReader(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  // Runs the prepared `s`, appending read(s) for each row to `out`.
  template <class T, class Read>
  StoreStatus collect(Statement& s, std::vector<T>& out, Read&& read);

  std::unique_ptr<Database> db_;
};

}  // namespace rssaudit
