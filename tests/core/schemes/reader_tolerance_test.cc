#include "core/schemes/reader_tolerance.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

const ReaderTolerance& find(const std::vector<ReaderTolerance>& all,
                            std::string_view reader) {
  for (const ReaderTolerance& r : all)
    if (r.reader == reader) return r;
  ADD_FAILURE() << "no reader " << reader;
  return all.front();
}

// Since 6.2 stat, VmHWM and ru_maxrss read each percpu_counter's count:
// three counters of CPUs x (batch - 1) each, whatever the threads; status
// and statm sum the slots (docs/counters.md).
TEST(ReaderTolerance, PercpuCounterApproximateReadersAndPreciseStatus) {
  const Topology host = Topology::for_cpus(384);  // batch 768
  for (uint32_t threads : {1u, 64u}) {
    const auto all = reader_tolerance(true, host, threads);
    ASSERT_EQ(all.size(), 4u);
    for (std::string_view reader : {"stat", "vm_hwm", "ru_maxrss"}) {
      EXPECT_EQ(find(all, reader).anon_pages, 384 * 767) << reader;
      EXPECT_EQ(find(all, reader).rss_pages, 3 * 384 * 767) << reader;
      EXPECT_TRUE(find(all, reader).bounded_in_time);
    }
    EXPECT_EQ(find(all, "status").rss_pages, 0);
    EXPECT_EQ(find(all, "status").anon_pages, 0);
  }
}

// Before 6.2 every reader, status too, misses what each thread cached:
// up to 66 faults a thread, a page each when anonymous, 16 with a file's
// fault-around; for as long as the thread neither faults nor exits.
TEST(ReaderTolerance, PerTaskCachesHideUpTo66FaultsPerThreadFromEveryReader) {
  const auto all = reader_tolerance(false, Topology::for_cpus(2), 8);
  for (const ReaderTolerance& r : all) {
    EXPECT_EQ(r.anon_pages, 8 * 66) << r.reader;
    EXPECT_EQ(r.rss_pages, 8 * 66 * 16) << r.reader;
    EXPECT_FALSE(r.bounded_in_time) << r.reader;
  }
  EXPECT_EQ(find(reader_tolerance(false, Topology::for_cpus(2), 1), "status")
                .anon_pages,
            66);
}

}  // namespace
}  // namespace rssaudit
