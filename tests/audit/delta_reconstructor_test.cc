#include "audit/delta_reconstructor.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sched.h>

#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {
namespace {

constexpr uint64_t kMm = 0xffff888012345000;
constexpr uint64_t kGrace = 2'000'000;

// What the sink saw, in order.
struct Recorded {
  enum Kind { kCreated, kUpdate, kLife, kDestroyed, kLoss } kind;
  MmKey mm;
  bool from_zero = false;
  Update update;
  UpdateInfo info;
  LifeEvent life;
};

class RecordingSink : public ReconstructorSink {
 public:
  void on_mm_created(const MmKey& mm, bool from_zero) override {
    out.push_back({Recorded::kCreated, mm, from_zero, {}, {}, {}});
  }
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    out.push_back({Recorded::kUpdate, mm, false, u, info, {}});
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    out.push_back({Recorded::kLife, mm, false, {}, {}, e});
  }
  void on_mm_destroyed(const MmKey& mm) override {
    out.push_back({Recorded::kDestroyed, mm, false, {}, {}, {}});
  }
  void on_baseline(const MmKey&, int member, std::optional<int64_t> pages,
                   std::optional<int64_t> kernel_count) override {
    baselines.emplace_back(member, pages);
    kernel_counts.emplace_back(member, kernel_count);
  }
  void on_loss() override {
    out.push_back({Recorded::kLoss, {}, false, {}, {}, {}});
  }
  size_t count(Recorded::Kind kind) const {
    size_t n = 0;
    for (const Recorded& r : out) n += r.kind == kind;
    return n;
  }

  std::vector<Recorded> updates() const {
    std::vector<Recorded> u;
    for (const Recorded& r : out)
      if (r.kind == Recorded::kUpdate) u.push_back(r);
    return u;
  }

  std::vector<Recorded> out;
  std::vector<std::pair<int, std::optional<int64_t>>> baselines;
  std::vector<std::pair<int, std::optional<int64_t>>> kernel_counts;
};

// The kernel side: one mm's percpu_counters, producing the records the BPF
// program would (lib/percpu_counter.c, add then tracepoint).
class FakeKernel {
 public:
  explicit FakeKernel(uint32_t cpus, int32_t batch = 32)
      : batch_(batch), slots_(cpus * kMembers) {}

  // One update on `cpu`; the record's window is [start, start + span].
  rss_event add(uint32_t cpu, int member, int64_t amount, uint64_t start_ns,
                uint32_t span_ns = 100, uint8_t flags = RSS_EVF_OWNER) {
    int32_t& slot = slots_[cpu * kMembers + member];
    const int64_t v = slot + amount;
    if (std::llabs(v) >= batch_) {
      count_[member] += v;
      slot = 0;
    } else {
      slot = static_cast<int32_t>(v);
    }
    return record(cpu, member, start_ns, span_ns, flags);
  }

  rss_event record(uint32_t cpu, int member, uint64_t start_ns,
                   uint32_t span_ns, uint8_t flags) const {
    rss_event e{};
    e.mm = kMm;
    e.aux = count_[member];
    e.start_ns = start_ns;
    e.tid = single_tid_ ? single_tid_ : 100 + cpu;  // a thread per CPU
    e.tgid = 100;
    e.slot = slots_[cpu * kMembers + member];
    e.span_ns = span_ns;
    e.cpu = static_cast<uint16_t>(cpu);
    e.kind = RSS_EV_UPDATE;
    e.member = static_cast<uint8_t>(member);
    e.flags = flags;
    // Nothing runs between its two reads of `count` here.
    if (steady_ && e.slot == 0) e.flags |= RSS_EVF_COUNT_STEADY;
    return e;
  }

  // Every later record is by this one task, wherever it runs.
  void single_task(uint32_t tid) { single_tid_ = tid; }
  // Records that leave their slot at zero say that `count` was what they
  // show before they took their number, as the capture's do.
  void mark_steady_counts() { steady_ = true; }
  int64_t count(int member) const { return count_[member]; }
  // What /proc/PID/status shows: `count` plus every slot.
  int64_t precise(int member) const {
    int64_t sum = count_[member];
    for (size_t cpu = 0; cpu < slots_.size() / kMembers; ++cpu)
      sum += slots_[cpu * kMembers + member];
    return sum;
  }
  int32_t slot(int member, uint32_t cpu) const {
    return slots_[cpu * kMembers + member];
  }

 private:
  int32_t batch_;
  uint32_t single_tid_ = 0;
  bool steady_ = false;
  int64_t count_[kMembers] = {};
  std::vector<int32_t> slots_;
};

rss_event life(uint8_t kind, uint64_t mm, uint64_t start_ns, int64_t aux = 0) {
  rss_event e{};
  e.mm = mm;
  e.aux = aux;
  e.start_ns = start_ns;
  e.tid = 7;
  e.tgid = 7;
  e.kind = kind;
  return e;
}

// An mm whose 45 anon updates on two CPUs came before the capture.
FakeKernel kernel_of_an_older_mm() {
  FakeKernel kernel(2);
  for (int i = 0; i < 45; ++i) kernel.add(i % 2, kAnonPages, 1, 0);
  return kernel;
}

ReconstructorOptions two_cpus() {
  ReconstructorOptions o;
  o.nr_cpus = 2;
  o.batch = 32;
  o.grace_ns = kGrace;
  return o;
}

TEST(DeltaReconstructor, SingleTaskMigratingIsExactAtEveryUpdate) {
  FakeKernel kernel(2);
  kernel.single_task(100);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  std::mt19937 rng(1);
  std::vector<int64_t> truth;
  uint64_t t = 1000;
  for (int i = 0; i < 5000; ++i) {
    const uint32_t cpu = rng() % 2;
    const int member = rng() % 2;
    const int64_t amount = (rng() % 4 == 0) ? -1 : (rng() % 50 == 0 ? 200 : 1);
    truth.push_back(amount);
    const uint8_t flags = i == 0 ? RSS_EVF_CREATING : RSS_EVF_OWNER;
    r.on_event(kernel.add(cpu, member, amount, t, 100, flags), sink);
    t += 1000;
  }
  r.flush(sink);

  const auto updates = sink.updates();
  ASSERT_EQ(updates.size(), truth.size());
  UpstreamPercpu model(Topology::for_cpus(2));
  for (size_t i = 0; i < updates.size(); ++i) {
    const Recorded& u = updates[i];
    ASSERT_EQ(u.info.fidelity, Fidelity::kExact) << "update " << i;
    ASSERT_EQ(u.update.delta, truth[i]) << "update " << i;
    model.add(u.update);
    ASSERT_EQ(model.approximate(u.update.member), u.info.kernel_count);
    ASSERT_EQ(model.slot(u.update.member, u.update.cpu), u.info.kernel_slot);
  }
  EXPECT_EQ(r.stats().exact, truth.size());
}

TEST(DeltaReconstructor, SlotBackToZeroWithoutFoldIsExact) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  r.on_event(kernel.add(0, kAnonPages, 5, 1000, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(0, kAnonPages, -5, 2000), sink);
  r.flush(sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1].update.delta, -5);
  EXPECT_EQ(u[1].info.fidelity, Fidelity::kExact);
}

TEST(DeltaReconstructor, OverlappingFoldsOnTwoCpusAreFlaggedNotGuessed) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1000;
  // Bring both slots to 31 with windows that do not overlap.
  r.on_event(kernel.add(0, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, 31, t += 1000), sink);
  // Both fold at once: CPU1's add lands before CPU0 reads `count`.
  kernel.add(0, kAnonPages, 1, t += 1000);
  const rss_event fold1 = kernel.add(1, kAnonPages, 1, t + 10, 200);
  const rss_event fold0 = kernel.record(0, kAnonPages, t, 100, RSS_EVF_OWNER);
  r.on_event(fold0, sink);
  r.on_event(fold1, sink);
  r.flush(sink);

  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kAmbiguous);
  // The group as a whole is right, and leaves the model where the kernel is.
  EXPECT_EQ(u[2].update.delta + u[3].update.delta, 2);
  UpstreamPercpu model(Topology::for_cpus(2));
  for (const Recorded& x : u) model.add(x.update);
  EXPECT_EQ(model.approximate(kAnonPages), kernel.count(kAnonPages));
  EXPECT_EQ(model.slot(kAnonPages, 0), 0);
  EXPECT_EQ(model.slot(kAnonPages, 1), 0);
  EXPECT_EQ(r.stats().ambiguous, 2u);
}

TEST(DeltaReconstructor, AFoldSeenBeforeItsLateRecordWidensItsWindow) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1000;
  r.on_event(kernel.add(0, kAnonPages, 30, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, 31, t += 1000), sink);
  // CPU1 folds, but an interrupt delays its record past CPU0's next two.
  kernel.add(1, kAnonPages, 1, t += 1000);
  r.on_event(kernel.add(0, kAnonPages, 1, t += 1000), sink);  // reads it
  r.on_event(kernel.add(0, kAnonPages, 1, t += 1000), sink);  // folds too
  r.on_event(kernel.record(1, kAnonPages, t += 1000, 100, RSS_EVF_OWNER), sink);
  r.flush(sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 5u);
  // No fold: the slot says the delta, but the `count` read already holds
  // CPU1's fold, which the stream brings later: a model fed in stream
  // order cannot match the kernel there, so it is flagged, not checked.
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kCountAhead);
  EXPECT_EQ(u[2].update.delta, 1);
  UpstreamPercpu model(Topology::for_cpus(2));
  for (size_t i = 0; i <= 2; ++i) model.add(u[i].update);
  EXPECT_NE(model.approximate(kAnonPages), u[2].info.kernel_count);
  EXPECT_EQ(r.stats().count_ahead, 1u);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[4].info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[3].update.delta + u[4].update.delta, 2);
}

TEST(DeltaReconstructor, FoldsWithDisjointWindowsOnTwoCpusAreExact) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1000;
  // Apart by more than a late fold can lead its record (kLateSlackNs).
  r.on_event(kernel.add(0, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, -31, t += 10'000), sink);
  r.on_event(kernel.add(0, kAnonPages, 1, t += 10'000), sink);
  r.on_event(kernel.add(1, kAnonPages, -1, t += 10'000), sink);
  r.flush(sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[2].update.delta, 1);
  EXPECT_EQ(u[3].update.delta, -1);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kExact);
}

// The last two of four updates, two folds of one page each, are flagged,
// and their deltas still sum to the two pages.
void expect_last_two_folds_ambiguous(const std::vector<Recorded>& u) {
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[2].update.delta + u[3].update.delta, 2) << "the sum is right";
}

// Seen on the real kernel: another thread's fold lands in `count` a few
// hundred ns before its record starts, after the first record ended. The
// pair cannot be split with certainty, so both are flagged.
TEST(DeltaReconstructor, NearMissFoldsOfTwoTasksAreFlagged) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1000;
  r.on_event(kernel.add(0, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, 31, t += 10'000), sink);
  r.on_event(kernel.add(0, kAnonPages, 1, t += 10'000), sink);
  r.on_event(kernel.add(1, kAnonPages, 1, t += 500), sink);
  r.flush(sink);
  expect_last_two_folds_ambiguous(sink.updates());
}

// Seen in a TCG guest: CPU1 folds, its vCPU is descheduled before the
// tracepoint, CPU0 folds and reads both folds in `count`; CPU1's record,
// long after, shows its slot at zero and `count` unmoved. A fold of 33 and
// a return to zero of -31 explain the records as well as two folds of 1:
// both are flagged, whatever the time between them. The sequence does not
// order them: CPU0's record came after CPU1's last one before its add.
TEST(DeltaReconstructor, AFoldTakenIntoAnotherCpusFoldIsFlagged) {
  FakeKernel kernel(2);
  kernel.mark_steady_counts();
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1000;
  r.on_event(kernel.add(0, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, 31, t += 10'000), sink);
  kernel.add(1, kAnonPages, 1, t += 10'000);                    // record held
  r.on_event(kernel.add(0, kAnonPages, 1, t += 10'000), sink);  // reads both
  r.on_event(kernel.record(1, kAnonPages, t += 500'000, 100, RSS_EVF_OWNER),
             sink);
  r.flush(sink);
  expect_last_two_folds_ambiguous(sink.updates());
}

// The same with CPU1's record later than the grace: CPU0's fold of 33 is
// out already and cannot be flagged, so it is counted (seen once in the
// 6.12 preempt=full guest, CaptureTest.TwoPinnedThreads...).
TEST(DeltaReconstructor, AFoldTakenIntoAFoldAlreadyOutIsCounted) {
  FakeKernel kernel(2);
  kernel.mark_steady_counts();
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1'000'000;
  r.on_event(kernel.add(0, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, 31, t += 10'000), sink);
  kernel.add(1, kAnonPages, 1, t += 10'000);                    // record held
  r.on_event(kernel.add(0, kAnonPages, 1, t += 10'000), sink);  // reads both
  r.advance(t += 3 * kGrace, sink);
  ASSERT_EQ(sink.updates().size(), 3u);
  EXPECT_EQ(sink.updates().back().update.delta, 33);
  r.on_event(kernel.record(1, kAnonPages, t, 100, RSS_EVF_OWNER), sink);
  r.flush(sink);
  EXPECT_EQ(r.stats().late_overlaps, 1u);
  EXPECT_EQ(sink.updates().back().info.fidelity, Fidelity::kAmbiguous);
}

// A slot that returns to zero (an unmap of what it held) with no fold of
// another CPU since its previous record is exact.
TEST(DeltaReconstructor, AReturnToZeroWithNoFoldElsewhereIsExact) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1000;
  r.on_event(kernel.add(0, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(1, kAnonPages, 20, t += 10'000), sink);
  r.on_event(kernel.add(0, kAnonPages, 1, t += 10'000), sink);  // folds
  r.on_event(kernel.add(1, kAnonPages, 5, t += 10'000), sink);
  r.on_event(kernel.add(1, kAnonPages, -25, t += 10'000), sink);
  r.flush(sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 5u);
  EXPECT_EQ(u[4].update.delta, -25);
  EXPECT_EQ(u[4].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kExact);
}

// Threads taking turns: an untimed record's task was past every fold that
// took its sequence number before the record. A return to zero after one
// looks back only to the latest of those folds: another CPU's fold before
// it cannot have read this CPU's add, one after it can.
std::vector<Recorded> return_to_zero_after_an_untimed_record(
    bool other_fold_last, bool steady = false) {
  FakeKernel kernel(2);
  if (steady) kernel.mark_steady_counts();
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1'000'000;
  r.on_event(kernel.add(1, kAnonPages, 31, t, 100, RSS_EVF_CREATING), sink);
  r.on_event(kernel.add(0, kAnonPages, 31, t += 10'000), sink);
  r.advance(t, sink);
  const auto other_cpu_folds = [&] {
    r.on_event(kernel.add(1, kAnonPages, 1, t += 10'000), sink);
  };
  if (!other_fold_last) other_cpu_folds();
  r.on_event(kernel.add(0, kAnonPages, 1, t += 10'000), sink);  // folds
  if (other_fold_last) other_cpu_folds();
  r.on_event(kernel.add(0, kAnonPages, 1, 0, 0), sink);  // untimed
  r.on_event(kernel.add(0, kAnonPages, -1, t += 10'000), sink);
  r.flush(sink);
  return sink.updates();
}

TEST(DeltaReconstructor, AReturnToZeroLooksBackToTheFoldsBeforeItsTask) {
  const auto u = return_to_zero_after_an_untimed_record(false);
  ASSERT_EQ(u.size(), 6u);
  EXPECT_EQ(u[5].update.delta, -1);
  for (const Recorded& x : u) EXPECT_EQ(x.info.fidelity, Fidelity::kExact);
}

TEST(DeltaReconstructor, AReturnToZeroAfterAnotherCpusLaterFoldIsFlagged) {
  const auto u = return_to_zero_after_an_untimed_record(true);
  ASSERT_EQ(u.size(), 6u);
  EXPECT_EQ(u[5].info.fidelity, Fidelity::kAmbiguous);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kAmbiguous);  // the other fold
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kExact);
}

// The same, with the other CPU's fold read before it took its number (as
// the capture tells since RSS_EVF_COUNT_STEADY): its number is before the
// untimed record that came before the return to zero's add, so its
// `count` cannot hold that add, whatever the times. Both are exact.
TEST(DeltaReconstructor, AReturnToZeroAfterAFoldTheSequenceOrdersIsExact) {
  const auto u = return_to_zero_after_an_untimed_record(true, true);
  ASSERT_EQ(u.size(), 6u);
  EXPECT_EQ(u[5].update.delta, -1);
  for (const Recorded& x : u) EXPECT_EQ(x.info.fidelity, Fidelity::kExact);
}

TEST(DeltaReconstructor, MmFromBeforeTheCaptureHasNoBaselinePerCpu) {
  FakeKernel kernel(2);
  kernel.add(0, kFilePages, 20, 0);  // before the capture
  kernel.add(1, kFilePages, 40, 0);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  r.on_event(kernel.add(0, kFilePages, 1, 1000), sink);
  r.on_event(kernel.add(0, kFilePages, 1, 2000), sink);
  r.on_event(kernel.add(1, kFilePages, 2, 3000), sink);
  r.on_event(kernel.add(1, kFilePages, 2, 4000), sink);
  r.flush(sink);
  ASSERT_EQ(sink.out.front().kind, Recorded::kCreated);
  EXPECT_FALSE(sink.out.front().from_zero);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0].info.fidelity, Fidelity::kNoBaseline);
  EXPECT_EQ(u[1].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[1].update.delta, 1);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kNoBaseline);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[3].update.delta, 2);
}

TEST(DeltaReconstructor, HoldsEventsBackForTheGraceTime) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  r.on_event(kernel.add(0, kAnonPages, 1, 1000, 100, RSS_EVF_CREATING), sink);
  EXPECT_TRUE(sink.out.empty());
  r.advance(1100 + kGrace, sink);
  EXPECT_TRUE(sink.updates().empty());
  r.advance(1101 + kGrace, sink);
  EXPECT_EQ(sink.updates().size(), 1u);
  // A later record's start also moves time forward.
  r.on_event(kernel.add(1, kAnonPages, 1, 5000, 100), sink);
  r.on_event(kernel.add(1, kAnonPages, 1, 5200 + kGrace, 100), sink);
  EXPECT_EQ(sink.updates().size(), 2u);
}

// A drain advances to the time it read the streams at. The records of the
// next drain published after that time flow out as their own times pass
// (a fold, timed, every 32 updates of a fault loop): few are held at once.
// Had the drain advanced to a time after its poll, every record published
// during that poll would have been older than the watermark, all held until
// the next drain ended: the daemon's queue grew to a whole stream.
TEST(DeltaReconstructor, RecordsAfterTheDrainsReadFlowOutAsTheirTimesPass) {
  constexpr uint64_t kPollStart = 1'000'000'000, kApart = 10'000;
  constexpr int kRecords = 10'000;  // 100 ms of a fault loop
  for (const uint64_t advanced_to : {kPollStart, kPollStart + 200'000'000}) {
    FakeKernel kernel(2);
    DeltaReconstructor r(two_cpus());
    RecordingSink sink;
    r.on_event(kernel.add(0, kAnonPages, 1, kPollStart - kGrace, 100,
                          RSS_EVF_CREATING | RSS_EVF_OWNER),
               sink);
    r.advance(advanced_to, sink);
    size_t most_held = 0;
    for (int i = 1; i <= kRecords; ++i) {
      const bool fold = kernel.slot(kAnonPages, 0) == 31;
      const uint64_t start = fold ? kPollStart + i * kApart : 0;
      r.on_event(kernel.add(0, kAnonPages, 1, start, fold ? 100 : 0), sink);
      // Counted when emitted; every update here is exact (checked below).
      most_held = std::max(most_held, i + 1 - r.stats().exact);
    }
    if (advanced_to == kPollStart) {
      EXPECT_LE(most_held, kGrace / kApart + 33) << "the grace's worth";
    } else {
      EXPECT_EQ(most_held, size_t{kRecords}) << "all held";
    }
    r.advance(kPollStart + 300'000'000, sink);
    EXPECT_EQ(sink.updates().size(), size_t{kRecords} + 1);
    EXPECT_EQ(r.stats().exact, uint64_t{kRecords} + 1);
  }
}

TEST(DeltaReconstructor, ExitMmapEndsTheMmAndAReusedAddressIsANewOne) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  r.on_event(kernel.add(0, kAnonPages, 1, 1000, 100, RSS_EVF_CREATING), sink);
  r.on_event(life(RSS_EV_EXIT_MMAP, kMm, 2000), sink);
  FakeKernel reused(2);
  r.on_event(reused.add(1, kAnonPages, 3, 3000, 100, RSS_EVF_CREATING), sink);
  r.flush(sink);
  ASSERT_EQ(sink.out.size(), 6u);
  EXPECT_EQ(sink.out[0].kind, Recorded::kCreated);
  EXPECT_EQ(sink.out[1].kind, Recorded::kUpdate);
  EXPECT_EQ(sink.out[2].kind, Recorded::kLife);
  EXPECT_EQ(sink.out[2].life.kind, LifeKind::kMmExit);
  EXPECT_EQ(sink.out[3].kind, Recorded::kDestroyed);
  EXPECT_EQ(sink.out[4].kind, Recorded::kCreated);
  EXPECT_TRUE(sink.out[4].from_zero);
  EXPECT_EQ(sink.out[4].mm.addr, kMm);
  EXPECT_NE(sink.out[4].mm.generation, sink.out[0].mm.generation);
  EXPECT_EQ(sink.out[5].update.delta, 3);
  EXPECT_EQ(sink.out[5].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(r.live_mms(), 1u);
}

// Seen in a 16-vCPU guest: an mm from before the capture ended while the
// programs attached (no exit_mmap record), and an exec's new mm took its
// address. The new one is from zero, not the stale one's continuation.
TEST(DeltaReconstructor, ABrandNewMmWhereAnUnendedOldOneWasEndsTheOldOne) {
  FakeKernel old_mm = kernel_of_an_older_mm();
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  r.on_event(old_mm.add(0, kAnonPages, 1, 1000), sink);
  FakeKernel exec_mm(2);
  r.on_event(exec_mm.add(1, kAnonPages, 3, 3000, 100, RSS_EVF_CREATING), sink);
  r.on_event(life(RSS_EV_EXEC, kMm, 4000), sink);
  r.on_event(exec_mm.add(1, kAnonPages, 2, 5000), sink);
  r.flush(sink);
  ASSERT_EQ(sink.out.size(), 7u);
  EXPECT_FALSE(sink.out[0].from_zero);
  EXPECT_EQ(sink.out[2].life.kind, LifeKind::kMmExit);
  EXPECT_EQ(sink.out[3].kind, Recorded::kDestroyed);
  EXPECT_EQ(sink.out[4].kind, Recorded::kCreated);
  EXPECT_TRUE(sink.out[4].from_zero);
  EXPECT_NE(sink.out[4].mm.generation, sink.out[0].mm.generation);
  EXPECT_EQ(sink.out[5].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(sink.out[6].update.delta, 2);
  EXPECT_EQ(sink.out[6].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(r.live_mms(), 1u);
}

TEST(DeltaReconstructor, AnOwnerUpdateOfAnotherMmOnACpuSwitchesItsMmOut) {
  constexpr uint64_t kOther = kMm + 0x4000;
  constexpr uint8_t kNew = RSS_EVF_OWNER | RSS_EVF_CREATING;
  FakeKernel a(2), b(2);
  const auto of_b = [](rss_event e) {
    e.mm = kOther;
    e.tid = e.tgid = 200;
    return e;
  };
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  r.on_event(a.add(0, kAnonPages, 1, 1000, 100, kNew), sink);
  r.on_event(of_b(b.add(1, kAnonPages, 1, 2000, 100, kNew)), sink);
  r.on_event(of_b(b.add(0, kAnonPages, 1, 3000)), sink);  // b runs on CPU 0
  // Not by its owner (reclaim, a remote access): CPU 0 still runs b.
  r.on_event(a.add(0, kAnonPages, -1, 4000, 100, 0), sink);
  r.on_event(of_b(b.add(0, kAnonPages, 1, 5000)), sink);
  r.on_event(a.add(0, kAnonPages, 1, 6000), sink);  // a runs on CPU 0 again
  r.flush(sink);
  std::vector<std::pair<uint64_t, uint32_t>> switches;  // mm, CPU
  std::vector<uint64_t> update_times;
  for (const Recorded& x : sink.out) {
    if (x.kind == Recorded::kLife && x.life.kind == LifeKind::kCpuSwitch) {
      switches.emplace_back(x.mm.addr, x.life.cpu);
      update_times.push_back(0);  // where it falls among the updates
    } else if (x.kind == Recorded::kUpdate) {
      update_times.push_back(x.update.time_ns);
    }
  }
  EXPECT_EQ(switches, (std::vector<std::pair<uint64_t, uint32_t>>{
                          {kMm, 0}, {kOther, 0}}));
  EXPECT_EQ(update_times,
            (std::vector<uint64_t>{1000, 2000, 0, 3000, 4000, 5000, 0, 6000}));
}

TEST(DeltaReconstructor, FaultsPrecedeTheUpdateAsLifeEvents) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  constexpr uint8_t kInFault = RSS_EVF_OWNER | RSS_EVF_IN_FAULT;
  // The task's first update seen: only the fault in progress is known.
  rss_event e = kernel.add(0, kAnonPages, 1, 1000, 100, kInFault);
  e.faults = 0xfffe;
  r.on_event(e, sink);
  // A fault that updated nothing, then this one; the total wraps.
  e = kernel.add(0, kAnonPages, 1, 2000, 100, kInFault);
  e.faults = 0;
  r.on_event(e, sink);
  // Outside a fault (munmap): no fault since the last update.
  e = kernel.add(0, kAnonPages, -1, 3000, 100, RSS_EVF_OWNER);
  e.faults = 0;
  r.on_event(e, sink);
  r.flush(sink);
  std::vector<int> faults_before;  // faults announced before each update
  int pending = 0;
  for (const Recorded& x : sink.out) {
    if (x.kind == Recorded::kLife && x.life.kind == LifeKind::kFault) {
      pending += static_cast<int>(x.life.count);
    } else if (x.kind == Recorded::kUpdate) {
      faults_before.push_back(pending);
      EXPECT_EQ(x.info.faults, pending);
      EXPECT_TRUE(x.update.by_owner());
      pending = 0;
    }
  }
  EXPECT_EQ(faults_before, (std::vector<int>{1, 2, 0}));
  const std::vector<Recorded> u = sink.updates();
  ASSERT_EQ(u.size(), 3u);
  EXPECT_TRUE(u[0].update.in_fault());
  EXPECT_TRUE(u[1].update.in_fault());
  EXPECT_FALSE(u[2].update.in_fault());
}

TEST(DeltaReconstructor, ExecOfATaskSeenOnlyByItsUpdatesLeavesItsMm) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  rss_event e =
      kernel.add(0, kAnonPages, 1, 1000, 100, RSS_EVF_OWNER | RSS_EVF_IN_FAULT);
  e.tid = 7;
  r.on_event(e, sink);
  r.on_event(life(RSS_EV_EXEC, kMm + 4096, 2000), sink);  // old mm unknown
  r.flush(sink);
  int task_exits = 0;
  for (const Recorded& x : sink.out)
    if (x.kind == Recorded::kLife && x.life.kind == LifeKind::kTaskExit) {
      ++task_exits;
      EXPECT_EQ(x.mm.addr, kMm);
      EXPECT_EQ(x.life.task, 7u);
    }
  EXPECT_EQ(task_exits, 1);
}

TEST(DeltaReconstructor, ExecOfAVforkChildLeavesTheMmOfItsNewTaskRecord) {
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  constexpr int64_t kVfork = CLONE_VFORK | CLONE_VM;
  rss_event child = life(RSS_EV_NEW_TASK, kMm, 1000, kVfork);
  child.tid = child.tgid = 9;
  r.on_event(child, sink);
  // exec_mmap() has switched mms: the task updates its new mm as owner
  // before its EXEC record (seen on the real kernel).
  rss_event update = life(RSS_EV_UPDATE, kMm + 8192, 1500);
  update.tid = update.tgid = 9;
  update.member = kAnonPages;
  update.slot = 1;
  update.flags = RSS_EVF_OWNER | RSS_EVF_IN_FAULT;
  r.on_event(update, sink);
  rss_event exec = life(RSS_EV_EXEC, kMm + 8192, 2000);  // aux 0: not known
  exec.tid = exec.tgid = 9;
  r.on_event(exec, sink);
  rss_event again = life(RSS_EV_EXEC, kMm + 16384, 3000);  // a second exec
  again.tid = again.tgid = 9;
  r.on_event(again, sink);
  r.flush(sink);
  std::vector<uint64_t> left;
  for (const Recorded& x : sink.out)
    if (x.kind == Recorded::kLife && x.life.kind == LifeKind::kTaskExit) {
      EXPECT_EQ(x.life.task, 9u);
      left.push_back(x.mm.addr);
    }
  EXPECT_EQ(left, (std::vector<uint64_t>{kMm, kMm + 8192}));
}

TEST(DeltaReconstructor, CloneVmIsASecondUserButVforkAndForkAreNot) {
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  constexpr int64_t kThread = CLONE_THREAD | CLONE_VM;
  constexpr int64_t kVfork = CLONE_VFORK | CLONE_VM;
  r.on_event(life(RSS_EV_NEW_TASK, kMm, 1000, kThread), sink);
  r.on_event(life(RSS_EV_NEW_TASK, kMm, 2000, kVfork), sink);
  r.on_event(life(RSS_EV_NEW_TASK, kMm + 4096, 3000, 0x11), sink);  // fork
  r.on_event(life(RSS_EV_EXEC, kMm + 8192, 4000, kMm), sink);
  r.flush(sink);
  int second_users = 0;
  int task_exits = 0;
  for (const Recorded& x : sink.out) {
    if (x.kind != Recorded::kLife) continue;
    second_users += x.life.kind == LifeKind::kSecondUser;
    if (x.life.kind == LifeKind::kTaskExit) {
      ++task_exits;
      EXPECT_EQ(x.mm.addr, kMm);  // exec leaves the old mm
    }
  }
  EXPECT_EQ(second_users, 1);
  EXPECT_EQ(task_exits, 1);
  ASSERT_EQ(sink.out[0].kind, Recorded::kCreated);
  EXPECT_FALSE(sink.out[0].from_zero);  // threads share an older mm
  EXPECT_TRUE(sink.out[3].from_zero);   // the fork child's new mm
}

// An mm joined mid-life had its threads cloned before the capture: the
// first owner update by a second task tells the models (the lazy schemes
// activate on a second user), once. A task whose clone was seen is not
// inferred (a vfork child is no second user).
TEST(DeltaReconstructor, ASecondTaskUpdatingAnMmJoinedMidLifeIsASecondUser) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  auto second_users = [&] {
    int n = 0;
    for (const Recorded& x : sink.out)
      n += x.kind == Recorded::kLife && x.life.kind == LifeKind::kSecondUser;
    return n;
  };
  r.on_event(kernel.add(0, kAnonPages, 1, 1000), sink);  // tid 100
  r.on_event(kernel.add(0, kAnonPages, 1, 2000), sink);
  r.flush(sink);
  EXPECT_EQ(second_users(), 0);
  r.on_event(kernel.add(1, kAnonPages, 1, 3000), sink);  // tid 101
  r.on_event(kernel.add(1, kAnonPages, 1, 4000), sink);
  r.flush(sink);
  EXPECT_EQ(second_users(), 1);
  EXPECT_EQ(r.stats().inferred_second_users, 1u);
  // Before the second task's first update.
  size_t life_at = 0, update_at = 0;
  for (size_t i = 0; i < sink.out.size(); ++i) {
    if (sink.out[i].kind == Recorded::kLife && !life_at) life_at = i;
    if (sink.out[i].kind == Recorded::kUpdate &&
        sink.out[i].update.task == 101 && !update_at)
      update_at = i;
  }
  EXPECT_LT(life_at, update_at);

  // Another mm joined mid-life whose second updater was seen vforked.
  DeltaReconstructor r2(two_cpus());
  RecordingSink sink2;
  rss_event first = kernel.add(0, kAnonPages, 1, 1000);
  first.mm = kMm + 4096;
  r2.on_event(first, sink2);
  rss_event vfork =
      life(RSS_EV_NEW_TASK, kMm + 4096, 2000, CLONE_VFORK | CLONE_VM);
  vfork.tid = 101;
  r2.on_event(vfork, sink2);
  rss_event child = kernel.add(1, kAnonPages, 1, 3000);
  child.mm = kMm + 4096;
  r2.on_event(child, sink2);
  r2.flush(sink2);
  EXPECT_EQ(r2.stats().inferred_second_users, 0u);
}

TEST(DeltaReconstructor, BadRecordsAreCountedNotUsed) {
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  FakeKernel kernel(2);
  rss_event e = kernel.add(0, kAnonPages, 1, 1000);
  e.cpu = 9;
  r.on_event(e, sink);
  e.cpu = 0;
  e.member = 7;
  r.on_event(e, sink);
  r.flush(sink);
  EXPECT_TRUE(sink.out.empty());
  EXPECT_EQ(r.stats().bad_records, 2u);
}

// Counts no kernel can hold are bad records, not arithmetic: a page count
// past 2^40 and a task cache (an int) past an int (fuzz/stream_records_fuzz
// overflowed the models with them).
TEST(DeltaReconstructor, CountsNoKernelHoldsAreBadRecords) {
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  FakeKernel kernel(2);
  rss_event e = kernel.add(0, kAnonPages, 1, 1000);
  e.aux = std::numeric_limits<int64_t>::min();
  r.on_event(e, sink);
  e.aux = (int64_t{1} << 40) + 1;
  r.on_event(e, sink);
  rss_event sync{};
  sync.kind = RSS_EV_CACHE_SYNC;
  sync.mm = e.mm;
  sync.tid = sync.tgid = 100;
  sync.aux = int64_t{1} << 31;
  sync.start_ns = 2000;
  r.on_event(sync, sink);
  r.flush(sink);
  EXPECT_EQ(r.stats().bad_records, 3u);
  EXPECT_EQ(r.stats().updates, 0u);
}

// At most max_mms mms at once: the records of one more are counted and
// skipped until one ends.
TEST(DeltaReconstructor, MmsBeyondTheLimitAreCountedNotAudited) {
  ReconstructorOptions o = two_cpus();
  o.max_mms = 2;
  DeltaReconstructor r(o);
  RecordingSink sink;
  FakeKernel kernel(2);
  uint64_t time = 1000;
  const auto update_of = [&](uint64_t mm) {
    rss_event e = kernel.add(0, kAnonPages, 1, time += 1000);
    e.mm = mm;
    e.flags |= RSS_EVF_CREATING;
    return e;
  };
  for (const uint64_t mm : {0xa000, 0xb000, 0xc000, 0xc000, 0xa000})
    r.on_event(update_of(mm), sink);
  EXPECT_EQ(r.stats().mms_created, 2u);
  EXPECT_EQ(r.stats().over_mm_limit, 2u) << "both records of 0xc000";
  rss_event gone{};
  gone.kind = RSS_EV_EXIT_MMAP;
  gone.mm = 0xb000;
  gone.start_ns = time += 1000;
  r.on_event(gone, sink);
  r.on_event(update_of(0xc000), sink);
  EXPECT_EQ(r.stats().mms_created, 3u) << "room once one ended";
  EXPECT_EQ(r.stats().over_mm_limit, 2u);
}

// The values the snapshot iterator reads of `kernel`'s counters at the
// moment of the call, with the record that places them (id `id`).
std::pair<rss_event, CounterSnapshot> snapshot_of(const FakeKernel& kernel,
                                                  uint32_t cpus, uint64_t id,
                                                  uint64_t time_ns) {
  rss_event e{};
  e.mm = kMm;
  e.aux = static_cast<int64_t>(id);
  e.start_ns = time_ns;
  e.tid = e.tgid = 100;
  e.kind = RSS_EV_SNAPSHOT;
  e.flags = RSS_EVF_OWNER;
  CounterSnapshot s;
  s.head.id = id;
  s.head.mm = kMm;
  s.head.tid = s.head.tgid = 100;
  s.head.flags = RSS_SNAP_PERCPU;
  for (int m = 0; m < kMembers; ++m) {
    s.head.count[m] = s.head.count_after[m] = kernel.count(m);
    for (uint32_t c = 0; c < cpus; ++c)
      if (const int32_t v = kernel.slot(m, c))
        s.slots.push_back(rss_snapshot_slot{static_cast<uint16_t>(c),
                                            static_cast<uint8_t>(m), 0, v});
  }
  s.head.slots = static_cast<uint32_t>(s.slots.size());
  return {e, s};
}

// An older mm's kernel and a reconstructor that takes snapshots.
struct OlderMmWithSnapshots {
  FakeKernel kernel = kernel_of_an_older_mm();
  DeltaReconstructor r{two_cpus()};
  SnapshotQueue queue;
  RecordingSink sink;
  OlderMmWithSnapshots() { r.read_snapshots_from(&queue); }
};

// An mm that updated on both CPUs before the capture: only CPU 0 updates
// under it. Its updates have no baseline until a snapshot gives every
// member's count and slots; from there each update is exact, CPU 1's
// first one included.
TEST(DeltaReconstructor, ASnapshotMakesAnOldMmExact) {
  OlderMmWithSnapshots rig;
  auto& [kernel, r, queue, sink] = rig;
  uint64_t t = 1'000'000;
  for (int i = 0; i < 10; ++i, t += 1000)
    r.on_event(kernel.add(0, kAnonPages, 1, t), sink);
  EXPECT_EQ(r.snapshot_candidates(t, 8), std::vector<uint64_t>{kMm});
  auto [marker, values] = snapshot_of(kernel, 2, 1, t);
  std::array<int64_t, kMembers> precise{};
  for (int m = 0; m < kMembers; ++m) precise[m] = kernel.precise(m);
  queue.push(values);
  r.on_event(marker, sink);
  EXPECT_TRUE(r.snapshot_candidates(t, 8).empty()) << "every member known";
  const int32_t slot1_before = kernel.slot(kAnonPages, 1);
  r.on_event(kernel.add(1, kAnonPages, 1, t + 1000), sink);
  r.flush(sink);
  ASSERT_EQ(sink.baselines.size(), size_t{kMembers});
  for (const auto& [m, pages] : sink.baselines) EXPECT_EQ(pages, precise[m]);
  // The kernel's count of each member comes with it: a member the stream
  // has not shown since has a known count too.
  for (const auto& [m, count] : sink.kernel_counts) EXPECT_TRUE(count);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 11u);
  EXPECT_EQ(u[0].info.fidelity, Fidelity::kNoBaseline);
  EXPECT_EQ(u.back().info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u.back().update.delta, kernel.slot(kAnonPages, 1) - slot1_before);
  EXPECT_EQ(r.stats().snapshot_members, uint64_t{kMembers});
}

// The iterator reads after taking its record's number, so it may already
// hold adds whose records come after it: the first such record of each
// CPU shows the slot where the snapshot left it. It is flagged (its delta
// is not known: 0 given), and the value stays exact, also when the add
// that raced the read was a fold.
TEST(DeltaReconstructor, AnAddTheSnapshotAlreadyHoldsIsFlaggedAndAbsorbed) {
  for (const int amount : {1, 40}) {
    SCOPED_TRACE(amount == 1 ? "an add" : "a fold");
    OlderMmWithSnapshots rig;
    auto& [kernel, r, queue, sink] = rig;
    uint64_t t = 1'000'000;
    r.on_event(kernel.add(0, kAnonPages, 1, t), sink);
    const int64_t before = kernel.precise(kAnonPages);
    // CPU 1 adds; the snapshot's record is taken before its record.
    const rss_event raced = kernel.add(1, kAnonPages, amount, t + 2000);
    auto [marker, values] = snapshot_of(kernel, 2, 1, t + 1000);
    queue.push(values);
    r.on_event(marker, sink);
    r.on_event(raced, sink);
    r.on_event(kernel.add(1, kAnonPages, 1, t + 3000), sink);
    r.flush(sink);
    ASSERT_FALSE(sink.baselines.empty());
    EXPECT_EQ(sink.baselines[1].second, before + amount) << "it holds the add";
    const auto u = sink.updates();
    ASSERT_EQ(u.size(), 3u);
    EXPECT_EQ(u[1].info.fidelity, Fidelity::kAmbiguous);
    EXPECT_EQ(u[1].update.delta, 0);
    EXPECT_EQ(u[2].info.fidelity, Fidelity::kExact);
    EXPECT_EQ(u[2].update.delta, 1);
    EXPECT_EQ(r.stats().snapshot_absorbed, 1u);
  }
}

// A fold during the read moves `count` between its two reads: that
// member is not taken (it is asked for again later); the others are.
TEST(DeltaReconstructor, AMemberWhoseCountMovedDuringTheReadIsNotTaken) {
  OlderMmWithSnapshots rig;
  auto& [kernel, r, queue, sink] = rig;
  r.on_event(kernel.add(0, kAnonPages, 1, 1'000'000), sink);
  auto [marker, values] = snapshot_of(kernel, 2, 1, 1'001'000);
  values.head.count_after[kAnonPages] += 32;
  queue.push(values);
  r.on_event(marker, sink);
  r.flush(sink);
  EXPECT_EQ(r.stats().snapshot_raced, 1u);
  EXPECT_EQ(sink.baselines.size(), size_t{kMembers - 1});
  for (const auto& [m, pages] : sink.baselines) EXPECT_NE(m, kAnonPages);
  EXPECT_TRUE(r.snapshot_candidates(1'002'000, 8).empty()) << "backs off";
  EXPECT_EQ(r.snapshot_candidates(3'000'000'000, 8).size(), 1u);
}

// A record whose values the iterator did not write (its output overflowed
// and the task was read again under a later record), or with no queue at
// all (a replay), makes nothing known.
TEST(DeltaReconstructor, ASnapshotRecordWithoutValuesIsCountedNotUsed) {
  OlderMmWithSnapshots rig;
  auto& [kernel, r, queue, sink] = rig;
  r.on_event(kernel.add(0, kAnonPages, 1, 1'000'000), sink);
  auto [first, unread] = snapshot_of(kernel, 2, 1, 1'001'000);
  auto [second, values] = snapshot_of(kernel, 2, 2, 1'002'000);
  queue.push(values);
  r.on_event(first, sink);
  EXPECT_EQ(r.stats().snapshots_unread, 1u);
  EXPECT_EQ(queue.size(), 1u) << "a later snapshot's values wait";
  r.on_event(second, sink);
  r.flush(sink);
  EXPECT_EQ(sink.baselines.size(), size_t{kMembers});
  DeltaReconstructor replay(two_cpus());
  replay.on_event(kernel.add(0, kAnonPages, 1, 1'000'000), sink);
  replay.on_event(second, sink);
  EXPECT_EQ(replay.stats().snapshots_unread, 1u);
}

// A record flagged after a loss voids every mm's slots: each CPU's next
// update has no baseline until a snapshot.
TEST(DeltaReconstructor, ALossVoidsWhatWasKnown) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1'000'000;
  r.on_event(kernel.add(0, kAnonPages, 1, t, 100, RSS_EVF_CREATING), sink);
  kernel.add(0, kAnonPages, 1, t + 1000);  // lost
  r.on_event(kernel.add(0, kAnonPages, 1, t + 2000, 100,
                        RSS_EVF_OWNER | RSS_EVF_AFTER_LOSS),
             sink);
  r.flush(sink);
  EXPECT_EQ(r.stats().losses, 1u);
  // The loss between the two updates, once.
  ASSERT_EQ(sink.out.size(), 4u);
  EXPECT_EQ(sink.out[1].kind, Recorded::kUpdate);
  EXPECT_EQ(sink.out[2].kind, Recorded::kLoss);
  EXPECT_EQ(sink.out[3].kind, Recorded::kUpdate);
  EXPECT_TRUE(sink.baselines.empty());
  EXPECT_EQ(sink.out[3].info.fidelity, Fidelity::kNoBaseline);
}

// A loss voids every live mm, but costs one event however many live: a
// saturated capture flags a record after each loss, and one event per mm
// per loss grew the queue to 16 M events (gigabytes) with 2 000 mms.
TEST(DeltaReconstructor, ALossIsOneEventWhateverTheMmsAndVoidsEachLazily) {
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  constexpr int kMms = 2000, kLosses = 500;
  uint64_t t = 1'000'000;
  const auto update = [&](uint64_t mm, uint8_t flags) {
    rss_event e{};
    e.mm = mm;
    e.start_ns = t;
    e.span_ns = 100;
    e.tid = e.tgid = static_cast<uint32_t>(mm & 0xffff);
    e.slot = 1;
    e.kind = RSS_EV_UPDATE;
    e.member = kAnonPages;
    e.flags = flags;
    r.on_event(e, sink);
  };
  for (int i = 0; i < kMms; ++i) update(kMm + 0x1000 * i, RSS_EVF_CREATING);
  for (int i = 0; i < kLosses; ++i) {
    t += 10;
    update(kMm, RSS_EVF_OWNER | RSS_EVF_AFTER_LOSS);
  }
  r.flush(sink);
  EXPECT_EQ(r.stats().losses, uint64_t{kLosses});
  EXPECT_EQ(sink.count(Recorded::kLoss), size_t{kLosses});
  // Every mm's next update shows it voided: its slot is unknown again.
  t += 10;
  for (int i = 1; i < kMms; ++i) update(kMm + 0x1000 * i, RSS_EVF_OWNER);
  r.flush(sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), size_t{kMms + kLosses + kMms - 1});
  for (size_t i = kMms + kLosses; i < u.size(); ++i)
    EXPECT_EQ(u[i].info.fidelity, Fidelity::kNoBaseline) << i;
}

// However far behind the drain is, the held-back queue has a cap: past
// it the oldest events go out early, counted.
TEST(DeltaReconstructor, TheHeldBackQueueIsCappedAndItsForcedEmitsCounted) {
  ReconstructorOptions o = two_cpus();
  o.max_pending = 64;
  DeltaReconstructor r(o);
  RecordingSink sink;
  FakeKernel kernel(2);
  // Untimed records hold the queue until the stream moves on.
  r.on_event(kernel.add(0, kAnonPages, 1, 1'000'000, 100, RSS_EVF_CREATING),
             sink);
  for (int i = 0; i < 1000; ++i)
    r.on_event(kernel.add(0, kAnonPages, i % 2 ? -1 : 1, 0, 0), sink);
  EXPECT_GT(r.stats().forced_emits, 900u);
  EXPECT_GE(sink.updates().size(), 1001u - 65u);
  r.flush(sink);
  EXPECT_EQ(sink.updates().size(), 1001u);
}

// An update the capture did not time (start_ns 0: a non-zero slot, and a
// `count` its CPU's previous record showed) is exact from its slot, takes
// the latest time the stream showed, and waits for the stream to move on.
TEST(DeltaReconstructor, UntimedUpdatesAreExactAndTakeTheStreamsTime) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  const uint64_t t = 1'000'000;
  r.on_event(kernel.add(0, kAnonPages, 1, t, 100, RSS_EVF_CREATING), sink);
  for (int i = 0; i < 5; ++i)
    r.on_event(kernel.add(0, kAnonPages, 2, 0, 0), sink);
  r.advance(t + kGrace, sink);
  EXPECT_TRUE(sink.updates().empty());
  r.advance(t + 100 + kGrace + 1, sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 6u);
  for (size_t i = 1; i < u.size(); ++i) {
    EXPECT_EQ(u[i].info.fidelity, Fidelity::kExact);
    EXPECT_EQ(u[i].update.delta, 2);
    EXPECT_EQ(u[i].update.time_ns, t);
    EXPECT_EQ(u[i].info.end_ns, t);
  }
  EXPECT_EQ(r.stats().exact, 6u);
}

// The drop counter rose in the drain that brought the loss's flagged record:
// the record placed the loss already, and what the records after it
// re-established stays known.
TEST(DeltaReconstructor, ADropWhoseFlaggedRecordCameIsNotALossAgain) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1'000'000;
  r.on_event(kernel.add(0, kAnonPages, 1, t, 100, RSS_EVF_CREATING), sink);
  r.on_drops(0);
  kernel.add(0, kAnonPages, 1, t + 1000);  // lost
  r.on_event(kernel.add(0, kAnonPages, 1, t + 2000, 100,
                        RSS_EVF_OWNER | RSS_EVF_AFTER_LOSS),
             sink);
  r.on_event(kernel.add(0, kAnonPages, 1, t + 3000, 100, RSS_EVF_OWNER), sink);
  r.on_drops(1);
  r.on_event(kernel.add(0, kAnonPages, 1, t + 4000, 100, RSS_EVF_OWNER), sink);
  r.flush(sink);
  EXPECT_EQ(r.stats().losses, 1u);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[1].info.fidelity, Fidelity::kNoBaseline);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[2].update.delta, 1);
  EXPECT_EQ(u[3].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[3].update.delta, 1);
}

// A rise of the drop counter with no flagged record yet is a loss now:
// the next update has no baseline. An unchanged counter is no loss.
TEST(DeltaReconstructor, ADropWithoutAFlaggedRecordIsALoss) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  uint64_t t = 1'000'000;
  r.on_event(kernel.add(0, kAnonPages, 1, t, 100, RSS_EVF_CREATING), sink);
  r.on_drops(0);
  r.on_event(kernel.add(0, kAnonPages, 1, t + 1000, 100, RSS_EVF_OWNER), sink);
  r.on_drops(0);
  EXPECT_EQ(r.stats().losses, 0u);
  kernel.add(0, kAnonPages, 1, t + 2000);  // lost, its flag not seen yet
  r.on_drops(1);
  EXPECT_EQ(r.stats().losses, 1u);
  r.on_event(kernel.add(0, kAnonPages, 1, t + 3000, 100, RSS_EVF_OWNER), sink);
  r.flush(sink);
  const auto u = sink.updates();
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[1].info.fidelity, Fidelity::kExact);
  EXPECT_EQ(u[2].info.fidelity, Fidelity::kNoBaseline);
}

// rss_event.preempt: a page-table lock held since the add (depth 2 with the
// tracepoint's own), or none (depth 1).
rss_event by(rss_event e, uint32_t tid, uint8_t depth) {
  e.tid = tid;
  e.preempt = RSS_PREEMPT_KNOWN | depth;
  return e;
}

std::vector<Fidelity> fidelities(const RecordingSink& sink) {
  std::vector<Fidelity> f;
  for (const Recorded& u : sink.updates()) f.push_back(u.info.fidelity);
  return f;
}

int64_t sum_of_deltas(const RecordingSink& sink) {
  int64_t sum = 0;
  for (const Recorded& u : sink.updates()) sum += u.update.delta;
  return sum;
}

// A recording's header may claim any CPU count up to 8 192: what an mm
// costs follows the CPUs its records and snapshot name, not that count. A
// snapshot made every CPU's slot known, and an unlocked add made every
// other CPU's suspect, by writing each: 1 MB an mm at 8 192 CPUs.
TEST(DeltaReconstructor, AnMmCostsMemoryForTheCpusItsRecordsNameOnly) {
  constexpr uint32_t kCpus = 8192;
  FakeKernel kernel(kCpus);
  for (int i = 0; i < 45; ++i) kernel.add(i % 2 ? 8000 : 0, kAnonPages, 1, 0);
  ReconstructorOptions options = two_cpus();
  options.nr_cpus = kCpus;
  DeltaReconstructor r(options);
  SnapshotQueue queue;
  RecordingSink sink;
  r.read_snapshots_from(&queue);
  const size_t heap_before = mallinfo2().uordblks;
  uint64_t t = 1'000'000;
  const int m = kAnonPages;
  r.on_event(by(kernel.add(0, m, 1, t), 7, 2), sink);
  auto [marker, values] = snapshot_of(kernel, kCpus, 1, t += 1000);
  queue.push(values);
  r.on_event(marker, sink);
  r.on_event(by(kernel.add(8000, m, 1, t += 1000), 8, 2), sink);
  kernel.add(100, m, 1, t += 1000);  // task 7, unlocked, no record
  r.on_event(by(kernel.record(0, m, t += 1000, 0, RSS_EVF_OWNER), 7, 1), sink);
  r.on_event(by(kernel.add(100, m, 1, t += 10'000), 8, 2), sink);
  r.on_event(by(kernel.add(5000, m, 1, t += 1000), 8, 2), sink);
  const size_t grown = mallinfo2().uordblks - heap_before;
  r.flush(sink);
  EXPECT_EQ(r.stats().snapshot_members, uint64_t{kMembers});
  EXPECT_EQ(r.stats().unlocked, 1u);
  // CPUs 0, 100, 5000 and 8000: three chunks of 64 CPUs, 8 KiB each.
  EXPECT_LT(grown, size_t{64} << 10) << "bytes for one mm at 8 192 CPUs";
  const auto f = fidelities(sink);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f.back(), Fidelity::kAmbiguous) << "CPU 5000: suspect, unwritten";
}

// A preemptible kernel: task 7 adds on CPU 1 without a lock, is preempted,
// and its record is taken on CPU 0, whose slot it did not touch. Task 8's
// records on CPU 1 take its page: one since task 7's previous record (the
// add may have come before either), and CPU 1's next one after it.
TEST(DeltaReconstructor, AnUnlockedAddIsFlaggedWithTheRecordsItMayHaveUpset) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  const int m = kAnonPages;
  const uint64_t us = 10'000;  // 10 us apart: beyond any slack
  r.on_event(by(kernel.add(0, m, 3, 1 * us, 100, RSS_EVF_CREATING), 9, 2),
             sink);
  r.on_event(by(kernel.add(0, m, 1, 2 * us, 100, RSS_EVF_OWNER), 7, 2), sink);
  r.on_event(by(kernel.add(1, m, 2, 3 * us), 8, 2), sink);
  kernel.add(1, m, 1, 4 * us);                              // task 7, no record
  r.on_event(by(kernel.add(1, m, 4, 5 * us), 8, 2), sink);  // shows 1 + 4
  r.on_event(by(kernel.record(0, m, 6 * us, 0, RSS_EVF_OWNER), 7, 1), sink);
  kernel.add(1, m, 1, 7 * us);  // task 7 again
  r.on_event(by(kernel.record(0, m, 8 * us, 0, RSS_EVF_OWNER), 7, 1), sink);
  r.on_event(by(kernel.add(1, m, 1, 9 * us), 8, 2), sink);  // shows 1 + 1
  r.on_event(by(kernel.add(1, m, 1, 10 * us), 8, 2), sink);
  r.flush(sink);

  using F = Fidelity;
  EXPECT_EQ(
      fidelities(sink),
      (std::vector<F>{F::kExact, F::kExact, F::kAmbiguous, F::kAmbiguous,
                      F::kAmbiguous, F::kAmbiguous, F::kAmbiguous, F::kExact}));
  EXPECT_EQ(sum_of_deltas(sink), kernel.precise(m));
  EXPECT_EQ(r.stats().unlocked, 2u);
  EXPECT_EQ(r.stats().late_overlaps, 0u);
}

// The same add with its upset record emitted already (held back no longer
// than grace_ns): it cannot be flagged, so it is counted.
TEST(DeltaReconstructor, AnUnlockedAddLaterThanTheGraceIsCounted) {
  FakeKernel kernel(2);
  DeltaReconstructor r(two_cpus());
  RecordingSink sink;
  const int m = kAnonPages;
  uint64_t t = 1'000'000;
  r.on_event(by(kernel.add(0, m, 3, t, 100, RSS_EVF_CREATING), 7, 2), sink);
  r.on_event(by(kernel.add(0, m, 1, t += 1000, 100, RSS_EVF_OWNER), 7, 2),
             sink);
  kernel.add(1, m, 1, t += 1000);  // task 7, preempted for 3 ms
  r.on_event(by(kernel.add(1, m, 4, t += 1000), 8, 2), sink);
  r.advance(t += 3 * kGrace, sink);
  r.on_event(by(kernel.record(0, m, t, 0, RSS_EVF_OWNER), 7, 1), sink);
  r.flush(sink);
  EXPECT_EQ(r.stats().late_overlaps, 1u);
  EXPECT_EQ(fidelities(sink).back(), Fidelity::kAmbiguous);
}

// Only an unlocked add on a kernel that may preempt there is flagged: not
// a locked one, not one whose depth is unknown (0: older recordings, a
// CPU where it could not be read), not one on a non-preemptible kernel.
TEST(DeltaReconstructor, OnlyUnlockedAddsOnAPreemptibleKernelAreFlagged) {
  for (const bool preemptible : {true, false}) {
    FakeKernel kernel(2);
    ReconstructorOptions options = two_cpus();
    options.preemptible = preemptible;
    DeltaReconstructor r(options);
    RecordingSink sink;
    const int m = kAnonPages;
    r.on_event(by(kernel.add(0, m, 3, 10'000, 100, RSS_EVF_CREATING), 7, 2),
               sink);
    r.on_event(by(kernel.add(1, m, 2, 20'000), 8, 3), sink);
    rss_event unknown = kernel.add(0, m, 1, 30'000);
    unknown.tid = 7;
    r.on_event(unknown, sink);
    r.on_event(by(kernel.add(0, m, 1, 40'000, 100, RSS_EVF_OWNER), 7, 1), sink);
    r.on_event(by(kernel.add(1, m, 1, 50'000), 8, 2), sink);
    r.flush(sink);
    const auto f = fidelities(sink);
    ASSERT_EQ(f.size(), 5u);
    for (size_t i = 0; i < f.size(); ++i)
      EXPECT_EQ(f[i],
                preemptible && i >= 3 ? Fidelity::kAmbiguous : Fidelity::kExact)
          << "update " << i << (preemptible ? ", preemptible" : "");
    EXPECT_EQ(r.stats().unlocked, preemptible ? 1u : 0u);
    EXPECT_EQ(sum_of_deltas(sink), kernel.precise(m));
  }
}

}  // namespace
}  // namespace rssaudit
