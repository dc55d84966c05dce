// User-space cost per captured event: decode, delta reconstruction and every
// per-mm model, over a recording held in memory (no I/O timed). Prints the
// median ns per event of several passes.
// Usage: replay_cost FILE [PASSES]   (make FILE with `rssaudit record`)
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "audit/audit_pipeline.h"
#include "capture/recording.h"
#include "core/formats/record_format.h"

int main(int argc, char** argv) {
  using namespace rssaudit;
  if (argc < 2) {
    fmt::print(stderr, "usage: replay_cost FILE [PASSES]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  // Decode once to memory, so a pass times decode-free processing too.
  std::vector<rss_event> events;
  RecordHeader header;
  RecordReader reader([&](const RecordHeader& h) { header = h; },
                      [&](const rss_event& e) { events.push_back(e); });
  if (auto fed = reader.feed(bytes); !fed) {
    fmt::print(stderr, "{}: {}\n", argv[1], fed.error().message);
    return 1;
  }
  const int passes = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<double> decode_ns, audit_ns;
  for (int p = 0; p < passes; ++p) {
    auto t0 = std::chrono::steady_clock::now();
    size_t n = 0;
    RecordReader r([](const RecordHeader&) {}, [&](const rss_event&) { ++n; });
    (void)r.feed(bytes);
    auto t1 = std::chrono::steady_clock::now();
    AuditPipeline pipeline(topology_of(header));
    DeltaReconstructor rec(
        ReconstructorOptions{header.nr_cpu_ids, header.percpu_batch});
    uint64_t latest = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      rec.on_event(events[i], pipeline);
      latest = std::max<uint64_t>(latest, events[i].start_ns);
      if ((i & 4095) == 4095) rec.advance(latest, pipeline);
    }
    rec.flush(pipeline);
    auto t2 = std::chrono::steady_clock::now();
    decode_ns.push_back(
        std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    audit_ns.push_back(
        std::chrono::duration<double, std::nano>(t2 - t1).count() /
        events.size());
  }
  std::sort(decode_ns.begin(), decode_ns.end());
  std::sort(audit_ns.begin(), audit_ns.end());
  fmt::print(
      "{} events; median per event: decode {:.1f} ns, "
      "reconstruct + audit {:.1f} ns\n",
      events.size(), decode_ns[passes / 2], audit_ns[passes / 2]);
}
