#include "store/store.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/schemes/scheme_set.h"
#include "os/clock.h"
#include "os/path_files.h"

namespace rssaudit {
namespace {

std::string sample_insert_sql() {
  std::string params = "?";
  for (int i = 1; i < kSampleColumnCount; ++i) params += ", ?";
  return fmt::format("INSERT INTO samples ({}, drift) VALUES ({}, ?)",
                     kSampleColumns, params);
}

StoreError::Code code_of_errno(int err) {
  switch (err) {
    case EROFS:
    case EACCES:
    case EPERM:
      return StoreError::Code::kReadOnly;
    case ENOSPC:
    case EDQUOT:
      return StoreError::Code::kFull;
    default:
      return StoreError::Code::kIo;
  }
}

}  // namespace

Store::FileLock::~FileLock() {
  if (fd >= 0) close(fd);
}

Result<Store::Parts, StoreError> Store::open_parts(const std::string& path) {
  // Opening for writing first also turns a read-only file or mount into a
  // plain message, before SQLite would fall back to reading it. Never
  // through a symbolic link, never a FIFO or device (os/path_files.h); a
  // new history is readable by its owner only, as its -wal and -shm then
  // are (SQLite gives them the database's mode): it names every process.
  UniqueFd fd(::open(path.c_str(),
                     O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                     0600));
  if (!fd) {
    const int err = errno;
    return unexpected(
        StoreError{err == ELOOP ? StoreError::Code::kIo : code_of_errno(err),
                   open_error(path, "cannot open for writing", err).message});
  }
  Result<UniqueFd, Error> regular =
      regular_only(std::move(fd), path, "cannot open for writing");
  if (!regular)
    return unexpected(
        StoreError{StoreError::Code::kIo, std::move(regular).error().message});
  auto lock = std::make_unique<FileLock>(regular->release());
  // A reader probes the lock with a shared one it drops at once
  // (store_queries.cc): a few retries keep that from refusing a start.
  int locked = -1;
  for (int attempt = 0; attempt < 50; ++attempt) {
    if ((locked = flock(lock->fd, LOCK_EX | LOCK_NB)) == 0 ||
        errno != EWOULDBLOCK)
      break;
    usleep(4000);
  }
  if (locked != 0) {
    const int err = errno;
    return unexpected(StoreError{
        err == EWOULDBLOCK ? StoreError::Code::kBusy : StoreError::Code::kIo,
        fmt::format("{}: {}", path,
                    err == EWOULDBLOCK
                        ? "in use by another rssauditd (one writer per "
                          "database)"
                        : std::strerror(err))});
  }
  Result<std::unique_ptr<Database>, StoreError> db =
      Database::open(path, Database::Mode::kReadWrite);
  if (!db) return unexpected(std::move(db).error());
  // The per-process index of a large history is written at one place per
  // process: a 16 MiB page cache keeps ingest from re-reading it, and
  // checkpoints every 16 MiB of WAL write each page back once for several
  // flushes.
  Result<void, StoreError> s = (*db)->exec(
      "PRAGMA cache_size = -16384; PRAGMA wal_autocheckpoint = 4096; "
      "PRAGMA journal_size_limit = 16777216",
      "configuring");
  if (!s) return unexpected(std::move(s).error());
  return Parts{std::move(lock), std::move(db).value()};
}

Result<std::unique_ptr<Store>, StoreError> Store::open(
    const std::string& path, const StoreOptions& options) {
  Result<Parts, StoreError> parts = open_parts(path);
  if (!parts) return unexpected(std::move(parts).error());
  std::unique_ptr<Store> store(
      new Store(std::move(parts->lock), std::move(parts->db), options));
  Result<int64_t, StoreError> process =
      store->db_->query_int("SELECT coalesce(max(id), 0) + 1 FROM processes");
  Result<int64_t, StoreError> run =
      store->db_->query_int("SELECT coalesce(max(id), 0) + 1 FROM runs");
  for (Result<int64_t, StoreError>* next_id : {&process, &run}) {
    if (!*next_id) return unexpected(std::move(*next_id).error());
  }
  store->next_process_id_ = *process;
  store->next_run_id_ = *run;
  if (Result<void, StoreError> s = store->prepare_all(); !s)
    return unexpected(std::move(s).error());
  if (Result<void, StoreError> s = store->mark_died_runs(); !s)
    return unexpected(std::move(s).error());
  Result<uint64_t, StoreError> used = store->measure_used_bytes();
  if (!used) return unexpected(std::move(used).error());
  store->used_bytes_ = *used;
  return store;
}

std::string Store::sql_text(Sql q) {
  switch (q) {
    case kUpsertRun:
      return "INSERT INTO runs (id, host, kernel_release, nr_cpus, batch, "
             "page_size, rssaudit_version, started_ns, ended_ns, counting, "
             "status_precise, alive_ns, end_reason) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
             "ON CONFLICT (id) DO UPDATE SET ended_ns = excluded.ended_ns, "
             "alive_ns = excluded.alive_ns, end_reason = excluded.end_reason";
    case kUpsertProcess:
      return "INSERT INTO processes (id, run_id, pid, start_ticks, comm, "
             "cgroup, "
             "first_seen_ns, last_seen_ns, exit_ns, exit_residue, true_peak) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
             "ON CONFLICT (id) DO UPDATE SET comm = excluded.comm, "
             "cgroup = excluded.cgroup, last_seen_ns = excluded.last_seen_ns, "
             "exit_ns = excluded.exit_ns, exit_residue = "
             "excluded.exit_residue, true_peak = excluded.true_peak, "
             "first_seen_ns = excluded.first_seen_ns";
    // The common case, cheaper than the upsert: a known process seen again.
    case kUpdateProcess:
      return "UPDATE processes SET comm = ?2, cgroup = ?3, last_seen_ns = ?4, "
             "exit_ns = ?5, exit_residue = ?6, first_seen_ns = ?7, "
             "true_peak = ?8 WHERE id = ?1";
    case kInsertSample:
      return sample_insert_sql();
    case kInsertModelError:
      return "INSERT INTO model_errors (process_id, start_ns, end_ns, scheme, "
             "largest_error, bound, shared_updates, bytes_per_mm, "
             "read_lines_approximate, read_lines_precise) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    case kInsertAnomaly:
      return "INSERT INTO anomalies (run_id, process_id, time_ns, kind, "
             "detail) "
             "VALUES (?, ?, ?, ?, ?)";
    case kInsertLoss:
      return "INSERT INTO losses (run_id, time_ns, capture_drops, "
             "unreadable_files, "
             "ambiguous_events, store_dropped) VALUES (?, ?, ?, ?, ?, ?)";
    case kInsertSamplingGap:
      return "INSERT INTO sampling_gaps (run_id, start_ns, end_ns) "
             "VALUES (?, ?, ?)";
    case kDeleteSamples:
      return "DELETE FROM samples WHERE time_ns < ?1";
    case kDeleteModelErrors:
      return "DELETE FROM model_errors WHERE end_ns < ?1";
    case kDeleteAnomalies:
      return "DELETE FROM anomalies WHERE time_ns < ?1";
    case kDeleteLosses:
      return "DELETE FROM losses WHERE time_ns < ?1";
    case kDeleteSamplingGaps:
      return "DELETE FROM sampling_gaps WHERE end_ns < ?1";
    // A process goes with its last row, a run with its last process. Its
    // samples and model errors lie within [first_seen_ns, last_seen_ns]
    // (the store widens the range for every row it is given), so the time
    // indexes find them without a per-process index.
    case kDeleteProcesses:
      return "DELETE FROM processes WHERE last_seen_ns < ?1 "
             "AND NOT EXISTS (SELECT 1 FROM samples "
             "INDEXED BY samples_by_time WHERE time_ns >= "
             "processes.first_seen_ns AND time_ns <= processes.last_seen_ns "
             "AND process_id = processes.id) "
             "AND NOT EXISTS (SELECT 1 FROM model_errors "
             "INDEXED BY model_errors_by_time WHERE end_ns >= "
             "processes.first_seen_ns AND end_ns <= processes.last_seen_ns "
             "AND process_id = processes.id) "
             "AND NOT EXISTS (SELECT 1 FROM anomalies WHERE process_id = "
             "processes.id)";
    case kDeleteRuns:
      return "DELETE FROM runs WHERE id != ?2 "
             "AND coalesce(ended_ns, started_ns) < ?1 "
             "AND NOT EXISTS (SELECT 1 FROM processes WHERE run_id = runs.id) "
             "AND NOT EXISTS (SELECT 1 FROM anomalies WHERE run_id = runs.id) "
             "AND NOT EXISTS (SELECT 1 FROM losses WHERE run_id = runs.id) "
             "AND NOT EXISTS (SELECT 1 FROM sampling_gaps "
             "WHERE run_id = runs.id)";
    case kTimeRange:
      return "SELECT min(lo), max(hi) FROM ("
             "SELECT min(time_ns) AS lo, max(time_ns) AS hi FROM samples "
             "UNION ALL SELECT min(end_ns), max(end_ns) FROM model_errors "
             "UNION ALL SELECT min(time_ns), max(time_ns) FROM anomalies "
             "UNION ALL SELECT min(time_ns), max(time_ns) FROM losses "
             "UNION ALL SELECT min(end_ns), max(end_ns) FROM sampling_gaps)";
    case kSqlCount:
      break;
  }
  return {};
}

Result<void, StoreError> Store::prepare_all() {
  sql_.clear();
  for (int q = 0; q < kSqlCount; ++q) {
    Result<Statement, StoreError> s =
        db_->prepare(sql_text(static_cast<Sql>(q)));
    if (!s) return unexpected(std::move(s).error());
    sql_.push_back(std::move(s).value());
  }
  return {};
}

Result<void, StoreError> Store::mark_died_runs() {
  // Unended, and no rssauditd holds the file (we do): its daemon stopped
  // without ending it. Its heartbeat is the time of its last flush; a run
  // from before schema 9 has none, its newest sighting of a process comes
  // nearest.
  Result<Statement, StoreError> q = db_->prepare(
      "SELECT id, started_ns, max(coalesce(alive_ns, started_ns), "
      "coalesce((SELECT max(last_seen_ns) FROM processes "
      "WHERE run_id = runs.id), started_ns)) "
      "FROM runs WHERE ended_ns IS NULL ORDER BY id");
  if (!q) return unexpected(std::move(q).error());
  int rc;
  while ((rc = q->step()) == SQLITE_ROW)
    died_runs_.push_back(
        DiedRun{q->column_int(0), q->column_int(1), q->column_int(2)});
  q->reset();
  if (rc != SQLITE_DONE) return db_->error(rc, "finding unended runs");
  if (died_runs_.empty()) return {};
  Result<Statement, StoreError> end = db_->prepare(
      "UPDATE runs SET ended_ns = ?2, end_reason = 'died' WHERE id = ?1");
  if (!end) return unexpected(std::move(end).error());
  Statement& anomaly = sql_[kInsertAnomaly];
  return transaction("marking died runs", [&] {
    Result<void, StoreError> s;
    for (const DiedRun& r : died_runs_) {
      end->bind(1, r.id);
      end->bind(2, r.stopped_ns);
      if (s = db_->run(*end, "marking died runs"); !s) return s;
      anomaly.bind(1, r.id);
      anomaly.bind_optional(2, std::nullopt);
      anomaly.bind(3, r.stopped_ns);
      anomaly.bind_text(4, "run_died");
      anomaly.bind_text(
          5,
          "rssauditd stopped without ending its run (killed, crashed, or "
          "its host went down) after its last heartbeat: the rows of at "
          "most one flush interval before it, and each process's open "
          "model-error interval, were not written");
      if (s = db_->run(anomaly, "marking died runs"); !s) return s;
    }
    return s;
  });
}

Result<uint64_t, StoreError> Store::measure_used_bytes() {
  Result<int64_t, StoreError> pages = db_->query_int(
      "SELECT page_count - freelist_count FROM pragma_page_count, "
      "pragma_freelist_count");
  if (!pages) return unexpected(std::move(pages).error());
  Result<int64_t, StoreError> page_size = db_->query_int("PRAGMA page_size");
  if (!page_size) return unexpected(std::move(page_size).error());
  return static_cast<uint64_t>(*pages * *page_size);
}

uint64_t Store::file_bytes() const {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal"}) {
    struct stat st {};
    if (stat((db_->path() + suffix).c_str(), &st) == 0)
      total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

int64_t Store::begin_run(const RunInfo& run) {
  run_id_ = next_run_id_++;
  run_ = run;
  run_ended_ns_.reset();
  run_dirty_ = true;
  latest_ns_ = std::max(latest_ns_, run.started_ns);
  return run_id_;
}

void Store::end_run(int64_t time_ns) {
  run_ended_ns_ = time_ns;
  run_dirty_ = true;
  latest_ns_ = std::max(latest_ns_, time_ns);
}

int64_t Store::upsert_process(const ProcessIdentity& id, std::string_view comm,
                              std::string_view cgroup, int64_t time_ns) {
  latest_ns_ = std::max(latest_ns_, time_ns);
  const auto [it, inserted] = ids_.try_emplace(id, next_process_id_);
  if (inserted) {
    ++next_process_id_;
    Process& p = processes_[it->second];
    p.run_id = run_id_;
    p.id = id;
    p.comm = comm;
    p.cgroup = cgroup;
    p.first_seen_ns = p.last_seen_ns = time_ns;
    dirty_processes_.push_back(it->second);
    return it->second;
  }
  Process& p = processes_.at(it->second);
  if (p.comm != comm) p.comm = comm;
  if (p.cgroup != cgroup) p.cgroup = cgroup;
  p.last_seen_ns = std::max(p.last_seen_ns, time_ns);
  mark_dirty(it->second, p);
  return it->second;
}

void Store::record_exit(int64_t process_id, int64_t time_ns,
                        std::optional<int64_t> residue,
                        std::optional<int64_t> true_peak) {
  const auto it = processes_.find(process_id);
  if (it == processes_.end()) return;  // already gone from the cache
  Process& p = it->second;
  p.exit_ns = time_ns;
  p.exit_residue = residue;
  // A process that exec'd ends several mms, one after the other: its peak
  // is the largest of theirs.
  if (true_peak && (!p.true_peak || *true_peak > *p.true_peak))
    p.true_peak = true_peak;
  p.last_seen_ns = std::max(p.last_seen_ns, time_ns);
  latest_ns_ = std::max(latest_ns_, time_ns);
  mark_dirty(process_id, p);
}

void Store::widen_seen(int64_t process_id, int64_t time_ns) {
  // Samples of one process arrive one after the other: a one-entry cache
  // saves most lookups (model errors come six at a time).
  if (process_id != seen_cache_id_) {
    const auto it = processes_.find(process_id);
    if (it == processes_.end()) return;  // written and gone from the cache
    seen_cache_id_ = process_id;
    seen_cache_ = &it->second;
  }
  Process& p = *seen_cache_;
  if (time_ns <= p.last_seen_ns && time_ns >= p.first_seen_ns) return;
  p.last_seen_ns = std::max(p.last_seen_ns, time_ns);
  p.first_seen_ns = std::min(p.first_seen_ns, time_ns);
  mark_dirty(process_id, p);
}

void Store::mark_dirty(int64_t process_id, Process& p) {
  if (p.dirty) return;
  p.dirty = true;
  dirty_processes_.push_back(process_id);
}

template <class T>
void Store::push_capped(RowKind kind, std::deque<T>& rows, T row,
                        int64_t time_ns) {
  latest_ns_ = std::max(latest_ns_, time_ns);
  rows.push_back(std::move(row));
  // While flushes succeed the caller flushes at backlog_high(): a tick may
  // take the batch past the bound, never a row is lost for it.
  while (failing_ && rows.size() > options_.max_pending_rows) {
    rows.pop_front();
    ++dropped_[static_cast<size_t>(kind)];
    ++dropped_unrecorded_;
  }
}

void Store::add_sample(const SampleRow& row) {
  widen_seen(row.process_id, row.time_ns);
  push_capped(RowKind::kSamples, samples_, row, row.time_ns);
}

void Store::add_model_error(const ModelErrorRow& row) {
  widen_seen(row.process_id, row.end_ns);
  push_capped(RowKind::kModelErrors, model_errors_, row, row.end_ns);
}

void Store::add_anomaly(AnomalyRow row) {
  const int64_t time_ns = row.time_ns;
  push_capped(RowKind::kAnomalies, anomalies_,
              PendingAnomaly{run_id_, std::move(row)}, time_ns);
}

void Store::add_loss(const LossRow& row) {
  push_capped(RowKind::kLosses, losses_, PendingLoss{run_id_, row},
              row.time_ns);
}

void Store::add_sampling_gap(const SamplingGap& gap) {
  push_capped(RowKind::kSamplingGaps, gaps_, PendingGap{run_id_, gap},
              gap.end_ns);
}

size_t Store::pending_rows() const {
  return samples_.size() + model_errors_.size() + anomalies_.size() +
         losses_.size() + gaps_.size();
}

bool Store::backlog_high() const {
  const size_t high = options_.max_pending_rows / 4;
  return !failing_ && (samples_.size() > high || model_errors_.size() > high ||
                       anomalies_.size() > high || losses_.size() > high ||
                       gaps_.size() > high);
}

uint64_t Store::dropped_rows() const {
  uint64_t total = 0;
  for (uint64_t n : dropped_) total += n;
  return total;
}

template <class Body>
Result<void, StoreError> Store::transaction(std::string_view what,
                                            Body&& body) {
  Result<void, StoreError> s = db_->exec("BEGIN IMMEDIATE", what);
  if (s) s = body();
  if (s) s = db_->exec("COMMIT", what);
  if (!s) db_->rollback();
  return s;
}

Result<void, StoreError> Store::flush(size_t max_pieces) {
  Result<void, StoreError> s = write_batch(max_pieces);
  failing_ = !s;
  return s;
}

Result<void, StoreError> Store::write_batch(size_t max_pieces) {
  // The heartbeat: a run whose rssauditd dies stopped after it.
  if (run_id_ != 0) {
    alive_ns_ = realtime_ns();
    run_dirty_ = true;
  }
  if (!unwritten()) return {};
  if (Result<void, StoreError> r = follow_the_path(); !r) return kept(r);
  if (Result<void, StoreError> r = check_not_frozen(); !r) return kept(r);
  // A piece per transaction: a disk with room for part of a batch kept
  // through a long failure takes that part now, the rest later, where one
  // transaction of it all would fail as long as the room is short.
  for (size_t written = 0; unwritten() && written < max_pieces; ++written) {
    Pieces piece;
    Result<void, StoreError> s = transaction(
        fmt::format("writing {} processes and {} rows",
                    dirty_processes_.size(), pending_rows()),
        [&] { return write_piece(piece); });
    if (!s && s.error().code == StoreError::Code::kFull) {
      // The WAL holds the pieces written so far: moved into the database
      // and truncated, it leaves the room it took for the next flush.
      (void)db_->exec("PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing");
    }
    if (!s) return kept(s);
    forget_written(piece);
  }
  // What this flush added to the data; a failed measure adds nothing.
  if (const Result<uint64_t, StoreError> used = measure_used_bytes(); used) {
    if (*used > used_bytes_) grown_bytes_ += *used - used_bytes_;
    used_bytes_ = *used;
  }
  return {};
}

bool Store::unwritten() const {
  return pending_rows() > 0 || !dirty_processes_.empty() || run_dirty_ ||
         dropped_unrecorded_ > 0;
}

void Store::forget_written(const Pieces& piece) {
  run_dirty_ = false;
  losses_.clear();
  gaps_.clear();
  dropped_unrecorded_ = 0;
  if (piece.processes > 0) seen_cache_id_ = 0;  // exits leave the cache
  for (size_t i = 0; i < piece.processes; ++i) {
    const auto it = processes_.find(dirty_processes_.back());
    dirty_processes_.pop_back();
    it->second.dirty = false;
    it->second.stored = true;
    if (it->second.exit_ns) {
      ids_.erase(it->second.id);
      processes_.erase(it);
    }
  }
  samples_.erase(samples_.begin(), samples_.begin() + piece.samples);
  model_errors_.erase(model_errors_.begin(),
                      model_errors_.begin() + piece.model_errors);
  anomalies_.erase(anomalies_.begin(), anomalies_.begin() + piece.anomalies);
}

Result<void, StoreError> Store::kept(Result<void, StoreError> failed) const {
  failed.error().message +=
      fmt::format("; {} rows kept for the next flush", pending_rows());
  return failed;
}

Result<void, StoreError> Store::follow_the_path() {
  const std::string& path = db_->path();
  struct stat open_file {
  }, at_path{};
  if (fstat(lock_->fd, &open_file) != 0) return {};  // SQLite will say
  if (stat(path.c_str(), &at_path) == 0) {
    if (open_file.st_dev == at_path.st_dev &&
        open_file.st_ino == at_path.st_ino)
      return {};
    // Another file, perhaps another history: never written into.
    return unexpected(StoreError{
        StoreError::Code::kIo,
        fmt::format("{}: replaced by another file while in use; not written "
                    "(move it away to let rssauditd start a new database "
                    "there)",
                    path)});
  }
  if (errno != ENOENT) return {};  // the flush will name the failure
  // Deleted under us: what is written now would go to a file nobody can
  // open. A new database at the path, opened before the old one closes.
  Result<Parts, StoreError> parts = open_parts(path);
  if (!parts) return unexpected(std::move(parts).error());
  sql_.clear();  // the old connection's statements, finalized before it
  db_ = std::move(parts->db);      // closes the old file first,
  lock_ = std::move(parts->lock);  // then drops its lock
  if (Result<void, StoreError> s = prepare_all(); !s) return s;
  ++reopened_;
  // The new file has none of our rows: the run and every cached process
  // are written again, before the rows that refer to them.
  run_dirty_ = true;
  dirty_processes_.clear();
  for (auto& [id, p] : processes_) {
    p.stored = false;
    p.dirty = true;
    dirty_processes_.push_back(id);
  }
  add_anomaly(AnomalyRow{
      .process_id = std::nullopt,
      .time_ns = latest_ns_,
      .kind = "database_reopened",
      .detail = "the database file was deleted while rssauditd wrote it; "
                "rows written before are not in this file"});
  return {};
}

Result<void, StoreError> Store::check_not_frozen() const {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string file = db_->path() + suffix;
    // statx, not an open: closing any other descriptor of these files would
    // drop the POSIX locks SQLite holds on them.
    struct statx attributes {};
    if (::statx(AT_FDCWD, file.c_str(), AT_SYMLINK_NOFOLLOW, 0, &attributes) !=
        0)
      continue;
    const uint64_t frozen = attributes.stx_attributes &
                            attributes.stx_attributes_mask &
                            (STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND);
    if (!frozen) continue;
    // SQLite writes -shm through a shared map: a write fault on a frozen
    // file is SIGBUS, not an error it could return.
    return unexpected(StoreError{
        StoreError::Code::kReadOnly,
        fmt::format(
            "{}: made {} (chattr); not written until that is undone", file,
            frozen & STATX_ATTR_IMMUTABLE ? "immutable" : "append-only")});
  }
  return {};
}

Result<void, StoreError> Store::write_heads(Pieces& piece,
                                           PieceBudget& budget) {
  const std::string_view what = "writing the batch";
  Result<void, StoreError> s;
  if (run_dirty_) {
    Statement& q = sql_[kUpsertRun];
    q.bind(1, run_id_);
    q.bind_text(2, run_.host);
    q.bind_text(3, run_.kernel_release);
    q.bind(4, run_.nr_cpus);
    q.bind(5, run_.batch);
    q.bind(6, run_.page_size);
    q.bind_text(7, run_.rssaudit_version);
    q.bind(8, run_.started_ns);
    q.bind_optional(9, run_ended_ns_);
    q.bind_text(10, run_.counting);
    q.bind_optional(11, run_.status_precise
                            ? std::optional<int64_t>(*run_.status_precise)
                            : std::nullopt);
    q.bind(12, alive_ns_);
    if (run_ended_ns_)
      q.bind_text(13, "stopped");
    else
      q.bind_optional(13, std::nullopt);
    if (s = db_->run(q, what); !s) return s;
  }
  for (; piece.processes < dirty_processes_.size() && budget.left();
       ++piece.processes, budget.wrote()) {
    const int64_t id =
        dirty_processes_[dirty_processes_.size() - 1 - piece.processes];
    const Process& p = processes_.at(id);
    if (p.stored) {
      Statement& update = sql_[kUpdateProcess];
      update.bind(1, id);
      update.bind_text(2, p.comm);
      update.bind_text(3, p.cgroup);
      update.bind(4, p.last_seen_ns);
      update.bind_optional(5, p.exit_ns);
      update.bind_optional(6, p.exit_residue);
      update.bind(7, p.first_seen_ns);
      update.bind_optional(8, p.true_peak);
      if (s = db_->run(update, what); !s) return s;
      continue;
    }
    Statement& upsert = sql_[kUpsertProcess];
    upsert.bind(1, id);
    upsert.bind(2, p.run_id);
    upsert.bind(3, p.id.pid);
    upsert.bind(4, p.id.start_ticks);
    upsert.bind_text(5, p.comm);
    upsert.bind_text(6, p.cgroup);
    upsert.bind(7, p.first_seen_ns);
    upsert.bind(8, p.last_seen_ns);
    upsert.bind_optional(9, p.exit_ns);
    upsert.bind_optional(10, p.exit_residue);
    upsert.bind_optional(11, p.true_peak);
    if (s = db_->run(upsert, what); !s) return s;
  }
  Statement& loss = sql_[kInsertLoss];
  auto write_loss = [&](int64_t run_id, const LossRow& row,
                        uint64_t store_dropped) {
    loss.bind(1, run_id);
    loss.bind(2, row.time_ns);
    loss.bind(3, row.capture_drops);
    loss.bind(4, row.unreadable_files);
    loss.bind(5, row.ambiguous_events);
    loss.bind(6, store_dropped);
    return db_->run(loss, what);
  };
  for (const PendingLoss& l : losses_) {
    if (s = write_loss(l.run_id, l.row, 0); !s) return s;
  }
  // The store's own loss: rows it dropped while flushes were failing.
  if (dropped_unrecorded_ > 0) {
    s = write_loss(run_id_, LossRow{.time_ns = latest_ns_},
                   dropped_unrecorded_);
    if (!s) return s;
  }
  Statement& gap = sql_[kInsertSamplingGap];
  for (const PendingGap& g : gaps_) {
    gap.bind(1, g.run_id);
    gap.bind(2, g.gap.start_ns);
    gap.bind(3, g.gap.end_ns);
    if (s = db_->run(gap, what); !s) return s;
  }
  return s;
}

Result<void, StoreError> Store::write_piece(Pieces& piece) {
  const std::string_view what = "writing the batch";
  PieceBudget budget(kPieceRows, options_.piece_budget_ns);
  // First the run and the processes, which the rows refer to, and the
  // losses and gaps, which say what is missing; the rows once every
  // process is written.
  Result<void, StoreError> s = write_heads(piece, budget);
  if (!s || piece.processes < dirty_processes_.size()) return s;
  Statement& sample = sql_[kInsertSample];
  for (; piece.samples < samples_.size() && budget.left();
       ++piece.samples, budget.wrote()) {
    const SampleRow& row = samples_[piece.samples];
    bind_sample(sample, 1, row);
    sample.bind_optional(kSampleColumnCount + 1, rss_drift(row));
    if (s = db_->run(sample, what); !s) return s;
  }
  Statement& model = sql_[kInsertModelError];
  for (; piece.model_errors < model_errors_.size() && budget.left();
       ++piece.model_errors, budget.wrote()) {
    const ModelErrorRow& row = model_errors_[piece.model_errors];
    model.bind(1, row.process_id);
    model.bind(2, row.start_ns);
    model.bind(3, row.end_ns);
    model.bind_text(4, SchemeSet::kNames[row.scheme]);
    model.bind(5, row.largest_error);
    model.bind_optional(6, row.bound);
    model.bind(7, row.shared_updates);
    model.bind(8, row.bytes_per_mm);
    model.bind_optional(9, row.read_cost
                               ? std::optional(row.read_cost->approximate)
                               : std::nullopt);
    model.bind_optional(10,
                        row.read_cost ? row.read_cost->precise : std::nullopt);
    if (s = db_->run(model, what); !s) return s;
  }
  Statement& anomaly = sql_[kInsertAnomaly];
  for (; piece.anomalies < anomalies_.size() && budget.left();
       ++piece.anomalies, budget.wrote()) {
    const PendingAnomaly& a = anomalies_[piece.anomalies];
    anomaly.bind(1, a.run_id);
    anomaly.bind_optional(2, a.row.process_id);
    anomaly.bind(3, a.row.time_ns);
    anomaly.bind_text(4, a.row.kind);
    anomaly.bind_text(5, a.row.detail);
    if (s = db_->run(anomaly, what); !s) return s;
  }
  return s;
}

Result<void, StoreError> Store::apply_retention(const RetentionPolicy& policy,
                                                int64_t now_ns) {
  Result<void, StoreError> s = check_not_frozen();
  if (!s) return s;
  const int64_t changes_before = db_->total_changes();
  if (policy.max_age.count() > 0)
    s = delete_before(now_ns - policy.max_age.count());
  if (s && policy.max_bytes > 0) s = trim_to_size(policy.max_bytes);
  // Applied every minute, it mostly finds nothing to delete. A large delete
  // fills the WAL; write it back and truncate it now.
  if (s && db_->total_changes() != changes_before) {
    s = db_->exec("PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing");
    if (const Result<uint64_t, StoreError> used = measure_used_bytes(); used)
      used_bytes_ = *used;
  }
  return s;
}

Result<void, StoreError> Store::delete_before(int64_t cutoff_ns) {
  const int64_t changes_before = db_->total_changes();
  Result<void, StoreError> s = transaction("deleting old rows", [&] {
    for (Sql q :
         {kDeleteSamples, kDeleteModelErrors, kDeleteAnomalies, kDeleteLosses,
          kDeleteSamplingGaps, kDeleteProcesses, kDeleteRuns}) {
      sql_[q].bind(1, cutoff_ns);
      if (q == kDeleteRuns) sql_[q].bind(2, run_id_);
      Result<void, StoreError> r = db_->run(sql_[q], "deleting old rows");
      if (!r) return r;
    }
    return Result<void, StoreError>();
  });
  if (!s || db_->total_changes() == changes_before) return s;
  // The rows of cached processes may be gone: an idle one gets a new row
  // when seen again, the others are written whole by the next flush.
  seen_cache_id_ = 0;
  for (auto& entry : processes_) entry.second.stored = false;
  std::erase_if(processes_, [&](const auto& entry) {
    const Process& p = entry.second;
    if (p.dirty || p.last_seen_ns >= cutoff_ns) return false;
    ids_.erase(p.id);
    return true;
  });
  return s;
}

Result<void, StoreError> Store::trim_to_size(uint64_t max_bytes) {
  // Deletes by time, oldest first, a share of the time range proportional to
  // the excess; rows and pages do not shrink in proportion, hence the loop.
  for (int round = 0; round < 64; ++round) {
    Result<uint64_t, StoreError> measured = measure_used_bytes();
    if (!measured) return unexpected(std::move(measured).error());
    const uint64_t used = *measured;
    if (used <= max_bytes) return {};

    Statement& range = sql_[kTimeRange];
    const int rc = range.step();
    if (rc != SQLITE_ROW) {
      range.reset();
      return db_->error(rc, "finding the oldest rows");
    }
    const std::optional<int64_t> oldest = range.column_optional(0);
    const std::optional<int64_t> newest = range.column_optional(1);
    range.reset();
    if (!oldest) return {};  // only the processes and runs tables are left

    const double excess = static_cast<double>(used - max_bytes) / used;
    const auto span = static_cast<double>(*newest - *oldest + 1);
    const int64_t step =
        std::max<int64_t>(1, static_cast<int64_t>(span * excess));
    if (Result<void, StoreError> s = delete_before(*oldest + step); !s)
      return s;
  }
  return {};
}

}  // namespace rssaudit
