// Synthetic update streams for `rssaudit simulate` and the benchmarks: what a
// process would make the kernel do to its counters, on any CPU count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "core/schemes/update.h"

namespace rssaudit {

enum class WorkloadKind { kHop, kThreads, kOscillate, kForkstorm };

std::optional<WorkloadKind> parse_workload(std::string_view name);
std::string_view workload_name(WorkloadKind kind);

struct WorkloadParams {
  WorkloadKind kind = WorkloadKind::kHop;
  uint64_t updates = 1'000'000;  // stop after about this many updates
  uint64_t seed = 1;
  uint32_t threads = 0;  // threads/oscillate: 0 = min(CPUs, kDefaultThreads)
};

inline constexpr uint32_t kDefaultThreads = 64;

// Emits the stream of one workload into a Sink with
//   void begin_mm(); void update(const Update&); void event(const LifeEvent&);
//   void end_mm();
// Deterministic for a given seed and CPU count.
template <class Sink>
class WorkloadGenerator {
 public:
  WorkloadGenerator(const WorkloadParams& p, uint32_t nr_cpus, Sink& sink)
      : params_(p), nr_cpus_(nr_cpus), sink_(sink), rng_(p.seed) {}

  void run() {
    switch (params_.kind) {
      case WorkloadKind::kHop:
        return hop();
      case WorkloadKind::kThreads:
        return threads(/*oscillate=*/false);
      case WorkloadKind::kOscillate:
        return threads(/*oscillate=*/true);
      case WorkloadKind::kForkstorm:
        return forkstorm();
    }
  }

 private:
  struct Task {
    uint32_t tid;
    uint32_t cpu;
    std::vector<int32_t> live;  // sizes of the mappings it holds, in pages
    int64_t held = 0;           // pages it faulted and still maps
  };

  uint32_t random_below(uint32_t n) {
    return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_);
  }
  bool done() const { return emitted_ >= params_.updates; }

  void update(const Task& t, int32_t delta, uint8_t member, uint8_t flags) {
    Update u;
    u.time_ns = ++clock_;
    u.task = t.tid;
    u.cpu = t.cpu;
    u.delta = delta;
    u.member = member;
    u.flags = flags;
    sink_.update(u);
    ++emitted_;
  }
  void event(LifeKind kind, const Task& t) {
    sink_.event(LifeEvent{kind, t.tid, t.cpu});
  }

  // A fault of one page: the page_fault_user event, then the counter update.
  void fault_page(Task& t) {
    event(LifeKind::kFault, t);
    update(t, +1, kAnonPages, kUpdateByOwner | kUpdateInFault);
    ++t.held;
  }
  // mmap of 1..16 pages touched at once, or munmap of a held mapping (one
  // zap update, as zap_pte_range batches them), at random.
  void map_or_unmap(Task& t, size_t max_live) {
    if (t.live.size() < max_live && (t.live.empty() || random_below(2))) {
      const int32_t n = 1 + random_below(16);
      for (int32_t i = 0; i < n && !done(); ++i) fault_page(t);
      t.live.push_back(n);
    } else {
      const size_t i = random_below(t.live.size());
      unmap(t, t.live[i]);
      t.live[i] = t.live.back();
      t.live.pop_back();
    }
  }
  void unmap(Task& t, int32_t pages) {
    update(t, -pages, kAnonPages, kUpdateByOwner);
    t.held -= pages;
  }
  // exit_mmap() zaps what is left, in the exiting task's context.
  void teardown(Task& last, int64_t file_pages, int64_t anon_pages) {
    if (file_pages) update(last, -file_pages, kFilePages, kUpdateByOwner);
    if (anon_pages) update(last, -anon_pages, kAnonPages, kUpdateByOwner);
    event(LifeKind::kMmExit, last);
  }

  // One task migrating to a random CPU before each mmap/munmap.
  void hop() {
    Task t{1, 0, {}, 0};
    sink_.begin_mm();
    while (!done()) {
      const uint32_t cpu = random_below(nr_cpus_);
      if (cpu != t.cpu) {
        event(LifeKind::kCpuSwitch, t);  // the old CPU runs another mm now
        t.cpu = cpu;
      }
      map_or_unmap(t, 64);
    }
    event(LifeKind::kTaskExit, t);
    teardown(t, 0, t.held);
    sink_.end_mm();
  }

  // T threads pinned to distinct CPUs; the first runs alone until the second
  // is cloned. oscillate: each thread maps and unmaps one page in turn, so
  // its counters go back and forth around a value instead of drifting.
  void threads(bool oscillate) {
    const uint32_t n = params_.threads ? std::min(params_.threads, nr_cpus_)
                                  : std::min(nr_cpus_, kDefaultThreads);
    std::vector<Task> tasks;
    for (uint32_t i = 0; i < n; ++i)
      tasks.push_back(Task{
          1 + i, static_cast<uint32_t>(uint64_t{i} * nr_cpus_ / n), {}, 0});
    sink_.begin_mm();
    uint32_t running = 1;
    while (!done()) {
      if (running < n &&
          (running == 1 ? emitted_ >= 64 : random_below(64) == 0)) {
        event(LifeKind::kSecondUser, tasks[running]);
        ++running;
      }
      Task& t = tasks[random_below(running)];
      if (!oscillate) {
        map_or_unmap(t, 16);
      } else if (t.held == 0) {
        fault_page(t);
      } else {
        unmap(t, 1);
      }
    }
    int64_t held = 0;
    for (uint32_t i = 0; i < running; ++i) {
      held += tasks[i].held;
      event(LifeKind::kTaskExit, tasks[i]);
    }
    teardown(tasks[0], 0, held);
    sink_.end_mm();
  }

  // A parent (RSS: 1200 file, 300 anon pages) forks short-lived children:
  // fork copies its counters into each child mm in the parent's context, in
  // chunks of one page table (512 entries); the child faults a few pages and
  // exits; the parent reads the child's rusage.
  void forkstorm() {
    constexpr int64_t kParentFile = 1200, kParentAnon = 300;
    Task parent{1, 0, {}, 0};
    uint32_t next_tid = 2;
    while (!done()) {
      parent.cpu = random_below(nr_cpus_);
      sink_.begin_mm();
      copy_counters(parent, kParentFile, kFilePages);
      copy_counters(parent, kParentAnon, kAnonPages);
      Task child{next_tid++, random_below(nr_cpus_), {}, 0};
      const uint32_t faults = 1 + random_below(64);
      for (uint32_t i = 0; i < faults && !done(); ++i) fault_page(child);
      event(LifeKind::kTaskExit, child);
      teardown(child, kParentFile, kParentAnon + child.held);
      event(LifeKind::kRusageQuery, parent);
      sink_.end_mm();
    }
  }
  void copy_counters(const Task& parent, int64_t pages, uint8_t member) {
    for (int64_t left = pages; left > 0; left -= 512)
      update(parent, static_cast<int32_t>(std::min<int64_t>(left, 512)), member,
             /*flags=*/0);
  }

  const WorkloadParams& params_;
  const uint32_t nr_cpus_;
  Sink& sink_;
  std::mt19937_64 rng_;
  uint64_t emitted_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace rssaudit
