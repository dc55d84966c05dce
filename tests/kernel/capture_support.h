// What the root-only tests share: opening the capture programs, or the
// reason a test must skip (no root, a kernel without the features).
#pragma once

#include <unistd.h>

#include <memory>
#include <string>

#include "capture/bpf_capture.h"
#include "capture/delta_reconstructor.h"
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
