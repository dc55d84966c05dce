// /proc/PID/pagemap: one 64-bit entry per virtual page
// (Documentation/admin-guide/mm/pagemap.rst). The daemon reads the entries of
// each VMA; core/ decodes and counts them.
#pragma once

#include <cstdint>
#include <span>

namespace rssaudit {

struct PagemapEntry {
  static constexpr uint64_t kPresent = 1ull << 63;
  static constexpr uint64_t kSwapped = 1ull << 62;
  static constexpr uint64_t kFileOrSharedAnon = 1ull << 61;
  static constexpr uint64_t kExclusive = 1ull << 56;
  static constexpr uint64_t kSoftDirty = 1ull << 55;
  static constexpr uint64_t kPfnMask = (1ull << 55) - 1;

  uint64_t raw = 0;

  bool present() const { return raw & kPresent; }
  bool swapped() const { return raw & kSwapped; }
  // Mapped from a file or shared anonymous memory (shmem), not private anon.
  bool file_or_shared_anon() const { return raw & kFileOrSharedAnon; }
  // Mapped by this process only (since Linux 4.2).
  bool exclusive() const { return raw & kExclusive; }
  bool soft_dirty() const { return raw & kSoftDirty; }
  // Reads as 0 without CAP_SYS_ADMIN (since Linux 4.2).
  uint64_t pfn() const { return present() ? raw & kPfnMask : 0; }
  uint64_t swap_type() const { return swapped() ? raw & 0x1f : 0; }
  uint64_t swap_offset() const { return swapped() ? (raw & kPfnMask) >> 5 : 0; }
};

// Page counts of a walk, comparable with the RSS members.
struct PagemapTally {
  uint64_t entries = 0;
  uint64_t present = 0;
  uint64_t present_file_or_shared = 0;  // RssFile + RssShmem side
  uint64_t present_exclusive = 0;
  uint64_t swapped = 0;  // VmSwap side

  uint64_t present_anon() const { return present - present_file_or_shared; }

  PagemapTally& operator+=(const PagemapTally& o) {
    entries += o.entries;
    present += o.present;
    present_file_or_shared += o.present_file_or_shared;
    present_exclusive += o.present_exclusive;
    swapped += o.swapped;
    return *this;
  }
  bool operator==(const PagemapTally&) const = default;
};

inline PagemapTally tally_pagemap(std::span<const uint64_t> entries) {
  PagemapTally t;
  t.entries = entries.size();
  for (const uint64_t raw : entries) {
    const PagemapEntry e{raw};
    if (e.present()) {
      ++t.present;
      t.present_file_or_shared += e.file_or_shared_anon();
      t.present_exclusive += e.exclusive();
    }
    t.swapped += e.swapped();
  }
  return t;
}

}  // namespace rssaudit
