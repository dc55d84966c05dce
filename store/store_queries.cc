#include "store/store_queries.h"

#include <fmt/core.h>
#include <sqlite3.h>

#include <algorithm>
#include <string_view>

#include "core/schemes/scheme_set.h"

namespace rssaudit {
namespace {

constexpr std::string_view kProcessColumns =
    "p.id, p.run_id, p.pid, p.start_ticks, p.comm, p.cgroup, "
    "p.first_seen_ns, p.last_seen_ns, p.exit_ns, p.exit_residue, p.true_peak";
constexpr int kProcessColumnCount = 11;

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
  p.true_peak = s.column_optional(first + 10);
  return p;
}

// kSampleColumns qualified by `alias` ("s."), for queries that join.
std::string qualified_sample_columns(std::string_view alias) {
  std::string out;
  std::string_view rest = kSampleColumns;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    out += fmt::format("{}{}{}", out.empty() ? "" : ", ", alias,
                       rest.substr(0, comma));
    rest = comma == rest.npos ? "" : rest.substr(comma + 1);
    while (rest.starts_with(' ')) rest.remove_prefix(1);
  }
  return out;
}

// The condition selecting process ?1's rows in [since, until) by a range
// on `time`, the first column of a time index: the store keeps a process's
// rows within its first and last sight, and the index holds process_id, so
// no per-process index is needed (schema/002). One expression per bound:
// SQLite seeks the index with only one of several lower (upper) bounds. A
// process that does not exist selects nothing.
std::string process_rows(std::string_view time, std::string_view since,
                         std::string_view until) {
  return fmt::format(
      "{0} >= max({1}, (SELECT first_seen_ns FROM processes WHERE id = ?1)) "
      "AND {0} < min({2}, "
      "(SELECT last_seen_ns FROM processes WHERE id = ?1) + 1) "
      "AND process_id = ?1",
      time, since, until);
}

constexpr std::string_view kAllTime = "-9223372036854775807";
constexpr std::string_view kNoEnd = "9223372036854775807";

// The index of the scheme named `name` in SchemeSet::kNames, if known.
std::optional<size_t> scheme_index(std::string_view name) {
  const auto it = std::ranges::find(SchemeSet::kNames, name);
  if (it == SchemeSet::kNames.end()) return std::nullopt;
  return static_cast<size_t>(it - SchemeSet::kNames.begin());
}

constexpr std::string_view kModelErrorColumns =
    "process_id, start_ns, end_ns, scheme, largest_error, bound, "
    "shared_updates, bytes_per_mm";

std::optional<ModelErrorRow> read_model_error(const Statement& s) {
  const std::optional<size_t> scheme = scheme_index(s.column_text(3));
  if (!scheme) return std::nullopt;
  ModelErrorRow r;
  r.process_id = s.column_int(0);
  r.start_ns = s.column_int(1);
  r.end_ns = s.column_int(2);
  r.scheme = *scheme;
  r.largest_error = s.column_int(4);
  r.bound = s.column_optional(5);
  r.shared_updates = static_cast<uint64_t>(s.column_int(6));
  r.bytes_per_mm = s.column_int(7);
  return r;
}

// Drops the rows of schemes this build does not know and orders the rest
// by scheme, keeping the order of equal schemes.
std::vector<ModelErrorRow> known_schemes(
    std::vector<std::optional<ModelErrorRow>> rows, bool by_scheme) {
  std::vector<ModelErrorRow> out;
  for (auto& r : rows)
    if (r) out.push_back(*r);
  if (by_scheme) std::ranges::stable_sort(out, {}, &ModelErrorRow::scheme);
  return out;
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

template <class Bind>
StoreResult<std::vector<ProcessSummary>> StoreReader::select_processes(
    std::string_view tail, Bind&& bind) {
  StoreResult<Statement> s = db_->prepare(
      fmt::format("SELECT {} FROM processes p {}", kProcessColumns, tail));
  if (!s.ok()) return {{}, std::move(s.status)};
  bind(s.value);
  StoreResult<std::vector<ProcessSummary>> out;
  out.status = collect(s.value, out.value,
                       [](const Statement& q) { return read_process(q, 0); });
  return out;
}

StoreResult<std::vector<ProcessSummary>> StoreReader::processes_with_pid(
    uint32_t pid) {
  return select_processes(
      "WHERE p.pid = ?1 ORDER BY p.first_seen_ns DESC, p.id DESC",
      [&](Statement& s) { s.bind(1, pid); });
}

StoreResult<std::vector<ProcessSummary>> StoreReader::processes_with_comm(
    const std::string& comm) {
  return select_processes(
      "WHERE p.comm = ?1 ORDER BY p.first_seen_ns DESC, p.id DESC",
      [&](Statement& s) { s.bind_text(1, comm); });
}

StoreResult<std::vector<ProcessSummary>> StoreReader::processes_seen(
    int64_t since_ns, int64_t until_ns) {
  return select_processes(
      "WHERE p.id IN (SELECT process_id FROM samples "
      "  WHERE time_ns >= ?1 AND time_ns < ?2 "
      "  UNION SELECT process_id FROM model_errors "
      "  WHERE end_ns >= ?1 AND end_ns < ?2) ORDER BY p.id",
      [&](Statement& s) {
        s.bind(1, since_ns);
        s.bind(2, until_ns);
      });
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
      fmt::format("SELECT {}, drift FROM samples INDEXED BY samples_by_time "
                  "WHERE {} ORDER BY time_ns",
                  kSampleColumns, process_rows("time_ns", "?2", "?3")));
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

StoreResult<std::vector<ProcessWindow>> StoreReader::process_windows(
    int64_t since_ns, int64_t until_ns) {
  // Each CTE holds a single max() aggregate, so SQLite takes its bare
  // columns from the row holding the maximum: the newest sample's rowid,
  // the worst sample's drift and time.
  StoreResult<Statement> s = db_->prepare(fmt::format(
      "WITH w AS ("
      "  SELECT process_id, count(*) AS n, max(time_ns), rowid AS newest "
      "  FROM samples INDEXED BY samples_by_time "
      "  WHERE time_ns >= ?1 AND time_ns < ?2 GROUP BY process_id), "
      "worst AS ("
      "  SELECT process_id, max(abs(drift)), drift, time_ns "
      "  FROM samples INDEXED BY samples_by_time "
      "  WHERE time_ns >= ?1 AND time_ns < ?2 AND drift IS NOT NULL "
      "  GROUP BY process_id) "
      "SELECT {}, r.page_size, w.n, {}, s.drift, worst.drift, worst.time_ns, "
      "  (SELECT m.bound FROM model_errors m "
      "   INDEXED BY model_errors_by_time WHERE m.process_id = p.id "
      "   AND m.scheme = ?3 AND m.end_ns >= max(?1, p.first_seen_ns) "
      "   AND m.end_ns < min(?2, p.last_seen_ns + 1) "
      "   ORDER BY m.end_ns DESC LIMIT 1) "
      "FROM w JOIN processes p ON p.id = w.process_id "
      "JOIN runs r ON r.id = p.run_id "
      "JOIN samples s ON s.rowid = w.newest "
      "LEFT JOIN worst ON worst.process_id = w.process_id ORDER BY p.id",
      kProcessColumns, qualified_sample_columns("s.")));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, since_ns);
  s.value.bind(2, until_ns);
  s.value.bind_text(3, SchemeSet::kNames[0]);
  StoreResult<std::vector<ProcessWindow>> out;
  out.status = collect(s.value, out.value, [](const Statement& q) {
    ProcessWindow w;
    int i = kProcessColumnCount;
    w.process = read_process(q, 0);
    w.page_size = q.column_int(i++);
    w.samples = q.column_int(i++);
    w.latest.row = read_sample(q, i);
    i += kSampleColumnCount;
    w.latest.drift = q.column_optional(i++);
    w.worst_drift = q.column_optional(i++);
    w.worst_at_ns = q.column_optional(i++).value_or(0);
    w.bound = q.column_optional(i++);
    return w;
  });
  return out;
}

StoreResult<std::optional<StoredSample>> StoreReader::latest_sample(
    int64_t process_id) {
  StoreResult<Statement> s = db_->prepare(fmt::format(
      "SELECT {}, drift FROM samples INDEXED BY samples_by_time WHERE {} "
      "ORDER BY time_ns DESC LIMIT 1",
      kSampleColumns, process_rows("time_ns", kAllTime, kNoEnd)));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, process_id);
  std::vector<StoredSample> rows;
  StoreStatus status = collect(s.value, rows, [](const Statement& q) {
    return StoredSample{read_sample(q, 0),
                        q.column_optional(kSampleColumnCount)};
  });
  if (!status.ok() || rows.empty()) return {std::nullopt, std::move(status)};
  return {rows.front(), {}};
}

StoreStatus StoreReader::for_each_sample(
    int64_t since_ns, int64_t until_ns,
    const std::function<void(const StoredSample&)>& visit) {
  StoreResult<Statement> s = db_->prepare(fmt::format(
      "SELECT {}, drift FROM samples WHERE time_ns >= ?1 AND time_ns < ?2 "
      "ORDER BY time_ns, process_id",
      kSampleColumns));
  if (!s.ok()) return std::move(s.status);
  s.value.bind(1, since_ns);
  s.value.bind(2, until_ns);
  int rc;
  while ((rc = s.value.step()) == SQLITE_ROW) {
    visit(StoredSample{read_sample(s.value, 0),
                       s.value.column_optional(kSampleColumnCount)});
  }
  s.value.reset();
  if (rc != SQLITE_DONE) return db_->error(rc, "reading");
  return {};
}

StoreResult<int64_t> StoreReader::count_samples(int64_t since_ns,
                                                int64_t until_ns) {
  StoreResult<Statement> s = db_->prepare(
      "SELECT count(*) FROM samples WHERE time_ns >= ?1 AND time_ns < ?2");
  if (!s.ok()) return {0, std::move(s.status)};
  s.value.bind(1, since_ns);
  s.value.bind(2, until_ns);
  std::vector<int64_t> n;
  StoreStatus status =
      collect(s.value, n, [](const Statement& q) { return q.column_int(0); });
  return {n.empty() ? 0 : n.front(), std::move(status)};
}

StoreResult<std::vector<ModelErrorRow>> StoreReader::latest_model_errors(
    int64_t process_id) {
  // The recorder writes every scheme of an interval together: the newest
  // interval is found walking back from the process's last sight.
  StoreResult<Statement> s = db_->prepare(fmt::format(
      "SELECT {} FROM model_errors INDEXED BY model_errors_by_time "
      "WHERE process_id = ?1 AND end_ns = ("
      "  SELECT end_ns FROM model_errors INDEXED BY model_errors_by_time "
      "  WHERE {} ORDER BY end_ns DESC LIMIT 1) "
      "GROUP BY scheme",
      kModelErrorColumns, process_rows("end_ns", kAllTime, kNoEnd)));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, process_id);
  std::vector<std::optional<ModelErrorRow>> rows;
  StoreStatus status = collect(s.value, rows, read_model_error);
  return {known_schemes(std::move(rows), true), std::move(status)};
}

StoreResult<std::vector<ModelErrorRow>> StoreReader::model_errors(
    std::optional<int64_t> process_id, int64_t since_ns, int64_t until_ns) {
  StoreResult<Statement> s = db_->prepare(fmt::format(
      "SELECT {} FROM model_errors INDEXED BY model_errors_by_time "
      "WHERE (?1 IS NULL OR process_id = ?1) "
      "AND end_ns >= ?2 AND end_ns < ?3 ORDER BY end_ns, process_id",
      kModelErrorColumns));
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind_optional(1, process_id);
  s.value.bind(2, since_ns);
  s.value.bind(3, until_ns);
  std::vector<std::optional<ModelErrorRow>> rows;
  StoreStatus status = collect(s.value, rows, read_model_error);
  return {known_schemes(std::move(rows), false), std::move(status)};
}

StoreResult<std::vector<SchemeWindow>> StoreReader::scheme_errors(
    int64_t since_ns, int64_t until_ns) {
  // The bare column bound comes from the row holding max(largest_error).
  StoreResult<Statement> s = db_->prepare(
      "SELECT scheme, max(largest_error), bound, count(*) FROM model_errors "
      "WHERE end_ns >= ?1 AND end_ns < ?2 GROUP BY scheme");
  if (!s.ok()) return {{}, std::move(s.status)};
  s.value.bind(1, since_ns);
  s.value.bind(2, until_ns);
  std::vector<std::optional<SchemeWindow>> rows;
  StoreResult<std::vector<SchemeWindow>> out;
  out.status = collect(s.value, rows, [](const Statement& q) {
    const std::optional<size_t> scheme = scheme_index(q.column_text(0));
    if (!scheme) return std::optional<SchemeWindow>();
    return std::optional<SchemeWindow>(SchemeWindow{
        *scheme, q.column_int(1), q.column_optional(2), q.column_int(3)});
  });
  for (auto& r : rows)
    if (r) out.value.push_back(*r);
  std::ranges::sort(out.value, {}, &SchemeWindow::scheme);
  return out;
}

}  // namespace rssaudit
