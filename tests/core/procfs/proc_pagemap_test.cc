#include <gtest/gtest.h>

#include <vector>

#include "core/procfs/pagemap_entry.h"

namespace rssaudit {
namespace {

constexpr uint64_t kPresent = PagemapEntry::kPresent;
constexpr uint64_t kSwapped = PagemapEntry::kSwapped;
constexpr uint64_t kFile = PagemapEntry::kFileOrSharedAnon;
constexpr uint64_t kExclusive = PagemapEntry::kExclusive;

TEST(ProcPagemap, DecodesTheDocumentedBits) {
  const PagemapEntry anon{kPresent | kExclusive | PagemapEntry::kSoftDirty |
                          0x12345};
  EXPECT_TRUE(anon.present());
  EXPECT_FALSE(anon.swapped());
  EXPECT_FALSE(anon.file_or_shared_anon());
  EXPECT_TRUE(anon.exclusive());
  EXPECT_TRUE(anon.soft_dirty());
  EXPECT_EQ(anon.pfn(), 0x12345u);

  // Swap type in bits 0-4, offset in bits 5-54.
  const PagemapEntry swap{kSwapped | (777ull << 5) | 3};
  EXPECT_FALSE(swap.present());
  EXPECT_TRUE(swap.swapped());
  EXPECT_EQ(swap.swap_type(), 3u);
  EXPECT_EQ(swap.swap_offset(), 777u);
  EXPECT_EQ(swap.pfn(), 0u);

  const PagemapEntry none{0};
  EXPECT_FALSE(none.present() || none.swapped() || none.exclusive());
}

TEST(ProcPagemap, TalliesPresentSwappedAndFileEntries) {
  const std::vector<uint64_t> entries = {
      kPresent | kExclusive | 1,  // private anon
      kPresent | kFile | 2,       // file or shmem, shared
      kPresent | kFile | kExclusive,
      kSwapped | (5ull << 5),
      0,                         // not populated
      PagemapEntry::kSoftDirty,  // not populated, soft-dirty VMA
  };
  const PagemapTally t = tally_pagemap(entries);
  EXPECT_EQ(t.entries, 6u);
  EXPECT_EQ(t.present, 3u);
  EXPECT_EQ(t.present_file_or_shared, 2u);
  EXPECT_EQ(t.present_anon(), 1u);
  EXPECT_EQ(t.present_exclusive, 2u);
  EXPECT_EQ(t.swapped, 1u);
}

TEST(ProcPagemap, TalliesOfVmasAddUp) {
  const std::vector<uint64_t> a = {kPresent, kSwapped, 0};
  const std::vector<uint64_t> b = {kPresent | kFile, kPresent};
  PagemapTally sum = tally_pagemap(a);
  sum += tally_pagemap(b);
  std::vector<uint64_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(sum, tally_pagemap(both));
  EXPECT_EQ(tally_pagemap({}), PagemapTally{});
}

}  // namespace
}  // namespace rssaudit
