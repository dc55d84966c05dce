// The read-only queries the CLI's top, show, history and export ask.
#include "store/store_queries.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "core/schemes/scheme_set.h"
#include "store/store.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSecond = 1'000'000'000;

class StoreQueries : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = fs::temp_directory_path() / "rssaudit-queries-XXXXXX";
    dir_ = mkdtemp(templ.data());
    path_ = dir_ / "rssaudit.db";
    auto store = Store::open(path_, {});
    ASSERT_TRUE(store.has_value()) << store.error().message;
    Store& s = *store.value();
    RunInfo run{.host = "h",
                .kernel_release = "6.1",
                .nr_cpus = 4,
                .batch = 32,
                .page_size = 4096,
                .rssaudit_version = "0.1.0",
                .started_ns = 0};
    run1_ = s.begin_run(run);
    a_ = s.upsert_process({10, 100}, "a b", "/", 1 * kSecond);
    b_ = s.upsert_process({20, 200}, "w", "/", 1 * kSecond);
    for (int64_t t = 1; t <= 4; ++t) {
      // a drifts by t pages, b by -2t; b's newest sample at 4 s.
      s.add_sample(sample(a_, t * kSecond, 100 * t, t));
      s.add_sample(sample(b_, t * kSecond, 50, -2 * t));
      for (size_t i = 0; i < SchemeSet::kCount; ++i)
        s.add_model_error(
            {.process_id = a_,
             .start_ns = (t - 1) * kSecond,
             .end_ns = t * kSecond,
             .scheme = i,
             .largest_error = t * int64_t(i + 1),
             .bound = i == 5 ? std::nullopt : std::optional<int64_t>(100 * t),
             .shared_updates = 1,
             .bytes_per_mm = 8,
             // t lines, t + 10 precise, but none for scheme 4; the first
             // interval of scheme 0 unmeasured (a row from before v7).
             .read_cost =
                 i == 0 && t == 1
                     ? std::nullopt
                     : std::optional(ReadCost{
                           t, i == 4 ? std::nullopt : std::optional(t + 10)})});
    }
    s.end_run(5 * kSecond);
    ASSERT_TRUE(s.flush().has_value());  // the store keeps one run in memory
    run.started_ns = 10 * kSecond;
    run2_ = s.begin_run(run);
    c_ = s.upsert_process({10, 900}, "w", "/", 11 * kSecond);
    s.add_sample(sample(c_, 11 * kSecond, 10, 0));
    ASSERT_TRUE(s.flush().has_value());
    auto reader = StoreReader::open_read_only(path_);
    ASSERT_TRUE(reader.has_value()) << reader.error().message;
    reader_ = std::move(reader).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static SampleRow sample(int64_t process, int64_t time_ns, int64_t anon,
                          int64_t drift) {
    SampleRow r;
    r.process_id = process;
    r.time_ns = time_ns;
    r.approximate = {0, anon + drift, 0, 0};
    r.precise = {0, anon, 0, 0};
    r.exact = r.precise;
    r.statm_resident = anon;
    return r;
  }

  fs::path dir_;
  std::string path_;
  int64_t run1_ = 0, run2_ = 0, a_ = 0, b_ = 0, c_ = 0;
  std::unique_ptr<StoreReader> reader_;
};

TEST_F(StoreQueries, ProcessWindowsSumUpEachProcessInTheWindow) {
  auto w = reader_->process_windows(0, 5 * kSecond);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  ASSERT_EQ(w->size(), 2u);
  const ProcessWindow& a = w.value()[0];
  EXPECT_EQ(a.process.id, a_);
  EXPECT_EQ(a.process.comm, "a b");
  EXPECT_EQ(a.page_size, 4096);
  EXPECT_EQ(a.samples, 4);
  EXPECT_EQ(a.latest.row.time_ns, 4 * kSecond);
  EXPECT_EQ(a.latest.drift, 4);
  EXPECT_EQ(a.worst_drift, 4);
  EXPECT_EQ(a.worst_at_ns, 4 * kSecond);
  // The run's: 4 CPUs x (batch 32 - 1), whether or not a model ran.
  EXPECT_EQ(a.bound_per_counter, 4 * 31);
  const ProcessWindow& b = w.value()[1];
  EXPECT_EQ(b.worst_drift, -8);  // signed, largest magnitude
  EXPECT_EQ(b.bound_per_counter, 4 * 31) << "no model rows, the same bound";

  auto early = reader_->process_windows(0, 3 * kSecond);
  ASSERT_TRUE(early.has_value());
  EXPECT_EQ(early.value()[0].samples, 2);
  EXPECT_EQ(early.value()[0].latest.row.time_ns, 2 * kSecond);
  EXPECT_EQ(early.value()[0].bound_per_counter, 4 * 31);
}

TEST_F(StoreQueries, ProcessesByCommAndSeenInAWindow) {
  auto w = reader_->processes_with_comm("w");
  ASSERT_TRUE(w.has_value());
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ(w.value()[0].id, c_);  // newest first
  EXPECT_EQ(w.value()[1].id, b_);
  EXPECT_TRUE(reader_->processes_with_comm("a")->empty());
  auto seen = reader_->processes_seen(10 * kSecond, 20 * kSecond);
  ASSERT_TRUE(seen.has_value());
  ASSERT_EQ(seen->size(), 1u);
  EXPECT_EQ(seen.value()[0].id, c_);
}

TEST_F(StoreQueries, LatestSampleAndModelErrors) {
  auto s = reader_->latest_sample(a_);
  ASSERT_TRUE(s.has_value());
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ(s.value()->row.time_ns, 4 * kSecond);
  EXPECT_FALSE(reader_->latest_sample(9999)->has_value());

  auto e = reader_->latest_model_errors(a_);
  ASSERT_TRUE(e.has_value()) << e.error().message;
  ASSERT_EQ(e->size(), SchemeSet::kCount);
  for (size_t i = 0; i < SchemeSet::kCount; ++i) {
    EXPECT_EQ(e.value()[i].scheme, i);
    EXPECT_EQ(e.value()[i].end_ns, 4 * kSecond);
    EXPECT_EQ(e.value()[i].largest_error, 4 * int64_t(i + 1));
  }
  EXPECT_EQ(e.value()[5].bound, std::nullopt);
  EXPECT_EQ(e.value()[1].read_cost, (ReadCost{4, 14}));
  EXPECT_EQ(e.value()[4].read_cost, (ReadCost{4, std::nullopt}))
      << "no precise read is not an unmeasured row";
  EXPECT_TRUE(reader_->latest_model_errors(b_)->empty());
}

TEST_F(StoreQueries, ModelErrorsOfAProcessOrAllInAWindow) {
  auto one = reader_->model_errors(a_, 2 * kSecond, 3 * kSecond);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->size(), SchemeSet::kCount);
  auto all = reader_->model_errors(std::nullopt, 0, 100 * kSecond);
  EXPECT_EQ(all->size(), 4 * SchemeSet::kCount);
  for (const ModelErrorRow& e : *all)
    EXPECT_EQ(e.read_cost.has_value(), e.scheme != 0 || e.end_ns != kSecond)
        << "only the unmeasured row is NULL";
  EXPECT_TRUE(reader_->model_errors(b_, 0, 100 * kSecond)->empty());
}

TEST_F(StoreQueries, SchemeErrorsKeepTheBoundOfTheWorstInterval) {
  auto s = reader_->scheme_errors(0, 3 * kSecond);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  ASSERT_EQ(s->size(), SchemeSet::kCount);
  EXPECT_EQ(s.value()[1].scheme, 1u);
  EXPECT_EQ(s.value()[1].largest_error, 2 * 2);
  EXPECT_EQ(s.value()[1].bound, 200);
  EXPECT_EQ(s.value()[1].intervals, 2);
  EXPECT_EQ(s.value()[1].process_id, a_);
  EXPECT_EQ(s.value()[1].read_cost, (ReadCost{2, 12})) << "of that interval";
  EXPECT_EQ(s.value()[5].bound, std::nullopt);
}

TEST_F(StoreQueries, EverySampleOfAWindowIsVisitedInTimeOrder) {
  std::vector<int64_t> times;
  ASSERT_TRUE(reader_
                  ->for_each_sample(2 * kSecond, 20 * kSecond,
                                    [&](const StoredSample& s) {
                                      times.push_back(s.row.time_ns);
                                    })
                  .has_value());
  EXPECT_EQ(times.size(), 7u);
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  EXPECT_EQ(reader_->count_samples(2 * kSecond, 20 * kSecond).value(), 7);
  EXPECT_EQ(reader_->count_samples(0, 1).value(), 0);
}

// A run row's CPUs and batch give percpu_counter's bound, as the model's;
// none before 6.2, and unknown for figures no kernel has.
TEST(KernelBound, PerCounterFromARunsCpusAndBatch) {
  EXPECT_EQ(kernel_bound_per_counter(kCountingPercpu, 384, 768), 384 * 767);
  EXPECT_EQ(kernel_bound_per_counter(kCountingTaskCache, 2, 32), std::nullopt);
  EXPECT_EQ(kernel_bound_per_counter(kCountingPercpu, 0, 32), std::nullopt);
  EXPECT_EQ(kernel_bound_per_counter(kCountingPercpu, int64_t{1} << 40, 32),
            std::nullopt);
  EXPECT_EQ(kernel_bound_per_counter(kCountingPercpu, 2, 0), std::nullopt);
}

}  // namespace
}  // namespace rssaudit
