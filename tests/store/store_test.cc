// The SQLite history store: schema creation and upgrades, round trips, crash
// safety, full and read-only disks, retention. Tests that mount a tmpfs need
// root and skip, saying so, without it.
#include "store/store.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/schemes/scheme_set.h"
#include "os/unique_fd.h"
#include "store/growth_rate.h"
#include "store/store_queries.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using Code = StoreError::Code;

constexpr int64_t kSecond = 1'000'000'000;

class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "rssaudit-store-XXXXXX");
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// A plain SQLite connection, to look at the file independently of the store.
class RawDb {
 public:
  explicit RawDb(const std::string& path, int flags = SQLITE_OPEN_READWRITE) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr), SQLITE_OK)
        << path;
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  void exec(const std::string& sql) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error),
              SQLITE_OK)
        << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    return out;
  }
  int64_t num(const std::string& sql) { return std::stoll(text(sql)); }

 private:
  sqlite3* db_ = nullptr;
};

RunInfo test_run(int64_t started_ns = 0) {
  return RunInfo{.host = "testhost",
                 .kernel_release = "6.1.0-test",
                 .nr_cpus = 2,
                 .batch = 32,
                 .page_size = 4096,
                 .rssaudit_version = "0.1.0",
                 .started_ns = started_ns};
}

// Deterministic values from `v`; drift = 3 pages, swap left unread.
SampleRow make_sample(int64_t process_id, int64_t time_ns, int64_t v) {
  SampleRow r;
  r.process_id = process_id;
  r.time_ns = time_ns;
  r.approximate = {v + 1, v + 2, std::nullopt, v + 3};
  r.stat_rss = 3 * v + 6;
  r.precise = {v, v + 1, 0, v + 2};
  r.statm_resident = 3 * v + 3;
  r.exact = {v, v + 1, 0, v + 2};
  r.walk = {std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  r.vm_hwm = 4 * v;
  r.true_peak = 4 * v + 1;
  r.threads = 1;
  return r;
}

// A database at schema `version` holding one run and `rows`, inserted
// straight in SQL as an rssauditd of that version wrote them: this build's
// writer only knows the latest schema.
void old_database(const std::string& path, int version,
                  const std::string& rows) {
  ASSERT_TRUE(Database::create_at_version(path, version).has_value());
  // Named columns: later versions add some.
  RawDb(path).exec(
      "INSERT INTO runs (id, host, kernel_release, nr_cpus, batch, "
      "page_size, rssaudit_version, started_ns, ended_ns) VALUES (1, 'h', "
      "'6.1', 2, 32, 4096, '0.1.0', 0, NULL);" +
      rows);
}

std::unique_ptr<Store> open_store(const std::string& path,
                                  StoreOptions options = {}) {
  Result<std::unique_ptr<Store>, StoreError> s = Store::open(path, options);
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return std::move(s).value();
}

std::unique_ptr<StoreReader> open_reader(const std::string& path) {
  Result<std::unique_ptr<StoreReader>, StoreError> r =
      StoreReader::open_read_only(path);
  EXPECT_TRUE(r.has_value()) << r.error().message;
  return std::move(r).value();
}

int64_t sample_count(const std::string& path) {
  return RawDb(path, SQLITE_OPEN_READONLY).num("SELECT count(*) FROM samples");
}

// Bytes of the file's pages that hold data.
int64_t data_bytes(const std::string& path) {
  return RawDb(path, SQLITE_OPEN_READONLY)
      .num(
          "SELECT (page_count - freelist_count) * page_size FROM "
          "pragma_page_count, pragma_freelist_count, pragma_page_size");
}

// ---------------------------------------------------------------- schema --

TEST(StoreSchema, FreshDatabaseIsCreatedAtTheLatestVersionInWalMode) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  ASSERT_NE(open_store(path), nullptr);
  RawDb db(path);
  EXPECT_EQ(db.num("PRAGMA user_version"), latest_schema_version());
  EXPECT_EQ(db.text("PRAGMA journal_mode"), "wal");
  for (const char* table : {"runs", "processes", "samples", "model_errors",
                            "anomalies", "losses"}) {
    EXPECT_EQ(db.num(std::string("SELECT count(*) FROM sqlite_schema WHERE "
                                 "type = 'table' AND name = '") +
                     table + "'"),
              1)
        << table;
  }
}

TEST(StoreSchema, EveryEarlierVersionIsUpgradedOnOpen) {
  for (int version = 0; version < latest_schema_version(); ++version) {
    SCOPED_TRACE("from version " + std::to_string(version));
    TempDir dir;
    const std::string path = dir.file("old.db");
    ASSERT_TRUE(Database::create_at_version(path, version).has_value());
    ASSERT_EQ(RawDb(path).num("PRAGMA user_version"), version);

    std::unique_ptr<Store> store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RawDb(path).num("PRAGMA user_version"), latest_schema_version());
    store->begin_run(test_run());
    const int64_t p = store->upsert_process({1, 2}, "a", "/", 0);
    store->add_sample(make_sample(p, 0, 1));
    ASSERT_TRUE(store->flush().has_value());
    EXPECT_EQ(sample_count(path), 1);
  }
}

TEST(StoreSchema, EmptyDatabaseGetsFidelityColumnsAndOnlyTimeIndexes) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  ASSERT_NE(open_store(path), nullptr);
  RawDb db(path);
  for (const char* column : {"fidelity_checked", "fidelity_matched"}) {
    EXPECT_EQ(db.num(std::string("SELECT count(*) FROM pragma_table_info("
                                 "'samples') WHERE name = '") +
                     column + "'"),
              1)
        << column;
  }
  // Ingest appends to these; the per-process indexes of version 1 are gone.
  EXPECT_EQ(db.text("SELECT group_concat(name, ',') FROM (SELECT name FROM "
                    "sqlite_schema WHERE type = 'index' AND tbl_name IN "
                    "('samples', 'model_errors') ORDER BY name)"),
            "model_errors_by_time,samples_by_time");
}

// Version 3 wrote the capture's count minus /proc's precise value, read a
// drain apart; the upgrade recomputes such rows as rss_drift() does now.
TEST(StoreSchema, VersionThreeDriftIsRecomputedFromValuesOfOneMoment) {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  old_database(
      path, 3,
      "INSERT INTO processes VALUES (1, 1, 10, 100, 'old', '', 1000, "
      "3000, NULL, NULL, NULL);"
      // Faulting between the drain and the /proc read: 40 pages apart.
      "INSERT INTO samples (process_id, time_ns, approx_file, approx_anon, "
      "approx_shmem, stat_rss, precise_file, precise_anon, precise_shmem, "
      "exact_file, exact_anon, exact_shmem, drift) VALUES "
      "(1, 1000, 10, 500, 0, 548, 10, 542, 0, 10, 503, 0, -42),"
      // Joined mid-life: no exact value, so /proc's own pair.
      "(1, 2000, 10, 500, 0, 548, 10, 542, 0, NULL, NULL, NULL, -42),"
      // No capture values: stat_rss - precise already, kept.
      "(1, 3000, NULL, NULL, NULL, 548, 10, 542, 0, NULL, NULL, NULL, -4);");
  ASSERT_NE(open_store(path), nullptr);
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(drift, ',') FROM (SELECT drift FROM "
                    "samples ORDER BY time_ns)"),
            "-3,-4,-4");
}

// Version 4 named the capture's losses ring_drops, after the ring buffer
// that carried the records then; the upgrade keeps the counts.
TEST(StoreSchema, VersionFourRingDropsAreKeptAsCaptureDrops) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  old_database(path, 4,
               "INSERT INTO losses (run_id, time_ns, ring_drops, "
               "unreadable_files, ambiguous_events, store_dropped) VALUES "
               "(1, 1000, 7, 2, 1, 0);");
  std::unique_ptr<Store> store = open_store(path);
  ASSERT_NE(store, nullptr);
  store->begin_run(test_run(5000));
  store->add_loss({.time_ns = 6000, .capture_drops = 3});
  ASSERT_TRUE(store->flush().has_value());
  RawDb db(path);
  EXPECT_EQ(db.num("SELECT count(*) FROM pragma_table_info('losses') "
                   "WHERE name = 'ring_drops'"),
            0);
  EXPECT_EQ(db.text("SELECT group_concat(capture_drops, ',') FROM (SELECT "
                    "capture_drops FROM losses ORDER BY time_ns)"),
            "7,3");
}

// Before version 6 rssauditd refused kernels before 6.2: every run counted
// with percpu_counters, and says so after the upgrade.
TEST(StoreSchema, VersionFiveRunsCountedWithPercpuCounters) {
  TempDir dir;
  const std::string path = dir.file("v5.db");
  old_database(path, 5, "");
  std::unique_ptr<Store> store = open_store(path);
  ASSERT_NE(store, nullptr);
  RunInfo run = test_run(5000);
  run.counting = kCountingTaskCache;
  store->begin_run(run);
  ASSERT_TRUE(store->flush().has_value());
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(counting, ',') FROM (SELECT "
                    "counting FROM runs ORDER BY id)"),
            "percpu_counter,task_cache");
}

// Before version 10 a /proc pair read while the process faulted or exited
// was stored as drift, up to twice the kernel's bound: such a drift beyond
// its run's bound (3 x 2 CPUs x 31 = 186 pages here) is no drift, and the
// upgrade says so. Runs with per-task caches have no bound.
TEST(StoreSchema, VersionEightDriftsBeyondTheirRunsBoundBecomeUnknown) {
  TempDir dir;
  const std::string path = dir.file("v8.db");
  old_database(
      path, 8,
      "INSERT INTO runs (id, host, kernel_release, nr_cpus, batch, "
      "page_size, rssaudit_version, started_ns, counting) VALUES (2, 'h', "
      "'6.1', 2, 32, 4096, '0.1.0', 0, 'task_cache');"
      "INSERT INTO processes VALUES (1, 1, 10, 100, 'busy', '', 1000, 6000, "
      "NULL, NULL, NULL), (2, 2, 11, 100, 'old', '', 1000, 1000, NULL, NULL, "
      "NULL);"
      "INSERT INTO samples (process_id, time_ns, drift) VALUES (1, 1000, 186),"
      "(1, 2000, -186), (1, 3000, 187), (1, 4000, -400), (1, 5000, NULL),"
      "(1, 6000, 3), (2, 1000, 5000);");
  ASSERT_NE(open_store(path), nullptr);
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(coalesce(drift, 'NULL') || ' ' || "
                    "coalesce(drift_unknown, '-'), ',') FROM (SELECT * FROM "
                    "samples ORDER BY process_id, time_ns)"),
            "186 -,-186 -,NULL beyond_bound,NULL beyond_bound,NULL -,3 -,"
            "5000 -");
}

TEST(StoreSchema, VersionOneRowsAreKeptWithFidelityNotMeasured) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  old_database(
      path, 1,
      "INSERT INTO processes VALUES (1, 1, 10, 100, 'old', '', 1000, 3000, "
      "NULL, NULL);"
      "INSERT INTO samples (process_id, time_ns, approx_anon, "
      "precise_anon, drift) VALUES (1, 1000, 5, 4, 1), (1, 2000, 7, 4, 3);"
      "INSERT INTO model_errors VALUES (1, 1000, 2000, 'upstream', 9, 62, "
      "3, 6304);");
  std::unique_ptr<Store> store = open_store(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawDb(path).num("PRAGMA user_version"), latest_schema_version());
  // New rows after the upgrade carry fidelity; ids go on after the old ones.
  store->begin_run(test_run(5000));
  const int64_t p = store->upsert_process({10, 900}, "new", "/x", 5000);
  EXPECT_EQ(p, 2);
  SampleRow fresh = make_sample(p, 5000, 1);
  fresh.fidelity_checked = 40;
  fresh.fidelity_matched = 39;
  store->add_sample(fresh);
  ASSERT_TRUE(store->flush().has_value());
  store.reset();

  std::unique_ptr<StoreReader> reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto old_rows = reader->process_history(1, 0, 10'000);
  ASSERT_TRUE(old_rows.has_value()) << old_rows.error().message;
  ASSERT_EQ(old_rows->size(), 2u);
  EXPECT_EQ(old_rows.value()[1].row.approximate[kAnonPages], 7);
  EXPECT_EQ(old_rows.value()[1].drift, 3);
  for (const StoredSample& s : old_rows.value()) {
    EXPECT_EQ(s.row.fidelity_checked, std::nullopt);  // not measured
    EXPECT_EQ(s.row.fidelity_matched, std::nullopt);
  }
  auto latest = reader->latest_sample(p);
  ASSERT_TRUE(latest.has_value() && latest.value()) << latest.error().message;
  EXPECT_EQ(latest.value()->row, fresh);
  auto errors = reader->latest_model_errors(1);
  ASSERT_TRUE(errors.has_value()) << errors.error().message;
  ASSERT_EQ(errors->size(), 1u);
  EXPECT_EQ(errors.value()[0].largest_error, 9);
}

TEST(StoreSchema, VersionZeroHoldingOtherTablesIsRefusedAndLeftUntouched) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  RawDb(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
      .exec("CREATE TABLE leftover (x); INSERT INTO leftover VALUES (1)");

  Result<std::unique_ptr<Store>, StoreError> s = Store::open(path, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, Code::kForeign);
  EXPECT_NE(s.error().message.find(path), std::string::npos);
  EXPECT_NE(s.error().message.find("not an rssaudit database"),
            std::string::npos)
      << s.error().message;
  RawDb db(path);
  EXPECT_EQ(db.num("SELECT count(*) FROM leftover"), 1);
  EXPECT_EQ(db.num("SELECT count(*) FROM sqlite_schema"), 1);
  EXPECT_EQ(db.num("PRAGMA user_version"), 0);
}

TEST(StoreSchema, DatabaseFromTheFutureIsRefusedNamingBothVersions) {
  TempDir dir;
  const std::string path = dir.file("future.db");
  ASSERT_NE(open_store(path), nullptr);
  const int future = latest_schema_version() + 1;
  RawDb(path).exec("PRAGMA user_version = " + std::to_string(future));

  const std::string versions = "schema version " + std::to_string(future) +
                               " is newer than this rssaudit build supports (" +
                               std::to_string(latest_schema_version()) + ")";
  Result<std::unique_ptr<Store>, StoreError> s = Store::open(path, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, Code::kNewer);
  EXPECT_EQ(s.error().message.find(path), 0u) << s.error().message;
  EXPECT_NE(s.error().message.find(versions), std::string::npos)
      << s.error().message;

  Result<std::unique_ptr<StoreReader>, StoreError> r =
      StoreReader::open_read_only(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find(versions), std::string::npos)
      << r.error().message;
  EXPECT_EQ(RawDb(path).num("PRAGMA user_version"), future);
}

TEST(StoreSchema, ReaderRefusesAnOlderSchemaInsteadOfUpgradingIt) {
  TempDir dir;
  const std::string path = dir.file("empty.db");
  ASSERT_TRUE(Database::create_at_version(path, 0).has_value());
  Result<std::unique_ptr<StoreReader>, StoreError> r =
      StoreReader::open_read_only(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Code::kOlder);
  EXPECT_NE(r.error().message.find(path), std::string::npos);
  EXPECT_EQ(RawDb(path).num("PRAGMA user_version"), 0);
}

TEST(StoreSchema, SecondWriterOnTheSameDatabaseIsRefused) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> first = open_store(path);
  Result<std::unique_ptr<Store>, StoreError> second = Store::open(path, {});
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, Code::kBusy);
  EXPECT_NE(second.error().message.find("another rssauditd"),
            std::string::npos);
  first.reset();
  EXPECT_NE(open_store(path), nullptr);
}

// ------------------------------------------------- paths of another's --

// Runs `command` as nobody (setpriv), as a hostile local user would.
void as_nobody(const std::string& command) {
  const std::string full =
      "setpriv --reuid=65534 --regid=65534 --clear-groups " + command;
  ASSERT_EQ(std::system(full.c_str()), 0) << full;
}

// A database path an unprivileged user prepared in a directory of theirs:
// a link, dangling into a root-only directory or to a root file, at the
// database or at its -wal or -shm, is refused naming the path, and nothing
// is created or written through it. The unit's ProtectSystem confines the
// daemon; a manual run as root (the README's ./rssaudit.db) has only this.
TEST(StorePaths, LinksAnotherUserPlantedAreRefusedAndNothingIsWritten) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the writer a link targets";
  if (std::system("command -v setpriv >/dev/null") != 0)
    GTEST_SKIP() << "needs setpriv (util-linux) to act as another user";
  TempDir root_only, theirs;
  ASSERT_EQ(chmod(root_only.path().c_str(), 0700), 0);
  ASSERT_EQ(chown(theirs.path().c_str(), 65534, 65534), 0);
  const std::string root_file = root_only.file("root.db");
  { std::ofstream(root_file) << ""; }
  ASSERT_EQ(chmod(root_file.c_str(), 0600), 0);
  as_nobody("ln -s " + root_only.file("planted.db") + " " +
            theirs.file("dangling.db"));
  as_nobody("ln -s " + root_file + " " + theirs.file("to-root.db"));
  for (const char* name : {"dangling.db", "to-root.db"}) {
    Result<std::unique_ptr<Store>, StoreError> s =
        Store::open(theirs.file(name), {});
    ASSERT_FALSE(s.has_value()) << name;
    EXPECT_NE(s.error().message.find(theirs.file(name) +
                                     ": cannot open for writing: a "
                                     "symbolic link"),
              std::string::npos)
        << s.error().message;
  }
  // The -wal and -shm SQLite makes beside the database: never followed.
  as_nobody("ln -s " + root_only.file("planted-wal") + " " +
            theirs.file("h.db-wal"));
  as_nobody("ln -s " + root_only.file("planted-shm") + " " +
            theirs.file("h.db-shm"));
  Result<std::unique_ptr<Store>, StoreError> beside =
      Store::open(theirs.file("h.db"), {});
  if (beside) {
    (*beside)->begin_run(test_run());
    EXPECT_FALSE((*beside)->flush().has_value());
  }
  EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(root_only.path()),
                                  fs::directory_iterator()),
            std::vector<fs::path>{root_file});
  EXPECT_EQ(fs::file_size(root_file), 0u);
}

// The history names every process: a new one, its -wal and -shm are
// readable by their owner only (the unit adds UMask=0077). A FIFO at the
// path is refused at once, for writing and for reading.
TEST(StorePaths, ANewHistoryIsItsOwnersOnlyAndAFifoIsRefusedAtOnce) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  {
    std::unique_ptr<Store> store = open_store(path);
    store->begin_run(test_run());
    ASSERT_TRUE(store->flush().has_value());
    for (const char* suffix : {"", "-wal", "-shm"}) {
      struct stat st {};
      ASSERT_EQ(stat((path + suffix).c_str(), &st), 0) << suffix;
      EXPECT_EQ(st.st_mode & 0777, 0600u)
          << suffix << " " << std::oct << st.st_mode;
    }
  }
  const std::string fifo = dir.file("fifo.db");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result<std::unique_ptr<Store>, StoreError> writer = Store::open(fifo, {});
  ASSERT_FALSE(writer.has_value());
  EXPECT_NE(writer.error().message.find(fifo + ": cannot open for writing: a "
                                               "FIFO"),
            std::string::npos)
      << writer.error().message;
  Result<std::unique_ptr<StoreReader>, StoreError> reader =
      StoreReader::open_read_only(fifo);
  ASSERT_FALSE(reader.has_value());
  EXPECT_EQ(reader.error().message,
            fifo + ": cannot read: a FIFO, not a regular file");
}
// ------------------------------------------------------------ round trip --

// Drift compares two values of one moment: the capture's pair, else
// /proc's, never one of each (read a drain apart).
TEST(StoreRows, DriftComparesValuesOfOneMoment) {
  SampleRow r;
  r.approximate = {100, 500, 0, 0};  // the kernel's count, from BPF
  r.exact = {101, 504, 0, 0};        // the same record's exact sum
  r.stat_rss = 640;                  // read later, the process still faulting
  r.precise = {101, 542, 0, 0};
  EXPECT_EQ(rss_drift(r), 600 - 605);
  r.exact[kFilePages].reset();  // not known (joined mid-life, no resync)
  EXPECT_EQ(rss_drift(r), 640 - 643);
  r.stat_rss.reset();
  EXPECT_EQ(rss_drift(r), std::nullopt);
}

// A drift is unknown where its values were not of one moment (/proc read
// while the count moved or the process exited) or lie beyond the kernel's
// bound; the capture's pair is of one moment whatever /proc did.
TEST(StoreRows, DriftIsUnknownUnlessOfOneMomentAndWithinTheBound) {
  constexpr int64_t kBound = 186;
  SampleRow r;
  r.approximate = {100, 500, 0, 0};
  r.exact = {101, 504, 0, 0};
  r.stat_rss = 900;  // far off: read while moving
  r.precise = {101, 542, 0, 0};
  EXPECT_EQ(drift_unknown_of(r, DriftUnknown::kMoving, kBound), std::nullopt);
  r.approximate[kAnonPages] = 700;  // the capture's own pair, beyond
  EXPECT_EQ(drift_unknown_of(r, std::nullopt, kBound),
            DriftUnknown::kBeyondBound);

  r.exact[kFilePages].reset();  // from /proc now: 900 - 643 = 257
  EXPECT_EQ(drift_unknown_of(r, DriftUnknown::kMoving, kBound),
            DriftUnknown::kMoving);
  EXPECT_EQ(drift_unknown_of(r, DriftUnknown::kExiting, kBound),
            DriftUnknown::kExiting);
  EXPECT_EQ(drift_unknown_of(r, std::nullopt, kBound),
            DriftUnknown::kBeyondBound);
  EXPECT_EQ(drift_unknown_of(r, std::nullopt, std::nullopt), std::nullopt)
      << "no bound before 6.2";
  r.stat_rss = 643 + kBound;
  EXPECT_EQ(drift_unknown_of(r, std::nullopt, kBound), std::nullopt);
  r.stat_rss = 643 - kBound;
  EXPECT_EQ(drift_unknown_of(r, std::nullopt, kBound), std::nullopt);
  r.stat_rss = 643 - kBound - 1;
  EXPECT_EQ(drift_unknown_of(r, std::nullopt, kBound),
            DriftUnknown::kBeyondBound);
  EXPECT_EQ(rss_drift(r), -kBound - 1) << "until the row says why";
  r.drift_unknown = DriftUnknown::kBeyondBound;
  EXPECT_EQ(rss_drift(r), std::nullopt);
  EXPECT_EQ(source_drift(r), -kBound - 1);

  r.precise[kShmemPages].reset();  // no source: nothing to be unknown
  EXPECT_EQ(drift_unknown_of(r, DriftUnknown::kMoving, kBound), std::nullopt);
}

TEST(StoreRows, DriftUnknownReasonsHaveOneStoredNameEach) {
  for (size_t i = 0; i < kDriftUnknownReasons; ++i) {
    const auto why = static_cast<DriftUnknown>(i);
    EXPECT_EQ(drift_unknown_named(drift_unknown_name(why)), why);
    EXPECT_FALSE(drift_unknown_words(why).empty());
  }
  EXPECT_EQ(drift_unknown_named(""), std::nullopt);
  EXPECT_EQ(drift_unknown_named("still"), std::nullopt);
}

// The reason is stored beside a NULL drift and read back with the row.
TEST(StoreRoundTrip, AnUnknownDriftIsStoredAsNullWithItsReason) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t id = store->upsert_process({10, 100}, "busy", "", kSecond);
  SampleRow moving = make_sample(id, kSecond, 5);
  moving.approximate = {};  // from /proc: stat 21 - precise 18
  moving.drift_unknown = DriftUnknown::kMoving;
  SampleRow known = make_sample(id, 2 * kSecond, 5);
  known.approximate = {};
  store->add_sample(moving);
  store->add_sample(known);
  ASSERT_TRUE(store->flush().has_value());
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(coalesce(drift, 'NULL') || ' ' || "
                    "coalesce(drift_unknown, '-'), ',') FROM (SELECT * FROM "
                    "samples ORDER BY time_ns)"),
            "NULL moving,3 -");
  auto rows = open_reader(path)->process_history(id, 0, 10 * kSecond);
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(rows.value()[0].row, moving);
  EXPECT_EQ(rows.value()[0].drift, std::nullopt);
  EXPECT_EQ(rows.value()[1].row.drift_unknown, std::nullopt);
  EXPECT_EQ(rows.value()[1].drift, 3);
}

TEST(StoreRoundTrip, RunsProcessesSamplesModelErrorsAnomaliesAndLosses) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  const int64_t run = store->begin_run(test_run(10 * kSecond));
  const std::string hostile = "a b) (c\nd";
  const int64_t p = store->upsert_process({42, 1000}, hostile, "/sys/x", 11);
  EXPECT_EQ(store->upsert_process({42, 1000}, hostile, "/sys/x", 20 * kSecond),
            p);

  std::vector<SampleRow> rows = {make_sample(p, 11 * kSecond, 10),
                                 make_sample(p, 12 * kSecond, 20)};
  rows[1].exact[kAnonPages].reset();  // drift falls back on /proc
  rows[1].walk = {1, 2, 3, 4};
  rows[1].walk_rss = 7;
  for (const SampleRow& r : rows) store->add_sample(r);
  for (size_t i = 0; i < SchemeSet::kCount; ++i) {
    store->add_model_error(
        {.process_id = p,
         .start_ns = 11 * kSecond,
         .end_ns = 12 * kSecond,
         .scheme = i,
         .largest_error = static_cast<int64_t>(i),
         .bound = i == 0 ? std::nullopt : std::optional<int64_t>(64),
         .shared_updates = 5,
         .bytes_per_mm = 128});
  }
  store->add_anomaly({p, 12 * kSecond, "exit_residue", "3 pages"});
  store->add_anomaly({std::nullopt, 13 * kSecond, "resync", "capture drops"});
  store->add_loss({.time_ns = 13 * kSecond,
                   .capture_drops = 7,
                   .unreadable_files = 2,
                   .ambiguous_events = 1});
  store->record_exit(p, 14 * kSecond, 3, 5000);
  // The mm an exec left, ended in the same flush: the larger peak stays.
  store->record_exit(p, 14 * kSecond, 3, 200);
  store->end_run(15 * kSecond);
  EXPECT_EQ(store->pending_rows(), 2 + SchemeSet::kCount + 2 + 1);
  ASSERT_TRUE(store->flush().has_value());
  EXPECT_EQ(store->pending_rows(), 0u);
  store.reset();

  std::unique_ptr<StoreReader> reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto runs = reader->list_runs();
  ASSERT_TRUE(runs.has_value());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs.value()[0].id, run);
  EXPECT_EQ(runs.value()[0].info.kernel_release, "6.1.0-test");
  EXPECT_EQ(runs.value()[0].info.batch, 32);
  EXPECT_EQ(runs.value()[0].ended_ns, 15 * kSecond);
  EXPECT_EQ(runs.value()[0].processes, 1);

  auto procs = reader->processes_with_pid(42);
  ASSERT_TRUE(procs.has_value());
  ASSERT_EQ(procs->size(), 1u);
  const ProcessSummary& proc = procs.value()[0];
  EXPECT_EQ(proc.comm, hostile);
  EXPECT_EQ(proc.identity, (ProcessIdentity{42, 1000}));
  EXPECT_EQ(proc.first_seen_ns, 11);
  EXPECT_EQ(proc.last_seen_ns, 20 * kSecond);
  EXPECT_EQ(proc.exit_ns, 14 * kSecond);
  EXPECT_EQ(proc.exit_residue, 3);
  EXPECT_EQ(proc.true_peak, 5000);

  auto history = reader->process_history(p, 0, 100 * kSecond);
  ASSERT_TRUE(history.has_value());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ(history.value()[0].row, rows[0]);
  EXPECT_EQ(history.value()[1].row, rows[1]);
  EXPECT_EQ(history.value()[0].drift, 3);        // (11+12+13) - (10+11+12)
  EXPECT_EQ(history.value()[1].drift, 66 - 63);  // stat_rss - precise

  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(scheme, ',') FROM (SELECT scheme "
                    "FROM model_errors ORDER BY largest_error)"),
            [] {
              std::string names;
              for (std::string_view n : SchemeSet::kNames) {
                names += (names.empty() ? "" : ",") + std::string(n);
              }
              return names;
            }());
  EXPECT_EQ(db.num("SELECT count(*) FROM model_errors WHERE bound IS NULL"), 1);
  EXPECT_EQ(db.text("SELECT group_concat(kind || ':' || "
                    "coalesce(process_id, 'none'), ',') FROM anomalies"),
            "exit_residue:" + std::to_string(p) + ",resync:none");
  EXPECT_EQ(db.text("SELECT capture_drops || ',' || unreadable_files || ',' || "
                    "ambiguous_events || ',' || store_dropped FROM losses"),
            "7,2,1,0");
}

TEST(StoreRoundTrip, SamePidWithTwoStartTimesIsTwoProcesses) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t first = store->upsert_process({7, 100}, "old", "/", 1);
  const int64_t second = store->upsert_process({7, 900}, "new", "/", 2);
  EXPECT_NE(first, second);
  store->add_sample(make_sample(first, 1, 1));
  store->add_sample(make_sample(second, 2, 2));
  ASSERT_TRUE(store->flush().has_value());

  std::unique_ptr<StoreReader> reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto procs = reader->processes_with_pid(7);
  ASSERT_TRUE(procs.has_value());
  ASSERT_EQ(procs->size(), 2u);
  EXPECT_EQ(procs.value()[0].comm, "new");
  EXPECT_EQ(procs.value()[0].identity.start_ticks, 900u);
  EXPECT_EQ(procs.value()[1].comm, "old");
}

TEST(StoreRoundTrip, ProcessIdsContinueAcrossRuns) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  int64_t first_run_id = 0;
  int64_t first_process = 0;
  {
    std::unique_ptr<Store> store = open_store(path);
    first_run_id = store->begin_run(test_run());
    first_process = store->upsert_process({1, 1}, "a", "/", 1);
    ASSERT_TRUE(store->flush().has_value());
  }
  std::unique_ptr<Store> store = open_store(path);
  EXPECT_GT(store->begin_run(test_run()), first_run_id);
  // The same identity seen by a later run is that run's own row.
  EXPECT_GT(store->upsert_process({1, 1}, "a", "/", 2), first_process);
  ASSERT_TRUE(store->flush().has_value());
  EXPECT_EQ(RawDb(path).num("SELECT count(*) FROM processes"), 2);
}

// A store at `path` with a run, process `*p` ("worker") and one sample of
// it written.
std::unique_ptr<Store> store_with_one_sample(const std::string& path,
                                             int64_t* p) {
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  *p = store->upsert_process({7, 100}, "worker", "/", 1);
  store->add_sample(make_sample(*p, 1, 1));
  EXPECT_TRUE(store->flush().has_value());
  return store;
}

// A database deleted while the daemon writes it: the next flush notices,
// begins a new file at the path with the run and the processes the rows
// refer to, and says so there. Once, rows went on into the deleted file.
TEST(StoreDeleted, ADeletedDatabaseIsNoticedAndANewOneBegun) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  int64_t p = 0;
  std::unique_ptr<Store> store = store_with_one_sample(path, &p);
  for (const char* suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(path + suffix);

  store->add_sample(make_sample(p, 2, 2));
  const Result<void, StoreError> s = store->flush();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(store->reopened(), 1u);
  ASSERT_TRUE(std::filesystem::exists(path));
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.num("SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(db.text("SELECT comm FROM processes"), "worker");
  EXPECT_EQ(db.num("SELECT time_ns FROM samples"), 2);
  EXPECT_EQ(db.num("SELECT count(*) FROM anomalies WHERE kind = "
                   "'database_reopened'"),
            1);
  // The new file is locked as the first was.
  EXPECT_FALSE(Store::open(path, {}).has_value());
}

// chattr +i or +a on the database's files (the admin freezing them): a
// write through SQLite's shared-memory map of -shm then faults, SIGBUS.
// The flush says so instead, keeps its rows, and writes them once unset.
bool set_fs_flag(const std::string& path, int flag, bool on) {
  const UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  int flags = 0;
  if (!fd || ioctl(fd.get(), FS_IOC_GETFLAGS, &flags) != 0) return false;
  flags = on ? flags | flag : flags & ~flag;
  return ioctl(fd.get(), FS_IOC_SETFLAGS, &flags) == 0;
}

TEST(StoreFrozen, FilesMadeImmutableAreRefusedNotWrittenThrough) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  int64_t p = 0;
  std::unique_ptr<Store> store = store_with_one_sample(path, &p);
  for (const int flag : {FS_IMMUTABLE_FL, FS_APPEND_FL}) {
    const std::vector<std::string> files = {path, path + "-wal", path + "-shm"};
    for (const std::string& f : files) {
      if (!set_fs_flag(f, flag, true))
        GTEST_SKIP() << "cannot chattr " << f << ": " << std::strerror(errno)
                     << " (needs CAP_LINUX_IMMUTABLE and ext4, xfs, tmpfs)";
    }
    store->add_sample(make_sample(p, 2 + flag, 2 + flag));
    const Result<void, StoreError> s = store->flush();
    for (const std::string& f : files) set_fs_flag(f, flag, false);
    ASSERT_FALSE(s.has_value());
    EXPECT_NE(s.error().message.find(flag == FS_IMMUTABLE_FL ? "immutable"
                                                             : "append-only"),
              std::string::npos)
        << s.error().message;
    EXPECT_NE(s.error().message.find("1 rows kept"), std::string::npos)
        << s.error().message;
    const Result<void, StoreError> again = store->flush();
    ASSERT_TRUE(again.has_value()) << again.error().message;
  }
  EXPECT_EQ(sample_count(path), 3);
}

// chattr +i toggled on -shm while flushes run back to back: one landing
// inside a flush, after the check before it, made SQLite's next write to
// its shared map a SIGBUS (exit 135). The write now waits for the thaw
// (store/shm_fault_guard.h); every row is written once it is undone.
TEST(StoreFrozen, AnShmFrozenInsideAFlushIsWaitedForNotASigbus) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  const std::string shm = path + "-shm";
  constexpr int kRows = 1500;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t writer = fork();
  if (writer == 0) {
    int64_t p = 0;
    std::unique_ptr<Store> store = store_with_one_sample(path, &p);
    char c = 1;
    if (write(go[1], &c, 1) != 1) _exit(3);
    for (int i = 0; i < kRows; ++i) {
      store->add_sample(make_sample(p, 10 + i, 10 + i));
      (void)store->flush();  // refused while frozen: the rows are kept
      usleep(2000);
    }
    for (int tries = 0; tries < 100; ++tries, usleep(10000))
      if (store->flush().has_value()) _exit(0);
    _exit(4);
  }
  char c = 0;
  ASSERT_EQ(read(go[0], &c, 1), 1);
  if (!set_fs_flag(shm, FS_IMMUTABLE_FL, true)) {
    kill(writer, SIGKILL);
    waitpid(writer, nullptr, 0);
    GTEST_SKIP() << "cannot chattr " << shm << ": " << std::strerror(errno)
                 << " (needs CAP_LINUX_IMMUTABLE and ext4, xfs, tmpfs)";
  }
  int status = 0, toggles = 0;
  while (waitpid(writer, &status, WNOHANG) == 0) {
    set_fs_flag(shm, FS_IMMUTABLE_FL, false);
    usleep(700);
    set_fs_flag(shm, FS_IMMUTABLE_FL, true);
    usleep(300);
    ++toggles;
  }
  set_fs_flag(shm, FS_IMMUTABLE_FL, false);
  ASSERT_FALSE(WIFSIGNALED(status))
      << "the writer died of signal " << WTERMSIG(status) << " after "
      << toggles << " toggles";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(sample_count(path), 1 + kRows) << toggles << " toggles";
}

// Any other SIGBUS (a mapped file truncated under its reader) still ends
// the process, after one retry, as if no guard were there.
TEST(StoreFrozen, ASigbusNoFrozenShmExplainsStillEndsTheProcess) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  const pid_t child = fork();
  if (child == 0) {
    int64_t p = 0;
    std::unique_ptr<Store> store = store_with_one_sample(path, &p);
    const UniqueFd fd(
        open(dir.file("mapped").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd || ftruncate(fd.get(), 4096) != 0) _exit(3);
    auto* page = static_cast<volatile char*>(
        mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd.get(), 0));
    if (page == MAP_FAILED || ftruncate(fd.get(), 0) != 0) _exit(3);
    (void)page[0];  // beyond the file's end now: SIGBUS
    _exit(0);
  }
  int status = 0;
  pid_t reaped = 0;
  for (int i = 0; i < 500 && reaped == 0; ++i, usleep(10000))
    reaped = waitpid(child, &status, WNOHANG);
  if (reaped == 0) {  // looping on its fault: fails below
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << status;
}

TEST(StoreDeleted, AFileMovedOverTheDatabaseIsNeverWrittenInto) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({7, 100}, "worker", "/", 1);
  ASSERT_TRUE(store->flush().has_value());
  const std::string other = dir.file("other.db");
  std::ofstream(other) << "someone else's file";
  std::filesystem::rename(other, path);

  store->add_sample(make_sample(p, 2, 2));
  const Result<void, StoreError> s = store->flush();
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("replaced by another file"),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("1 rows kept"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(store->pending_rows(), 1u);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "someone else's file");
}

TEST(StoreRoundTrip, TopDriftRanksProcessesByLargestDriftInTheWindow) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t small = store->upsert_process({1, 1}, "small", "/", 0);
  const int64_t large = store->upsert_process({2, 1}, "large", "/", 0);
  const int64_t outside = store->upsert_process({3, 1}, "outside", "/", 0);
  auto with_drift = [](int64_t p, int64_t t, int64_t drift) {
    SampleRow r = make_sample(p, t, 100);
    r.approximate = {100 + drift, 100, 0, 100};
    r.precise = {100, 100, 0, 100};
    r.exact = r.precise;
    return r;
  };
  store->add_sample(with_drift(small, 10, 5));
  store->add_sample(with_drift(small, 11, -8));
  store->add_sample(with_drift(large, 12, -40));
  store->add_sample(with_drift(large, 13, 20));
  store->add_sample(with_drift(outside, 50, 1000));
  ASSERT_TRUE(store->flush().has_value());

  std::unique_ptr<StoreReader> reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto top = reader->top_drift(10, 50, 10);
  ASSERT_TRUE(top.has_value()) << top.error().message;
  ASSERT_EQ(top->size(), 2u);
  EXPECT_EQ(top.value()[0].process.comm, "large");
  EXPECT_EQ(top.value()[0].drift_pages, -40);
  EXPECT_EQ(top.value()[0].drift_bytes, -40 * 4096);
  EXPECT_EQ(top.value()[0].at_ns, 12);
  EXPECT_EQ(top.value()[0].samples, 2);
  EXPECT_EQ(top.value()[1].process.comm, "small");
  EXPECT_EQ(top.value()[1].drift_pages, -8);
}

// A run of a kernel before 6.2 says so, and its processes' bound is that of
// per_task, the kernel's own scheme (none), not upstream's.
TEST(StoreRoundTrip, ARunOfPerTaskCachesKeepsItsCountingAndHasNoBound) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  RunInfo run = test_run();
  run.counting = kCountingTaskCache;
  store->begin_run(run);
  const int64_t p = store->upsert_process({1, 1}, "threads", "/", 0);
  store->add_sample(make_sample(p, 10, 100));
  for (size_t i = 0; i < SchemeSet::kCount; ++i)
    store->add_model_error({.process_id = p,
                            .start_ns = 0,
                            .end_ns = 10,
                            .scheme = i,
                            .largest_error = 1,
                            .bound = SchemeSet::kNames[i] == PerTaskCache::kName
                                         ? std::nullopt
                                         : std::optional<int64_t>(62),
                            .shared_updates = 0,
                            .bytes_per_mm = 0});
  ASSERT_TRUE(store->flush().has_value());
  std::unique_ptr<StoreReader> reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto runs = reader->list_runs();
  ASSERT_TRUE(runs.has_value()) << runs.error().message;
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs.value()[0].info.counting, kCountingTaskCache);
  auto windows = reader->process_windows(0, 100);
  ASSERT_TRUE(windows.has_value()) << windows.error().message;
  ASSERT_EQ(windows->size(), 1u);
  EXPECT_TRUE(windows.value()[0].task_cache);
  EXPECT_FALSE(windows.value()[0].bound_per_counter) << "none before 6.2";
}

// ----------------------------------------------------------- crash safety --

// A child writes batches of kCrashBatch samples, acknowledging each flush on a
// pipe, until SIGKILL. Sample i of batch b of round r is at time
// r * kCrashRound + b * kCrashStride + i.
constexpr int kCrashBatch = 2000;
constexpr int64_t kCrashStride = 10'000;
constexpr int64_t kCrashRound = 1'000'000'000;

[[noreturn]] void write_batches_until_killed(const std::string& path, int round,
                                             int ack_fd) {
  Result<std::unique_ptr<Store>, StoreError> store = Store::open(path, {});
  if (!store.has_value()) _exit(2);
  store.value()->begin_run(test_run());
  const int64_t p = store.value()->upsert_process(
      {static_cast<uint32_t>(round), 1}, "writer", "/", 0);
  for (int64_t batch = 0;; ++batch) {
    for (int i = 0; i < kCrashBatch; ++i) {
      store.value()->add_sample(
          make_sample(p, round * kCrashRound + batch * kCrashStride + i, i));
    }
    if (!store.value()->flush().has_value()) _exit(3);
    if (write(ack_fd, &batch, sizeof batch) != sizeof batch) _exit(4);
  }
}

TEST(StoreCrash, KilledMidWriteReopensCleanlyLosingAtMostTheLastBatch) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  for (int round = 1; round <= 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int ack[2];
    ASSERT_EQ(pipe(ack), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(ack[0]);
      write_batches_until_killed(path, round, ack[1]);
    }
    close(ack[1]);
    int64_t acked = -1;
    int64_t batch;
    while (acked < 10 * round && read(ack[0], &batch, sizeof batch) > 0) {
      acked = batch;
    }
    // Vary the moment of the kill within the next batch's write.
    usleep(static_cast<useconds_t>(round * 2300));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    while (read(ack[0], &batch, sizeof batch) > 0) acked = batch;
    close(ack[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited " << status;
    ASSERT_GE(acked, 10 * round);

    ASSERT_NE(open_store(path), nullptr);
    RawDb db(path);
    EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
    const std::string batches = fmt::format(
        "SELECT (time_ns % {0}) / {1} AS b, count(*) AS n FROM samples "
        "WHERE time_ns / {0} = {2} GROUP BY b",
        kCrashRound, kCrashStride, round);
    // Every acknowledged batch whole, and at most one more: the one being
    // written at the kill, whole or in whole pieces (each piece is a
    // transaction of its own), never a part of a piece. The batch's first
    // piece carries the process too (the batch moved its last-seen time):
    // one row fewer.
    EXPECT_EQ(db.num(fmt::format("SELECT count(*) FROM ({}) WHERE n != {} "
                                 "AND b <= {}",
                                 batches, kCrashBatch, acked)),
              0);
    EXPECT_EQ(db.num(fmt::format("SELECT count(*) FROM ({}) WHERE n != {} "
                                 "AND (n + 1) % {} != 0",
                                 batches, kCrashBatch, Store::kPieceRows)),
              0);
    const int64_t stored = db.num("SELECT count(*) FROM (" + batches + ")");
    const int64_t last = db.num("SELECT max(b) FROM (" + batches + ")");
    EXPECT_EQ(stored, last + 1);
    EXPECT_GE(last, acked);
    EXPECT_LE(last, acked + 1);
  }
}

// ------------------------------------------------------ full, read-only --

// A tmpfs of 256 KiB mounted on a temporary directory: a disk that fills.
class SmallDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
    if (mount("rssaudit-test", dir_.path().c_str(), "tmpfs", 0, "size=256k") !=
        0) {
      GTEST_SKIP() << "cannot mount a tmpfs on " << dir_.path() << ": "
                   << std::strerror(errno);
    }
    mounted_ = true;
    path_ = dir_.file("rssaudit.db");
  }
  void TearDown() override {
    if (mounted_) umount2(dir_.path().c_str(), MNT_DETACH);
  }

  // Writes a file until the file system is full.
  void fill() {
    std::ofstream filler(dir_.file("filler"), std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), block.size()) && filler.flush()) {
    }
  }
  // A store on the small disk with a run, process `*p` and 100 samples of
  // it (times 0..99) written.
  std::unique_ptr<Store> store_with_100_samples(int64_t* p,
                                                const StoreOptions& o = {}) {
    std::unique_ptr<Store> store = open_store(path_, o);
    if (!store) return nullptr;
    store->begin_run(test_run());
    *p = store->upsert_process({1, 1}, "a", "/", 0);
    for (int i = 0; i < 100; ++i) store->add_sample(make_sample(*p, i, i));
    EXPECT_TRUE(store->flush().has_value());
    return store;
  }
  bool remount(const char* options, unsigned long flags = 0) {
    return mount("rssaudit-test", dir_.path().c_str(), "tmpfs",
                 MS_REMOUNT | flags, options) == 0;
  }

  TempDir dir_;
  bool mounted_ = false;
  std::string path_;
};

TEST_F(SmallDisk, FullDiskIsAClearErrorAndTheKeptBatchIsWrittenOnceFreed) {
  int64_t p = 0;
  std::unique_ptr<Store> store = store_with_100_samples(&p);
  ASSERT_NE(store, nullptr);

  fill();
  for (int i = 100; i < 3100; ++i) store->add_sample(make_sample(p, i, i));
  for (int attempt = 0; attempt < 3; ++attempt) {
    const Result<void, StoreError> s = store->flush();
    ASSERT_FALSE(s.has_value());
    EXPECT_EQ(s.error().code, Code::kFull) << s.error().message;
    EXPECT_EQ(s.error().message.find(path_), 0u) << s.error().message;
    EXPECT_NE(s.error().message.find("full"), std::string::npos)
        << s.error().message;
    EXPECT_NE(s.error().message.find("kept"), std::string::npos)
        << s.error().message;
  }
  EXPECT_EQ(store->pending_rows(), 3000u);
  EXPECT_EQ(store->dropped_rows(), 0u);
  EXPECT_EQ(sample_count(path_), 100);  // nothing stored was lost

  ASSERT_TRUE(remount("size=4m")) << std::strerror(errno);
  const Result<void, StoreError> s = store->flush();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(store->pending_rows(), 0u);
  store.reset();

  ASSERT_NE(open_store(path_), nullptr);
  RawDb db(path_);
  EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.num("SELECT count(*) FROM samples"), 3100);
  EXPECT_EQ(db.num("SELECT count(DISTINCT time_ns) FROM samples"), 3100);
  EXPECT_EQ(db.num("SELECT total(store_dropped) FROM losses"), 0);
}

// A disk freed of less than a long-kept batch needs at once takes what it
// has room for, and the rest once it has more: one transaction of it all
// failed for as long as the room was short, and the daemon never recovered.
TEST_F(SmallDisk, AKeptBatchIsWrittenInPiecesAsRoomAllows) {
  constexpr int kRows = 30'000;
  int64_t p = 0;
  std::unique_ptr<Store> store =
      store_with_100_samples(&p, {.max_pending_rows = size_t{kRows}});
  ASSERT_NE(store, nullptr);

  fill();
  for (int i = 100; i < kRows; ++i) store->add_sample(make_sample(p, i, i));
  ASSERT_FALSE(store->flush().has_value());
  std::filesystem::remove(dir_.file("filler"));
  ASSERT_TRUE(remount("size=1m")) << std::strerror(errno);
  const Result<void, StoreError> tight = store->flush();
  ASSERT_FALSE(tight.has_value()) << "the test needs a batch larger than 1m";
  EXPECT_EQ(tight.error().code, Code::kFull) << tight.error().message;
  const int64_t stored = sample_count(path_);
  EXPECT_GT(stored, 100) << "some pieces fit: " << tight.error().message;
  EXPECT_EQ(store->pending_rows() + stored, size_t{kRows});
  EXPECT_NE(tight.error().message.find(
                fmt::format("{} rows kept", store->pending_rows())),
            std::string::npos)
      << tight.error().message;

  ASSERT_TRUE(remount("size=32m")) << std::strerror(errno);
  const Result<void, StoreError> s = store->flush();
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(store->pending_rows(), 0u);
  store.reset();
  RawDb db(path_);
  EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.num("SELECT count(DISTINCT time_ns) FROM samples"), kRows);
  EXPECT_EQ(db.num("SELECT total(store_dropped) FROM losses"), 0);
}

TEST_F(SmallDisk, LongFailuresDropTheOldestRowsAndRecordTheLoss) {
  std::unique_ptr<Store> store = open_store(path_, {.max_pending_rows = 500});
  ASSERT_NE(store, nullptr);
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
  ASSERT_TRUE(store->flush().has_value());

  fill();
  for (int i = 0; i < 800; ++i) {
    store->add_sample(make_sample(p, i, i));
    if (i % 100 == 99) {
      EXPECT_FALSE(store->flush().has_value());
    }
  }
  EXPECT_EQ(store->pending_rows(), 500u);
  EXPECT_EQ(store->dropped_rows(), 300u);
  EXPECT_EQ(store->dropped_by_kind()[size_t(RowKind::kSamples)], 300u);
  EXPECT_EQ(store->dropped_by_kind()[size_t(RowKind::kModelErrors)], 0u);
  // Past a quarter of the bound, but flushing each tick would only hammer
  // a failing disk: the flush timer retries.
  EXPECT_FALSE(store->backlog_high());

  ASSERT_TRUE(remount("size=4m")) << std::strerror(errno);
  ASSERT_TRUE(store->flush().has_value());
  RawDb db(path_);
  EXPECT_EQ(db.num("SELECT min(time_ns) FROM samples"), 300);  // newest kept
  EXPECT_EQ(db.num("SELECT count(*) FROM samples"), 500);
  EXPECT_EQ(db.num("SELECT total(store_dropped) FROM losses"), 300);
}

// A file system shut down under the database (ext4's EXT4_IOC_SHUTDOWN, as
// an I/O error takes it down): every write fails, SQLite may call the file
// malformed; the rows stay kept and counted, never taken as written.
TEST(StoreShutdown, AFileSystemShutDownUnderTheDatabaseKeepsTheRows) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount an ext4 image";
  TempDir dir;
  const std::string image = dir.file("fs.img"), mnt = dir.file("mnt");
  std::filesystem::create_directory(mnt);
  if (std::system(("truncate -s 32M " + image + " && mkfs.ext4 -q " + image +
                   " && mount -o loop " + image + " " + mnt + " 2>/dev/null")
                      .c_str()) != 0)
    GTEST_SKIP() << "cannot mount an ext4 image on a loop device";
  struct Unmount {  // whatever fails below: the temporary dir goes
    std::string at;
    ~Unmount() { umount2(at.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string path = mnt + "/rssaudit.db";
  {
    std::unique_ptr<Store> store = open_store(path);
    ASSERT_NE(store, nullptr);
    store->begin_run(test_run());
    const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
    for (int i = 0; i < 100; ++i) store->add_sample(make_sample(p, i, i));
    ASSERT_TRUE(store->flush().has_value());
    // include/uapi/linux/ext4.h (not in Debian 12's headers): shut down,
    // without flushing the journal.
    constexpr unsigned long kExt4IocShutdown = _IOR('X', 125, uint32_t);
    uint32_t flags = 2;  // EXT4_GOING_FLAGS_NOLOGFLUSH
    const UniqueFd fs(open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_EQ(ioctl(fs.get(), kExt4IocShutdown, &flags), 0)
        << std::strerror(errno);
    for (int i = 100; i < 150; ++i) store->add_sample(make_sample(p, i, i));
    for (int attempt = 0; attempt < 3; ++attempt) {
      const Result<void, StoreError> s = store->flush();
      ASSERT_FALSE(s.has_value()) << "written to a shut-down file system?";
      EXPECT_NE(s.error().message.find(path), std::string::npos)
          << s.error().message;
      EXPECT_NE(s.error().message.find("50 rows kept"), std::string::npos)
          << s.error().message;
    }
    EXPECT_EQ(store->pending_rows(), 50u);
    EXPECT_EQ(store->dropped_rows(), 0u);
  }
}

TEST_F(SmallDisk, ReadOnlyMountIsRefusedClearlyAndStaysReadable) {
  {
    std::unique_ptr<Store> store = open_store(path_);
    ASSERT_NE(store, nullptr);
    store->begin_run(test_run());
    store->add_sample(
        make_sample(store->upsert_process({1, 1}, "a", "/", 0), 5, 5));
    ASSERT_TRUE(store->flush().has_value());
  }
  ASSERT_TRUE(remount("size=256k", MS_RDONLY)) << std::strerror(errno);

  Result<std::unique_ptr<Store>, StoreError> s = Store::open(path_, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, Code::kReadOnly);
  EXPECT_EQ(s.error().message.find(path_), 0u) << s.error().message;
  EXPECT_NE(s.error().message.find("Read-only"), std::string::npos)
      << s.error().message;
  // The CLI still reads it.
  std::unique_ptr<StoreReader> reader = open_reader(path_);
  ASSERT_NE(reader, nullptr);
  auto runs = reader->list_runs();
  ASSERT_TRUE(runs.has_value()) << runs.error().message;
  EXPECT_EQ(runs->size(), 1u);
}

TEST(StoreReadOnly, ReadOnlyFileIsRefusedClearly) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root writes files whatever their mode; "
                    "SmallDisk.ReadOnlyMount covers root";
  }
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  ASSERT_NE(open_store(path), nullptr);
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  Result<std::unique_ptr<Store>, StoreError> s = Store::open(path, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, Code::kReadOnly);
  EXPECT_EQ(s.error().message.find(path), 0u) << s.error().message;
}

// -------------------------------------------------------------- retention --

TEST(StoreRetention, ByAgeDeletesExactlyTheRowsOlderThanTheCutoff) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t gone = store->upsert_process({1, 1}, "gone", "/", 0);
  const int64_t alive = store->upsert_process({2, 1}, "alive", "/", 0);
  for (int64_t t = 0; t < 1000; ++t) {
    if (t < 300) {
      store->upsert_process({1, 1}, "gone", "/", t * kSecond);
      store->add_sample(make_sample(gone, t * kSecond, t));
    }
    store->upsert_process({2, 1}, "alive", "/", t * kSecond);
    store->add_sample(make_sample(alive, t * kSecond, t));
    store->add_model_error({.process_id = alive, .end_ns = t * kSecond});
    store->add_loss({.time_ns = t * kSecond});
  }
  store->add_anomaly({gone, 100 * kSecond, "old", ""});
  ASSERT_TRUE(store->flush().has_value());

  using std::chrono::seconds;
  ASSERT_TRUE(store->apply_retention({.max_age = seconds(500)}, 1000 * kSecond)
                  .has_value());
  RawDb db(path);
  EXPECT_EQ(db.num("SELECT count(*) FROM samples"), 500);
  EXPECT_EQ(db.num("SELECT min(time_ns) FROM samples"), 500 * kSecond);
  EXPECT_EQ(db.num("SELECT count(*) FROM model_errors"), 500);
  EXPECT_EQ(db.num("SELECT count(*) FROM losses"), 500);
  EXPECT_EQ(db.num("SELECT count(*) FROM anomalies"), 0);
  EXPECT_EQ(db.text("SELECT group_concat(comm) FROM processes"), "alive");
  EXPECT_EQ(db.num("SELECT count(*) FROM runs"), 1);  // the current run

  // The evicted process comes back as a new row when seen again.
  const int64_t again = store->upsert_process({1, 1}, "gone", "/", 1001);
  EXPECT_NE(again, gone);
  store->add_sample(make_sample(again, 1001 * kSecond, 1));
  ASSERT_TRUE(store->flush().has_value());
  EXPECT_EQ(db.num("SELECT count(*) FROM processes"), 2);
}

TEST(StoreRetention, BySizeKeepsTheNewestRowsWithinTheBudget) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
  constexpr int64_t kRows = 40000;
  for (int64_t t = 0; t < kRows; ++t) {
    store->add_sample(make_sample(p, t, t));
    if (t % 10000 == 9999) {
      ASSERT_TRUE(store->flush().has_value());
    }
  }
  const int64_t full = data_bytes(path);
  EXPECT_EQ(sample_count(path), kRows);

  const uint64_t budget = full / 2;
  ASSERT_TRUE(store->apply_retention({.max_bytes = budget}, 0).has_value());
  EXPECT_LE(data_bytes(path), budget);
  // The freed pages are reused before the file grows.
  const uint64_t size = fs::file_size(path);
  for (int64_t t = kRows; t < kRows + 1000; ++t) {
    store->add_sample(make_sample(p, t, t));
  }
  ASSERT_TRUE(store->flush().has_value());
  RawDb(path).exec("PRAGMA wal_checkpoint(TRUNCATE)");
  EXPECT_EQ(fs::file_size(path), size);
  RawDb db(path);
  const int64_t kept = db.num("SELECT count(*) FROM samples");
  EXPECT_GT(kept, kRows / 4);
  EXPECT_LT(kept, kRows);
  EXPECT_EQ(db.num("SELECT max(time_ns) FROM samples"), kRows + 999);
  EXPECT_EQ(db.num("SELECT min(time_ns) FROM samples"), kRows + 1000 - kept);
  EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
}

// ---------------------------------------------------------------- backlog --

// While flushes succeed no row is dropped, however many a tick brings: the
// batch says when it passes a quarter of its bound, and the caller flushes.
TEST(StoreBacklog, AHealthyBatchAsksForAFlushAndNeverDropsPastItsBound) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path, {.max_pending_rows = 400});
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
  for (int i = 0; i < 100; ++i) store->add_sample(make_sample(p, i, i));
  EXPECT_FALSE(store->backlog_high());
  store->add_sample(make_sample(p, 100, 100));
  EXPECT_TRUE(store->backlog_high());
  // A tick of a large host: past the bound, all kept.
  for (int i = 101; i < 1000; ++i) {
    store->add_sample(make_sample(p, i, i));
    store->add_model_error({.process_id = p, .start_ns = i, .end_ns = i});
  }
  EXPECT_EQ(store->dropped_rows(), 0u);
  EXPECT_EQ(store->pending_rows(), 1000u + 899u);
  ASSERT_TRUE(store->flush().has_value());
  EXPECT_FALSE(store->backlog_high());
  EXPECT_EQ(sample_count(path), 1000);
  RawDb db(path);
  EXPECT_EQ(db.num("SELECT count(*) FROM model_errors"), 899);
  EXPECT_EQ(db.num("SELECT count(*) FROM losses"), 0);
}

// The daemon writes a large batch a piece per turn of its loop: each flush
// of one piece stores kPieceRows rows, oldest first, and leaves the rest
// pending; the processes they belong to are stored with the first.
TEST(StoreBacklog, AFlushOfOnePieceWritesThatPieceAndKeepsTheRest) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
  const int64_t rows = 2 * Store::kPieceRows + 10;
  for (int64_t i = 0; i < rows; ++i) store->add_sample(make_sample(p, i, i));
  ASSERT_TRUE(store->flush(1).has_value());
  // The process, then rows: kPieceRows writes.
  const int64_t first = int64_t{Store::kPieceRows} - 1;
  EXPECT_EQ(sample_count(path), first);
  EXPECT_EQ(store->pending_rows(), size_t(rows - first));
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.num("SELECT count(*) FROM processes"), 1);
  EXPECT_EQ(db.num("SELECT max(time_ns) FROM samples"), first - 1);
  ASSERT_TRUE(store->flush(1).has_value());
  ASSERT_TRUE(store->flush(1).has_value());
  EXPECT_EQ(store->pending_rows(), 0u);
  EXPECT_EQ(sample_count(path), rows);
  EXPECT_EQ(store->dropped_rows(), 0u);
}

// A mass exit leaves thousands of processes to write: they go a piece at a
// time too, before any row that may refer to them.
TEST(StoreBacklog, ThousandsOfProcessesAreWrittenAPieceAtATimeBeforeTheRows) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t processes = 2 * Store::kPieceRows + 5;
  for (int64_t i = 0; i < processes; ++i) {
    const int64_t p = store->upsert_process(
        {static_cast<uint32_t>(i + 1), 1}, "a", "/", i);
    store->add_sample(make_sample(p, i, i));
  }
  RawDb db(path, SQLITE_OPEN_READONLY);
  for (int64_t piece = 1; piece <= 2; ++piece) {
    ASSERT_TRUE(store->flush(1).has_value());
    EXPECT_TRUE(store->unwritten());
    EXPECT_EQ(db.num("SELECT count(*) FROM processes"),
              piece * int64_t{Store::kPieceRows});
    EXPECT_EQ(sample_count(path), 0) << "rows wait for every process";
  }
  ASSERT_TRUE(store->flush(1).has_value());
  EXPECT_EQ(db.num("SELECT count(*) FROM processes"), processes);
  EXPECT_EQ(sample_count(path), int64_t{Store::kPieceRows} - 5);
  ASSERT_TRUE(store->flush(2).has_value());
  EXPECT_FALSE(store->unwritten());
  EXPECT_EQ(sample_count(path), processes);
  EXPECT_EQ(db.num("SELECT count(*) FROM samples s LEFT JOIN processes p "
                   "ON p.id = s.process_id WHERE p.id IS NULL"),
            0);
}

// With a time budget a piece ends early, in whole writes, and the next
// piece goes on where it stopped: a budget of 1 ns ends each piece at its
// first check, after kPieceBudgetEvery writes.
TEST(StoreBacklog, APieceEndsAtItsTimeBudgetAndTheNextGoesOn) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store =
      open_store(path, StoreOptions{.piece_budget_ns = 1});
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
  const int64_t rows = 200;
  for (int64_t i = 0; i < rows; ++i) store->add_sample(make_sample(p, i, i));
  constexpr int64_t kEvery = Store::kPieceBudgetEvery;
  ASSERT_TRUE(store->flush(1).has_value());
  EXPECT_EQ(sample_count(path), kEvery - 1) << "the process was one write";
  ASSERT_TRUE(store->flush(1).has_value());
  EXPECT_EQ(sample_count(path), 2 * kEvery - 1);
  ASSERT_TRUE(store->flush().has_value());
  EXPECT_FALSE(store->unwritten());
  EXPECT_EQ(sample_count(path), rows);
  RawDb db(path, SQLITE_OPEN_READONLY);
  EXPECT_EQ(db.num("SELECT count(DISTINCT time_ns) FROM samples"), rows);
}

// ------------------------------------------------------- runs and growth --

// A run left unended (rssauditd killed: no end_run, no last flush) is
// running while its writer holds the file, died once none does, and the
// next writer marks it so at its last heartbeat, with an anomaly.
TEST(StoreRuns, AnUnendedRunIsMarkedDiedAtItsLastHeartbeat) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> killed = open_store(path);
  killed->begin_run(test_run(kSecond));
  const int64_t p = killed->upsert_process({7, 70}, "w", "/", 2 * kSecond);
  killed->add_sample(make_sample(p, 2 * kSecond, 1));
  const int64_t before =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  ASSERT_TRUE(killed->flush().has_value());
  const int64_t heartbeat =
      RawDb(path, SQLITE_OPEN_READONLY).num("SELECT alive_ns FROM runs");
  EXPECT_GE(heartbeat, before);
  {
    auto runs = open_reader(path)->list_runs();
    ASSERT_TRUE(runs.has_value()) << runs.error().message;
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ(runs.value()[0].state, RunState::kRunning);
    EXPECT_EQ(runs.value()[0].stopped_ns, std::nullopt);
  }
  killed->add_sample(make_sample(p, 3 * kSecond, 2));  // lost with it
  killed.reset();

  {  // No writer holds the file: died, as of its heartbeat.
    std::unique_ptr<StoreReader> reader = open_reader(path);
    auto runs = reader->list_runs();
    ASSERT_TRUE(runs.has_value()) << runs.error().message;
    EXPECT_EQ(runs.value()[0].state, RunState::kDied);
    EXPECT_EQ(runs.value()[0].stopped_ns, heartbeat);
    auto windows = reader->process_windows(0, 10 * kSecond);
    ASSERT_TRUE(windows.has_value()) << windows.error().message;
    ASSERT_EQ(windows->size(), 1u);
    EXPECT_EQ(windows.value()[0].run_state, RunState::kDied);
    EXPECT_EQ(windows.value()[0].run_stopped_ns, heartbeat);
  }

  std::unique_ptr<Store> next = open_store(path);
  ASSERT_EQ(next->died_runs().size(), 1u);
  EXPECT_EQ(next->died_runs()[0].id, 1);
  EXPECT_EQ(next->died_runs()[0].started_ns, kSecond);
  EXPECT_EQ(next->died_runs()[0].stopped_ns, heartbeat);
  next->begin_run(test_run(20 * kSecond));
  ASSERT_TRUE(next->flush().has_value());
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT end_reason FROM runs WHERE id = 1"), "died");
  EXPECT_EQ(db.num("SELECT ended_ns FROM runs WHERE id = 1"), heartbeat);
  EXPECT_EQ(db.num("SELECT count(*) FROM anomalies WHERE kind = 'run_died' "
                   "AND run_id = 1 AND time_ns = " +
                   std::to_string(heartbeat)),
            1);
  EXPECT_EQ(sample_count(path), 1);
  auto runs = open_reader(path)->list_runs();
  ASSERT_TRUE(runs.has_value()) << runs.error().message;
  EXPECT_EQ(runs.value()[0].state, RunState::kDied);
  EXPECT_EQ(runs.value()[1].state, RunState::kRunning);

  // Ended by its daemon: stopped at its end, not marked again.
  next->end_run(30 * kSecond);
  ASSERT_TRUE(next->flush().has_value());
  next.reset();
  EXPECT_TRUE(open_store(path)->died_runs().empty());
  EXPECT_EQ(db.text("SELECT end_reason FROM runs WHERE id = 2"), "stopped");
  runs = open_reader(path)->list_runs();
  ASSERT_TRUE(runs.has_value()) << runs.error().message;
  EXPECT_EQ(runs.value()[1].state, RunState::kStopped);
  EXPECT_EQ(runs.value()[1].stopped_ns, 30 * kSecond);
}

// The schema version before runs had a heartbeat (schema/009 on this
// branch; found, not named, so a renumbering keeps the test).
int version_before_heartbeats() {
  for (int v = 1; v <= latest_schema_version(); ++v) {
    TempDir dir;
    const std::string path = dir.file("probe.db");
    EXPECT_TRUE(Database::create_at_version(path, v).has_value());
    if (RawDb(path).num("SELECT count(*) FROM pragma_table_info('runs') "
                        "WHERE name = 'alive_ns'") == 1)
      return v - 1;
  }
  ADD_FAILURE() << "no schema version adds runs.alive_ns";
  return 0;
}

// A version without heartbeats: a run it left unended is marked died at
// its newest sighting of a process; one it ended stays stopped.
TEST(StoreSchema,
     RunsFromBeforeHeartbeatsLeftUnendedAreMarkedDiedAtTheirLastSighting) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  ASSERT_TRUE(Database::create_at_version(path, version_before_heartbeats())
                  .has_value());
  RawDb(path).exec(
      "INSERT INTO runs (id, host, kernel_release, nr_cpus, batch, page_size, "
      "rssaudit_version, started_ns, ended_ns) VALUES "
      "(1, 'h', '6.1', 2, 32, 4096, '0.1.0', 1000, 9000), "
      "(2, 'h', '6.1', 2, 32, 4096, '0.1.0', 10000, NULL);"
      "INSERT INTO processes VALUES (1, 2, 10, 100, 'w', '', 10000, 17000, "
      "NULL, NULL, NULL);");
  std::unique_ptr<Store> store = open_store(path);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->died_runs().size(), 1u);
  EXPECT_EQ(store->died_runs()[0].id, 2);
  EXPECT_EQ(store->died_runs()[0].stopped_ns, 17000);
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(coalesce(end_reason, '-') || ' ' || "
                    "ended_ns, ',') FROM (SELECT * FROM runs ORDER BY id)"),
            "- 9000,died 17000");
  EXPECT_EQ(db.num("SELECT count(*) FROM sampling_gaps"), 0);
  store.reset();
  auto runs = open_reader(path)->list_runs();
  ASSERT_TRUE(runs.has_value()) << runs.error().message;
  EXPECT_EQ(runs.value()[0].state, RunState::kStopped);
  EXPECT_EQ(runs.value()[1].state, RunState::kDied);
}

TEST(StoreRoundTrip, SamplingGapsAreStoredReadBackAndRetained) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  store->add_sampling_gap({10 * kSecond, 44 * kSecond});
  store->add_sampling_gap({100 * kSecond, 103 * kSecond});
  ASSERT_TRUE(store->flush().has_value());
  {
    auto gaps = open_reader(path)->sampling_gaps(40 * kSecond, 200 * kSecond);
    ASSERT_TRUE(gaps.has_value()) << gaps.error().message;
    ASSERT_EQ(gaps->size(), 2u);
    EXPECT_EQ(gaps.value()[0].run_id, 1);
    EXPECT_EQ(gaps.value()[0].gap.start_ns, 10 * kSecond);
    EXPECT_EQ(gaps.value()[0].gap.end_ns, 44 * kSecond);
    auto none = open_reader(path)->sampling_gaps(50 * kSecond, 100 * kSecond);
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(none->empty());
  }
  using std::chrono::seconds;
  ASSERT_TRUE(store->apply_retention({.max_age = seconds(100)}, 150 * kSecond)
                  .has_value());
  EXPECT_EQ(RawDb(path).num("SELECT count(*) FROM sampling_gaps"), 1);
}

// What the flushes add is the history's growth; retention's deletes do not
// take from it.
TEST(StoreGrowth, FlushesAddToTheGrowthAndRetentionDoesNotSubtract) {
  TempDir dir;
  const std::string path = dir.file("rssaudit.db");
  std::unique_ptr<Store> store = open_store(path);
  store->begin_run(test_run());
  const int64_t p = store->upsert_process({1, 1}, "a", "/", 0);
  EXPECT_EQ(store->grown_bytes(), 0u);
  for (int64_t t = 0; t < 20000; ++t) store->add_sample(make_sample(p, t, t));
  ASSERT_TRUE(store->flush().has_value());
  const uint64_t grown = store->grown_bytes();
  const int64_t data = data_bytes(path);
  EXPECT_EQ(store->used_bytes(), static_cast<uint64_t>(data));
  EXPECT_GT(grown, 20000u * 50);  // tens of bytes a row, with its index
  EXPECT_LE(grown, static_cast<uint64_t>(data));
  ASSERT_TRUE(
      store->apply_retention({.max_bytes = uint64_t(data) / 2}, 0).has_value());
  EXPECT_LE(store->used_bytes(), uint64_t(data) / 2);
  EXPECT_EQ(store->grown_bytes(), grown);
  EXPECT_GE(store->file_bytes(), fs::file_size(path));
}

TEST(StoreGrowth, TheRateIsOverTheLastHourOnceAMinuteIsMeasured) {
  constexpr uint64_t kS = 1'000'000'000;
  GrowthRate rate;
  EXPECT_EQ(rate.bytes_per_s(), std::nullopt);
  rate.add(100 * kS, 0);
  rate.add(130 * kS, 3000);
  EXPECT_EQ(rate.bytes_per_s(), std::nullopt);  // half a minute
  rate.add(160 * kS, 6000);
  EXPECT_EQ(rate.bytes_per_s(), 100.0);
  // An hour later the first hour's rate no longer counts.
  rate.add(3700 * kS, 6000);
  rate.add(3760 * kS, 6000 + 60 * 7);
  EXPECT_NEAR(*rate.bytes_per_s(), (60.0 * 7) / 3600, 1e-9);
}

}  // namespace
}  // namespace rssaudit
