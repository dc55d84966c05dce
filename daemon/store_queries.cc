#include "daemon/store_queries.h"

#include <fmt/core.h>
#include <sqlite3.h>

#include <string_view>

namespace rssaudit {
namespace {

constexpr std::string_view kProcessColumns =
    "p.id, p.run_id, p.pid, p.start_ticks, p.comm, p.cgroup, "
    "p.first_seen_ns, p.last_seen_ns, p.exit_ns, p.exit_residue";
constexpr int kProcessColumnCount = 10;

ProcessSummary read_process(const Statement& s, int first) {
  ProcessSummary p;
  p.id = s.column_int(first);
  p.run_id = s.column_int(first + 1);
  p.identity.pid = static_cast<uint32_t>(s.column_int(first + 2));
  p.identity.start_ticks = static_cast<uint64_t>(s.column_int(first + 3));
  p.comm = s.column_text(first + 4);
  p.cgroup = s.column_text(first + 5);
  p.first_seen_ns = s.column_int(first + 6);
  p.last_seen_ns = s.column_int(first + 7);
  p.exit_ns = s.column_optional(first + 8);
  p.exit_residue = s.column_optional(first + 9);
  return p;
}

}  // namespace

StoreResult<std::unique_ptr<StoreReader>> StoreReader::open_read_only(
    const std::string& path) {
  StoreResult<std::unique_ptr<Database>> db =
      Database::open(path, Database::Mode::kReadOnly);
  if (!db.ok()) return {nullptr, std::move(db.status)};
  return {std::unique_ptr<StoreReader>(new StoreReader(std::move(db.value))),
          {}};
}

template <class T, class Read>
StoreStatus StoreReader::collect(Statement& s, std::vector<T>& out,
                                 Read&& read) {
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(read(s));
  s.reset();
  if (rc != SQLITE_DONE) return db_->error(rc, "reading");
  return {};
}

StoreResult<std::vector<RunSummary>> StoreReader::list_runs() {
  StoreResult<Statement> s = db_->prepare(
      "SELECT r.id, r.host, r.kernel_release, r.nr_cpus, r.batch, "
      "r.page_size, r.rssaudit_version, r.started_ns, r.ended_ns, "
      "(SELECT count(*) FROM processes p WHERE p.run_id = r.id) "
      "FROM runs r ORDER BY r.id");
  if (!s.ok()) return {{}, std::move(s.status)};
  StoreResult<std::vector<RunSummary>> out;
  out.status = collect(s.value, out.value, [](const Statement& q) {
    RunSummary r;
    r.id = q.column_int(0);
    r.info.host = q.column_text(1);
    r.info.kernel_release = q.column_text(2);
    r.info.nr_cpus = static_cast<uint32_t>(q.column_int(3));
    r.info.batch = static_cast<int32_t>(q.column_int(4));
    r.info.page_size = q.column_int(5);
    r.info.rssaudit_version = q.column_text(6);
    r.info.started_ns = q.column_int(7);
    r.ended_ns = q.column_optional(8);
    r.processes = q.column_int(9);
    return r;
  });
  return out;
}

StoreResult<std::vector<ProcessSummary>> StoreReader::processes_with_pid(
    uint32_t pid) {
  StoreResult<Statement> s =
      db_->prepare(fmt::format("SELECT {} FROM processes p WHERE p.pid = ?1 "
                               "ORDER BY p.first_seen_ns DESC, p.id DESC",
                               kProcessColumns));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, pid);
  StoreResult<std::vector<ProcessSummary>> out;
  out.status = collect(s.value, out.value,
                       [](const Statement& q) { return read_process(q, 0); });
  return out;
}

StoreResult<std::vector<DriftEntry>> StoreReader::top_drift(int64_t since_ns,
                                                            int64_t until_ns,
                                                            size_t limit) {
  // With a single max() aggregate, SQLite takes the bare columns drift and
  // time_ns from the row holding the maximum. The time range reads the
  // covering index samples_by_time alone.
  StoreResult<Statement> s = db_->prepare(fmt::format(
      "WITH worst AS ("
      "  SELECT process_id, max(abs(drift)) AS magnitude, drift, time_ns, "
      "         count(*) AS n "
      "  FROM samples INDEXED BY samples_by_time "
      "  WHERE time_ns >= ?1 AND time_ns < ?2 AND drift IS NOT NULL "
      "  GROUP BY process_id ORDER BY magnitude DESC LIMIT ?3) "
      "SELECT {}, w.drift, w.drift * r.page_size, w.time_ns, w.n "
      "FROM worst w JOIN processes p ON p.id = w.process_id "
      "JOIN runs r ON r.id = p.run_id ORDER BY w.magnitude DESC, p.id",
      kProcessColumns));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, since_ns);
  s.value.bind(2, until_ns);
  s.value.bind(3, limit);
  StoreResult<std::vector<DriftEntry>> out;
  out.status = collect(s.value, out.value, [](const Statement& q) {
    DriftEntry e;
    e.process = read_process(q, 0);
    e.drift_pages = q.column_int(kProcessColumnCount);
    e.drift_bytes = q.column_int(kProcessColumnCount + 1);
    e.at_ns = q.column_int(kProcessColumnCount + 2);
    e.samples = q.column_int(kProcessColumnCount + 3);
    return e;
  });
  return out;
}

StoreResult<std::vector<StoredSample>> StoreReader::process_history(
    int64_t process_id, int64_t since_ns, int64_t until_ns) {
  StoreResult<Statement> s = db_->prepare(
      fmt::format("SELECT {}, drift FROM samples WHERE process_id = ?1 "
                  "AND time_ns >= ?2 AND time_ns < ?3 ORDER BY time_ns",
                  kSampleColumns));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, process_id);
  s.value.bind(2, since_ns);
  s.value.bind(3, until_ns);
  StoreResult<std::vector<StoredSample>> out;
  out.status = collect(s.value, out.value, [](const Statement& q) {
    return StoredSample{read_sample(q, 0),
                        q.column_optional(kSampleColumnCount)};
  });
  return out;
}

}  // namespace rssaudit
