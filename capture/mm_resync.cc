#include "capture/mm_resync.h"

#include <array>
#include <optional>

#include "core/procfs/proc_status.h"
#include "os/clock.h"
#include "sampler/proc_reader.h"

namespace rssaudit {

void MmResync::run(DeltaReconstructor& reconstructor, uint64_t now_ns) {
  if (!options_.status_precise) return;
  for (const ResyncCandidate& c : reconstructor.resync_candidates(
           now_ns, options_.quiet_ns, options_.max_per_round)) {
    ++stats_.reads;
    // The read's window: the kernel sums the counters somewhere inside.
    const uint64_t start = monotonic_ns();
    const ProcDir dir = ProcDir::open(options_.proc_root, c.tgid);
    const Result<std::string_view, ReadError> text =
        reader_.read(dir, "status");
    const uint64_t end = monotonic_ns();
    if (!text) {
      ++stats_.unreadable;
      continue;
    }
    const auto status = parse_proc_status(*text);
    if (!status || status->tgid != c.tgid) {
      ++stats_.unreadable;
      continue;
    }
    std::array<std::optional<int64_t>, kMembers> pages;
    for (int m = 0; m < kMembers; ++m)
      if (const auto p =
              status->member_pages(static_cast<Member>(m), options_.page_size))
        pages[m] = static_cast<int64_t>(*p);
    if (reconstructor.resync(c.addr, c.tgid, pages, start, end) ==
        ResyncResult::kOffered)
      ++stats_.offered;
  }
}

}  // namespace rssaudit
