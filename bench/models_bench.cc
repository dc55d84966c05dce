// Update cost of each counting-scheme model, and of a whole simulation.
// Figures only: targets are read off these numbers, never asserted.
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <random>
#include <utility>
#include <vector>

#include "core/schemes/hpcc_tree.h"
#include "core/schemes/lazy_percpu.h"
#include "core/schemes/per_cpu_cache.h"
#include "core/schemes/per_task_cache.h"
#include "core/schemes/sync_before_query.h"
#include "core/schemes/upstream_percpu.h"
#include "core/sim/simulation.h"

namespace rssaudit {
namespace {

enum Pattern { kSingleCpuPlusOne, kRandom32, kRandom512 };

// A ring of precomputed updates, so the loop measures the model alone.
std::vector<Update> make_stream(Pattern p, uint32_t cpus) {
  std::mt19937_64 rng(42);
  std::vector<Update> out(1 << 16);
  const int32_t max = p == kRandom512 ? 512 : 32;
  for (Update& u : out) {
    u.member = kAnonPages;
    if (p == kSingleCpuPlusOne) {
      u.delta = 1;
      continue;
    }
    u.cpu = std::uniform_int_distribution<uint32_t>(0, cpus - 1)(rng);
    u.delta = std::uniform_int_distribution<int32_t>(-max, max)(rng);
  }
  return out;
}

template <class S>
void BM_Add(benchmark::State& state, Pattern p) {
  const uint32_t cpus = static_cast<uint32_t>(state.range(0));
  S scheme(Topology::for_cpus(cpus));
  scheme.on_event(LifeEvent{LifeKind::kSecondUser, 2, 0});  // lazy ones: active
  const std::vector<Update> stream = make_stream(p, cpus);
  size_t i = 0;
  for (auto _ : state) {
    scheme.add(stream[i]);
    i = (i + 1) & (stream.size() - 1);
  }
  benchmark::DoNotOptimize(scheme.approximate(kAnonPages));
  state.SetItemsProcessed(state.iterations());
}

template <class S>
void register_model() {
  for (auto [label, pattern] :
       {std::pair{"single_cpu_plus1", kSingleCpuPlusOne},
        {"random_pm32", kRandom32},
        {"random_pm512", kRandom512}}) {
    benchmark::RegisterBenchmark(
        fmt::format("{}/{}", S::kName, label).c_str(),
        [pattern](benchmark::State& st) { BM_Add<S>(st, pattern); })
        ->Arg(384);
  }
}

// The whole pipeline: workload generation, every model, error tracking.
void BM_Simulate(benchmark::State& state) {
  WorkloadParams p;
  p.kind = static_cast<WorkloadKind>(state.range(1));
  p.updates = static_cast<uint64_t>(state.range(0));
  uint64_t updates = 0;
  for (auto _ : state) {
    updates += simulate(Topology::for_cpus(384), p).updates;
  }
  state.counters["ns_per_update"] = benchmark::Counter(
      static_cast<double>(updates),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(updates));
}
BENCHMARK(BM_Simulate)
    ->Args({100'000'000, static_cast<int>(WorkloadKind::kHop)})
    ->Args({100'000'000, static_cast<int>(WorkloadKind::kThreads)})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace rssaudit

int main(int argc, char** argv) {
  using namespace rssaudit;
  register_model<UpstreamPercpu>();
  register_model<HpccTree>();
  register_model<PerTaskCache>();
  register_model<PerCpuCache>();
  register_model<LazyPercpu>();
  register_model<SyncBeforeQuery>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
