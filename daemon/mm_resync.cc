#include "daemon/mm_resync.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <optional>
#include <string>

#include "core/proc_status.h"
#include "daemon/sampler.h"

namespace rssaudit {
namespace {

// The whole file from one open; false if it cannot be read.
bool read_file(const std::string& path, std::string& out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.resize(8192);
  size_t used = 0;
  for (;;) {
    if (used == out.size()) out.resize(out.size() * 2);
    const ssize_t n = read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      close(fd);
      return false;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(used);
  return true;
}

}  // namespace

void MmResync::run(DeltaReconstructor& reconstructor, uint64_t now_ns) {
  for (const ResyncCandidate& c : reconstructor.resync_candidates(
           now_ns, options_.quiet_ns, options_.max_per_round)) {
    ++stats_.reads;
    const std::string path =
        options_.proc_root + "/" + std::to_string(c.tgid) + "/status";
    // The read's window: the kernel sums the counters somewhere inside.
    const uint64_t start = monotonic_ns();
    const bool ok = read_file(path, buffer_);
    const uint64_t end = monotonic_ns();
    if (!ok) {
      ++stats_.unreadable;
      continue;
    }
    const auto status = parse_proc_status(buffer_);
    if (!status.ok() || status.value().tgid != c.tgid) {
      ++stats_.unreadable;
      continue;
    }
    std::array<std::optional<int64_t>, kMembers> pages;
    for (int m = 0; m < kMembers; ++m)
      if (const auto p = status.value().member_pages(static_cast<Member>(m),
                                                     options_.page_size))
        pages[m] = static_cast<int64_t>(*p);
    if (reconstructor.resync(c.addr, c.tgid, pages, start, end) ==
        ResyncResult::kOffered)
      ++stats_.offered;
  }
}

}  // namespace rssaudit
