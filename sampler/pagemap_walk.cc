#include "sampler/pagemap_walk.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

namespace rssaudit {
namespace {

constexpr uint64_t kEntryBytes = sizeof(uint64_t);

// The PFN this process's page at `addr` maps, 0 if not present or hidden.
uint64_t own_pfn(int fd, const volatile char* addr, uint64_t page_size) {
  uint64_t raw = 0;
  const off_t offset = static_cast<off_t>(reinterpret_cast<uintptr_t>(addr) /
                                          page_size * kEntryBytes);
  if (::pread(fd, &raw, sizeof(raw), offset) != sizeof(raw)) return 0;
  return PagemapEntry{raw}.pfn();
}

}  // namespace

ZeroPagePfns learn_zero_page_pfns() {
  ZeroPagePfns zero;
  const UniqueFd fd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!fd) return zero;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // x86-64's PMD size; checked below against the PFNs seen, so a kernel
  // with another huge page size just leaves the huge zero page unknown.
  constexpr uint64_t kHuge = uint64_t{2} << 20;
  // Two small pages, then two aligned huge pages.
  constexpr size_t kBytes = 4 * kHuge;
  void* map =
      ::mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return zero;
  const auto* base = static_cast<const volatile char*>(map);
  const auto read_pfn = [&](const volatile char* at) {
    (void)*at;
    return own_pfn(fd.get(), at, page);
  };

  // A read fault on memory THP may not back maps the 4 KiB zero page; a
  // kernel that maps none gives each read a page of its own.
  ::madvise(map, 2 * page, MADV_NOHUGEPAGE);
  const uint64_t small_a = read_pfn(base), small_b = read_pfn(base + page);
  if (small_a != 0 && small_a == small_b) zero.small = small_a;
  zero.unused = small_a != 0 && small_b != 0 && small_a != small_b;

  // In a huge-page-aligned, MADV_HUGEPAGE range a read fault maps the huge
  // zero page when THP and its use_zero_page allow; else a huge page of its
  // own, which the second range tells apart.
  const uintptr_t aligned_addr =
      (reinterpret_cast<uintptr_t>(base) + 2 * page + kHuge - 1) & ~(kHuge - 1);
  const auto* aligned = reinterpret_cast<const volatile char*>(aligned_addr);
  ::madvise(reinterpret_cast<void*>(aligned_addr), 2 * kHuge, MADV_HUGEPAGE);
  const uint64_t first = read_pfn(aligned);
  const uint64_t last = own_pfn(fd.get(), aligned + kHuge - page, page);
  const uint64_t second = read_pfn(aligned + kHuge);
  if (zero.small != 0 && first != 0 && first != zero.small && second == first &&
      last == first + kHuge / page - 1) {
    zero.huge_first = first;
    zero.huge_count = kHuge / page;
  }
  ::munmap(map, kBytes);
  return zero;
}

PagemapWalker::PagemapWalker(ZeroPagePfns zero, size_t chunk_entries)
    : zero_(zero),
      chunk_(chunk_entries),
      page_size_(static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))) {}

Result<PagemapWalk, WalkError> PagemapWalker::walk(const ProcDir& dir,
                                                   ProcReader& reader) {
  const auto fail = [](WalkError::Step step, int error, std::string message) {
    return unexpected(WalkError{
        step,
        {error ? classify_proc_errno(error) : ReadStatus::kFailed, error},
        std::move(message)});
  };

  const Result<std::string_view, ReadError> maps = reader.read(dir, "maps");
  if (!maps) {
    return fail(WalkError::Step::kReadMaps, maps.error().errnum,
                fmt::format("reading /proc/PID/maps: {}",
                            std::strerror(maps.error().errnum)));
  }
  const Result<std::vector<Vma>, ParseError> vmas = parse_proc_maps(*maps);
  if (!vmas) return fail(WalkError::Step::kParseMaps, 0, vmas.error().message);

  const int fd = dir.open_file("pagemap");
  if (fd < 0) {
    return fail(
        WalkError::Step::kPagemap, -fd,
        fmt::format("opening /proc/PID/pagemap: {}", std::strerror(-fd)));
  }
  const UniqueFd pagemap(fd);
  PagemapWalk walk;
  walk.zero_page_known = zero_.known();
  for (const Vma& vma : *vmas) {
    const VmaKind kind = vma.kind();
    // Above the user range pagemap covers, and never in RSS.
    if (kind == VmaKind::kVsyscall) continue;
    ++walk.vmas;
    PagemapTally& tally = walk.by_kind[static_cast<size_t>(kind)];
    if (const int error = walk_vma(fd, vma.start, vma.end, tally, walk)) {
      return fail(WalkError::Step::kPagemap, error,
                  fmt::format("reading /proc/PID/pagemap at {:#x}: {}",
                              vma.start, std::strerror(error)));
    }
  }
  for (const PagemapTally& tally : walk.by_kind) walk.total += tally;
  return walk;
}

int PagemapWalker::walk_vma(int fd, uint64_t start, uint64_t end,
                            PagemapTally& kind, PagemapWalk& walk) {
  uint64_t page = start / page_size_;
  const uint64_t last = end / page_size_;
  while (page < last) {
    const size_t want = std::min<uint64_t>(last - page, chunk_.size());
    const ssize_t n = ::pread(fd, chunk_.data(), want * kEntryBytes,
                              static_cast<off_t>(page * kEntryBytes));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // pagemap reads EOF once the mm has no users left.
    if (n == 0) return ESRCH;
    const std::span<const uint64_t> entries(
        chunk_.data(), static_cast<size_t>(n) / kEntryBytes);
    kind += tally_pagemap(entries);
    if (zero_.small != 0) {
      for (const uint64_t raw : entries) {
        const PagemapEntry e{raw};
        if (!zero_.matches(e.pfn())) continue;
        ++walk.present_zero_page;
        walk.present_zero_page_file_or_shared += e.file_or_shared_anon();
      }
    }
    page += entries.size();
  }
  return 0;
}

}  // namespace rssaudit
