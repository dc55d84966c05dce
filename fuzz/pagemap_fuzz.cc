// /proc/PID/pagemap entries (core/procfs/pagemap_entry.h): each decodes
// within its fields' widths; a tally never counts more pages than entries,
// and tallies of two halves add up to the tally of the whole.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/procfs/pagemap_entry.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

void check_entry(PagemapEntry e) {
  const std::string raw = fmt::format("entry {:#018x}", e.raw);
  FUZZ_CHECK(e.pfn() <= PagemapEntry::kPfnMask, raw);
  FUZZ_CHECK(e.present() || e.pfn() == 0, raw);
  FUZZ_CHECK(e.swap_type() < 32 && e.swap_offset() < (1ull << 50), raw);
  FUZZ_CHECK(e.swapped() || (e.swap_type() == 0 && e.swap_offset() == 0), raw);
}

void check_tally(const PagemapTally& t, size_t entries) {
  const std::string counts = fmt::format(
      "{} entries: present {} file/shared {} exclusive {} swapped {}", entries,
      t.present, t.present_file_or_shared, t.present_exclusive, t.swapped);
  FUZZ_CHECK(t.entries == entries, counts);
  FUZZ_CHECK(t.present <= t.entries && t.swapped <= t.entries, counts);
  FUZZ_CHECK(
      t.present_file_or_shared <= t.present && t.present_exclusive <= t.present,
      counts);
  FUZZ_CHECK(t.present_anon() <= t.present, counts);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rssaudit;
  // Copied out: the walk reads aligned 64-bit entries; a partial one is not
  // an entry.
  std::vector<uint64_t> entries(size / sizeof(uint64_t));
  if (!entries.empty()) std::memcpy(entries.data(), data, entries.size() * 8);
  for (const uint64_t raw : entries) fuzz::check_entry(PagemapEntry{raw});
  const std::span<const uint64_t> all(entries);
  const PagemapTally whole = tally_pagemap(all);
  fuzz::check_tally(whole, all.size());
  // The walk sums one tally per VMA.
  const size_t split = all.empty() ? 0 : all[0] % (all.size() + 1);
  PagemapTally sum = tally_pagemap(all.first(split));
  sum += tally_pagemap(all.subspan(split));
  FUZZ_CHECK(sum == whole, fmt::format("split at {} of {}", split, all.size()));
  return 0;
}
