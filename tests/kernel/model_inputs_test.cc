// Root-only: what the capture feeds the scheme models on this kernel, for
// workloads whose inputs are known in advance. Run on the host and in every
// guest of tests/vm, each must give the figures its workload implies, so
// every kernel feeds the models the same.
#include <gtest/gtest.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "audit/delta_reconstructor.h"
#include "capture/bpf_capture.h"
#include "core/schemes/mm_audit.h"
#include "core/schemes/per_task_cache.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"
#include "tests/kernel/capture_support.h"

namespace rssaudit {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kPmd = size_t{2} << 20;

// `pages` anonymous pages without THP inside one page table (a 2 MiB
// aligned block), so that unmapping them all is a single counter update.
char* map_in_one_page_table(size_t pages) {
  char* p = static_cast<char*>(mmap(nullptr, 2 * kPmd, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED || pages * kPage > kPmd) _exit(3);
  madvise(p, 2 * kPmd, MADV_NOHUGEPAGE);
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + kPmd - 1) &
                                 ~(kPmd - 1));
}

RSSAUDIT_FAULTS_COUNTED void touch(char* p, size_t pages) {
  for (size_t i = 0; i < pages; ++i)
    static_cast<volatile char*>(p)[i * kPage] = 1;
}

// A single update of -pages by the owner, outside a fault: madvise frees
// pages that sit in one page table in one zap.
void release(char* p, size_t pages) {
  if (madvise(p, pages * kPage, MADV_DONTNEED)) _exit(5);
}

// Every update and life event of every mm, in the order the models get them.
struct Step {
  MmKey mm;
  bool is_update = false;
  Update update;
  UpdateInfo info;
  LifeEvent life;
};

class Stream : public ReconstructorSink {
 public:
  void on_mm_created(const MmKey&, bool) override {}
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    steps.push_back({mm, true, u, info, {}});
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    steps.push_back({mm, false, {}, {}, e});
  }
  void on_mm_destroyed(const MmKey&) override {}

  std::vector<Step> steps;
};

// The updates up to steps[i] on its CPU and on the others, for a failure's
// message: when each ran, by which task, and what it read.
std::string updates_before(const std::vector<Step>& steps, size_t i) {
  std::string out;
  size_t same = 0, other = 0;
  for (size_t j = i + 1; j-- > 0 && (same < 6 || other < 6);) {
    const Step& s = steps[j];
    if (!s.is_update) continue;
    size_t& n = s.update.cpu == steps[i].update.cpu ? same : other;
    if (n++ >= 6) continue;
    char line[160];
    std::snprintf(
        line, sizeof(line),
        "\n  t=%llu+%llu cpu %u task %u member %d %+d slot %d count %lld "
        "fidelity %d",
        static_cast<unsigned long long>(s.update.time_ns),
        static_cast<unsigned long long>(s.info.end_ns - s.update.time_ns),
        s.update.cpu, s.update.task, s.update.member, s.update.delta,
        s.info.kernel_slot, static_cast<long long>(s.info.kernel_count),
        static_cast<int>(s.info.fidelity));
    out = line + out;
  }
  return out;
}

class ModelInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RSSAUDIT_OPEN_TEST_CAPTURE(capture_);
    reconstructor_ = std::make_unique<DeltaReconstructor>(
        testing::host_reconstructor_options(*capture_));
  }

  // Runs `child` under the capture (testing::run_child_under_capture).
  pid_t run(void (*child)(int ask, int reply),
            const std::function<int(pid_t, int)>& answer = {}) {
    const pid_t pid = testing::run_child_under_capture(
        *capture_, child, [&] { drain(); }, answer);
    reconstructor_->flush(stream_);
    return pid;
  }

  // The mm the child ran on: its first update by its own task.
  MmKey mm_of(pid_t pid) const {
    for (const Step& s : stream_.steps)
      if (s.is_update && s.info.tgid == uint32_t(pid) && s.update.by_owner())
        return s.mm;
    return {};
  }

  std::vector<Step> steps_of(const MmKey& mm) const {
    std::vector<Step> out;
    for (const Step& s : stream_.steps)
      if (s.mm == mm) out.push_back(s);
    return out;
  }

  void drain() {
    testing::drain_capture(*capture_, *reconstructor_, stream_,
                           [](const rss_event&) {});
  }

  std::unique_ptr<BpfCapture> capture_;
  std::unique_ptr<DeltaReconstructor> reconstructor_;
  Stream stream_;
};

// --- One task hopping across every CPU --------------------------------------

// On each CPU in turn: ask where the mm's anon slot there stands (the test
// reads it from the stream), then map and fault the pages that take it to
// B-1, in mmaps of 1 to 16 pages, one fault each. Every slot ends at B-1,
// none folded: `count` lags the exact value by N(B-1), the upstream bound.
void hop_to_the_bound(int ask, int reply) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  for (int cpu = 0; cpu < cpus; ++cpu) {
    testing::pin_to(cpu);
    int to_fill = 0;
    if (write(ask, &cpu, sizeof(cpu)) != sizeof(cpu) ||
        read(reply, &to_fill, sizeof(to_fill)) != sizeof(to_fill))
      _exit(4);
    for (int filled = 0, size = 1; filled < to_fill; size = size % 16 + 1) {
      const int pages = std::min(size, to_fill - filled);
      char* p = static_cast<char*>(mmap(nullptr, pages * kPage,
                                        PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (p == MAP_FAILED) _exit(3);
      madvise(p, pages * kPage, MADV_NOHUGEPAGE);
      touch(p, pages);
      filled += pages;
    }
  }
}

TEST_F(ModelInputsTest, OneTaskHoppingEveryCpuDrivesUpstreamToItsBound) {
  RSSAUDIT_SKIP_UNLESS_PERCPU_COUNTERS(*capture_);
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  const int32_t batch = upstream_rss_batch(cpus);
  const int64_t bound = int64_t{cpus} * (batch - 1);
  // The pages that take the child's anon slot on `cpu` to B-1.
  const auto to_fill = [&](pid_t child, int cpu) {
    int32_t slot = 0;  // the mm started at zero under the capture
    const MmKey child_mm = mm_of(child);
    for (const Step& s : stream_.steps)
      if (s.is_update && s.mm == child_mm && s.update.member == kAnonPages &&
          int(s.update.cpu) == cpu)
        slot = s.info.kernel_slot;
    return batch - 1 - slot;
  };
  const pid_t pid = run(hop_to_the_bound, to_fill);
  const MmKey mm = mm_of(pid);
  ASSERT_NE(mm.addr, 0u);

  // The child's mm from its creation (fork, under the capture) to its end.
  MmAudit audit(Topology::for_cpus(capture_->possible_cpus()));
  std::array<int64_t, kMembers> exact{};
  int64_t kernel_error = 0;  // exact - the kernel's own count, at its largest
  size_t updates = 0, at_largest = 0;
  const std::vector<Step> steps = steps_of(mm);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (!s.is_update) {
      audit.on_event(s.life);
      continue;
    }
    ++updates;
    ASSERT_EQ(s.info.fidelity, Fidelity::kExact)
        << "update " << updates << updates_before(steps, i);
    audit.add(s.update);
    exact[s.update.member] += s.update.delta;
    ASSERT_EQ(
        audit.schemes().get<UpstreamPercpu>().approximate(s.update.member),
        s.info.kernel_count)
        << "update " << updates;
    if (s.update.member == kAnonPages &&
        exact[kAnonPages] - s.info.kernel_count > kernel_error) {
      kernel_error = exact[kAnonPages] - s.info.kernel_count;
      at_largest = i;
    }
  }
  EXPECT_EQ(kernel_error, bound) << cpus << " CPUs" << [&] {
    // Each CPU's anon slot then, and the updates of a CPU short of B-1.
    std::string out;
    for (int cpu = 0; cpu < cpus; ++cpu) {
      std::string mine;
      int32_t slot = 0;
      for (size_t j = 0; j <= at_largest; ++j) {
        const Step& s = steps[j];
        if (!s.is_update || s.update.member != kAnonPages ||
            int(s.update.cpu) != cpu)
          continue;
        slot = s.info.kernel_slot;
        mine += " " + std::to_string(s.update.delta) + "(" +
                std::to_string(slot) + ")";
      }
      out += "\n  cpu " + std::to_string(cpu) + " slot " + std::to_string(slot);
      if (slot != batch - 1)
        out += ":" + mine.substr(mine.size() > 400 ? mine.size() - 400 : 0);
    }
    return out;
  }();
  const auto& largest = audit.largest_error();
  auto index_of = [](std::string_view name) {
    return std::find(SchemeSet::kNames.begin(), SchemeSet::kNames.end(), name) -
           SchemeSet::kNames.begin();
  };
  EXPECT_EQ(largest[index_of(UpstreamPercpu::kName)], bound);
  // One thread: HPCC and the lazy per-CPU counter never leave their exact
  // atomic.
  EXPECT_EQ(largest[index_of(HpccTree::kName)], 0);
  EXPECT_EQ(largest[index_of(LazyPercpu::kName)], 0);
  std::printf(
      "[ info ] %d CPUs, batch %d: %zu updates, all exact; the kernel's "
      "count lagged by %lld pages at most (bound %lld); hpcc 0\n",
      cpus, batch, updates, static_cast<long long>(kernel_error),
      static_cast<long long>(bound));
}

// --- Threads taking turns ----------------------------------------------------

// Four threads, one after the other, each on its CPU: fault its pages one at
// a time, free them one at a time, exit. Raw clone() on stacks faulted
// beforehand, so nothing but the pages below updates a counter; between two
// marks (frees of 7 and of 11 pages by the main thread).
constexpr int kWorkers = 4;
constexpr size_t kFaults[kWorkers] = {10, 40, 70, 130};
constexpr size_t kStartMark = 7, kEndMark = 11;
constexpr size_t kStack = size_t{64} << 10;

struct Worker {
  int cpu = 0;
  char* pages = nullptr;
  size_t count = 0;
  pid_t tid = 0;  // set at clone, cleared (and futex-woken) at exit
};

int work(void* arg) {
  const Worker& w = *static_cast<Worker*>(arg);
  testing::pin_to(w.cpu);
  for (size_t i = 0; i < w.count; ++i) touch(w.pages + i * kPage, 1);
  for (size_t i = 0; i < w.count; ++i) release(w.pages + i * kPage, 1);
  return 0;
}

void run_in_turn(Worker* workers, char* stacks) {
  constexpr int kThread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
                          CLONE_THREAD | CLONE_SYSVSEM | CLONE_PARENT_SETTID |
                          CLONE_CHILD_CLEARTID;
  for (int i = 0; i < kWorkers; ++i) {
    Worker& w = workers[i];
    if (clone(work, stacks + (i + 1) * kStack, kThread, &w, &w.tid, nullptr,
              &w.tid) < 0)
      _exit(8);
    for (pid_t t; (t = __atomic_load_n(&w.tid, __ATOMIC_ACQUIRE));)
      syscall(SYS_futex, &w.tid, FUTEX_WAIT, t, nullptr, nullptr, 0);
  }
}

void take_turns(int, int) {
  testing::pin_to(0);
  char* stacks = map_in_one_page_table(kWorkers * kStack / kPage);
  touch(stacks, kWorkers * kStack / kPage);
  Worker warm_up[kWorkers], workers[kWorkers];
  for (int i = 0; i < kWorkers; ++i) {
    // The warm-up faults in the code and data the measured round runs.
    warm_up[i] = Worker{i % 2, map_in_one_page_table(1), 1, 0};
    workers[i] =
        Worker{i % 2, map_in_one_page_table(kFaults[i]), kFaults[i], 0};
  }
  run_in_turn(warm_up, stacks);
  char* marks = map_in_one_page_table(kStartMark + kEndMark);
  touch(marks, kStartMark + kEndMark);
  release(marks, kStartMark);
  run_in_turn(workers, stacks);
  release(marks + kStartMark * kPage, kEndMark);
}

// A step as the models see it, tasks named by their order of appearance.
std::string describe(const Step& s, std::map<uint32_t, int>& names) {
  const uint32_t tid = s.is_update ? s.update.task : s.life.task;
  const int name = names.try_emplace(tid, int(names.size()) + 1).first->second;
  char out[96];
  if (s.is_update) {
    std::snprintf(
        out, sizeof(out), "update member %d %+d flags %d task %d cpu %u",
        s.update.member, s.update.delta, s.update.flags, name, s.update.cpu);
  } else {
    std::snprintf(out, sizeof(out), "life %d task %d cpu %u count %u",
                  int(s.life.kind), name, s.life.cpu, s.life.count);
  }
  return out;
}

// What take_turns() does, as the models should get it. Before 6.2
// (`task_cache`) a fault's update goes to its thread's cache, which the
// kernel folds into the atomic (a kCacheSync of the member) at the
// thread's 66th fault since its last sync (mm/memory.c
// check_sync_rss_stat(): `events++ > 64`) and before each zap of its own
// mm (add_mm_rss_vec()); the stream carries those, not the faults.
std::vector<Step> turns_as_designed(bool task_cache) {
  std::vector<Step> out;
  auto life = [&](LifeKind k, uint32_t task, uint32_t cpu, uint32_t count) {
    out.push_back({{}, false, {}, {}, LifeEvent{k, task, cpu, count}});
  };
  auto update = [&](int32_t delta, uint8_t flags, uint32_t task, uint32_t cpu) {
    Update u;
    u.task = task;
    u.cpu = cpu;
    u.delta = delta;
    u.flags = flags;
    out.push_back({{}, true, u, {}, {}});
  };
  for (int i = 0; i < kWorkers; ++i) {
    const uint32_t task = 1 + i, cpu = i % 2;
    int32_t cached = 0, events = 0;
    const auto sync = [&] {
      if (cached) life(LifeKind::kCacheSync, task, cpu, kAnonPages);
      cached = events = 0;
    };
    life(LifeKind::kSecondUser, task, 0, 1);  // cloned on the main CPU
    for (size_t k = 0; k < kFaults[i]; ++k) {
      if (!task_cache) {
        life(LifeKind::kFault, task, cpu, 1);
      } else if (events++ > PerTaskCache::kEventsThresh) {
        sync();
      }
      update(+1, kUpdateByOwner | kUpdateInFault, task, cpu);
      ++cached;
    }
    for (size_t k = 0; k < kFaults[i]; ++k) {
      if (task_cache) sync();
      update(-1, kUpdateByOwner, task, cpu);
    }
    life(LifeKind::kTaskExit, task, cpu, 1);
  }
  return out;
}

// Every scheme's figures after `steps`, on a fixed 2-CPU topology so that
// they do not depend on the machine.
std::vector<std::string> figures(const std::vector<Step>& steps) {
  MmAudit audit(Topology::for_cpus(2));
  for (const Step& s : steps)
    s.is_update ? audit.add(s.update) : audit.on_event(s.life);
  std::vector<std::string> out;
  audit.schemes().for_each([&](size_t i, const auto& scheme) {
    out.push_back(std::string(SchemeSet::kNames[i]) + ": largest error " +
                  std::to_string(audit.largest_error()[i]) + ", anon " +
                  std::to_string(scheme.approximate(kAnonPages)) + ", shared " +
                  std::to_string(scheme.shared_updates()));
  });
  return out;
}

TEST_F(ModelInputsTest, ThreadsTakingTurnsFeedEveryModelWhatTheyDid) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const pid_t pid = run(take_turns);
  const MmKey mm = mm_of(pid);
  ASSERT_NE(mm.addr, 0u);
  // Between the marks: the child's own steps, less the CPU switches other
  // processes' updates reveal (a host's scheduling, not the workload).
  std::vector<Step> seen;
  int marks = 0;
  const std::vector<Step> steps = steps_of(mm);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const bool mark = s.is_update && s.update.task == uint32_t(pid) &&
                      s.update.flags == kUpdateByOwner &&
                      (s.update.delta == -int32_t(kStartMark) ||
                       s.update.delta == -int32_t(kEndMark));
    if (mark) {
      ++marks;
      continue;
    }
    if (marks != 1 || (!s.is_update && s.life.kind == LifeKind::kCpuSwitch))
      continue;
    if (s.is_update) {
      ASSERT_EQ(s.info.fidelity, Fidelity::kExact)
          << "step " << seen.size() << updates_before(steps, i);
    }
    seen.push_back(s);
  }
  ASSERT_EQ(marks, 2);
  const std::vector<Step> designed =
      turns_as_designed(!capture_->support().percpu_rss);
  std::map<uint32_t, int> seen_names, designed_names;
  for (size_t i = 0; i < std::max(seen.size(), designed.size()); ++i) {
    const std::string a =
        i < seen.size() ? describe(seen[i], seen_names) : "(none)";
    const std::string b =
        i < designed.size() ? describe(designed[i], designed_names) : "(none)";
    ASSERT_EQ(a, b) << "step " << i << " of " << seen.size() << " seen, "
                    << designed.size() << " designed";
  }
  const std::vector<std::string> got = figures(seen), want = figures(designed);
  EXPECT_EQ(got, want);
  for (const std::string& f : got) std::printf("[ figures ] %s\n", f.c_str());
}

}  // namespace
}  // namespace rssaudit
