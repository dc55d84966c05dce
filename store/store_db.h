// SQLite plumbing shared by the writer (store.h) and the read-only queries
// (store_queries.h): errors that name the database file, owning handles,
// the embedded migrations (schema/*.sql) and the open sequence. Whatever can
// fail returns Result<T, StoreError> (core/result.h).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.h"
#include "store/shm_fault_guard.h"
#include "store/store_rows.h"

struct sqlite3;
struct sqlite3_stmt;

namespace rssaudit {

// Why the database could not be opened, read or written. Callers that react
// to the kind (a full disk, a second writer) read the code; the message
// names the database file.
struct StoreError {
  enum class Code : uint8_t {
    kFull,      // SQLITE_FULL: disk or quota full
    kReadOnly,  // file mode, read-only mount, or a read-only open
    kIo,        // SQLITE_IOERR, SQLITE_CANTOPEN
    kCorrupt,   // SQLITE_CORRUPT, SQLITE_NOTADB
    kBusy,      // locked by another connection or another rssauditd
    kNewer,     // schema newer than this build's: left alone
    kOlder,     // read-only: schema older (or none yet); rssauditd upgrades it
    kForeign,   // a database that is not rssaudit's
    kOther,
  };
  Code code = Code::kOther;
  std::string message;
};

// The schema version this build creates: the number of schema/*.sql files.
int latest_schema_version();

// One prepared statement, reset after each use so it is reused.
class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) {
    other.stmt_ = nullptr;
  }
  Statement& operator=(Statement&& other) noexcept;
  ~Statement();

  void bind_int(int index, int64_t value);
  void bind_optional(int index, std::optional<int64_t> value);
  // The text is not copied: it must outlive the next step().
  void bind_text(int index, std::string_view value);
  template <std::integral T>
  void bind(int index, T value) {
    bind_int(index, static_cast<int64_t>(value));
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  // Ready to run again. The bindings stay: every user binds every
  // parameter before each step, and clearing them cost ~3% of ingest.
  void reset();

  int64_t column_int(int index) const;
  std::optional<int64_t> column_optional(int index) const;
  std::string column_text(int index) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class Database {
 public:
  enum class Mode {
    // Creates the file if missing and upgrades its schema to the latest.
    kReadWrite,
    // Never writes; the schema must already be the latest.
    kReadOnly,
  };
  static Result<std::unique_ptr<Database>, StoreError> open(
      const std::string& path, Mode mode);
  // Creates or upgrades `path` only up to schema `version`, as an older
  // build would have left it: for tests of upgrades.
  static Result<void, StoreError> create_at_version(const std::string& path,
                                                    int version);

  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  const std::string& path() const { return path_; }

  Result<void, StoreError> exec(std::string_view sql, std::string_view what);
  Result<Statement, StoreError> prepare(std::string_view sql);
  // Steps `s` to completion and resets it.
  Result<void, StoreError> run(Statement& s, std::string_view what);
  // The first column of the first row of `sql` (a PRAGMA, a count).
  Result<int64_t, StoreError> query_int(std::string_view sql);
  // Rolls back the open transaction, if SQLite has not already done so.
  void rollback();
  // Rows inserted, updated or deleted through this connection since open.
  int64_t total_changes() const;

  // The error of SQLite result `rc` for this file while doing `what`,
  // ready to return. "Malformed" after an I/O error of this connection is
  // that I/O error: SQLite read what the failing file system gave it.
  Unexpected<StoreError> error(int rc, std::string_view what) const;

 private:
  Database(std::string path, sqlite3* db)
      : shm_guard_(path), path_(std::move(path)), db_(db) {}
  static Result<std::unique_ptr<Database>, StoreError> open_at(
      const std::string& path, Mode mode, int version);
  // The file's schema version, once it is known to be rssaudit's (or empty).
  Result<int64_t, StoreError> checked_version(Mode mode, int version);
  Result<void, StoreError> migrate(int64_t from, int to);

  // Declared first, so it outlives the close (which may write -shm).
  ShmFaultGuard shm_guard_;
  std::string path_;
  sqlite3* db_;
  // An I/O error was returned on this connection (error()).
  mutable bool io_failed_ = false;
};

// The samples columns of SampleRow, from process_id to drift_unknown
// (drift excepted): one list for the writer's INSERT and the readers' SELECT.
inline constexpr std::string_view kSampleColumns =
    "process_id, time_ns, "
    "approx_file, approx_anon, approx_swap, approx_shmem, stat_rss, "
    "precise_file, precise_anon, precise_swap, precise_shmem, statm_resident, "
    "exact_file, exact_anon, exact_swap, exact_shmem, "
    "walk_file, walk_anon, walk_swap, walk_shmem, walk_rss, "
    "vm_hwm, true_peak, threads, fidelity_checked, fidelity_matched, "
    "drift_unknown";
inline constexpr int kSampleColumnCount =
    static_cast<int>(std::ranges::count(kSampleColumns, ',')) + 1;
// Binds `row` to parameters first..first + kSampleColumnCount - 1.
void bind_sample(Statement& s, int first, const SampleRow& row);
// Reads columns first..first + kSampleColumnCount - 1 of the current row.
SampleRow read_sample(const Statement& s, int first);

}  // namespace rssaudit
