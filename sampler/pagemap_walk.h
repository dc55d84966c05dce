// A page-table walk of one process from user space: the VMAs of
// /proc/PID/maps, then their /proc/PID/pagemap entries in large reads,
// tallied by core/'s tally_pagemap. Its present count is the walk that the
// RSS counters are compared with; what it holds that RSS never counts (the
// zero page, special mappings) is tallied apart so the gap can be explained.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/procfs/pagemap_entry.h"
#include "core/procfs/proc_maps.h"
#include "sampler/proc_reader.h"

namespace rssaudit {

inline constexpr size_t kVmaKinds = static_cast<size_t>(VmaKind::kOther) + 1;

// PFNs of the kernel's shared zero pages, learned once from this process's
// own pagemap. Known only with CAP_SYS_ADMIN (PFNs read as 0 without it).
struct ZeroPagePfns {
  // Read faults on fresh anonymous memory map no zero page here: each gets
  // a page of its own (seen on a guest booted with pvm_no_zero_page=1), so
  // a walk has no zero-page entries to set aside.
  bool unused = false;
  uint64_t small = 0;       // the 4 KiB zero page; 0 if unknown
  uint64_t huge_first = 0;  // the huge zero folio's first PFN; 0 if unknown
  uint64_t huge_count = 0;  // its pages

  bool known() const { return unused || small != 0; }
  bool matches(uint64_t pfn) const {
    return pfn != 0 && (pfn == small ||
                        (pfn >= huge_first && pfn - huge_first < huge_count));
  }
};
// Maps zero pages (and, where THP allows, huge zero pages) into this
// process by reading fresh anonymous memory twice, and reads back their
// PFNs: a zero page is the one PFN both reads map.
ZeroPagePfns learn_zero_page_pfns();

struct PagemapWalk {
  uint64_t vmas = 0;  // walked: every VMA but [vsyscall]
  PagemapTally total;
  // Per VmaKind: [vdso] pages are counted in RSS (as file pages), [vvar]
  // ones are PFN maps the walk shows as not present.
  std::array<PagemapTally, kVmaKinds> by_kind{};
  // Present entries mapping a zero page: a read fault on anonymous memory
  // maps it, the walk shows it present, RSS never counts it. Those the walk
  // flags file/shared (on 6.18 the huge zero page's) are also counted apart.
  uint64_t present_zero_page = 0;
  uint64_t present_zero_page_file_or_shared = 0;
  bool zero_page_known = false;  // false: the zero-page counts are 0, unknown

  const PagemapTally& kind(VmaKind k) const {
    return by_kind[static_cast<size_t>(k)];
  }
  // The present pages RSS counts too, in all and per side (RssFile +
  // RssShmem, RssAnon): precise minus these is the gap left once the zero
  // page is explained (in-flight faults, migrations).
  uint64_t present_counted() const { return total.present - present_zero_page; }
  uint64_t file_or_shared_counted() const {
    return total.present_file_or_shared - present_zero_page_file_or_shared;
  }
  uint64_t anon_counted() const {
    return present_counted() - file_or_shared_counted();
  }
};

// Why a walk failed, and at which step: the sampler counts each apart.
struct WalkError {
  enum class Step : uint8_t { kReadMaps, kParseMaps, kPagemap };

  Step step = Step::kReadMaps;
  ReadError read;       // kFailed with errnum 0 for kParseMaps
  std::string message;  // why it failed, for logs
};

// A range of pages PAGEMAP_SCAN reports (struct page_region, linux/fs.h).
struct PageRegion {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t categories = 0;
};

class PagemapWalker {
 public:
  // Each pread covers `chunk_entries` pages (64 KiB of entries, 32 MiB of
  // address space, by default); the kernel takes the mmap lock per 2 MiB-ish
  // batch, so larger reads only save syscalls. `scan`: whether to read only
  // the ranges PAGEMAP_SCAN (Linux 6.7) says hold pages (default: if it
  // works here). A walk taking longer than `time_limit` stops and fails, so
  // an 8 TiB sparse reservation (or ASan's shadow) cannot hold the caller.
  explicit PagemapWalker(
      ZeroPagePfns zero = learn_zero_page_pfns(), size_t chunk_entries = 8192,
      std::optional<bool> scan = std::nullopt,
      std::chrono::nanoseconds time_limit = std::chrono::seconds(1));
  // Whether walks read only the ranges PAGEMAP_SCAN finds.
  bool scans() const { return scan_; }

  // Reads maps with `reader`, then walks every VMA's entries. VMAs that
  // change between the two reads are walked as they are then.
  Result<PagemapWalk, WalkError> walk(const ProcDir& dir, ProcReader& reader);

 private:
  // Tallies the entries of [start, end) into `kind` and the zero-page
  // count of `walk`; returns 0 or an errno (ESRCH: the mm is gone).
  int walk_vma(int fd, uint64_t start, uint64_t end, PagemapTally& kind,
               PagemapWalk& walk);
  // The same, reading only the ranges PAGEMAP_SCAN finds pages in; ETIME
  // past the deadline, as walk_vma.
  int scan_vma(int fd, uint64_t start, uint64_t end, PagemapTally& kind,
               PagemapWalk& walk);

  ZeroPagePfns zero_;
  bool scan_;
  uint64_t time_limit_ns_;
  uint64_t deadline_ns_ = 0;  // of the walk under way
  std::vector<uint64_t> chunk_;
  std::vector<PageRegion> regions_;
  uint64_t page_size_;
};

}  // namespace rssaudit
