// Root-only, on kernels before Linux 6.2 (atomics fed by per-task caches,
// bpf/task_cache.bpf.c): children that fault under the capture, checked at
// rest against the kernel's own readers and a page-table walk. Where the
// kernel counts with percpu_counters (6.2+) every test skips, naming that.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "audit/audit_pipeline.h"
#include "capture/bpf_capture.h"
#include "sampler/sampler.h"
#include "tests/kernel/capture_support.h"

namespace rssaudit {
namespace {

constexpr size_t kPage = 4096;
// A thread syncs its cache at its 66th fault (mm/memory.c
// check_sync_rss_stat()): until then it holds what up to 66 faults cached.
constexpr int64_t kCachedFaults = 66;

using testing::touch_pages;

void ask(int fd, int question) {
  if (write(fd, &question, sizeof(question)) != sizeof(question)) _exit(4);
}
int await_reply(int fd) {
  int a = 0;
  if (read(fd, &a, sizeof(a)) != sizeof(a)) _exit(5);
  return a;
}

// The pipeline, plus each process's latest own mm and the records' syncs.
class Tap : public ReconstructorSink {
 public:
  explicit Tap(AuditPipeline& p) : pipeline(p) {}
  void on_mm_created(const MmKey& mm, bool from_zero) override {
    pipeline.on_mm_created(mm, from_zero);
  }
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    if (u.by_owner()) mm_of[info.tgid] = mm;
    pipeline.on_update(mm, u, info);
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    pipeline.on_life(mm, e);
  }
  void on_cache_fold(const MmKey& mm, const LifeEvent& sync,
                     const UpdateInfo& info) override {
    pipeline.on_cache_fold(mm, sync, info);
  }
  void on_mm_destroyed(const MmKey& mm) override {
    pipeline.on_mm_destroyed(mm);
  }
  AuditPipeline& pipeline;
  std::map<uint32_t, MmKey> mm_of;
};

// One moment of a quiet process: what the stream adds up to, what the
// kernel's readers show, and what a page-table walk finds.
struct AtRest {
  std::array<int64_t, kMembers> exact{}, kernel{}, status{};
  int64_t stat_rss = -1, statm_resident = -1, walk = -1;
  bool exact_known = false;
  int64_t rss(const std::array<int64_t, kMembers>& m) const {
    return m[kFilePages] + m[kAnonPages] + m[kShmemPages];
  }
  int64_t hidden_anon() const { return exact[kAnonPages] - status[kAnonPages]; }
};

WalkPolicy walk_every_time() {
  WalkPolicy p;
  p.all = true;
  p.min_interval_ns = 0;
  return p;
}

class TaskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RSSAUDIT_OPEN_TEST_CAPTURE(capture_);
    if (capture_->support().percpu_rss)
      RSSAUDIT_SCHEME_SKIP(
          "the kernel counts RSS with percpu_counters (Linux 6.2+): no "
          "per-task caches to audit");
    reconstructor_ = std::make_unique<DeltaReconstructor>(
        testing::host_reconstructor_options(*capture_));
  }

  // Runs `child` under the capture; at each question, `at_rest` gets the
  // child's pid and the question.
  pid_t run(const std::function<void(int ask, int reply)>& child,
            const std::function<void(pid_t, int)>& at_rest) {
    const pid_t pid = testing::run_child_under_capture(
        *capture_, child,
        [&] {
          testing::drain_capture(*capture_, *reconstructor_, tap_,
                                 [&](const rss_event& e) {
                                   if (e.kind == RSS_EV_CACHE_SYNC && e.aux)
                                     synced_[e.tid] += e.aux;
                                 });
        },
        [&](pid_t p, int q) {
          at_rest(p, q);
          return 0;
        });
    reconstructor_->flush(tap_);
    return pid;
  }

  AtRest look_at(pid_t pid) {
    AtRest r;
    const auto it = tap_.mm_of.find(static_cast<uint32_t>(pid));
    if (it == tap_.mm_of.end()) {
      ADD_FAILURE() << "no update of " << pid << "'s own mm seen";
      return r;
    }
    const AuditPipeline::LiveMm* mm = pipeline_.live(it->second);
    if (!mm) {
      ADD_FAILURE() << "the mm of " << pid << " is not live";
      return r;
    }
    r.exact_known = mm->rss_known();
    for (int m = 0; m < kMembers; ++m) {
      r.exact[m] = mm->exact(m);
      r.kernel[m] = mm->kernel_count[m];
    }
    SampleRequest request;
    request.pid = static_cast<uint32_t>(pid);
    request.walks = true;
    const SampleResult s = sampler_.sample(request);
    EXPECT_EQ(s.outcome, SampleOutcome::kOk) << s.error;
    for (int m = 0; m < kMembers; ++m)
      r.status[m] = static_cast<int64_t>(
          s.sample.status.member_pages(static_cast<Member>(m), kPage)
              .value_or(0));
    r.stat_rss = static_cast<int64_t>(s.sample.stat.rss);
    r.statm_resident = static_cast<int64_t>(s.sample.statm.resident);
    if (s.sample.pagemap)
      r.walk = static_cast<int64_t>(s.sample.pagemap->present_counted());
    return r;
  }

  // What every quiet moment must show before 6.2: the stream equals the
  // walk, and every reader reads the atomics the stream also tracks.
  void expect_consistent(const AtRest& r, const char* when) {
    SCOPED_TRACE(when);
    ASSERT_TRUE(r.exact_known) << "born under the capture: exact throughout";
    EXPECT_EQ(r.rss(r.exact), r.walk) << "the stream against a walk";
    EXPECT_EQ(r.kernel, r.status) << "the stream's atomics against status";
    EXPECT_EQ(r.stat_rss, r.rss(r.status)) << "stat reads the atomics too";
    EXPECT_EQ(r.statm_resident, r.rss(r.status)) << "and statm";
    EXPECT_GE(r.hidden_anon(), 0);
  }

  void expect_no_lost_cache_update() {
    // A sync whose cache differs from the stream's cached updates comes
    // rarely (cause not found yet: stop 34's and 35's notes); it is
    // corrected and flagged, and the stream still equals the walk (above).
    EXPECT_GT(reconstructor_->stats().syncs, 0u);
    EXPECT_LE(reconstructor_->stats().sync_mismatches * 100,
              reconstructor_->stats().syncs);
    // The per_task model, fed the stream, holds the kernel's atomic at
    // every add and fold the stream could place exactly.
    EXPECT_GT(pipeline_.fidelity_checked(), 0u);
    EXPECT_EQ(pipeline_.fidelity_matched(), pipeline_.fidelity_checked());
  }

  std::unique_ptr<BpfCapture> capture_;
  std::unique_ptr<DeltaReconstructor> reconstructor_;
  AuditPipeline pipeline_{
      Topology::for_cpus(static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)))};
  Tap tap_{pipeline_};
  ProcessSampler sampler_{walk_every_time()};
  std::map<uint32_t, int64_t> synced_;  // pages each tid's syncs folded
};

// T threads each fault 32 pages, fewer than the 64 events that would sync
// them: every reader misses T x 32 pages or more, the stream and a walk
// have them. When the threads exit, each one's sync shows its pages.
class ManyThreads : public TaskCacheTest,
                    public ::testing::WithParamInterface<int> {};

TEST_P(ManyThreads, HideTheirCachedPagesFromEveryReaderUntilTheyExit) {
  const int threads = GetParam();
  constexpr size_t kPerThread = 32;
  AtRest holding, joined;
  run(
      [&](int ask_fd, int reply_fd) {
        std::atomic<int> touched{0};
        std::atomic<bool> release{false};
        std::vector<std::thread> pool;
        for (int i = 0; i < threads; ++i)
          pool.emplace_back([&] {
            touch_pages(kPerThread);
            ++touched;
            while (!release) usleep(1000);
          });
        while (touched < threads) usleep(1000);
        ask(ask_fd, 1);
        await_reply(reply_fd);
        release = true;
        for (std::thread& t : pool) t.join();
        ask(ask_fd, 2);
        await_reply(reply_fd);
      },
      [&](pid_t pid, int q) { (q == 1 ? holding : joined) = look_at(pid); });
  expect_consistent(holding, "threads holding their pages");
  expect_consistent(joined, "threads exited");
  // Each thread's 32 pages are in its own cache; besides them, the main
  // thread's and each thread's stack faults, at most 66 faults each.
  EXPECT_GE(holding.hidden_anon(), threads * int64_t{kPerThread});
  EXPECT_LE(holding.hidden_anon(), (threads + 1) * kCachedFaults);
  // Each exit synced its thread's cache: only the main thread's is left.
  EXPECT_LE(joined.hidden_anon(), kCachedFaults);
  EXPECT_GE(holding.hidden_anon() - joined.hidden_anon(),
            threads * int64_t{kPerThread});
  expect_no_lost_cache_update();
  std::printf(
      "[ figures ] %d threads x %zu pages: readers miss %lld anon "
      "pages (stream %lld, RssAnon %lld, walk of RSS %lld); after "
      "their exits %lld\n",
      threads, kPerThread, (long long)holding.hidden_anon(),
      (long long)holding.exact[kAnonPages],
      (long long)holding.status[kAnonPages], (long long)holding.walk,
      (long long)joined.hidden_anon());
}

INSTANTIATE_TEST_SUITE_P(Threads, ManyThreads, ::testing::Values(4, 16));

// The sync points of the task life cycle: a fork copies the parent's
// counters, not its cache; a vfork child caches its faults of the parent's
// mm and its exec syncs them into it; an exec and an exit sync.
TEST_F(TaskCacheTest, ForkVforkExecAndExitSyncWhereTheKernelDoes) {
  constexpr size_t kParentPages = 20, kVforkPages = 10;
  AtRest before, after_fork, after_vfork;
  const pid_t parent = run(
      [&](int ask_fd, int reply_fd) {
        touch_pages(kParentPages);
        // Mapped by the parent, faulted by the vfork child.
        char* shared = static_cast<char*>(
            mmap(nullptr, kVforkPages * kPage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (shared == MAP_FAILED) _exit(3);
        madvise(shared, kVforkPages * kPage, MADV_NOHUGEPAGE);
        ask(ask_fd, 1);
        await_reply(reply_fd);
        int go[2];
        if (pipe(go)) _exit(3);
        const pid_t c = fork();
        if (c == 0) {  // waits, then execs: the exec syncs its cache
          char b;
          if (read(go[0], &b, 1) != 1) _exit(8);
          execl("/bin/true", "true", nullptr);
          _exit(9);
        }
        ask(ask_fd, 2);
        await_reply(reply_fd);
        const pid_t v = vfork();
        if (v == 0) {
          for (size_t i = 0; i < kVforkPages; ++i)
            static_cast<volatile char*>(shared)[i * kPage] = 1;
          execl("/bin/true", "true", nullptr);
          _exit(9);
        }
        waitpid(v, nullptr, 0);
        ask(ask_fd, 3);
        await_reply(reply_fd);
        if (write(go[1], "x", 1) != 1) _exit(8);
        waitpid(c, nullptr, 0);
      },
      [&](pid_t pid, int q) {
        (q == 1 ? before : q == 2 ? after_fork : after_vfork) = look_at(pid);
      });
  expect_consistent(before, "before the fork");
  expect_consistent(after_fork, "after the fork");
  expect_consistent(after_vfork, "after the vfork child's exec");
  EXPECT_GE(before.hidden_anon(), int64_t{kParentPages});
  // fork() copies page tables into the child's atomics, and leaves the
  // parent's cache where it was.
  EXPECT_GE(after_fork.hidden_anon(), int64_t{kParentPages});
  // The vfork child faulted the parent's pages (and maybe stack pages)
  // into its own cache; its exec synced them into the parent's atomic,
  // which every reader sees. What the parent itself cached meanwhile (a
  // few stack pages at most) is all that may stay hidden.
  const int64_t grew =
      after_vfork.exact[kAnonPages] - after_fork.exact[kAnonPages];
  const int64_t shown =
      after_vfork.status[kAnonPages] - after_fork.status[kAnonPages];
  EXPECT_GE(grew, int64_t{kVforkPages});
  EXPECT_GE(shown, int64_t{kVforkPages});
  EXPECT_LE(grew - shown, 8);
  // Each task's syncs folded what it cached: the parent's at its exit,
  // at least its 20 pages.
  EXPECT_GE(synced_[uint32_t(parent)], int64_t{kParentPages});
  expect_no_lost_cache_update();
}

}  // namespace
}  // namespace rssaudit
