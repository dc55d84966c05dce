// How many records a repeat count would save (#40 item 2): a recording's
// records fed to audit/repeat_runs.h, CPU by CPU as the capture wrote them.
// Prints records per update as recorded ("now") and if each run of repeats
// travelled in the record before it ("runs"), the repeats per run and the
// longest run. A run ends at the latest at its CPU's fold, a timed record:
// its length is bounded by the counter's batch (32 on up to 16 CPUs).
// Usage: record_runs FILE...   (make each FILE with `rssaudit record`)
#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "audit/repeat_runs.h"
#include "core/formats/record_format.h"

int main(int argc, char** argv) {
  using namespace rssaudit;
  if (argc < 2) {
    fmt::print(stderr, "usage: record_runs FILE...\n");
    return 2;
  }
  fmt::print("{:<32} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8}\n", "recording",
             "records", "updates", "now", "runs", "mean", "longest");
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      fmt::print(stderr, "{}: cannot open\n", argv[i]);
      return 1;
    }
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    std::optional<RepeatRuns> runs;
    // Per CPU, the length of its run under way.
    std::vector<uint64_t> run;
    uint64_t records = 0, updates = 0, repeats = 0, longest = 0, count = 0;
    RecordReader reader(
        [&](const RecordHeader& h) {
          runs.emplace(h.nr_cpu_ids);
          run.assign(h.nr_cpu_ids, 0);
        },
        [&](const rss_event& e) {
          ++records;
          updates += e.kind == RSS_EV_UPDATE;
          if (!runs->repeats(e)) {
            if (e.cpu < run.size()) run[e.cpu] = 0;
            return;
          }
          ++repeats;
          count += run[e.cpu] == 0;
          longest = std::max(longest, ++run[e.cpu]);
        });
    if (auto fed = reader.feed(bytes); !fed) {
      fmt::print(stderr, "{}: {}\n", argv[i], fed.error().message);
      return 1;
    }
    if (auto done = reader.finish(); !done) {
      fmt::print(stderr, "{}: {}\n", argv[i], done.error().message);
      return 1;
    }
    const double per = updates ? 1.0 / static_cast<double>(updates) : 0;
    // "mean": repeats per run, beside the record that heads it.
    fmt::print("{:<32} {:>10} {:>10} {:>8.3f} {:>8.3f} {:>8.1f} {:>8}\n",
               argv[i], records, updates, static_cast<double>(records) * per,
               static_cast<double>(records - repeats) * per,
               count ? static_cast<double>(repeats) / count : 0.0, longest);
  }
}
