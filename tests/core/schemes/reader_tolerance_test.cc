#include "core/schemes/reader_tolerance.h"

#include <gtest/gtest.h>

#include "core/schemes/scheme_set.h"

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
    const auto all = reader_tolerance("upstream", host, threads);
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

// A 6.2+ kernel without the 2025 change: status and statm read the count
// as stat does, off by as much.
TEST(ReaderTolerance, PercpuCounterStatusBeforeThe2025ChangeReadsAsStat) {
  const auto all =
      reader_tolerance("upstream", Topology::for_cpus(384), 1, false);
  EXPECT_EQ(find(all, "status").anon_pages, 384 * 767);
  EXPECT_EQ(find(all, "status").rss_pages, 3 * 384 * 767);
  EXPECT_TRUE(find(all, "status").bounded_in_time);
  // Only upstream's status depends on it: the other schemes define theirs.
  EXPECT_EQ(find(reader_tolerance("per_cpu", Topology::for_cpus(384), 1, false),
                 "status")
                .rss_pages,
            0);
}

// Before 6.2 every reader, status too, misses what each thread cached:
// up to 66 faults a thread, a page each when anonymous, 16 with a file's
// fault-around; for as long as the thread neither faults nor exits.
TEST(ReaderTolerance, PerTaskCachesHideUpTo66FaultsPerThreadFromEveryReader) {
  const auto all = reader_tolerance("per_task", Topology::for_cpus(2), 8);
  for (const ReaderTolerance& r : all) {
    EXPECT_EQ(r.anon_pages, 8 * 66) << r.reader;
    EXPECT_EQ(r.rss_pages, 8 * 66 * 16) << r.reader;
    EXPECT_FALSE(r.bounded_in_time) << r.reader;
  }
  EXPECT_EQ(
      find(reader_tolerance("per_task", Topology::for_cpus(2), 1), "status")
          .anon_pages,
      66);
}

// The RFC schemes' readers, each from its source (docs/counters.md): the
// per-CPU-cache readers add the matching caches (precise); the lazy ones
// are exact until a second thread; sync_query folds before rusage reads.
TEST(ReaderTolerance, EachProposedSchemeAsItsReadersRead) {
  const Topology t = Topology::for_cpus(64);
  for (const ReaderTolerance& r : reader_tolerance("per_cpu", t, 64)) {
    EXPECT_EQ(r.rss_pages, 0) << r.reader;
    EXPECT_TRUE(r.bounded_in_time);
  }
  for (std::string_view lazy : {"lazy_percpu", "hpcc"})
    for (const ReaderTolerance& r : reader_tolerance(lazy, t, 1))
      EXPECT_EQ(r.rss_pages, 0) << lazy << " " << r.reader;
  EXPECT_EQ(find(reader_tolerance("lazy_percpu", t, 2), "stat").anon_pages,
            64 * 127);
  EXPECT_EQ(find(reader_tolerance("hpcc", t, 2), "stat").anon_pages,
            hpcc_bound(t));
  EXPECT_EQ(find(reader_tolerance("hpcc", t, 2), "status").rss_pages, 0);
  const auto sync = reader_tolerance("sync_query", t, 8);
  EXPECT_EQ(find(sync, "ru_maxrss").rss_pages, 0);
  EXPECT_EQ(find(sync, "stat").rss_pages, 3 * 64 * 127);
  EXPECT_TRUE(reader_tolerance("no_such_scheme", t, 1).empty());
}

// The tolerance of the approximate readers is each model's own bound once
// the threads exist, so the two can never disagree; a scheme with a
// precise read has status exact.
TEST(ReaderTolerance, AgreesWithEveryModelsBoundAndReads) {
  for (uint32_t cpus : {2u, 64u, 384u}) {
    const Topology t = Topology::for_cpus(cpus);
    for (uint32_t threads : {1u, 4u}) {
      SchemeSet schemes(t);
      if (threads > 1) schemes.on_event({LifeKind::kSecondUser, 2, 1});
      schemes.for_each([&](size_t i, const auto& scheme) {
        const std::string_view name = SchemeSet::kNames[i];
        const auto all = reader_tolerance(name, t, threads);
        ASSERT_EQ(all.size(), 4u) << name;
        const Bound bound = scheme.bound(kAnonPages);
        if (name != "per_cpu" && name != "per_task") {
          ASSERT_TRUE(bound.has_value()) << name;
          EXPECT_EQ(find(all, "stat").anon_pages, *bound)
              << name << " " << cpus << " CPUs, " << threads << " threads";
        }
        if (scheme.read_cost().precise)
          EXPECT_EQ(find(all, "status").rss_pages, 0) << name;
        else
          EXPECT_GT(find(all, "status").rss_pages, 0) << name;
      });
    }
  }
}

}  // namespace
}  // namespace rssaudit
