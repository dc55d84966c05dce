// The SQLite history store: sample ingest in batched transactions, and the
// "top drift over the last day" query on a month of history. Figures only:
// targets (≥ 200 k rows/s ingest) are read off these numbers, never asserted.
#include <benchmark/benchmark.h>
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/store.h"
#include "store/store_queries.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;
constexpr int64_t kDay = 24 * 60 * kMinute;

// The month of history: processes alive all month, one sample each per
// interval. One sample per 10 minutes would be 43 M rows, far more than a
// 2-core machine builds in a few minutes; one per hour is 7.2 M rows.
constexpr int kHistoryDays = 30;
constexpr int kHistoryProcesses = 10'000;
constexpr int64_t kHistoryInterval = 60 * kMinute;
constexpr int64_t kHistoryStart = 1'704'067'200 * int64_t{1'000'000'000};
constexpr int64_t kHistoryEnd = kHistoryStart + kHistoryDays * kDay;

RunInfo bench_run(int64_t started_ns) {
  return RunInfo{.host = "bench",
                 .kernel_release = "6.1.0",
                 .nr_cpus = 2,
                 .batch = 32,
                 .page_size = 4096,
                 .rssaudit_version = "bench",
                 .started_ns = started_ns};
}

// A sample as the sampler writes it: every cheap source, no walk.
SampleRow make_sample(int64_t process_id, int64_t time_ns, std::mt19937& rng) {
  const int64_t rss = 1000 + static_cast<int64_t>(rng() % 100'000);
  const int64_t drift = static_cast<int64_t>(rng() % 129) - 64;
  SampleRow r;
  r.process_id = process_id;
  r.time_ns = time_ns;
  r.approximate = {rss / 4 + drift, rss / 2, 0, rss / 4};
  r.stat_rss = rss + drift;
  r.precise = {rss / 4, rss / 2, 0, rss / 4};
  r.statm_resident = rss;
  r.exact = r.precise;
  r.vm_hwm = rss + 10;
  r.true_peak = rss + 12;
  r.threads = 4;
  return r;
}

std::unique_ptr<Store> open_or_die(const std::string& path,
                                   StoreOptions options = {}) {
  Result<std::unique_ptr<Store>, StoreError> s = Store::open(path, options);
  if (!s.has_value()) {
    fmt::print(stderr, "{}\n", s.error().message);
    std::exit(1);
  }
  return std::move(s).value();
}

void remove_db(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
}

uint64_t db_bytes(const std::string& path) {
  uint64_t bytes = 0;
  for (const char* suffix : {"", "-wal"}) bytes += fs::file_size(path + suffix);
  return bytes;
}

// One sampler tick of `processes` processes, then one flush; items are
// samples. With `upsert`, each sample also refreshes its process row (last
// seen), as the daemon does; without, only samples are written.
void ingest(benchmark::State& state, bool upsert) {
  const int processes = static_cast<int>(state.range(0));
  const std::string path =
      fmt::format("/tmp/rssaudit-bench-ingest-{}.db", getpid());
  remove_db(path);
  std::unique_ptr<Store> store = open_or_die(path);
  store->begin_run(bench_run(0));
  std::vector<int64_t> ids;
  for (int i = 0; i < processes; ++i) {
    ids.push_back(store->upsert_process({static_cast<uint32_t>(i + 1), 100},
                                        "worker", "/bench", 0));
  }
  std::mt19937 rng(1);
  int64_t now = 0;
  for (auto _ : state) {
    now += kMinute;
    for (int i = 0; i < processes; ++i) {
      if (upsert) {
        store->upsert_process({static_cast<uint32_t>(i + 1), 100}, "worker",
                              "/bench", now);
      }
      store->add_sample(make_sample(ids[i], now, rng));
    }
    const Result<void, StoreError> s = store->flush();
    if (!s) state.SkipWithError(s.error().message.c_str());
  }
  state.SetItemsProcessed(state.iterations() * processes);
  state.counters["db_MiB"] = static_cast<double>(db_bytes(path)) / (1 << 20);
  store.reset();
  remove_db(path);
}

void BM_IngestSamples(benchmark::State& state) { ingest(state, false); }
BENCHMARK(BM_IngestSamples)
    ->Arg(1000)
    ->Arg(10'000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_IngestTickWithProcessUpdates(benchmark::State& state) {
  ingest(state, true);
}
BENCHMARK(BM_IngestTickWithProcessUpdates)
    ->Arg(1000)
    ->Arg(10'000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// What rssauditd writes per process and tick: the process row refreshed,
// one sample and one model_errors row per scheme. Items are all rows.
void BM_IngestDaemonTick(benchmark::State& state) {
  const int processes = static_cast<int>(state.range(0));
  const std::string path =
      fmt::format("/tmp/rssaudit-bench-tick-{}.db", getpid());
  remove_db(path);
  std::unique_ptr<Store> store = open_or_die(path);
  store->begin_run(bench_run(0));
  std::mt19937 rng(1);
  constexpr size_t kSchemes = 6;
  int64_t now = 0;
  for (auto _ : state) {
    const int64_t start = now;
    now += kMinute;
    for (int i = 0; i < processes; ++i) {
      const int64_t id = store->upsert_process(
          {static_cast<uint32_t>(i + 1), 100}, "worker", "/bench", now);
      store->add_sample(make_sample(id, now, rng));
      for (size_t scheme = 0; scheme < kSchemes; ++scheme) {
        store->add_model_error(
            ModelErrorRow{.process_id = id,
                          .start_ns = start,
                          .end_ns = now,
                          .scheme = scheme,
                          .largest_error = static_cast<int64_t>(rng() % 64),
                          .bound = 294'528,
                          .shared_updates = rng() % 1000,
                          .bytes_per_mm = 6304});
      }
    }
    const Result<void, StoreError> s = store->flush();
    if (!s) state.SkipWithError(s.error().message.c_str());
  }
  state.SetItemsProcessed(state.iterations() * processes * (1 + kSchemes));
  state.counters["db_MiB"] = static_cast<double>(db_bytes(path)) / (1 << 20);
  store.reset();
  remove_db(path);
}
BENCHMARK(BM_IngestDaemonTick)
    ->Arg(1000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Builds the month of history once; later runs reuse the file.
std::string build_history_db() {
  const std::string path =
      fmt::format("/tmp/rssaudit-bench-{}d-{}p-{}min.db", kHistoryDays,
                  kHistoryProcesses, kHistoryInterval / kMinute);
  if (fs::exists(path)) {
    // Opening it for writing upgrades a file an older build made.
    const auto start = std::chrono::steady_clock::now();
    open_or_die(path).reset();
    fmt::print(
        "reusing {} (opened for writing in {:.1f} s)\n", path,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    return path;
  }
  const std::string partial = path + ".partial";
  remove_db(partial);
  const auto start = std::chrono::steady_clock::now();
  {
    // One flush per simulated day: each flush writes one page of the
    // per-process index for every process, so flushing each hour's 10 k
    // rows would write ~40 MiB per flush once the index outgrows the cache.
    std::unique_ptr<Store> store = open_or_die(
        partial,
        {.max_pending_rows = kHistoryProcesses * (kDay / kHistoryInterval)});
    store->begin_run(bench_run(kHistoryStart));
    std::mt19937 rng(7);
    int64_t rows = 0;
    for (int64_t t = kHistoryStart; t < kHistoryEnd; t += kHistoryInterval) {
      for (int p = 0; p < kHistoryProcesses; ++p) {
        const int64_t id = store->upsert_process(
            {static_cast<uint32_t>(p + 1), 100}, "worker", "/bench", t);
        store->add_sample(make_sample(id, t, rng));
      }
      rows += kHistoryProcesses;
      if ((t - kHistoryStart + kHistoryInterval) % kDay == 0) {
        const Result<void, StoreError> s = store->flush();
        if (!s) {
          fmt::print(stderr, "{}\n", s.error().message);
          std::exit(1);
        }
        fmt::print(stderr, "\rbuilding {}: day {}/{}, {:.0f} s", path,
                   (t - kHistoryStart) / kDay + 1, kHistoryDays,
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count());
      }
    }
    fmt::print(stderr, "\n");
    store->end_run(kHistoryEnd);
    if (!store->flush().has_value()) std::exit(1);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    fmt::print(
        "generated {}: {} days x {} processes, one sample per {} min = {} "
        "rows in {:.0f} s ({:.0f} rows/s)\n",
        path, kHistoryDays, kHistoryProcesses, kHistoryInterval / kMinute, rows,
        seconds, rows / seconds);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (fs::exists(partial + suffix))
      fs::rename(partial + suffix, path + suffix);
  }
  return path;
}

const std::string& history_db() {
  static const std::string path = build_history_db();
  return path;
}

void BM_TopDriftLastDay(benchmark::State& state) {
  const std::string& path = history_db();
  Result<std::unique_ptr<StoreReader>, StoreError> reader =
      StoreReader::open_read_only(path);
  if (!reader.has_value()) {
    state.SkipWithError(reader.error().message.c_str());
    return;
  }
  size_t found = 0;
  for (auto _ : state) {
    auto top = reader.value()->top_drift(kHistoryEnd - kDay, kHistoryEnd, 20);
    if (!top.has_value()) state.SkipWithError(top.error().message.c_str());
    found = top->size();
    benchmark::DoNotOptimize(top);
  }
  state.counters["ranked"] = static_cast<double>(found);
  state.counters["window_rows"] =
      static_cast<double>(kHistoryProcesses * (kDay / kHistoryInterval));
  state.counters["db_GiB"] = static_cast<double>(db_bytes(path)) / (1 << 30);
}
BENCHMARK(BM_TopDriftLastDay)->Unit(benchmark::kMillisecond);

void BM_ProcessHistoryLastDay(benchmark::State& state) {
  Result<std::unique_ptr<StoreReader>, StoreError> reader =
      StoreReader::open_read_only(history_db());
  if (!reader.has_value()) {
    state.SkipWithError(reader.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    auto history = reader.value()->process_history(
        kHistoryProcesses / 2, kHistoryEnd - kDay, kHistoryEnd);
    if (!history.has_value())
      state.SkipWithError(history.error().message.c_str());
    benchmark::DoNotOptimize(history);
  }
}
BENCHMARK(BM_ProcessHistoryLastDay)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rssaudit

BENCHMARK_MAIN();
