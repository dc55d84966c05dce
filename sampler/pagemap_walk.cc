#include "sampler/pagemap_walk.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "os/clock.h"

namespace rssaudit {
namespace {

constexpr uint64_t kEntryBytes = sizeof(uint64_t);

// PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h): which ranges of a
// process hold present or swapped pages, found by the kernel's page walk,
// which skips an empty page table in one step where pagemap reads it one
// 8-byte entry per page. Debian 12's headers (6.1) lack it; the ABI is
// stable. Its regions are PageRegion (pagemap_walk.h).
struct PmScanArg {
  uint64_t size;
  uint64_t flags;
  uint64_t start;
  uint64_t end;
  uint64_t walk_end;
  uint64_t vec;
  uint64_t vec_len;
  uint64_t max_pages;
  uint64_t category_inverted;
  uint64_t category_mask;
  uint64_t category_anyof_mask;
  uint64_t return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr uint64_t kPageIsPresent = 1 << 3;
constexpr uint64_t kPageIsSwapped = 1 << 4;

// The regions of [start, end) with a present or swapped page, up to
// `regions.size()` of them; the number found, or -errno. `*walk_end`: where
// the kernel stopped (end, or where `regions` filled up).
long scan_present(int fd, uint64_t start, uint64_t end,
                  std::span<PageRegion> regions, uint64_t* walk_end) {
  PmScanArg arg{};
  arg.size = sizeof arg;
  arg.start = start;
  arg.end = end;
  arg.vec = reinterpret_cast<uintptr_t>(regions.data());
  arg.vec_len = regions.size();
  arg.category_anyof_mask = kPageIsPresent | kPageIsSwapped;
  arg.return_mask = kPageIsPresent | kPageIsSwapped;
  const int n = ::ioctl(fd, kPagemapScan, &arg);
  if (n < 0) return -errno;
  *walk_end = arg.walk_end;
  return n;
}

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

namespace {

bool pagemap_scan_works() {
  const UniqueFd fd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // This function's own stack page is present.
  const uint64_t here = reinterpret_cast<uintptr_t>(&page) & ~(page - 1);
  PageRegion region{};
  uint64_t walk_end = 0;
  return scan_present(fd.get(), here, here + page, {&region, 1}, &walk_end) ==
             1 &&
         region.start == here && region.end == here + page;
}

}  // namespace

PagemapWalker::PagemapWalker(ZeroPagePfns zero, size_t chunk_entries,
                             std::optional<bool> scan,
                             std::chrono::nanoseconds time_limit)
    : zero_(zero),
      scan_(scan.value_or(pagemap_scan_works())),
      time_limit_ns_(static_cast<uint64_t>(time_limit.count())),
      chunk_(chunk_entries),
      regions_(256),
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
  deadline_ns_ = monotonic_ns() + time_limit_ns_;
  for (const Vma& vma : *vmas) {
    const VmaKind kind = vma.kind();
    // Above the user range pagemap covers, and never in RSS.
    if (kind == VmaKind::kVsyscall) continue;
    ++walk.vmas;
    PagemapTally& tally = walk.by_kind[static_cast<size_t>(kind)];
    const int error = scan_ ? scan_vma(fd, vma.start, vma.end, tally, walk)
                            : walk_vma(fd, vma.start, vma.end, tally, walk);
    if (error == ETIME) {
      return fail(
          WalkError::Step::kPagemap, error,
          fmt::format("walk stopped at {:#x} after its {} ms: the "
                      "address space is too large to walk{}",
                      vma.start, time_limit_ns_ / 1'000'000,
                      scan_ ? "" : " without PAGEMAP_SCAN (Linux 6.7)"));
    }
    if (error) {
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
    if (monotonic_ns() > deadline_ns_) return ETIME;
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

int PagemapWalker::scan_vma(int fd, uint64_t start, uint64_t end,
                            PagemapTally& kind, PagemapWalk& walk) {
  // The entries of the regions with pages, read and tallied as walk_vma
  // does; every other page of the VMA is an entry neither present nor
  // swapped.
  uint64_t pages_read = 0;
  for (uint64_t at = start; at < end;) {
    uint64_t walk_end = 0;
    const long n = scan_present(fd, at, end, regions_, &walk_end);
    if (n < 0) return static_cast<int>(-n);
    for (const PageRegion& r : std::span(regions_).first(size_t(n))) {
      if (const int error = walk_vma(fd, r.start, r.end, kind, walk))
        return error;
      pages_read += (r.end - r.start) / page_size_;
    }
    if (walk_end <= at) return EIO;  // no progress: never loop forever
    at = walk_end;
    if (monotonic_ns() > deadline_ns_) return ETIME;
  }
  kind.entries += (end - start) / page_size_ - pages_read;
  return 0;
}

}  // namespace rssaudit
