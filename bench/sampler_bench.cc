// Cost of sampling one process from /proc, per source: the cheap sample
// (stat + statm + status, without and with stat read again), smaps_rollup,
// and a pagemap walk of a process holding 1 GiB of touched anonymous
// memory. Figures only.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "core/procfs/proc_smaps_rollup.h"
#include "sampler/pagemap_walk.h"
#include "sampler/proc_reader.h"
#include "sampler/sampler.h"

namespace rssaudit {
namespace {

constexpr uint64_t kPage = 4096;

// A child holding `bytes` of touched anonymous memory until destroyed.
class BigChild {
 public:
  explicit BigChild(uint64_t bytes) {
    int ready[2];
    int hold[2];
    if (pipe(ready) != 0 || pipe(hold) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(hold[1]);
      auto* p = static_cast<volatile char*>(
          mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (p == MAP_FAILED) _exit(3);
      for (uint64_t i = 0; i < bytes; i += kPage) p[i] = 1;
      char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(1);
      while (read(hold[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    hold_ = hold[1];
    char c;
    if (read(ready[0], &c, 1) != 1) std::abort();
    close(ready[0]);
  }
  ~BigChild() {
    close(hold_);
    waitpid(pid_, nullptr, 0);
  }
  uint32_t pid() const { return uint32_t(pid_); }

 private:
  pid_t pid_ = -1;
  int hold_ = -1;
};

BigChild& child_1gib() {
  static BigChild child(uint64_t{1} << 30);
  return child;
}

// Arg 1: stat read again after status, as for a drift from /proc.
void BM_CheapSample(benchmark::State& state) {
  ProcessSampler sampler(WalkPolicy{});
  SampleRequest request;
  request.pid = child_1gib().pid();
  request.stat_again = state.range(0) != 0;
  for (auto _ : state) {
    const SampleResult r = sampler.sample(request);
    if (r.outcome != SampleOutcome::kOk) state.SkipWithError(r.error.c_str());
    benchmark::DoNotOptimize(r.sample.status.vm_rss_kb);
  }
}
BENCHMARK(BM_CheapSample)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_SmapsRollup(benchmark::State& state) {
  const ProcDir dir = ProcDir::open("/proc", child_1gib().pid());
  ProcReader reader;
  for (auto _ : state) {
    const Result<std::string_view, ReadError> text =
        reader.read(dir, "smaps_rollup");
    const auto parsed = parse_proc_smaps_rollup(text.value_or(""));
    if (!parsed) state.SkipWithError(parsed.error().message.c_str());
    benchmark::DoNotOptimize(parsed.value().rss_kb);
  }
}
BENCHMARK(BM_SmapsRollup)->Unit(benchmark::kMicrosecond);

// Argument: entries per pread.
void BM_PagemapWalk(benchmark::State& state) {
  const ProcDir dir = ProcDir::open("/proc", child_1gib().pid());
  ProcReader reader;
  PagemapWalker walker(learn_zero_page_pfns(), size_t(state.range(0)));
  uint64_t present = 0;
  for (auto _ : state) {
    const Result<PagemapWalk, WalkError> r = walker.walk(dir, reader);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      break;
    }
    present = r->total.present;
  }
  state.counters["present_pages"] = double(present);
  state.counters["pages/s"] = benchmark::Counter(
      double(present), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PagemapWalk)
    ->Arg(512)
    ->Arg(8192)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rssaudit

BENCHMARK_MAIN();
