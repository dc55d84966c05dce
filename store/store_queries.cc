#include "store/store_queries.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
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

// Binds ?1 and ?2 to the bounds of a window [since_ns, until_ns).
auto bind_window(int64_t since_ns, int64_t until_ns) {
  return [=](Statement& s) {
    s.bind(1, since_ns);
    s.bind(2, until_ns);
  };
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
    "shared_updates, bytes_per_mm, read_lines_approximate, "
    "read_lines_precise";

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
  if (const std::optional<int64_t> approximate = s.column_optional(8))
    r.read_cost = ReadCost{*approximate, s.column_optional(9)};
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

// Whether an rssauditd holds the database at `path`: Store::open keeps an
// exclusive flock on it. Probed with a shared lock dropped at once (the
// writer retries its own a moment for it), before SQLite opens the file:
// closing this descriptor later would drop the POSIX locks SQLite holds.
std::optional<bool> writer_holds(const std::string& path) {
  // Non-blocking: a FIFO at the path is refused by the open that follows.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<bool> held;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0)
    held = false;
  else if (errno == EWOULDBLOCK)
    held = true;
  close(fd);
  return held;
}

// A samples row with its stored drift after the sample columns.
StoredSample read_stored_sample(const Statement& s) {
  return StoredSample{read_sample(s, 0), s.column_optional(kSampleColumnCount)};
}

}  // namespace

Result<std::unique_ptr<StoreReader>, StoreError> StoreReader::open_read_only(
    const std::string& path) {
  const std::optional<bool> held = writer_holds(path);
  Result<std::unique_ptr<Database>, StoreError> db =
      Database::open(path, Database::Mode::kReadOnly);
  if (!db) return unexpected(std::move(db).error());
  return std::unique_ptr<StoreReader>(
      new StoreReader(std::move(db).value(), held));
}

template <class Bind, class Read>
auto StoreReader::rows(std::string_view sql, Bind&& bind, Read&& read)
    -> Result<std::vector<std::invoke_result_t<Read&, const Statement&>>,
              StoreError> {
  Result<Statement, StoreError> s = db_->prepare(sql);
  if (!s) return unexpected(std::move(s).error());
  bind(*s);
  std::vector<std::invoke_result_t<Read&, const Statement&>> out;
  int rc;
  while ((rc = s->step()) == SQLITE_ROW) out.push_back(read(*s));
  s->reset();
  if (rc != SQLITE_DONE) return db_->error(rc, "reading");
  return out;
}

Result<std::vector<RunSummary>, StoreError> StoreReader::list_runs() {
  auto runs = rows(
      "SELECT r.id, r.host, r.kernel_release, r.nr_cpus, r.batch, "
      "r.page_size, r.rssaudit_version, r.started_ns, r.ended_ns, "
      "(SELECT count(*) FROM processes p WHERE p.run_id = r.id), r.counting, "
      "r.status_precise, r.end_reason, "
      "max(coalesce(r.alive_ns, r.started_ns), coalesce((SELECT "
      "max(last_seen_ns) FROM processes p WHERE p.run_id = r.id), "
      "r.started_ns)) "
      "FROM runs r ORDER BY r.id",
      [](Statement&) {},
      [](const Statement& q) {
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
        r.info.counting = q.column_text(10);
        if (const auto precise = q.column_optional(11))
          r.info.status_precise = *precise != 0;
        if (r.ended_ns) {
          r.state = q.column_text(12) == "died" ? RunState::kDied
                                                : RunState::kStopped;
          r.stopped_ns = r.ended_ns;
        } else {
          r.stopped_ns = q.column_int(13);  // the heartbeat, if it died
        }
        return r;
      });
  if (!runs || runs->empty()) return runs;
  // Unended: running only as the newest run of a file an rssauditd holds.
  for (RunSummary& r : *runs) {
    if (r.ended_ns) continue;
    const bool running =
        r.id == runs->back().id && writer_holds_.value_or(true);
    r.state = running ? RunState::kRunning : RunState::kDied;
    if (running) r.stopped_ns.reset();
  }
  return runs;
}

Result<std::vector<StoredGap>, StoreError> StoreReader::sampling_gaps(
    int64_t since_ns, int64_t until_ns) {
  return rows(
      "SELECT run_id, start_ns, end_ns FROM sampling_gaps "
      "WHERE end_ns > ?1 AND start_ns < ?2 ORDER BY start_ns",
      [&](Statement& s) {
        s.bind(1, since_ns);
        s.bind(2, until_ns);
      },
      [](const Statement& q) {
        return StoredGap{q.column_int(0),
                         SamplingGap{q.column_int(1), q.column_int(2)}};
      });
}

template <class Bind>
Result<std::vector<ProcessSummary>, StoreError> StoreReader::select_processes(
    std::string_view tail, Bind&& bind) {
  return rows(
      fmt::format("SELECT {} FROM processes p {}", kProcessColumns, tail), bind,
      [](const Statement& q) { return read_process(q, 0); });
}

Result<std::vector<ProcessSummary>, StoreError> StoreReader::processes_with_pid(
    uint32_t pid) {
  return select_processes(
      "WHERE p.pid = ?1 ORDER BY p.first_seen_ns DESC, p.id DESC",
      [&](Statement& s) { s.bind(1, pid); });
}

Result<std::vector<ProcessSummary>, StoreError>
StoreReader::processes_with_comm(const std::string& comm) {
  return select_processes(
      "WHERE p.comm = ?1 ORDER BY p.first_seen_ns DESC, p.id DESC",
      [&](Statement& s) { s.bind_text(1, comm); });
}

Result<std::vector<ProcessSummary>, StoreError> StoreReader::processes_seen(
    int64_t since_ns, int64_t until_ns) {
  return select_processes(
      "WHERE p.id IN (SELECT process_id FROM samples "
      "  WHERE time_ns >= ?1 AND time_ns < ?2 "
      "  UNION SELECT process_id FROM model_errors "
      "  WHERE end_ns >= ?1 AND end_ns < ?2) ORDER BY p.id",
      bind_window(since_ns, until_ns));
}

Result<std::vector<DriftEntry>, StoreError> StoreReader::top_drift(
    int64_t since_ns, int64_t until_ns, size_t limit) {
  // With a single max() aggregate, SQLite takes the bare columns drift and
  // time_ns from the row holding the maximum. The time range reads the
  // covering index samples_by_time alone.
  return rows(
      fmt::format(
          "WITH worst AS ("
          "  SELECT process_id, max(abs(drift)) AS magnitude, drift, time_ns, "
          "         count(*) AS n "
          "  FROM samples INDEXED BY samples_by_time "
          "  WHERE time_ns >= ?1 AND time_ns < ?2 AND drift IS NOT NULL "
          "  GROUP BY process_id ORDER BY magnitude DESC LIMIT ?3) "
          "SELECT {}, w.drift, w.drift * r.page_size, w.time_ns, w.n "
          "FROM worst w JOIN processes p ON p.id = w.process_id "
          "JOIN runs r ON r.id = p.run_id ORDER BY w.magnitude DESC, p.id",
          kProcessColumns),
      [&](Statement& s) {
        s.bind(1, since_ns);
        s.bind(2, until_ns);
        s.bind(3, limit);
      },
      [](const Statement& q) {
        DriftEntry e;
        e.process = read_process(q, 0);
        e.drift_pages = q.column_int(kProcessColumnCount);
        e.drift_bytes = q.column_int(kProcessColumnCount + 1);
        e.at_ns = q.column_int(kProcessColumnCount + 2);
        e.samples = q.column_int(kProcessColumnCount + 3);
        return e;
      });
}

Result<std::vector<StoredSample>, StoreError> StoreReader::process_history(
    int64_t process_id, int64_t since_ns, int64_t until_ns) {
  return rows(
      fmt::format("SELECT {}, drift FROM samples INDEXED BY samples_by_time "
                  "WHERE {} ORDER BY time_ns",
                  kSampleColumns, process_rows("time_ns", "?2", "?3")),
      [&](Statement& s) {
        s.bind(1, process_id);
        s.bind(2, since_ns);
        s.bind(3, until_ns);
      },
      read_stored_sample);
}

Result<std::vector<ProcessWindow>, StoreError> StoreReader::process_windows(
    int64_t since_ns, int64_t until_ns) {
  Result<std::vector<RunSummary>, StoreError> runs = list_runs();
  if (!runs) return unexpected(std::move(runs).error());
  std::map<int64_t, const RunSummary*> by_id;
  for (const RunSummary& r : *runs) by_id[r.id] = &r;
  // Each CTE holds a single max() aggregate, so SQLite takes its bare
  // columns from the row holding the maximum: the newest sample's rowid,
  // the worst sample's drift and time.
  auto windows = rows(
      fmt::format(
          "WITH w AS ("
          "  SELECT process_id, count(*) AS n, max(time_ns), rowid AS newest "
          "  FROM samples INDEXED BY samples_by_time "
          "  WHERE time_ns >= ?1 AND time_ns < ?2 GROUP BY process_id), "
          "worst AS ("
          "  SELECT process_id, max(abs(drift)), drift, time_ns "
          "  FROM samples INDEXED BY samples_by_time "
          "  WHERE time_ns >= ?1 AND time_ns < ?2 AND drift IS NOT NULL "
          "  GROUP BY process_id) "
          "SELECT {}, r.page_size, w.n, {}, s.drift, worst.drift, "
          "  worst.time_ns, r.nr_cpus, r.batch, r.counting "
          "FROM w JOIN processes p ON p.id = w.process_id "
          "JOIN runs r ON r.id = p.run_id "
          "JOIN samples s ON s.rowid = w.newest "
          "LEFT JOIN worst ON worst.process_id = w.process_id ORDER BY p.id",
          kProcessColumns, qualified_sample_columns("s.")),
      bind_window(since_ns, until_ns), [](const Statement& q) {
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
        // Of the run's topology: a quiet process, which no model ran for,
        // has one too.
        const int64_t nr_cpus = q.column_int(i++), batch = q.column_int(i++);
        const std::string counting = q.column_text(i++);
        w.bound_per_counter =
            kernel_bound_per_counter(counting, nr_cpus, batch);
        w.task_cache = counting == kCountingTaskCache;
        return w;
      });
  if (!windows) return windows;
  for (ProcessWindow& w : *windows) {
    const auto run = by_id.find(w.process.run_id);
    if (run == by_id.end()) continue;
    w.run_state = run->second->state;
    w.run_stopped_ns = run->second->stopped_ns;
  }
  return windows;
}

Result<std::optional<StoredSample>, StoreError> StoreReader::latest_sample(
    int64_t process_id) {
  auto found = rows(
      fmt::format(
          "SELECT {}, drift FROM samples INDEXED BY samples_by_time WHERE {} "
          "ORDER BY time_ns DESC LIMIT 1",
          kSampleColumns, process_rows("time_ns", kAllTime, kNoEnd)),
      [&](Statement& s) { s.bind(1, process_id); }, read_stored_sample);
  if (!found) return unexpected(std::move(found).error());
  if (found->empty()) return std::nullopt;
  return found->front();
}

Result<void, StoreError> StoreReader::for_each_sample(
    int64_t since_ns, int64_t until_ns,
    const std::function<void(const StoredSample&)>& visit) {
  Result<Statement, StoreError> s = db_->prepare(fmt::format(
      "SELECT {}, drift FROM samples WHERE time_ns >= ?1 AND time_ns < ?2 "
      "ORDER BY time_ns, process_id",
      kSampleColumns));
  if (!s) return unexpected(std::move(s).error());
  s->bind(1, since_ns);
  s->bind(2, until_ns);
  int rc;
  while ((rc = s->step()) == SQLITE_ROW) visit(read_stored_sample(*s));
  s->reset();
  if (rc != SQLITE_DONE) return db_->error(rc, "reading");
  return {};
}

Result<int64_t, StoreError> StoreReader::count_samples(int64_t since_ns,
                                                       int64_t until_ns) {
  auto n =
      rows("SELECT count(*) FROM samples WHERE time_ns >= ?1 AND time_ns < ?2",
           bind_window(since_ns, until_ns),
           [](const Statement& q) { return q.column_int(0); });
  if (!n) return unexpected(std::move(n).error());
  return n->empty() ? 0 : n->front();
}

Result<std::array<int64_t, kDriftUnknownReasons>, StoreError>
StoreReader::count_drift_unknown(int64_t since_ns, int64_t until_ns) {
  // The index holds drift: only the rows without one are read.
  auto found = rows(
      "SELECT drift_unknown, count(*) FROM samples INDEXED BY samples_by_time "
      "WHERE time_ns >= ?1 AND time_ns < ?2 AND drift IS NULL "
      "AND drift_unknown IS NOT NULL GROUP BY drift_unknown",
      bind_window(since_ns, until_ns), [](const Statement& q) {
        return std::pair(drift_unknown_named(q.column_text(0)),
                         q.column_int(1));
      });
  if (!found) return unexpected(std::move(found).error());
  std::array<int64_t, kDriftUnknownReasons> out{};
  for (const auto& [why, n] : *found)
    if (why) out[static_cast<size_t>(*why)] = n;
  return out;
}

Result<std::vector<ModelErrorRow>, StoreError> StoreReader::latest_model_errors(
    int64_t process_id) {
  // The recorder writes every scheme of an interval together: the newest
  // interval is found walking back from the process's last sight.
  auto found = rows(
      fmt::format(
          "SELECT {} FROM model_errors INDEXED BY model_errors_by_time "
          "WHERE process_id = ?1 AND end_ns = ("
          "  SELECT end_ns FROM model_errors INDEXED BY model_errors_by_time "
          "  WHERE {} ORDER BY end_ns DESC LIMIT 1) "
          "GROUP BY scheme",
          kModelErrorColumns, process_rows("end_ns", kAllTime, kNoEnd)),
      [&](Statement& s) { s.bind(1, process_id); }, read_model_error);
  if (!found) return unexpected(std::move(found).error());
  return known_schemes(std::move(found).value(), true);
}

Result<std::vector<ModelErrorRow>, StoreError> StoreReader::model_errors(
    std::optional<int64_t> process_id, int64_t since_ns, int64_t until_ns) {
  auto found = rows(
      fmt::format("SELECT {} FROM model_errors INDEXED BY model_errors_by_time "
                  "WHERE (?1 IS NULL OR process_id = ?1) "
                  "AND end_ns >= ?2 AND end_ns < ?3 ORDER BY end_ns, "
                  "process_id",
                  kModelErrorColumns),
      [&](Statement& s) {
        s.bind_optional(1, process_id);
        s.bind(2, since_ns);
        s.bind(3, until_ns);
      },
      read_model_error);
  if (!found) return unexpected(std::move(found).error());
  return known_schemes(std::move(found).value(), false);
}

Result<std::vector<SchemeWindow>, StoreError> StoreReader::scheme_errors(
    int64_t since_ns, int64_t until_ns) {
  // The bare columns come from the row holding max(largest_error).
  auto found = rows(
      "SELECT scheme, max(largest_error), bound, count(*), process_id, "
      "read_lines_approximate, read_lines_precise FROM model_errors "
      "WHERE end_ns >= ?1 AND end_ns < ?2 GROUP BY scheme",
      bind_window(since_ns, until_ns), [](const Statement& q) {
        const std::optional<size_t> scheme = scheme_index(q.column_text(0));
        if (!scheme) return std::optional<SchemeWindow>();
        SchemeWindow w{*scheme,         q.column_int(1), q.column_optional(2),
                       q.column_int(3), q.column_int(4), std::nullopt};
        if (const std::optional<int64_t> approximate = q.column_optional(5))
          w.read_cost = ReadCost{*approximate, q.column_optional(6)};
        return std::optional<SchemeWindow>(w);
      });
  if (!found) return unexpected(std::move(found).error());
  std::vector<SchemeWindow> out;
  for (auto& r : *found)
    if (r) out.push_back(*r);
  std::ranges::sort(out, {}, &SchemeWindow::scheme);
  return out;
}

}  // namespace rssaudit
