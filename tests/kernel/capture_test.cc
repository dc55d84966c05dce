// Root-only: loads the capture programs on the running kernel, runs a
// workload in a child process and checks the reconstructed update stream
// against the kernel's own counters, record by record.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "audit/delta_reconstructor.h"
#include "capture/bpf_capture.h"
#include "core/procfs/proc_stat.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"
#include "os/clock.h"
#include "sampler/sampler.h"
#include "tests/kernel/capture_support.h"

namespace rssaudit {
namespace {

constexpr size_t kRegion = size_t{16} << 20;
constexpr size_t kPage = 4096;
constexpr size_t kPmd = size_t{2} << 20;
// include/uapi/asm-generic/mman-common.h (Linux 6.1); glibc 2.36 lacks it.
constexpr int kMadvCollapse = 25;

// Touches every page of a fresh anonymous region, 4 KiB at a time (no THP,
// so one fault and one update per page); moves to the next CPU every
// `migrate_every` pages when non-zero.
RSSAUDIT_FAULTS_COUNTED char* touch_region(size_t bytes, int migrate_every,
                                           int cpus) {
  char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) _exit(3);
  madvise(p, bytes, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < bytes / kPage; ++i) {
    if (migrate_every && i % migrate_every == 0)
      testing::pin_to(static_cast<int>(i / migrate_every) % cpus);
    static_cast<volatile char*>(p)[i * kPage] = 1;
  }
  return p;
}

// Maps a 2 MiB block without THP, touches `touched` pages spread over it,
// and collapses it into a huge page; madvise's result (errno set). The
// block stays mapped.
int collapse_one_pmd(size_t touched) {
  char* raw = static_cast<char*>(mmap(nullptr, 2 * kPmd, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (raw == MAP_FAILED) return -1;
  char* p = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(raw) + kPmd - 1) & ~(kPmd - 1));
  madvise(p, kPmd, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < touched; ++i)
    static_cast<volatile char*>(p)[i * (kPmd / touched)] = 1;
  madvise(p, kPmd, MADV_HUGEPAGE);
  return madvise(p, kPmd, kMadvCollapse);
}

int64_t rss_anon_pages(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("RssAnon:", 0) == 0)
      return std::stoll(line.substr(8)) * 1024 / kPage;
  return -1;
}

struct Seen {
  MmKey mm;
  Update update;
  UpdateInfo info;
};

class Recorder : public ReconstructorSink {
 public:
  void on_mm_created(const MmKey&, bool) override {}
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    updates.push_back({mm, u, info});
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    life.emplace_back(mm, e);
  }
  void on_mm_destroyed(const MmKey&) override {}

  std::vector<Seen> updates;
  std::vector<std::pair<MmKey, LifeEvent>> life;
};

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RSSAUDIT_OPEN_TEST_CAPTURE(capture_);
    reconstructor_ = std::make_unique<DeltaReconstructor>(
        testing::host_reconstructor_options(*capture_));
    raw_.reserve(1 << 20);
  }

  void drain() {
    testing::drain_capture(*capture_, *reconstructor_, sink_,
                           [&](const rss_event& e) { raw_.push_back(e); });
  }

  // Runs `child` in a forked process; drains while it runs. When the child
  // writes to its `ready` pipe (signal_ready) it is quiescent: `at_rest(pid)`
  // runs, then the child continues. Returns the child's pid.
  pid_t run(const std::function<void(int ready, int resume)>& child,
            const std::function<void(pid_t)>& at_rest = {}) {
    const pid_t pid = testing::run_child_under_capture(
        *capture_, child, [&] { drain(); },
        [&](pid_t p, int) {
          if (at_rest) at_rest(p);
          return 0;
        });
    reconstructor_->flush(sink_);
    return pid;
  }

  // The mm a process ran on: from its own first update of it. The key, not
  // the address: the capture sees the whole host, and an address is reused
  // by the next mm as soon as one exits (busy hosts do it within a test).
  MmKey mm_of(pid_t pid) const {
    for (const Seen& s : sink_.updates)
      if (s.info.tgid == uint32_t(pid) && s.update.by_owner()) return s.mm;
    return {};
  }

  std::vector<Seen> updates_of(const MmKey& mm) const {
    std::vector<Seen> out;
    for (const Seen& s : sink_.updates)
      if (s.mm == mm) out.push_back(s);
    return out;
  }

  // Updates of the mm at `addr` made by the processes `tgids` (the address
  // alone may also name other processes' mms before or after).
  std::vector<Seen> updates_of(uint64_t addr,
                               std::initializer_list<pid_t> tgids) const {
    std::vector<Seen> out;
    for (const Seen& s : sink_.updates)
      if (s.mm.addr == addr && std::find(tgids.begin(), tgids.end(),
                                         pid_t(s.info.tgid)) != tgids.end())
        out.push_back(s);
    return out;
  }

  // At rest: the child's mm, its RssAnon, and the sum of the anon deltas
  // the stream has given so far, which must be that.
  struct AnonAtRest {
    MmKey mm;
    int64_t rss_anon = -1;
    int64_t sum = 0;
  };
  AnonAtRest anon_at_rest(pid_t child) const {
    AnonAtRest r{mm_of(child), rss_anon_pages(child), 0};
    for (const Seen& s : updates_of(r.mm))
      if (s.update.member == kAnonPages) r.sum += s.update.delta;
    return r;
  }

  static void signal_ready(int fd) {
    const int at_rest = 1;
    if (write(fd, &at_rest, sizeof(at_rest)) != sizeof(at_rest)) _exit(4);
  }

  static void wait_resume(int fd) {
    int go;
    if (read(fd, &go, sizeof(go)) != sizeof(go)) _exit(6);
  }

  std::unique_ptr<BpfCapture> capture_;
  std::unique_ptr<DeltaReconstructor> reconstructor_;
  Recorder sink_;
  std::vector<rss_event> raw_;
};

TEST_F(CaptureTest, AReapedProcessIsStillNamedByTheCapture) {
  uint64_t start_ticks = 0;
  const pid_t pid = run(
      [](int ready, int resume) {
        prctl(PR_SET_NAME, "rssa-gone-test");
        signal_ready(ready);
        wait_resume(resume);
      },
      [&](pid_t p) {
        std::ifstream in("/proc/" + std::to_string(p) + "/stat");
        const std::string text{std::istreambuf_iterator<char>(in), {}};
        const auto stat = parse_proc_stat(text);
        ASSERT_TRUE(stat.has_value());
        start_ticks = stat.value().start_time;
      });
  // run() reaped it: /proc no longer knows it, the capture does.
  ASSERT_NE(access(("/proc/" + std::to_string(pid)).c_str(), F_OK), 0);
  const std::optional<exited_process> who = capture_->exited(pid);
  ASSERT_TRUE(who.has_value());
  EXPECT_STREQ(who->comm, "rssa-gone-test");
  EXPECT_EQ(who->start_ticks, start_ticks);
  EXPECT_FALSE(capture_->exited(getpid()).has_value());  // still running
}

TEST_F(CaptureTest, MigratingFaultLoopIsExactAtEveryUpdate) {
  RSSAUDIT_SKIP_UNLESS_PERCPU_COUNTERS(*capture_);
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  AnonAtRest rest;
  const pid_t pid = run(
      [&](int ready, int resume) {
        // Every 97 pages, or often enough to visit every CPU (64 and more).
        const int every = std::min<int>(97, kRegion / kPage / cpus);
        char* p = touch_region(kRegion, std::max(every, 1), cpus);
        signal_ready(ready);
        wait_resume(resume);
        munmap(p, kRegion);
      },
      [&](pid_t child) { rest = anon_at_rest(child); });
  const MmKey& mm = rest.mm;

  ASSERT_NE(mm.addr, 0u);
  // The capture times a fold, and a record whose `count` its CPU's previous
  // record of the mm did not show; a single task's other updates carry no
  // time. (mm addresses are reused: every record of the address counts.)
  size_t raw_updates = 0, untimed = 0;
  for (const rss_event& e : raw_) {
    if (e.kind != RSS_EV_UPDATE || e.mm != mm.addr) continue;
    ++raw_updates;
    untimed += e.start_ns == 0;
    if (e.slot == 0) {
      ASSERT_NE(e.start_ns, 0u) << "a fold is timed";
    }
  }
  EXPECT_GE(untimed * 10, raw_updates * 9);
  const std::vector<Seen> updates = updates_of(mm);
  UpstreamPercpu model(Topology::for_cpus(capture_->possible_cpus()));
  size_t faults_of_one_page = 0;
  size_t by_child = 0;
  std::vector<size_t> faults_on_cpu(capture_->possible_cpus());
  size_t zero_slots_with_an_end = 0;
  size_t run = 0, longest_run = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    const Seen& s = updates[i];
    ASSERT_EQ(s.info.fidelity, Fidelity::kExact) << "update " << i;
    // Only an update that left its slot at zero takes the end of its window.
    if (s.info.kernel_slot != 0) {
      ASSERT_EQ(s.info.end_ns, s.update.time_ns) << "update " << i;
    }
    zero_slots_with_an_end +=
        s.info.kernel_slot == 0 && s.info.end_ns > s.update.time_ns;
    model.add(s.update);
    ASSERT_EQ(model.approximate(s.update.member), s.info.kernel_count)
        << "update " << i;
    ASSERT_EQ(model.slot(s.update.member, s.update.cpu), s.info.kernel_slot)
        << "update " << i;
    by_child += s.info.tgid == uint32_t(pid);
    if (s.update.member == kAnonPages && s.update.delta == 1 &&
        s.info.tgid == uint32_t(pid)) {
      ++faults_of_one_page;
      ++faults_on_cpu[s.update.cpu];
      // Its own fault, counted once.
      ASSERT_TRUE(s.update.in_fault())
          << "update " << i << " of " << updates.size() << ": tid "
          << s.update.task << " cpu " << s.update.cpu << " faults "
          << s.info.faults << " slot " << s.info.kernel_slot << " count "
          << s.info.kernel_count << " faults_of_one_page so far "
          << faults_of_one_page;
      // The loop faults page after page, one fault each: a run of updates
      // each one fault after the last. Elsewhere faults that updated no
      // counter may come between (a copy-on-write of an anonymous page
      // shared with the parent; under ASan, a read of shadow memory
      // mapping the zero page after the loop).
      ASSERT_GE(s.info.faults, 1) << "update " << i;
      run = s.info.faults == 1 ? run + 1 : 0;
      longest_run = std::max(longest_run, run);
    }
  }
  // One update per 4 KiB page touched (plus a few stack/libc pages).
  EXPECT_GE(faults_of_one_page, kRegion / kPage);
  EXPECT_LE(faults_of_one_page, kRegion / kPage + 64);
  EXPECT_GE(longest_run, kRegion / kPage - 1)
      << "the loop's pages, one fault each";
  // percpu_counter_batch = max(32, 2 * online CPUs): a slot fed one-page
  // faults folds at least once per two batches of them (other updates of
  // the slot may shift it), and every fold is timed at both ends.
  const size_t batch = std::max(32, 2 * cpus);
  size_t folds_at_least = 0;
  for (size_t c = 0; c < faults_on_cpu.size() && int(c) < cpus; ++c) {
    EXPECT_GT(faults_on_cpu[c], 0u) << "never ran on CPU " << c;
    folds_at_least += faults_on_cpu[c] / (2 * batch);
  }
  EXPECT_EQ(rest.sum, rest.rss_anon);
  EXPECT_GE(zero_slots_with_an_end, folds_at_least);
  // The one-thread child's runs of one-page faults travel as repeats of a
  // record (bpf/rss_event.h), and every one of them was exact above.
  EXPECT_GT(capture_->repeats(), 0u);
  std::printf(
      "[ info ] %zu updates of the child's mm (%zu by the child), all "
      "exact; %zu one-page faults; %zu timed at both ends, %zu of %zu "
      "records untimed; %llu updates of the capture travelled as repeats; "
      "RssAnon at rest %lld pages\n",
      updates.size(), by_child, faults_of_one_page, zero_slots_with_an_end,
      untimed, raw_updates,
      static_cast<unsigned long long>(capture_->repeats()),
      static_cast<long long>(rest.rss_anon));
}

// A buffer the kernel fills (read() from /dev/zero) faults in kernel mode,
// where no task bit says "in a fault" on every kernel: the capture's
// exception marks must still put each of those updates inside its fault.
TEST_F(CaptureTest, FaultsTheKernelTakesOnUserMemoryAreFaults) {
  constexpr size_t kPages = 256;
  MmKey mm;
  const pid_t pid = run(
      [](int ready, int resume) {
        char* p = static_cast<char*>(mmap(nullptr, kPages * kPage,
                                          PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED) _exit(3);
        madvise(p, kPages * kPage, MADV_NOHUGEPAGE);
        const int zero = open("/dev/zero", O_RDONLY);
        if (zero < 0 ||
            read(zero, p, kPages * kPage) != ssize_t(kPages * kPage))
          _exit(4);
        signal_ready(ready);
        wait_resume(resume);
      },
      [&](pid_t child) { mm = mm_of(child); });
  ASSERT_NE(mm.addr, 0u);
  size_t one_page_faults = 0;
  // The read fills the buffer page after page, one fault each: a run of
  // updates each one fault after the last. Elsewhere update-less faults
  // may come between (the first touch of the buffer, or, under ASan, a
  // read of shadow memory mapping the zero page).
  size_t run = 0, longest_run = 0;
  for (const Seen& s : updates_of(mm)) {
    if (s.info.tgid != uint32_t(pid) || s.update.member != kAnonPages ||
        s.update.delta != 1)
      continue;
    ASSERT_TRUE(s.update.in_fault())
        << "one-page update " << one_page_faults << " on cpu " << s.update.cpu
        << " is outside a fault";
    ASSERT_GE(s.info.faults, 1) << "one-page update " << one_page_faults;
    run = s.info.faults == 1 ? run + 1 : 0;
    longest_run = std::max(longest_run, run);
    ++one_page_faults;
  }
  EXPECT_GE(one_page_faults, kPages);
  EXPECT_GE(longest_run, kPages - 1) << "the buffer's pages, one fault each";
}

TEST_F(CaptureTest, TwoPinnedThreadsAreExactWhereverNotFlagged) {
  RSSAUDIT_SKIP_UNLESS_PERCPU_COUNTERS(*capture_);
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs";
  int64_t sum_at_rest = 0;
  int64_t rss_anon_at_rest = -1;
  MmKey mm;
  uint64_t rest_ns = 0;
  const pid_t pid = run(
      [&](int ready, int resume) {
        std::atomic<int> go{0};
        char* regions[2];
        std::thread threads[2];
        for (int t = 0; t < 2; ++t)
          threads[t] = std::thread([&, t] {
            testing::pin_to(t);
            go.fetch_add(1);
            while (go.load() < 2) {
            }
            regions[t] = touch_region(kRegion, 0, 1);
          });
        for (std::thread& t : threads) t.join();
        signal_ready(ready);
        wait_resume(resume);
        for (char* r : regions) munmap(r, kRegion);
      },
      [&](pid_t child) {
        rest_ns = monotonic_ns();
        mm = mm_of(child);
        rss_anon_at_rest = rss_anon_pages(child);
        for (const Seen& s : updates_of(mm))
          if (s.update.member == kAnonPages) sum_at_rest += s.update.delta;
      });

  ASSERT_NE(mm.addr, 0u);
  const std::vector<Seen> updates = updates_of(mm);
  ASSERT_GE(updates.size(), 2 * kRegion / kPage);
  // The model's count after each update, in stream order.
  UpstreamPercpu model(Topology::for_cpus(capture_->possible_cpus()));
  std::vector<int64_t> model_count(updates.size());
  size_t flagged = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    const Seen& s = updates[i];
    model.add(s.update);
    model_count[i] = model.approximate(s.update.member);
    if (s.info.fidelity != Fidelity::kExact) {
      ++flagged;
      continue;
    }
    ASSERT_EQ(model.slot(s.update.member, s.update.cpu), s.info.kernel_slot)
        << "update " << i << " of " << updates.size() << " member "
        << int(s.update.member) << " cpu " << s.update.cpu << " delta "
        << s.update.delta << " count " << s.info.kernel_count << " task "
        << s.update.task;
  }
  // Every unflagged record read a `count` the model also held: its own, or
  // one reached by the records that follow it within kReadSlackNs of its
  // end: a fold on another CPU lands in `count` before its record starts,
  // by up to an interrupt's length (the add re-enables interrupts before the
  // tracepoint). Never a count the model had before the record.
  constexpr uint64_t kReadSlackNs = 100'000;
  size_t exact = 0;
  uint64_t worst_lag_ns = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    const Seen& s = updates[i];
    if (s.info.fidelity != Fidelity::kExact) continue;
    bool matched = false;
    for (size_t j = i; j < updates.size(); ++j) {
      const uint64_t start = updates[j].update.time_ns;
      if (j > i && start > s.info.end_ns + kReadSlackNs) break;
      if (updates[j].update.member != s.update.member) continue;
      if (model_count[j] == s.info.kernel_count) {
        matched = true;
        if (start > s.info.end_ns)
          worst_lag_ns = std::max(worst_lag_ns, start - s.info.end_ns);
        break;
      }
    }
    EXPECT_TRUE(matched) << "update " << i << " read count "
                         << s.info.kernel_count << ", model " << model_count[i];
    exact += matched;
  }
  // The threads' own updates in their page faults before the rest: +1
  // each. (Not their exit: under ASan an exiting thread gives back its
  // shadow pages.)
  size_t faults = 0, not_one = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    const Seen& s = updates[i];
    if (s.info.fidelity != Fidelity::kExact || s.info.tgid != uint32_t(pid) ||
        s.update.task == uint32_t(pid) || s.update.member != kAnonPages ||
        s.update.time_ns > rest_ns || !s.update.in_fault())
      continue;
    ++faults;
    if (s.update.delta == 1) continue;
    ++not_one;
    std::printf("[ late ] update %zu cpu %u delta %d count %lld slot %d\n", i,
                s.update.cpu, s.update.delta,
                static_cast<long long>(s.info.kernel_count),
                s.info.kernel_slot);
  }
  // Except a fold that took in another CPU's fold whose record came after
  // the grace (a vCPU descheduled between that add and its record: seen in
  // the 6.12 preempt=full guest): out already, it cannot be flagged, and
  // the reconstruction counts it (DeltaReconstructor.AFoldTakenIntoAFold...).
  EXPECT_LE(not_one, reconstructor_->stats().late_overlaps)
      << "faults not +1 that no late overlap explains";
  EXPECT_GE(faults, 2 * kRegion / kPage * 99 / 100);
  EXPECT_LE(flagged * 100, updates.size());
  EXPECT_EQ(sum_at_rest, rss_anon_at_rest);
  std::printf(
      "[ info ] %zu updates, %zu flagged (%.3f%%), %zu of %zu "
      "unflagged exact; a fold's add led its record by up to %llu "
      "ns; %llu late overlaps\n",
      updates.size(), flagged, 100.0 * flagged / updates.size(), exact,
      updates.size() - flagged, static_cast<unsigned long long>(worst_lag_ns),
      static_cast<unsigned long long>(reconstructor_->stats().late_overlaps));
}

// MADV_COLLAPSE (Linux 6.1) fills each empty PTE of the range it collapses
// with a +1 to the anon counter outside any lock (mm/khugepaged.c,
// __collapse_huge_page_copy_succeeded()): a site where a preemptible kernel
// can move the task between the add and its record. The capture must read
// the preemption depth on every record, tell those adds by it, and the
// reconstructor flag them where the kernel may preempt there.
TEST_F(CaptureTest, ACollapseAddsWithoutALockAndIsFlaggedWherePreemptible) {
  RSSAUDIT_SKIP_UNLESS_PERCPU_COUNTERS(*capture_);
  constexpr size_t kTouched = 64;              // of 512 pages: 448 empty PTEs
  if (collapse_one_pmd(1) && errno == EINVAL)  // here, before the child
    GTEST_SKIP() << "madvise(MADV_COLLAPSE) is EINVAL: Linux 6.1+ with "
                    "CONFIG_TRANSPARENT_HUGEPAGE needed";
  AnonAtRest rest;
  const pid_t pid = run(
      [&](int ready, int resume) {
        if (collapse_one_pmd(kTouched)) _exit(8);
        signal_ready(ready);
        wait_resume(resume);
      },
      [&](pid_t child) { rest = anon_at_rest(child); });
  const MmKey& mm = rest.mm;
  ASSERT_NE(mm.addr, 0u);
  EXPECT_EQ(rest.sum, rest.rss_anon);

  size_t records = 0, unlocked = 0;
  for (const rss_event& e : raw_) {
    if (e.kind != RSS_EV_UPDATE || e.tgid != uint32_t(pid) || e.mm != mm.addr)
      continue;
    ++records;
    ASSERT_TRUE(e.preempt & RSS_PREEMPT_KNOWN)
        << "preemption depth not read on CPU " << e.cpu;
    const int depth = e.preempt & ~RSS_PREEMPT_KNOWN;
    if (e.flags & RSS_EVF_IN_FAULT) {
      EXPECT_GE(depth, 2) << "a fault's update under its page-table lock";
    }
    if (depth <= 1) ++unlocked;
  }
  EXPECT_GE(unlocked, kPmd / kPage - kTouched);
  const bool preemptible = capture_->support().preempts_in_kernel();
  EXPECT_EQ(reconstructor_->stats().unlocked != 0, preemptible);
  size_t flagged = 0;
  for (const Seen& s : updates_of(mm))
    flagged += s.info.fidelity != Fidelity::kExact;
  if (preemptible) {
    EXPECT_GE(flagged, kPmd / kPage - kTouched);
  } else {
    EXPECT_EQ(flagged, 0u);
  }
  std::printf(
      "[ info ] preemption model '%s': %zu records, %zu without a lock, "
      "%zu updates flagged\n",
      capture_->support().preemption.mode.c_str(), records, unlocked, flagged);
}

TEST_F(CaptureTest, ForkVforkExecAreSeenWithTheirFlagsAndMms) {
  pid_t forked = 0, vforked = 0;
  int pids[2];
  if (pipe(pids)) FAIL() << "pipe";
  const pid_t pid = run([&](int, int) {
    const pid_t f = fork();
    if (f == 0) _exit(0);
    const pid_t v = vfork();
    if (v == 0) {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(127);
    }
    waitpid(f, nullptr, 0);
    waitpid(v, nullptr, 0);
    const pid_t both[2] = {f, v};
    if (write(pids[1], both, sizeof(both)) != sizeof(both)) _exit(7);
  });
  pid_t both[2];
  ASSERT_EQ(read(pids[0], both, sizeof(both)), ssize_t(sizeof(both)));
  forked = both[0];
  vforked = both[1];
  const uint64_t parent_mm = mm_of(pid).addr;
  ASSERT_NE(parent_mm, 0u);

  uint64_t forked_mm = 0, exec_mm = 0;
  bool vfork_seen = false;
  std::vector<uint64_t> exit_mmaps;
  for (const rss_event& e : raw_) {
    if (e.kind == RSS_EV_NEW_TASK && e.tid == uint32_t(forked)) {
      EXPECT_EQ(uint64_t(e.aux) & CLONE_VM, 0u);
      forked_mm = e.mm;
    }
    if (e.kind == RSS_EV_NEW_TASK && e.tid == uint32_t(vforked)) {
      EXPECT_EQ(uint64_t(e.aux) & (CLONE_VM | CLONE_VFORK),
                uint64_t{CLONE_VM | CLONE_VFORK});
      EXPECT_EQ(e.mm, parent_mm);  // the vfork child borrows the parent's mm
      vfork_seen = true;
    }
    if (e.kind == RSS_EV_EXEC && e.tid == uint32_t(vforked)) exec_mm = e.mm;
    if (e.kind == RSS_EV_EXIT_MMAP) exit_mmaps.push_back(e.mm);
  }
  EXPECT_TRUE(vfork_seen);
  ASSERT_NE(forked_mm, 0u);
  EXPECT_NE(forked_mm, parent_mm);
  ASSERT_NE(exec_mm, 0u);
  EXPECT_NE(exec_mm, parent_mm);
  const auto seen = [&](uint64_t mm) {
    return std::find(exit_mmaps.begin(), exit_mmaps.end(), mm) !=
           exit_mmaps.end();
  };
  EXPECT_TRUE(seen(forked_mm));
  EXPECT_TRUE(seen(exec_mm));
  EXPECT_TRUE(seen(parent_mm));
  // The exec leaves the parent's mm, known from the vfork child's NEW_TASK
  // record: a task exit of it, not an mm exit.
  bool task_exit = false;
  for (const auto& [mm, e] : sink_.life)
    task_exit |= mm.addr == parent_mm && e.kind == LifeKind::kTaskExit &&
                 e.task == uint32_t(vforked);
  EXPECT_TRUE(task_exit);
  // Every update of the three mms seen from their creation is exact, but
  // where the kernel may preempt kernel code: there the vfork child's
  // exec adds its argument pages to the mm it leaves without a lock
  // (fs/exec.c acct_arg_size()), flagged with what it may have upset.
  const bool preemptible = capture_->support().preempts_in_kernel();
  for (uint64_t mm : {forked_mm, exec_mm, parent_mm})
    for (const Seen& s : updates_of(mm, {pid, forked, vforked}))
      if (!preemptible || s.info.fidelity != Fidelity::kAmbiguous) {
        EXPECT_EQ(s.info.fidelity, Fidelity::kExact)
            << "mm " << std::hex << mm << " cpu " << s.update.cpu << " task "
            << std::dec << s.update.task << " delta " << s.update.delta;
      }
  // Before 6.2 an atomic add needs no slot: a preemption there can only
  // reorder adds, which each record tells by itself (reordered).
  EXPECT_EQ(reconstructor_->stats().unlocked != 0,
            preemptible && capture_->support().percpu_rss);
}

}  // namespace
}  // namespace rssaudit
