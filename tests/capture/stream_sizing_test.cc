#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "bpf/rss_event.h"
#include "capture/bpf_capture.h"

namespace rssaudit {
namespace {

uint64_t bytes_of(uint32_t slots, uint32_t cpus) {
  return uint64_t{slots} * cpus * sizeof(rss_slot);
}

// A chosen budget holds while every CPU's floor fits it; past that, each
// CPU gets the floor.
TEST(StreamSizing, AChosenBudgetHoldsUntilEveryCpuIsAtTheFloor) {
  for (const size_t budget : {size_t{112} << 10, size_t{32} << 20}) {
    for (uint32_t cpus = 1; cpus <= 8192; ++cpus) {
      const uint32_t slots = slots_per_cpu_for(budget, cpus);
      ASSERT_TRUE(std::has_single_bit(slots)) << cpus;
      if (bytes_of(kMinSlotsPerCpu, cpus) <= budget)
        ASSERT_LE(bytes_of(slots, cpus), budget) << cpus;
      else
        ASSERT_EQ(slots, kMinSlotsPerCpu) << cpus;
    }
  }
  // 2 CPUs with 112 KiB: 1 Ki each, what 32 MiB gives each of 384 CPUs.
  EXPECT_EQ(slots_per_cpu_for(size_t{112} << 10, 2), 1024u);
  EXPECT_EQ(slots_per_cpu_for(size_t{32} << 20, 384), 1024u);
  EXPECT_EQ(slots_per_cpu_for(size_t{32} << 20, 8192), kMinSlotsPerCpu);
}

TEST(StreamSizing, AutomaticIs32MibWithAtLeast1KiSlotsPerCpu) {
  EXPECT_EQ(slots_per_cpu_for(0, 2), 256u * 1024);  // 28 MiB
  EXPECT_EQ(slots_per_cpu_for(0, 64), 8192u);
  EXPECT_EQ(slots_per_cpu_for(0, 145), 4096u);
  EXPECT_EQ(slots_per_cpu_for(0, 384), 1024u);  // 21 MiB
  EXPECT_EQ(slots_per_cpu_for(0, 8192), 1024u);
  for (uint32_t cpus = 1; cpus <= 8192; ++cpus) {
    const uint32_t slots = slots_per_cpu_for(0, cpus);
    ASSERT_GE(slots, 1024u) << cpus;
    // Within 32 MiB up to 585 CPUs, where the floor alone is more.
    ASSERT_TRUE(bytes_of(slots, cpus) <= size_t{32} << 20 ||
                (slots == 1024 && cpus > 585))
        << cpus;
  }
}

TEST(StreamSizing, TheSmallestBudgetGetsTheFloorAndALargeOneTheCap) {
  EXPECT_EQ(slots_per_cpu_for(1, 2), kMinSlotsPerCpu);
  EXPECT_EQ(slots_per_cpu_for(size_t{4} << 30, 1), kMaxSlotsPerCpu);
  EXPECT_EQ(slots_per_cpu_for(size_t{256} << 20, 384), 8192u);
  // Every slot index fits 32 bits however many CPUs.
  EXPECT_LE(uint64_t{slots_per_cpu_for(size_t{4} << 30, 8192)} * 8192,
            uint64_t{1} << 32);
}

}  // namespace
}  // namespace rssaudit
