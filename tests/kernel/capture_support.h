// What the root-only tests share: opening the capture programs, or the
// reason a test must skip (no root, a kernel without the features).
#pragma once

#include <sched.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "capture/bpf_capture.h"
#include "capture/delta_reconstructor.h"
#include "core/schemes/topology.h"
#include "os/clock.h"

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

// The reconstructor options the daemon uses on this host.
inline ReconstructorOptions host_reconstructor_options(
    const BpfCapture& capture) {
  ReconstructorOptions o;
  o.nr_cpus = capture.possible_cpus();
  o.batch = upstream_rss_batch(sysconf(_SC_NPROCESSORS_ONLN));
  return o;
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
