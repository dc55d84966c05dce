// What the root-only tests share: opening the capture programs, or the
// reason a test must skip (no root, a kernel without the features).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "audit/delta_reconstructor.h"
#include "capture/bpf_capture.h"
#include "core/schemes/topology.h"
#include "os/clock.h"
#include "os/faults_counted.h"

namespace rssaudit::testing {

struct TestCapture {
  std::unique_ptr<BpfCapture> capture;
  std::string skip;   // non-empty: the capability that is missing
  std::string error;  // non-empty: loading failed for another reason
};

inline TestCapture open_test_capture() {
  TestCapture t;
  if (geteuid() != 0) {
    t.skip = "needs root (CAP_BPF, CAP_PERFMON)";
    return t;
  }
  Result<std::unique_ptr<BpfCapture>, CaptureError> r =
      BpfCapture::open(CaptureOptions{});
  if (!r)
    (r.error().unsupported ? t.skip : t.error) = r.error().message;
  else
    t.capture = std::move(r).value();
  return t;
}

// Faults `pages` fresh anonymous 4 KiB pages, one fault and one update
// each (no THP); in a child, exits 3 when it cannot map them.
RSSAUDIT_FAULTS_COUNTED inline char* touch_pages(size_t pages) {
  constexpr size_t kPage = 4096;
  char* p =
      static_cast<char*>(mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) _exit(3);
  madvise(p, pages * kPage, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < pages; ++i)
    static_cast<volatile char*>(p)[i * kPage] = 1;
  return p;
}

// Moves the calling thread to `cpu` (now, before returning).
inline void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// In a fixture's SetUp(): opens the capture into `dest`, or skips the test
// naming the missing capability, or fails with the loader's error.
#define RSSAUDIT_OPEN_TEST_CAPTURE(dest)           \
  do {                                             \
    ::rssaudit::testing::TestCapture t_ =          \
        ::rssaudit::testing::open_test_capture();  \
    if (!t_.skip.empty()) GTEST_SKIP() << t_.skip; \
    if (!t_.capture) FAIL() << t_.error;           \
    dest = std::move(t_.capture);                  \
  } while (0)

// Skips a test, printing "[ KIND-skip ] Test: why": the line by which
// tests/vm/run_matrix.sh tells a skip it expects from a capture that failed
// to load, even under --gtest_brief.
#define RSSAUDIT_KNOWN_SKIP(kind, why)                                         \
  do {                                                                         \
    std::printf(                                                               \
        "[ " kind "-skip ] %s: %s\n",                                          \
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), why); \
    GTEST_SKIP() << why;                                                       \
  } while (0)

// Skips a test written for the other counting scheme of the kernel (the
// capture loads here; the kernel counts differently).
#define RSSAUDIT_SCHEME_SKIP(why) RSSAUDIT_KNOWN_SKIP("scheme", why)

// Skips a test that needs something of the host the guests of
// tests/vm/run_matrix.sh do not carry (a loop device: the cloud kernels
// build it as a module, and a guest loads none).
#define RSSAUDIT_HOST_SKIP(why) RSSAUDIT_KNOWN_SKIP("host", why)

// Skips a test of the percpu_counter scheme (Linux 6.2+: per-CPU slots,
// folds, the upstream model) on a kernel that counts otherwise.
#define RSSAUDIT_SKIP_UNLESS_PERCPU_COUNTERS(capture)                  \
  do {                                                                 \
    if (!(capture).support().percpu_rss)                               \
      RSSAUDIT_SCHEME_SKIP(                                            \
          "the kernel counts RSS with atomics and per-task caches "    \
          "(before Linux 6.2), not percpu_counters: no per-CPU slots " \
          "to test (TaskCacheTest covers that scheme)");               \
  } while (0)

// The reconstructor options the daemon uses on this host.
inline ReconstructorOptions host_reconstructor_options(
    const BpfCapture& capture) {
  ReconstructorOptions o;
  o.nr_cpus = capture.possible_cpus();
  o.batch = upstream_rss_batch(sysconf(_SC_NPROCESSORS_ONLN));
  o.preemptible = capture.support().preempts_in_kernel();
  return o;
}

// Runs `child(ask, reply)` in a forked process, calling `drain()` until it
// exits. The child may ask (an int on `ask`) and wait on `reply`: once the
// stream has caught up with what it did before asking, `answer(pid,
// question)` goes back. Ends with a drain past the reconstructor's grace
// time (the caller flushes); expects exit 0 and no drops. Returns the pid.
inline pid_t run_child_under_capture(
    BpfCapture& capture, const std::function<void(int ask, int reply)>& child,
    const std::function<void()>& drain,
    const std::function<int(pid_t, int)>& answer) {
  int ask[2], reply[2];
  if (pipe2(ask, O_NONBLOCK) || pipe(reply)) ADD_FAILURE() << "pipe";
  const pid_t pid = fork();
  if (pid == 0) {
    close(ask[0]);
    close(reply[1]);
    child(ask[1], reply[0]);
    _exit(0);
  }
  close(ask[1]);
  close(reply[0]);
  int status = 0;
  for (;;) {
    drain();
    int question;
    if (read(ask[0], &question, sizeof(question)) == sizeof(question)) {
      usleep(5000);  // past the reconstructor's grace time
      drain();
      const int a = answer ? answer(pid, question) : 0;
      if (write(reply[1], &a, sizeof(a)) != sizeof(a)) ADD_FAILURE() << "reply";
    }
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    usleep(1000);
  }
  usleep(5000);
  drain();
  close(ask[0]);
  close(reply[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(capture.drops(), 0u);
  return pid;
}

// One drain as LiveAudit::drain() does it, each record also handed to
// `tap(const rss_event&)` before the reconstructor sees it.
template <class Tap>
void drain_capture(BpfCapture& capture, DeltaReconstructor& reconstructor,
                   ReconstructorSink& sink, Tap&& tap) {
  const uint64_t now = monotonic_ns();
  capture.poll(now, [&](const rss_event& e) {
    tap(e);
    reconstructor.on_event(e, sink);
  });
  if (!capture.held_back()) reconstructor.advance(now, sink);
}

}  // namespace rssaudit::testing
