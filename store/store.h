// The daemon's writer of the history database. Callers append rows to an
// in-memory batch (no SQL, no I/O, no failure on their path); flush() writes
// the whole batch in one transaction. While flushes succeed no row is ever
// dropped: the batch says when it passes a quarter of its bound
// (backlog_high()) and the caller flushes then. A failed flush (disk full,
// read-only, I/O error) keeps the batch for the next one, bounded by
// dropping the oldest rows, which are counted per kind and recorded as a
// loss once writing works again. Nothing is thrown: every failure is a
// StoreError naming the file.
//
// One writer per database: open() takes an exclusive lock on the file, so a
// second rssauditd on the same database is refused, and the ids this class
// allocates in memory cannot collide. Holding it, open() marks every run
// left unended as died (its rssauditd was killed or crashed): ended at its
// heartbeat, the time of its last flush, which every flush writes.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "os/clock.h"
#include "store/store_db.h"
#include "store/store_rows.h"

namespace rssaudit {

struct StoreOptions {
  // Rows of each kind kept while flushes fail; beyond it the oldest are
  // dropped. ~400 bytes per sample. While flushes succeed the batch may pass
  // it within one tick: the caller flushes from a quarter of it on.
  size_t max_pending_rows = size_t{1} << 16;
  // A piece of a flush (Store::flush) ends early once it has taken this
  // long (0: never), read every Store::kPieceBudgetEvery writes: under load the
  // daemon's queries wait for at most one piece.
  uint64_t piece_budget_ns = 0;
};

// The kinds of rows the batch holds, each bounded on its own.
enum class RowKind : uint8_t {
  kSamples,
  kModelErrors,
  kAnomalies,
  kLosses,
  kSamplingGaps,
};
inline constexpr size_t kRowKinds = 5;
// As the tables are named.
inline constexpr std::array<std::string_view, kRowKinds> kRowKindNames = {
    "samples", "model_errors", "anomalies", "losses", "sampling_gaps"};

// A run found unended at open: its rssauditd stopped without ending it.
struct DiedRun {
  int64_t id = 0;
  int64_t started_ns = 0;
  // Its last heartbeat (or, for a run from before schema 9, its newest
  // process sighting): what it wrote is as of then.
  int64_t stopped_ns = 0;
};

struct RetentionPolicy {
  std::chrono::nanoseconds max_age{0};  // 0: no age limit
  uint64_t max_bytes = 0;               // 0: no size limit
};

class Store {
 public:
  // Creates the file, or upgrades its schema, then prepares the statements.
  static Result<std::unique_ptr<Store>, StoreError> open(
      const std::string& path, const StoreOptions& options);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  // Does not flush: the caller decides (SIGTERM flushes).
  ~Store() = default;

  const std::string& path() const { return db_->path(); }

  // Starts the run every later process, anomaly and loss belongs to.
  int64_t begin_run(const RunInfo& run);
  void end_run(int64_t time_ns);

  // The id of the process with this identity in the current run, created on
  // first sight; refreshes its comm, cgroup and last-seen time.
  int64_t upsert_process(const ProcessIdentity& id, std::string_view comm,
                         std::string_view cgroup, int64_t time_ns);
  // `residue`: the exact tracker's value at exit (0 when consistent;
  // nullopt: not absolute). `true_peak`: the whole life's peak RSS
  // (nullopt: not seen from creation). The process leaves the in-memory
  // cache once this is written.
  void record_exit(int64_t process_id, int64_t time_ns,
                   std::optional<int64_t> residue,
                   std::optional<int64_t> true_peak);

  void add_sample(const SampleRow& row);
  void add_model_error(const ModelErrorRow& row);
  void add_anomaly(AnomalyRow row);
  void add_loss(const LossRow& row);
  void add_sampling_gap(const SamplingGap& gap);

  // Writes the batch in pieces of kPieceRows writes, a transaction each,
  // at most `max_pieces` of them: first the run with its heartbeat (now),
  // the losses and sampling gaps, and the processes, which the rows refer
  // to; then the rows. The daemon writes a large batch a piece per turn of
  // its loop, answering between pieces, and unwritten() says whether
  // anything is left. What a failure leaves
  // unwritten is kept and retried by the next flush; rows already stored
  // are never touched. A database file deleted since the last flush is
  // noticed first: the store goes on in a new file at the path, writes the
  // run and its cached processes there again and records a
  // "database_reopened" anomaly (reopened() counts them). A file replaced
  // by another is never written into: flushes fail, naming it.
  static constexpr size_t kAllPieces = SIZE_MAX;
  Result<void, StoreError> flush(size_t max_pieces = kAllPieces);
  // Under the soak's full load (3 000 processes, a fork storm, the daemon
  // a third of 2 CPUs) a piece of 4096 rows took the loop 0.23-0.36 s.
  static constexpr size_t kPieceRows = 1024;
  // How many writes apart a piece reads the clock for its time budget.
  static constexpr size_t kPieceBudgetEvery = 64;

  // Deletes rows older than `now_ns - max_age`, then the oldest rows until
  // the data fits in max_bytes. The file keeps its size: SQLite reuses the
  // freed pages, so applied regularly this bounds the file too.
  Result<void, StoreError> apply_retention(const RetentionPolicy& policy,
                                           int64_t now_ns);

  // Rows waiting for a successful flush.
  size_t pending_rows() const;
  // Anything waiting for a flush: rows, processes, the run's heartbeat.
  bool unwritten() const;
  // A kind of row passed a quarter of max_pending_rows while the last flush
  // succeeded: flush now, lest a tick of a large host reach the bound. False
  // while flushes fail (the next one is the timer's, not one per tick).
  bool backlog_high() const;
  // Rows dropped because flushes failed for too long, since open; per kind.
  uint64_t dropped_rows() const;
  const std::array<uint64_t, kRowKinds>& dropped_by_kind() const {
    return dropped_;
  }
  // The runs open() found unended and marked died.
  const std::vector<DiedRun>& died_runs() const { return died_runs_; }
  // Bytes of the database's pages that hold data, as of the last flush or
  // retention; and how many of them the flushes added since open (what
  // retention deleted is not subtracted): the history's growth.
  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t grown_bytes() const { return grown_bytes_; }
  // The files' size on disk: the database and its -wal.
  uint64_t file_bytes() const;
  // Times the database file was found deleted, and a new one begun.
  uint64_t reopened() const { return reopened_; }

 private:
  // An exclusive flock on the database file, released when closed.
  struct FileLock {
    explicit FileLock(int fd) : fd(fd) {}
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    ~FileLock();
    int fd;
  };
  struct Process {
    int64_t run_id = 0;
    ProcessIdentity id;
    std::string comm;
    std::string cgroup;
    int64_t first_seen_ns = 0;
    int64_t last_seen_ns = 0;
    std::optional<int64_t> exit_ns;
    std::optional<int64_t> exit_residue;
    std::optional<int64_t> true_peak;
    bool dirty = true;    // differs from its row
    bool stored = false;  // its row exists, as far as this cache knows
  };
  struct IdentityHash {
    size_t operator()(const ProcessIdentity& id) const {
      return std::hash<uint64_t>()(id.start_ticks * 0x9e3779b97f4a7c15ULL ^
                                   id.pid);
    }
  };
  struct PendingLoss {
    int64_t run_id = 0;
    LossRow row;
    uint64_t store_dropped = 0;
  };
  struct PendingAnomaly {
    int64_t run_id = 0;
    AnomalyRow row;
  };
  struct PendingGap {
    int64_t run_id = 0;
    SamplingGap gap;
  };
  enum Sql {
    kUpsertRun,
    kUpsertProcess,
    kUpdateProcess,
    kInsertSample,
    kInsertModelError,
    kInsertAnomaly,
    kInsertLoss,
    kInsertSamplingGap,
    kDeleteSamples,
    kDeleteModelErrors,
    kDeleteAnomalies,
    kDeleteLosses,
    kDeleteSamplingGaps,
    kDeleteProcesses,
    kDeleteRuns,
    kTimeRange,
    kSqlCount,
  };

  // What a row-writing transaction took from the front of each kind.
  // What one transaction of a flush wrote besides the run, losses and
  // gaps: the last `processes` of dirty_processes_, then rows.
  struct Pieces {
    size_t processes = 0;
    size_t samples = 0;
    size_t model_errors = 0;
    size_t anomalies = 0;
  };
  // The locked file and its connection, configured.
  struct Parts {
    std::unique_ptr<FileLock> lock;
    std::unique_ptr<Database> db;
  };
  static Result<Parts, StoreError> open_parts(const std::string& path);

  Store(std::unique_ptr<FileLock> lock, std::unique_ptr<Database> db,
        const StoreOptions& options)
      : lock_(std::move(lock)), db_(std::move(db)), options_(options) {}
  static std::string sql_text(Sql q);
  Result<void, StoreError> prepare_all();
  template <class T>
  void push_capped(RowKind kind, std::deque<T>& rows, T row, int64_t time_ns);
  // Marks the runs left unended as died; fills died_runs_.
  Result<void, StoreError> mark_died_runs();
  // Pages holding data, in bytes, now.
  Result<uint64_t, StoreError> measure_used_bytes();
  // flush() but for the record of its success.
  Result<void, StoreError> write_batch(size_t max_pieces);
  // What a piece may still write: `writes`, until `budget_ns` (0: no
  // limit) has passed.
  class PieceBudget {
   public:
    PieceBudget(size_t writes, uint64_t budget_ns)
        : left_(writes),
          deadline_ns_(budget_ns ? monotonic_ns() + budget_ns : 0) {}
    bool left() {
      if (left_ > 0 && deadline_ns_ && done_ > 0 && done_ % kPieceBudgetEvery == 0 &&
          monotonic_ns() >= deadline_ns_)
        left_ = 0;
      return left_ > 0;
    }
    void wrote() { --left_, ++done_; }

   private:
    size_t left_;
    size_t done_ = 0;
    uint64_t deadline_ns_;
  };
  // One transaction's writes: the heads and processes, then (once no
  // process waits) rows, kPieceRows writes in all, or fewer at the end
  // of StoreOptions::piece_budget_ns.
  Result<void, StoreError> write_piece(Pieces& piece);
  Result<void, StoreError> write_heads(Pieces& piece, PieceBudget& budget);
  // Drops from the batch what a committed piece wrote.
  void forget_written(const Pieces& piece);
  // `failed`, saying how many rows wait for the next flush.
  Result<void, StoreError> kept(Result<void, StoreError> failed) const;
  // Begins a new database when the open file was deleted; an error when
  // the path names another file.
  Result<void, StoreError> follow_the_path();
  // An error when chattr made a file of the database immutable or
  // append-only: SQLite would die of SIGBUS writing its -shm map.
  Result<void, StoreError> check_not_frozen() const;
  void mark_dirty(int64_t process_id, Process& p);
  // Keeps every row of a cached process within its [first_seen_ns,
  // last_seen_ns], which readers and retention use to find its rows.
  void widen_seen(int64_t process_id, int64_t time_ns);
  // Runs `body` in one write transaction, rolled back if it fails.
  template <class Body>
  Result<void, StoreError> transaction(std::string_view what, Body&& body);
  Result<void, StoreError> delete_before(int64_t cutoff_ns);
  Result<void, StoreError> trim_to_size(uint64_t max_bytes);

  // Declared first so it is released last, after SQLite closed the file:
  // closing another descriptor of the file earlier would drop SQLite's
  // POSIX locks.
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<Database> db_;
  StoreOptions options_;
  std::vector<Statement> sql_;

  int64_t next_run_id_ = 1;
  int64_t run_id_ = 0;
  RunInfo run_;
  std::optional<int64_t> run_ended_ns_;
  int64_t alive_ns_ = 0;  // the heartbeat the next write of the run carries
  bool run_dirty_ = false;

  int64_t next_process_id_ = 1;
  std::unordered_map<ProcessIdentity, int64_t, IdentityHash> ids_;
  std::unordered_map<int64_t, Process> processes_;
  std::vector<int64_t> dirty_processes_;
  int64_t seen_cache_id_ = 0;  // 0: empty; ids start at 1
  Process* seen_cache_ = nullptr;

  std::deque<SampleRow> samples_;
  std::deque<ModelErrorRow> model_errors_;
  std::deque<PendingAnomaly> anomalies_;
  std::deque<PendingLoss> losses_;
  std::deque<PendingGap> gaps_;
  std::array<uint64_t, kRowKinds> dropped_{};
  bool failing_ = false;  // the last flush failed
  std::vector<DiedRun> died_runs_;
  uint64_t used_bytes_ = 0;
  uint64_t grown_bytes_ = 0;
  uint64_t reopened_ = 0;
  uint64_t dropped_unrecorded_ = 0;
  int64_t latest_ns_ = 0;  // newest time appended: stamps the store's losses
};

}  // namespace rssaudit
