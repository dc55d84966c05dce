#include "audit/audit_pipeline.h"

#include <gtest/gtest.h>

#include <vector>

namespace rssaudit {
namespace {

constexpr MmKey kOld{0xffff888000001000, 1};  // existed before the capture
constexpr MmKey kNew{0xffff888000002000, 2};  // seen from its creation

// An update of `member` by `delta`, the kernel's count being `count` after.
void update(AuditPipeline& p, const MmKey& mm, int member, int32_t delta,
            int64_t count) {
  Update u;
  u.member = static_cast<uint8_t>(member);
  u.delta = delta;
  UpdateInfo info;
  info.kernel_count = count;
  p.on_update(mm, u, info);
}

MmSummary summary_of(const AuditPipeline& p, const MmKey& mm) {
  for (const MmSummary& s : p.summaries())
    if (s.key == mm) return s;
  ADD_FAILURE() << "no summary";
  return {};
}

TEST(AuditPipeline, DriftOfAResyncedMmWaitsForTheKernelsCountOfEveryMember) {
  AuditPipeline p(Topology::for_cpus(2));
  p.on_mm_created(kOld, false);
  // A resync from /proc/PID/status: every member's exact value.
  for (int m : {kFilePages, kAnonPages, kSwapEnts, kShmemPages})
    p.on_baseline(kOld, m, 1000, std::nullopt);
  update(p, kOld, kAnonPages, 1, 990);
  MmSummary s = summary_of(p, kOld);
  EXPECT_TRUE(s.absolute);
  EXPECT_EQ(s.exact_rss, 3001);
  // The file and shmem counts were never seen: no drift to claim (the
  // partial kernel_rss, 990, would say -2011).
  EXPECT_FALSE(s.kernel_known);
  EXPECT_FALSE(s.drift_known());
  update(p, kOld, kFilePages, -1, 995);
  update(p, kOld, kShmemPages, 1, 1001);
  s = summary_of(p, kOld);
  EXPECT_TRUE(s.drift_known());
  EXPECT_EQ(s.kernel_rss, 990 + 995 + 1001);
  EXPECT_EQ(s.drift(), (990 + 995 + 1001) - (1001 + 999 + 1001));
}

TEST(AuditPipeline, AnMmSeenFromCreationKnowsItsCountsUntilALoss) {
  AuditPipeline p(Topology::for_cpus(2));
  p.on_mm_created(kNew, true);
  update(p, kNew, kAnonPages, 5, 0);  // still in this CPU's slot
  MmSummary s = summary_of(p, kNew);
  EXPECT_TRUE(s.drift_known());  // the other counts are still 0
  EXPECT_EQ(s.drift(), -5);
  p.on_loss();  // records were lost
  update(p, kNew, kAnonPages, 40, 45);
  s = summary_of(p, kNew);
  EXPECT_FALSE(s.kernel_known);
  EXPECT_FALSE(s.drift_known());
}

TEST(AuditPipeline, ALossVoidsEveryLiveMmEvenOnesNotUpdatedSince) {
  AuditPipeline p(Topology::for_cpus(2));
  p.on_mm_created(kNew, true);
  p.on_mm_created(kOld, true);
  update(p, kNew, kAnonPages, 5, 0);
  update(p, kOld, kAnonPages, 7, 0);
  p.on_loss();
  EXPECT_EQ(p.losses(), 1u);
  for (const MmSummary& s : p.summaries()) {
    EXPECT_FALSE(s.absolute) << s.key.addr;
    EXPECT_FALSE(s.kernel_known) << s.key.addr;
  }
  // An mm created after the loss starts known.
  const MmKey later{0x9000, 9};
  p.on_mm_created(later, true);
  EXPECT_TRUE(summary_of(p, later).drift_known());
}

TEST(AuditPipeline, ACancelledResyncForgetsTheValueNotTheKernelsCount) {
  AuditPipeline p(Topology::for_cpus(2));
  p.on_mm_created(kOld, false);
  for (int m : {kFilePages, kAnonPages, kSwapEnts, kShmemPages}) {
    p.on_baseline(kOld, m, 100, std::nullopt);
    update(p, kOld, m, 1, 101);
  }
  EXPECT_TRUE(summary_of(p, kOld).drift_known());
  p.on_baseline(kOld, kAnonPages, std::nullopt, std::nullopt);
  const MmSummary s = summary_of(p, kOld);
  EXPECT_FALSE(s.absolute);
  EXPECT_TRUE(s.kernel_known);
}

TEST(AuditPipeline, RankingPutsUnknownDriftsLastWhateverTheirSize) {
  AuditPipeline p(Topology::for_cpus(2));
  p.on_mm_created(kOld, false);
  for (int m : {kFilePages, kAnonPages, kSwapEnts, kShmemPages})
    p.on_baseline(kOld, m, 100000,
                  std::nullopt);  // apparent drift of 200 000 pages
  update(p, kOld, kAnonPages, 1, 100000);
  p.on_mm_created(kNew, true);
  update(p, kNew, kAnonPages, 5, 0);
  std::vector<MmSummary> mms = p.summaries();
  rank_by_error(mms);
  ASSERT_EQ(mms.size(), 2u);
  EXPECT_EQ(mms[0].key, kNew);
  EXPECT_EQ(mms[1].key, kOld);
}

TEST(AuditPipeline, RankingIsByTheKernelsLargestErrorNotATeardownResidue) {
  constexpr MmKey kSmall{0xffff888000003000, 3};
  constexpr MmKey kBig{0xffff888000004000, 4};
  constexpr MmKey kLive{0xffff888000005000, 5};
  AuditPipeline p(Topology::for_cpus(2));  // batch 32
  // Both reach the kernel's largest error here, 31 pages in one CPU's slot.
  p.on_mm_created(kSmall, true);
  for (int i = 1; i <= 40; ++i) update(p, kSmall, kAnonPages, 1, i / 32 * 32);
  for (int i = 39; i >= 0; --i)
    update(p, kSmall, kAnonPages, -1, i > 0 ? 32 : 0);
  update(p, kSmall, kFilePages, 38, 38);  // leaves a residue at teardown
  update(p, kSmall, kFilePages, -38, 38);
  p.on_mm_destroyed(kSmall);
  p.on_mm_created(kBig, true);
  for (int i = 1; i <= 100; ++i) update(p, kBig, kAnonPages, 1, i / 32 * 32);
  p.on_mm_destroyed(kBig);
  // Off by 50 pages right now, more than either's largest error.
  p.on_mm_created(kLive, true);
  update(p, kLive, kAnonPages, 50, 100);

  std::vector<MmSummary> mms = p.summaries();
  ASSERT_EQ(mms.size(), 3u);
  EXPECT_EQ(summary_of(p, kSmall).drift(), 38);  // the residue
  EXPECT_EQ(summary_of(p, kBig).largest_error[0], 31);
  EXPECT_EQ(summary_of(p, kSmall).largest_error[0], 31);
  rank_by_error(mms);
  EXPECT_EQ(mms[0].key, kLive);
  EXPECT_EQ(mms[1].key, kBig);  // same largest error, larger true peak
  EXPECT_EQ(mms[2].key, kSmall);
}

}  // namespace
}  // namespace rssaudit
