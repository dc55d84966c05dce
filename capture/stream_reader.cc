#include "capture/stream_reader.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rssaudit {
namespace {

// mmap of a whole BPF_F_MMAPABLE array map: its values from offset 0.
Result<void*> map_array(int fd, size_t bytes, int prot, const char* what) {
  void* p = mmap(nullptr, bytes, prot, MAP_SHARED, fd, 0);
  if (p != MAP_FAILED) return p;
  return unexpected(
      Error{fmt::format("mmap of the {} map: {}", what, std::strerror(errno))});
}

size_t page_rounded(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

size_t slots_bytes(uint32_t cpus, uint32_t slots_per_cpu) {
  return page_rounded(size_t(cpus) * slots_per_cpu * sizeof(rss_slot));
}

size_t positions_bytes(uint32_t cpus) {
  return page_rounded(size_t(cpus) * sizeof(rss_stream_position));
}

}  // namespace

StreamReader::StreamReader(rss_slot* slots,
                           rss_stream_position* positions, uint32_t cpus,
                           uint32_t slots_per_cpu)
    : slots_(slots),
      positions_(positions),
      cpus_(cpus),
      slots_per_cpu_(slots_per_cpu),
      mask_(slots_per_cpu - 1),
      heads_(cpus),
      tails_(cpus),
      previous_(cpus) {
  heap_.reserve(cpus);
  for (uint32_t c = 0; c < cpus; ++c)
    tails_[c] = heads_[c] =
        __atomic_load_n(&positions_[c].tail, __ATOMIC_ACQUIRE);
}

Result<std::unique_ptr<StreamReader>> StreamReader::map(
    int slots_fd, int positions_fd, uint32_t cpus, uint32_t slots_per_cpu) {
  Result<void*> slots = map_array(slots_fd, slots_bytes(cpus, slots_per_cpu),
                                  PROT_READ | PROT_WRITE, "slots");
  if (!slots) return unexpected(std::move(slots).error());
  Result<void*> positions = map_array(positions_fd, positions_bytes(cpus),
                                      PROT_READ | PROT_WRITE, "positions");
  if (!positions) {
    munmap(*slots, slots_bytes(cpus, slots_per_cpu));
    return unexpected(std::move(positions).error());
  }
  std::unique_ptr<StreamReader> r(new StreamReader(
      static_cast<rss_slot*>(*slots),
      static_cast<rss_stream_position*>(*positions), cpus, slots_per_cpu));
  r->mapped_ = true;
  return r;
}

StreamReader::~StreamReader() {
  if (!mapped_) return;
  munmap(slots_, slots_bytes(cpus_, slots_per_cpu_));
  munmap(positions_, positions_bytes(cpus_));
}

}  // namespace rssaudit
