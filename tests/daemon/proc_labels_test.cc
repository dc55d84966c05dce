#include "daemon/proc_labels.h"

#include <gtest/gtest.h>

#include <string>

namespace rssaudit {
namespace {

constexpr uint64_t kMm = 0xffff888000001000;

struct CountingRead {
  int reads = 0;
  std::optional<ProcessLabels> operator()(uint32_t pid) {
    ++reads;
    if (pid == 0) return std::nullopt;  // gone
    return ProcessLabels{100 + pid, "p" + std::to_string(pid), "/"};
  }
};

TEST(ProcLabels, AReadIsKeptUntilTheNextTick) {
  ProcLabels labels;
  CountingRead read;
  labels.begin_view();
  EXPECT_EQ(labels.lookup(kMm, 7, std::ref(read))->comm, "p7");
  labels.begin_view();
  EXPECT_EQ(labels.lookup(kMm, 7, std::ref(read))->comm, "p7");
  EXPECT_EQ(read.reads, 1);
  labels.begin_tick();
  labels.begin_view();
  EXPECT_EQ(labels.lookup(kMm, 7, std::ref(read))->comm, "p7");
  EXPECT_EQ(read.reads, 2);
}

TEST(ProcLabels, AnotherProcessAtTheSameMmAddressIsReadAgain) {
  ProcLabels labels;
  CountingRead read;
  labels.begin_view();
  EXPECT_EQ(labels.lookup(kMm, 7, std::ref(read))->comm, "p7");
  EXPECT_EQ(labels.lookup(kMm, 8, std::ref(read))->comm, "p8");
  EXPECT_EQ(read.reads, 2);
}

TEST(ProcLabels, AViewReadsAtMostItsAllowanceAndTheNextViewGoesOn) {
  ProcLabels labels;
  CountingRead read;
  const auto unlabelled = [&] {
    labels.begin_view();
    size_t missing = 0;
    for (uint32_t i = 1; i <= ProcLabels::kReadsPerView + 10; ++i)
      missing += !labels.lookup(kMm + i * 4096, i, std::ref(read));
    return missing;
  };
  EXPECT_EQ(unlabelled(), 10u);
  EXPECT_EQ(read.reads, int(ProcLabels::kReadsPerView));
  EXPECT_EQ(unlabelled(), 0u) << "the first view's reads were kept";
  EXPECT_EQ(read.reads, int(ProcLabels::kReadsPerView) + 10);
}

TEST(ProcLabels, AGoneProcessIsNotReadAgainInTheTick) {
  ProcLabels labels;
  CountingRead read;
  labels.begin_view();
  EXPECT_FALSE(labels.lookup(kMm, 0, std::ref(read)).has_value());
  labels.begin_view();
  EXPECT_FALSE(labels.lookup(kMm, 0, std::ref(read)).has_value());
  EXPECT_EQ(read.reads, 1);
}

}  // namespace
}  // namespace rssaudit
