// rssauditd's heap per audited mm, by CPU count: the reconstructor's slot
// state plus the audit pipeline's six models. Two cases: a one-thread mm
// updated on one CPU, and the worst case, an mm updated on every CPU and
// shared by a second thread (HPCC tree active). Sizes the daemon's
// MemoryMax= for a host's CPUs and process count.
// Usage: mm_footprint [MMS]
#include <fmt/core.h>
#include <malloc.h>
#include <sched.h>

#include <cstdlib>

#include "audit/audit_pipeline.h"
#include "audit/delta_reconstructor.h"
#include "core/schemes/topology.h"

namespace {

size_t heap_bytes() { return mallinfo2().uordblks; }

}  // namespace

int main(int argc, char** argv) {
  using namespace rssaudit;
  const uint32_t mms = argc > 1 ? std::atoi(argv[1]) : 1000;
  fmt::print("{:>6}  {:>22}  {:>22}  {:>18}\n", "CPUs",
             "bytes/mm, 1 CPU 1 thread", "bytes/mm, all CPUs 2 thr",
             "MiB per 10 000 (worst)");
  for (uint32_t cpus : {2u, 64u, 384u, 1024u, 8192u}) {
    double per_mm[2];
    for (const bool worst : {false, true}) {
      const size_t before = heap_bytes();
      AuditPipeline pipeline(Topology::for_cpus(cpus));
      DeltaReconstructor rec(
          ReconstructorOptions{cpus, upstream_rss_batch(cpus)});
      uint64_t t = 1;
      for (uint32_t i = 0; i < mms; ++i) {
        rss_event e{};
        e.mm = 0x10000 * (uint64_t{i} + 1);
        e.tgid = e.tid = 1000 + i;
        e.kind = RSS_EV_NEW_TASK;  // a fork: the mm starts at zero
        e.start_ns = t++;
        rec.on_event(e, pipeline);
        if (worst) {
          e.aux = CLONE_VM;  // a second thread
          e.tid += 1'000'000;
          e.start_ns = t++;
          rec.on_event(e, pipeline);
        }
        e.kind = RSS_EV_UPDATE;
        e.member = kAnonPages;
        e.flags = RSS_EVF_OWNER;
        e.aux = 0;
        e.slot = 1;
        for (uint32_t c = 0; c < (worst ? cpus : 1); ++c) {
          e.cpu = static_cast<uint16_t>(c);
          e.start_ns = t++;
          rec.on_event(e, pipeline);
        }
      }
      rec.flush(pipeline);
      per_mm[worst] = double(heap_bytes() - before) / mms;
    }
    fmt::print("{:>6}  {:>22.0f}  {:>22.0f}  {:>18.1f}\n", cpus, per_mm[0],
               per_mm[1], per_mm[1] * 10'000 / (1 << 20));
  }
}
