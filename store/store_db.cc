#include "store/store_db.h"

#include <fmt/core.h>
#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "os/path_files.h"
#include "store/store_migrations.h"

namespace rssaudit {
namespace {

// PRAGMA application_id of rssaudit databases: "RSSA".
constexpr int64_t kApplicationId = 0x52535341;

StoreError::Code code_of(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return StoreError::Code::kFull;
    case SQLITE_READONLY:
      return StoreError::Code::kReadOnly;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return StoreError::Code::kIo;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StoreError::Code::kCorrupt;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StoreError::Code::kBusy;
    default:
      return StoreError::Code::kOther;
  }
}

}  // namespace

int latest_schema_version() { return static_cast<int>(kMigrations.size()); }

namespace {

// `path` for a file: URI: '%', '?' and '#' percent-encoded.
std::string uri_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#')
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

}  // namespace

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::bind_int(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
}

void Statement::bind_optional(int index, std::optional<int64_t> value) {
  if (value) {
    sqlite3_bind_int64(stmt_, index, *value);
  } else {
    sqlite3_bind_null(stmt_, index);
  }
}

void Statement::bind_text(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                    SQLITE_STATIC);
}

int Statement::step() { return sqlite3_step(stmt_); }

void Statement::reset() { sqlite3_reset(stmt_); }

int64_t Statement::column_int(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

std::optional<int64_t> Statement::column_optional(int index) const {
  if (sqlite3_column_type(stmt_, index) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(stmt_, index);
}

std::string Statement::column_text(int index) const {
  const auto* text = sqlite3_column_text(stmt_, index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     sqlite3_column_bytes(stmt_, index));
}

Database::~Database() { sqlite3_close_v2(db_); }

int64_t Database::total_changes() const { return sqlite3_total_changes64(db_); }

Result<std::unique_ptr<Database>, StoreError> Database::open(
    const std::string& path, Mode mode) {
  return open_at(path, mode, latest_schema_version());
}

Result<void, StoreError> Database::create_at_version(const std::string& path,
                                                     int version) {
  Result<std::unique_ptr<Database>, StoreError> db =
      open_at(path, Mode::kReadWrite, version);
  if (!db) return unexpected(std::move(db).error());
  return {};
}

Result<std::unique_ptr<Database>, StoreError> Database::open_at(
    const std::string& path, Mode mode, int version) {
  // A reader first makes sure of a regular file: SQLite would block on a
  // FIFO. The writer's caller opened the file itself (Store::open_parts);
  // SQLite then follows no symbolic link either.
  if (mode == Mode::kReadOnly) {
    if (Result<UniqueFd, Error> f = open_input_file(path); !f)
      return unexpected(
          StoreError{StoreError::Code::kIo, std::move(f).error().message});
  }
  const int flags =
      (mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                     SQLITE_OPEN_NOFOLLOW) |
      SQLITE_OPEN_NOMUTEX;
  sqlite3* handle = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  // Owns the handle even when the open failed, as SQLite requires.
  std::unique_ptr<Database> db(new Database(path, handle));
  if (rc != SQLITE_OK) return db->error(rc, "cannot open");
  sqlite3_extended_result_codes(handle, 1);
  // Readers and the writer never wait long on each other in WAL mode; this
  // covers WAL recovery after a crash and checkpoints.
  sqlite3_busy_timeout(handle, 5000);
  if (mode == Mode::kReadWrite && sqlite3_db_readonly(handle, "main") == 1) {
    return unexpected(StoreError{
        StoreError::Code::kReadOnly,
        fmt::format("{}: the file or its file system is read-only; "
                    "rssauditd must write its database (choose another "
                    "with --db)",
                    path)});
  }

  Result<int64_t, StoreError> current = db->checked_version(mode, version);
  if (!current && mode == Mode::kReadOnly &&
      current.error().code == StoreError::Code::kReadOnly) {
    // A WAL database whose -shm this user may not create (a copy in a
    // directory of another's, a read-only mount): read it as an immutable
    // snapshot, which needs no -shm. What a -wal holds beyond the last
    // checkpoint is not seen then, and the user is told.
    sqlite3* snapshot = nullptr;
    const std::string uri = "file:" + uri_path(path) + "?immutable=1";
    const int src = sqlite3_open_v2(
        uri.c_str(), &snapshot,
        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    db.reset(new Database(path, snapshot));
    if (src != SQLITE_OK) return db->error(src, "cannot open");
    sqlite3_extended_result_codes(snapshot, 1);
    current = db->checked_version(mode, version);
    std::error_code ec;
    if (current && std::filesystem::file_size(path + "-wal", ec) > 0 && !ec)
      std::fprintf(stderr,
                   "%s: read as a snapshot (no -shm can be made here): "
                   "what its -wal holds since the last checkpoint is not "
                   "shown\n",
                   path.c_str());
  }
  if (!current) return unexpected(std::move(current).error());
  if (mode == Mode::kReadOnly) {
    Result<void, StoreError> s =
        db->exec("PRAGMA query_only = 1", "opening read-only");
    if (!s) return unexpected(std::move(s).error());
    return db;
  }

  Result<Statement, StoreError> wal = db->prepare("PRAGMA journal_mode = WAL");
  if (!wal) return unexpected(std::move(wal).error());
  const int wal_rc = wal->step();
  if (wal_rc != SQLITE_ROW) return db->error(wal_rc, "switching to WAL mode");
  if (wal->column_text(0) != "wal") {
    return unexpected(StoreError{
        StoreError::Code::kOther,
        fmt::format("{}: SQLite refused WAL mode (journal mode stays {})", path,
                    wal->column_text(0))});
  }
  wal->reset();
  // Keep the -wal and -shm files after close: without them a reader that
  // may not create files in the directory (the CLI as a user, a read-only
  // mount) cannot open a WAL database.
  int persist = 1;
  sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  // Under WAL, NORMAL syncs only at checkpoints: a crash of rssauditd loses
  // nothing committed (the WAL is in the page cache); a power loss or kernel
  // crash may lose the last transactions but never corrupts the file.
  Result<void, StoreError> s =
      db->exec("PRAGMA synchronous = NORMAL", "setting synchronous");
  if (s) s = db->migrate(*current, version);
  if (!s) return unexpected(std::move(s).error());
  return db;
}

Result<int64_t, StoreError> Database::checked_version(Mode mode, int version) {
  Result<int64_t, StoreError> app = query_int("PRAGMA application_id");
  if (!app) return app;
  Result<int64_t, StoreError> user = query_int("PRAGMA user_version");
  if (!user) return user;
  Result<int64_t, StoreError> tables =
      query_int("SELECT count(*) FROM sqlite_schema");
  if (!tables) return tables;

  const int64_t v = *user;
  const int latest = latest_schema_version();
  auto fail = [](StoreError::Code code, std::string message) {
    return unexpected(StoreError{code, std::move(message)});
  };
  if ((*app != 0 || v != 0) && *app != kApplicationId) {
    return fail(StoreError::Code::kForeign,
                fmt::format("{}: not an rssaudit database (application_id "
                            "{:#x}, schema version {}); left untouched",
                            path_, *app, v));
  }
  if (v == 0 && *tables > 0) {
    return fail(StoreError::Code::kForeign,
                fmt::format("{}: holds {} tables but no rssaudit schema "
                            "version: not an rssaudit database; left untouched",
                            path_, *tables));
  }
  if (v > latest) {
    return fail(
        StoreError::Code::kNewer,
        fmt::format("{}: schema version {} is newer than this "
                    "rssaudit build supports ({}); use a newer rssaudit",
                    path_, v, latest));
  }
  if (mode == Mode::kReadOnly && v != version) {
    return fail(StoreError::Code::kOlder,
                v == 0 ? fmt::format("{}: no rssaudit history yet (empty "
                                     "database); run rssauditd --db {} first",
                                     path_, path_)
                       : fmt::format("{}: schema version {} is older than this "
                                     "rssaudit build's ({}); run rssauditd "
                                     "once to upgrade it",
                                     path_, v, version));
  }
  return v;
}

Result<void, StoreError> Database::migrate(int64_t from, int to) {
  for (int64_t v = from + 1; v <= to; ++v) {
    const Migration& m = kMigrations[v - 1];
    const std::string what = fmt::format("applying {}", m.file);
    Result<void, StoreError> s = exec("BEGIN IMMEDIATE", what);
    if (!s) return s;
    for (const std::string& sql :
         {std::string(m.sql),
          fmt::format("PRAGMA user_version = {}; PRAGMA application_id = {}", v,
                      kApplicationId),
          std::string("COMMIT")}) {
      s = exec(sql, what);
      if (!s) {
        rollback();
        return s;
      }
    }
  }
  return {};
}

Result<void, StoreError> Database::exec(std::string_view sql,
                                        std::string_view what) {
  const int rc =
      sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return error(rc, what);
  return {};
}

Result<Statement, StoreError> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                         SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return error(rc, "preparing a statement");
  return Statement(stmt);
}

Result<void, StoreError> Database::run(Statement& s, std::string_view what) {
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
  }
  s.reset();
  if (rc != SQLITE_DONE) return error(rc, what);
  return {};
}

Result<int64_t, StoreError> Database::query_int(std::string_view sql) {
  Result<Statement, StoreError> s = prepare(sql);
  if (!s) return unexpected(std::move(s).error());
  const int rc = s->step();
  if (rc == SQLITE_ROW) return s->column_int(0);
  if (rc == SQLITE_DONE) return int64_t{0};
  return error(rc, sql);
}

void Database::rollback() {
  if (!sqlite3_get_autocommit(db_)) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Unexpected<StoreError> Database::error(int rc, std::string_view what) const {
  // The connection's message is more precise, when it is about this rc.
  std::string detail = (sqlite3_extended_errcode(db_) == rc)
                           ? sqlite3_errmsg(db_)
                           : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  const int os_errno = sqlite3_system_errno(db_);
  if ((primary == SQLITE_IOERR || primary == SQLITE_FULL ||
       primary == SQLITE_CANTOPEN) &&
      os_errno != 0) {
    detail += fmt::format(" ({})", std::strerror(os_errno));
  }
  StoreError::Code code = code_of(rc);
  if (code == StoreError::Code::kIo) io_failed_ = true;
  // An ext4 shut down under a running rssauditd gave "disk I/O error",
  // then "database disk image is malformed" at every later flush, of a
  // file that passed integrity_check once mounted again.
  if (code == StoreError::Code::kCorrupt && io_failed_) {
    code = StoreError::Code::kIo;
    detail =
        "disk I/O error: the file system failed under it (SQLite then "
        "read pages it could not make sense of); the file itself may be "
        "intact, PRAGMA integrity_check says once its disk is back";
  }
  return unexpected(
      StoreError{code, fmt::format("{}: {}: {}", path_, what, detail)});
}

void bind_sample(Statement& s, int first, const SampleRow& row) {
  int i = first;
  s.bind(i++, row.process_id);
  s.bind(i++, row.time_ns);
  auto members = [&](const MemberPages& pages) {
    for (const std::optional<int64_t>& p : pages) s.bind_optional(i++, p);
  };
  members(row.approximate);
  s.bind_optional(i++, row.stat_rss);
  members(row.precise);
  s.bind_optional(i++, row.statm_resident);
  members(row.exact);
  members(row.walk);
  for (const std::optional<int64_t>* v :
       {&row.walk_rss, &row.vm_hwm, &row.true_peak, &row.threads,
        &row.fidelity_checked, &row.fidelity_matched}) {
    s.bind_optional(i++, *v);
  }
  if (row.drift_unknown)
    s.bind_text(i, drift_unknown_name(*row.drift_unknown));
  else
    s.bind_optional(i, std::nullopt);
}

SampleRow read_sample(const Statement& s, int first) {
  int i = first;
  SampleRow row;
  row.process_id = s.column_int(i++);
  row.time_ns = s.column_int(i++);
  auto members = [&](MemberPages& pages) {
    for (std::optional<int64_t>& p : pages) p = s.column_optional(i++);
  };
  members(row.approximate);
  row.stat_rss = s.column_optional(i++);
  members(row.precise);
  row.statm_resident = s.column_optional(i++);
  members(row.exact);
  members(row.walk);
  for (std::optional<int64_t>* v :
       {&row.walk_rss, &row.vm_hwm, &row.true_peak, &row.threads,
        &row.fidelity_checked, &row.fidelity_matched}) {
    *v = s.column_optional(i++);
  }
  // NULL reads as "": no reason.
  row.drift_unknown = drift_unknown_named(s.column_text(i));
  return row;
}

}  // namespace rssaudit
