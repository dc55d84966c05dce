// The page-table walk reads only what it must: with PAGEMAP_SCAN (Linux
// 6.7) the ranges that hold pages, tallied exactly as a read of every
// entry; without it, stopped at its time limit rather than held for
// seconds by a sparse reservation of terabytes.
#include "sampler/pagemap_walk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "os/faults_counted.h"
#include "os/unique_fd.h"
#include "sampler/proc_reader.h"

namespace rssaudit {
namespace {

// A child holding 64 MiB with every 7th page touched and a reservation of
// `reserved` bytes (NORESERVE) with three pages touched, until the test
// ends.
class SparseChild : public testing::Test {
 protected:
  void SetUp() override {
    const UniqueFd self(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
    uint64_t entry;
    if (!self || pread(self.get(), &entry, sizeof entry, 0) != sizeof entry)
      GTEST_SKIP() << "/proc/self/pagemap unreadable: " << strerror(errno);
  }
  RSSAUDIT_FAULTS_COUNTED void spawn(size_t reserved) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(hold_), 0);
    child_ = fork();
    if (child_ == 0) {
      auto* dense =
          static_cast<char*>(mmap(nullptr, 64 << 20, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      auto* sparse = static_cast<char*>(
          mmap(nullptr, reserved, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
      if (dense == MAP_FAILED || sparse == MAP_FAILED) _exit(1);
      for (size_t at = 0; at < (64 << 20); at += 7 * 4096) dense[at] = 1;
      for (const size_t at : {size_t{0}, reserved / 2, reserved - 4096})
        sparse[at] = 1;
      char c = 1;
      close(hold_[1]);
      if (write(ready[1], &c, 1) != 1) _exit(1);
      while (read(hold_[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(ready[1]);
    close(hold_[0]);
    char c;
    ASSERT_EQ(read(ready[0], &c, 1), 1) << "the child could not map";
    close(ready[0]);
  }
  void TearDown() override {
    if (child_ <= 0) return;
    close(hold_[1]);
    waitpid(child_, nullptr, 0);
  }
  Result<PagemapWalk, WalkError> walk(PagemapWalker& walker) {
    ProcReader reader;
    return walker.walk(ProcDir::open("/proc", uint32_t(child_)), reader);
  }

  pid_t child_ = -1;
  int hold_[2] = {-1, -1};
};

TEST_F(SparseChild, ScanningTalliesExactlyWhatReadingEveryEntryDoes) {
  constexpr size_t kReserved = size_t{8} << 30;  // 2 M entries to read
  spawn(kReserved);
  PagemapWalker scanning(learn_zero_page_pfns(), 8192, true,
                         std::chrono::seconds(60));
  if (!scanning.scans())
    GTEST_SKIP() << "no PAGEMAP_SCAN on this kernel (Linux 6.7 added it)";
  PagemapWalker reading(learn_zero_page_pfns(), 8192, false,
                        std::chrono::seconds(60));
  const auto scanned = walk(scanning);
  ASSERT_TRUE(scanned.has_value()) << scanned.error().message;
  const auto read_all = walk(reading);
  ASSERT_TRUE(read_all.has_value()) << read_all.error().message;
  // Which pages are the child's alone moves while it walks: its parent
  // (this test) writes, breaking copy-on-write sharing. The rest is fixed.
  for (size_t k = 0; k <= kVmaKinds; ++k) {
    const PagemapTally& a =
        k < kVmaKinds ? scanned->by_kind[k] : scanned->total;
    const PagemapTally& b =
        k < kVmaKinds ? read_all->by_kind[k] : read_all->total;
    EXPECT_EQ(a.entries, b.entries) << "kind " << k;
    EXPECT_EQ(a.present, b.present) << "kind " << k;
    EXPECT_EQ(a.present_file_or_shared, b.present_file_or_shared) << k;
    EXPECT_EQ(a.swapped, b.swapped) << "kind " << k;
  }
  EXPECT_EQ(scanned->present_zero_page, read_all->present_zero_page);
  EXPECT_EQ(scanned->vmas, read_all->vmas);
  EXPECT_GE(scanned->total.present, (64u << 20) / (7 * 4096) + 3);
  EXPECT_GE(scanned->total.entries, kReserved / 4096) << "every page counted";
}

TEST_F(SparseChild, AWalkPastItsTimeLimitStopsAndSaysWhy) {
  spawn(size_t{8} << 40);
  PagemapWalker reading(learn_zero_page_pfns(), 8192, false,
                        std::chrono::milliseconds(100));
  const auto stopped = walk(reading);
  ASSERT_FALSE(stopped.has_value())
      << "8 TiB of entries read in 100 ms? (2^31 reads of 8 bytes)";
  EXPECT_EQ(stopped.error().step, WalkError::Step::kPagemap);
  EXPECT_NE(stopped.error().message.find("after its 100 ms: the address "
                                         "space is too large to walk"),
            std::string::npos)
      << stopped.error().message;
  // With PAGEMAP_SCAN the same process walks within the default limit.
  PagemapWalker scanning;
  if (!scanning.scans())
    GTEST_SKIP() << "no PAGEMAP_SCAN on this kernel (Linux 6.7 added it)";
  const auto walked = walk(scanning);
  ASSERT_TRUE(walked.has_value()) << walked.error().message;
}

}  // namespace
}  // namespace rssaudit
