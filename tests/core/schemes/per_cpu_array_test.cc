#include "core/schemes/per_cpu_array.h"

#include <gtest/gtest.h>

#include <vector>

namespace rssaudit {
namespace {

std::vector<uint32_t> allocated_cpus(const PerCpuArray<int>& a) {
  std::vector<uint32_t> cpus;
  a.for_each_allocated([&](uint32_t cpu, const int&) { cpus.push_back(cpu); });
  return cpus;
}

TEST(PerCpuArray, ReadsTheInitialValueUntilWritten) {
  PerCpuArray<int> a(384, 7);
  EXPECT_EQ(a.size(), 384u);
  EXPECT_EQ(a.get(0), 7);
  EXPECT_EQ(a.get(383), 7);
  EXPECT_TRUE(allocated_cpus(a).empty()) << "get() allocates nothing";
  a.at(200) = 1;
  EXPECT_EQ(a.get(200), 1);
  EXPECT_EQ(a.get(199), 7) << "the rest of the chunk starts at the initial";
  EXPECT_EQ(a.get(0), 7);
}

constexpr uint32_t kChunk = PerCpuArray<int>::kChunk;

TEST(PerCpuArray, AllocatesOnlyTheChunksWritten) {
  // The last chunk is cut short: 8 CPUs past the last whole chunk.
  const uint32_t n = 12 * kChunk + 8;
  PerCpuArray<int> a(n);
  a.at(kChunk + 6) = 1;  // the second chunk
  a.at(n - 1) = 2;       // the last, short one
  const std::vector<uint32_t> cpus = allocated_cpus(a);
  ASSERT_EQ(cpus.size(), kChunk + 8) << "the last chunk stops at CPU n - 1";
  EXPECT_EQ(cpus.front(), kChunk);
  EXPECT_EQ(cpus[kChunk - 1], 2 * kChunk - 1);
  EXPECT_EQ(cpus[kChunk], 12 * kChunk);
  EXPECT_EQ(cpus.back(), n - 1);
}

TEST(PerCpuArray, FillSetsWrittenAndUnwrittenCpus) {
  PerCpuArray<int> a(130);
  a.at(5) = 3;
  a.fill(9);
  EXPECT_EQ(a.get(5), 9);
  EXPECT_EQ(a.get(129), 9) << "an unallocated chunk reads the new value";
  a.at(129) += 1;
  EXPECT_EQ(a.get(129), 10) << "and is allocated with it";
  EXPECT_EQ(a.get(128), 9);
}

TEST(PerCpuArray, UpdateAllReachesEveryCpuAndAllocatesNothing) {
  PerCpuArray<int> a(8192, 1);
  a.at(4000) = 5;
  a.update_all([](int& v) { v *= 10; });
  EXPECT_EQ(a.get(4000), 50);
  EXPECT_EQ(a.get(8191), 10) << "an unallocated CPU";
  EXPECT_EQ(allocated_cpus(a).size(), kChunk) << "CPU 4000's chunk only";
}

TEST(PerCpuArray, FewerCpusThanAChunk) {
  PerCpuArray<int> a(2);
  a.at(1) = 4;
  EXPECT_EQ(allocated_cpus(a), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(a.get(0), 0);
  EXPECT_EQ(a.get(1), 4);
}

}  // namespace
}  // namespace rssaudit
