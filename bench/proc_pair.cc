// How often the sampler's /proc pair of a busy process is of one moment,
// and how far the pair is off: process PID (busy_threads) sampled READS
// times, GAP_US apart, through ProcessSampler (stat, statm, status, stat
// again). Per read, stat's rss minus status's precise one against the
// kernel's RSS bound; over all reads (what the history stored before it
// read stat twice) and over the reads whose count held still (what it
// stores now); and how many of those a stricter rule would keep, one that
// also asks statm's resident to equal status's VmRSS (the precise sum
// unmoved too). Figures only.
// Usage: proc_pair PID [READS [GAP_US]]
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <utility>

#include "core/schemes/topology.h"
#include "core/schemes/update.h"
#include "core/schemes/upstream_percpu.h"
#include "sampler/sampler.h"

namespace {

// Reads of one kind: how many, the largest |stat - precise|, how many
// beyond the bound.
struct Tally {
  uint64_t reads = 0;
  int64_t largest = 0;
  uint64_t beyond = 0;
  void add(int64_t drift, int64_t bound) {
    ++reads;
    largest = std::max(largest, std::abs(drift));
    beyond += std::abs(drift) > bound;
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace rssaudit;
  if (argc < 2) {
    fmt::print(stderr, "usage: proc_pair PID [READS [GAP_US]]\n");
    return 2;
  }
  const auto pid = static_cast<uint32_t>(std::atoi(argv[1]));
  const int reads = argc > 2 ? std::atoi(argv[2]) : 5000;
  const int gap_us = argc > 3 ? std::atoi(argv[3]) : 200;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const Topology host = Topology::for_cpus(static_cast<uint32_t>(cpus));
  const int64_t bound = kRssCounters * *UpstreamPercpu(host).bound(kAnonPages);
  const uint64_t page_size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  ProcessSampler sampler(WalkPolicy{});
  Tally all, still, still_statm;
  std::array<uint64_t, 3> by_kind{};  // RssReads order
  for (int i = 0; i < reads; ++i) {
    usleep(static_cast<useconds_t>(gap_us));
    SampleRequest request;
    request.pid = pid;
    request.stat_again = true;
    const SampleResult r = sampler.sample(request);
    if (r.outcome != SampleOutcome::kOk) {
      fmt::print(stderr, "pid {}: not sampled: {}\n", pid, r.error);
      return 1;
    }
    const Sample& s = r.sample;
    const auto anon = s.status.member_pages(kAnonPages, page_size);
    const auto file = s.status.member_pages(kFilePages, page_size);
    const auto shmem = s.status.member_pages(kShmemPages, page_size);
    if (!anon || !file || !shmem) {
      fmt::print(stderr, "pid {}: no RssAnon, RssFile, RssShmem\n", pid);
      return 1;
    }
    const int64_t drift = static_cast<int64_t>(s.stat.rss) -
                          static_cast<int64_t>(*anon + *file + *shmem);
    all.add(drift, bound);
    ++by_kind[static_cast<size_t>(*s.rss_reads)];
    if (s.rss_reads != RssReads::kStill) continue;
    still.add(drift, bound);
    if (s.statm.resident == s.status.vm_rss_pages(page_size))
      still_statm.add(drift, bound);
  }
  fmt::print("{} CPUs, RSS bound {} pages; pid {}, {} reads {} us apart\n",
             cpus, bound, pid, reads, gap_us);
  fmt::print("still {} ({:.1f}%), moving {}, exiting {}\n", by_kind[0],
             100.0 * double(by_kind[0]) / reads, by_kind[1], by_kind[2]);
  fmt::print("still with statm = VmRSS too: {} ({:.1f}%)\n", still_statm.reads,
             100.0 * double(still_statm.reads) / reads);
  for (const auto& [what, t] :
       {std::pair("every read", all), std::pair("still reads", still),
        std::pair("still, statm = VmRSS", still_statm)})
    fmt::print(
        "{}: max |stat - precise| {} pages = {:.0f}% of the bound, {} "
        "beyond it\n",
        what, t.largest, 100.0 * double(t.largest) / double(bound), t.beyond);
}
