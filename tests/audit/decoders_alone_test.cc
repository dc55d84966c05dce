// The two decoders alone, each on a ReconstructionCore of its own, with no
// DeltaReconstructor and no sink: what each queues for a record sequence.
#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

#include "audit/percpu_counter_decoder.h"
#include "audit/reconstruction_core.h"
#include "audit/task_cache_decoder.h"

namespace rssaudit {
namespace {

constexpr uint64_t kMm = 0xffff888012345000;

// The queued updates of a core, oldest first.
std::vector<const Pending*> queued_updates(const ReconstructionCore& core) {
  std::vector<const Pending*> out;
  for (size_t i = 0; i < core.pending.size(); ++i)
    if (core.pending.at(i).type == Pending::Type::kUpdate)
      out.push_back(&core.pending.at(i));
  return out;
}

// An anon update of kMm as bpf/rss_stat.bpf.c writes it, by a task
// populating a brand-new mm (RSS_EVF_CREATING: every slot started at 0)
// unless `flags` says otherwise. `start_ns` 0: untimed.
rss_event slot_record(uint16_t cpu, int32_t slot, int64_t count,
                      uint64_t start_ns, uint32_t span_ns = 0,
                      uint8_t flags = RSS_EVF_CREATING) {
  rss_event e{};
  e.mm = kMm;
  e.kind = RSS_EV_UPDATE;
  e.flags = flags;
  e.member = 1;
  e.cpu = cpu;
  e.tid = e.tgid = 100u + cpu;
  e.slot = slot;
  e.aux = count;
  e.start_ns = start_ns;
  e.span_ns = span_ns;
  return e;
}

class PercpuCounterDecoderAlone : public ::testing::Test {
 protected:
  ReconstructionCore core_{ReconstructorOptions{
      .nr_cpus = 2, .batch = 32, .preemptible = false}};
  PercpuCounterDecoder decoder_{core_};
};

TEST_F(PercpuCounterDecoderAlone, ASlotsMovesAreTheDeltasTimedOrNot) {
  decoder_.on_update(slot_record(0, 3, 0, 1'000));
  decoder_.on_update(slot_record(0, 5, 0, 0));
  decoder_.on_update(slot_record(1, -2, 0, 2'000));
  const auto u = queued_updates(core_);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0]->update.delta, 3);
  EXPECT_EQ(u[1]->update.delta, 2);
  EXPECT_EQ(u[2]->update.delta, -2);
  for (const Pending* p : u) EXPECT_EQ(p->info.fidelity, Fidelity::kExact);
  EXPECT_EQ(core_.stats.updates, 3u);
  EXPECT_EQ(core_.mms.size(), 1u);
}

TEST_F(PercpuCounterDecoderAlone, AFoldsDeltaIsCountsMoveLessTheSlot) {
  decoder_.on_update(slot_record(0, 31, 0, 1'000));
  decoder_.on_update(slot_record(0, 0, 32, 2'000, 300));
  const auto u = queued_updates(core_);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_TRUE(u[1]->fold);
  EXPECT_EQ(u[1]->update.delta, 1);
  EXPECT_EQ(u[1]->info.kernel_count, 32);
  EXPECT_EQ(u[1]->info.fidelity, Fidelity::kExact);
}

TEST_F(PercpuCounterDecoderAlone, FoldsOfTwoCpusAreFlaggedOnlyWhenTheyOverlap) {
  decoder_.on_update(slot_record(0, 31, 0, 1'000));
  decoder_.on_update(slot_record(1, 31, 0, 1'100));
  // Overlapping windows: which moved `count` first is unknown.
  decoder_.on_update(slot_record(0, 0, 32, 2'000, 500));
  decoder_.on_update(slot_record(1, 0, 64, 2'100, 500));
  // Far apart: ordered by time.
  decoder_.on_update(slot_record(0, 31, 64, 20'000));
  decoder_.on_update(slot_record(0, 0, 96, 30'000, 500));
  decoder_.on_update(slot_record(1, 31, 96, 40'000));
  decoder_.on_update(slot_record(1, 0, 128, 50'000, 500));
  const auto u = queued_updates(core_);
  ASSERT_EQ(u.size(), 8u);
  EXPECT_EQ(u[2]->info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[3]->info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[2]->update.delta + u[3]->update.delta, 2);  // the sum holds
  EXPECT_EQ(u[5]->info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[7]->info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[5]->update.delta, 1);
  EXPECT_EQ(u[7]->update.delta, 1);
}

TEST_F(PercpuCounterDecoderAlone, AnMmFromBeforeTheCaptureHasNoBaseline) {
  decoder_.on_update(slot_record(0, 7, 500, 1'000, 0, 0));
  decoder_.on_update(slot_record(0, 9, 500, 0, 0, 0));
  const auto u = queued_updates(core_);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0]->info.fidelity, Fidelity::kNoBaseline);
  EXPECT_EQ(u[0]->update.delta, 0);  // the slot before is unknown
  EXPECT_EQ(u[1]->info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[1]->update.delta, 2);
  EXPECT_FALSE(core_.mms.begin()->second->synced[1]);
}

// Before 6.2: records as bpf/task_cache.bpf.c writes them.
class TaskCacheDecoderAlone : public ::testing::Test {
 protected:
  TaskCacheDecoderAlone() {
    // The child's birth, as DeltaReconstructor handles its NEW_TASK record:
    // its mm brand-new, its cache empty and known.
    rss_event birth = record(RSS_EV_NEW_TASK, 0, SIGCHLD, 0);
    core_.tasks[kTid] = TaskState{.mm = kMm, .cache_known = true};
    core_.mm_state(birth, true, birth.start_ns);
  }
  rss_event record(uint8_t kind, uint8_t flags, int64_t aux, int32_t slot) {
    rss_event e{};
    e.mm = kMm;
    e.kind = kind;
    e.flags = flags;
    e.member = 1;
    e.aux = aux;
    e.slot = slot;
    e.tid = e.tgid = kTid;
    e.start_ns = now_ns_ += 1'000;
    return e;
  }
  static constexpr uint32_t kTid = 200;
  ReconstructionCore core_{ReconstructorOptions{.nr_cpus = 2, .batch = 32}};
  TaskCacheDecoder decoder_{core_};
  uint64_t now_ns_ = 1'000'000;
};

TEST_F(TaskCacheDecoderAlone, ACachedUpdateCarriesItsDeltaAndLeavesTheAtomic) {
  decoder_.on_update(record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_CACHED, 0, 3));
  const auto u = queued_updates(core_);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0]->update.delta, 3);
  EXPECT_EQ(u[0]->info.kernel_count, 0);
  EXPECT_TRUE(u[0]->info.task_cache);
  EXPECT_EQ(u[0]->info.fidelity, Fidelity::kExact);
  EXPECT_EQ(core_.tasks[kTid].cache[1], 3);
}

TEST_F(TaskCacheDecoderAlone, ASyncFoldsTheCacheAndAnOvertakenAddIsFlagged) {
  decoder_.on_update(record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_CACHED, 0, 3));
  for (uint8_t m = 0; m < kMembers; ++m) {
    rss_event sync = record(RSS_EV_CACHE_SYNC, RSS_EVF_OWNER, m == 1 ? 3 : 0, 0);
    sync.member = m;
    decoder_.on_cache_sync(sync);
  }
  rss_event fold = record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, 3, 0);
  fold.faults = 3;  // the cache it folds
  decoder_.on_update(fold);
  ASSERT_EQ(core_.pending.size(), 3u);  // created, the cached update, the fold
  const Pending& folded = core_.pending.at(2);
  EXPECT_EQ(folded.type, Pending::Type::kCacheFold);
  EXPECT_EQ(folded.info.kernel_count, 3);
  EXPECT_EQ(folded.info.fidelity, Fidelity::kExact);
  EXPECT_EQ(core_.tasks[kTid].cache[1], 0);
  // Another task's atomic add, overtaken before its record (slot != 0).
  rss_event add = record(RSS_EV_UPDATE, RSS_EVF_ATOMIC | RSS_EVF_CREATING, 5, 2);
  add.tid = add.tgid = kTid + 1;
  decoder_.on_update(add);
  const auto u = queued_updates(core_);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1]->update.delta, 2);
  EXPECT_EQ(u[1]->info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(core_.stats.reordered, 1u);
  EXPECT_EQ(core_.stats.sync_mismatches, 0u);
}

}  // namespace
}  // namespace rssaudit
