#include "core/sim/simulation.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace rssaudit {
namespace {

std::map<std::string, SchemeOutcome> by_name(const SimulationResult& r) {
  std::map<std::string, SchemeOutcome> out;
  for (const SchemeOutcome& s : r.schemes) out[std::string(s.name)] = s;
  return out;
}

SimulationResult run(WorkloadKind kind, uint32_t cpus, uint64_t updates,
                     uint64_t seed = 1) {
  WorkloadParams p;
  p.kind = kind;
  p.updates = updates;
  p.seed = seed;
  return simulate(Topology::for_cpus(cpus), p);
}

// Sums what a workload does to each member, to check it is self-consistent.
struct SumSink {
  int mms = 0, open = 0;
  std::array<int64_t, kMembers> sum{};
  int second_users = 0;
  void begin_mm() { ++mms, ++open; }
  void update(const Update& u) { sum[u.member] += u.delta; }
  void event(const LifeEvent& e) {
    second_users += e.kind == LifeKind::kSecondUser;
  }
  void end_mm() {
    --open;
    for (int64_t s : sum) ASSERT_EQ(s, 0) << "an mm ended holding pages";
  }
};

TEST(Workload, EveryWorkloadReturnsEachMmToZero) {
  for (auto kind : {WorkloadKind::kHop, WorkloadKind::kThreads,
                    WorkloadKind::kOscillate, WorkloadKind::kForkstorm}) {
    WorkloadParams p;
    p.kind = kind;
    p.updates = 50'000;
    SumSink sink;
    WorkloadGenerator<SumSink>(p, 16, sink).run();
    EXPECT_EQ(sink.open, 0) << workload_name(kind);
    EXPECT_GE(sink.mms, 1);
  }
}

TEST(Workload, ThreadsCloneOneSecondUserPerExtraThread) {
  WorkloadParams p;
  p.kind = WorkloadKind::kThreads;
  p.updates = 200'000;
  p.threads = 8;
  SumSink sink;
  WorkloadGenerator<SumSink>(p, 8, sink).run();
  EXPECT_EQ(sink.second_users, 7);
}

TEST(Workload, NamesRoundTrip) {
  for (auto name : {"hop", "threads", "oscillate", "forkstorm"})
    EXPECT_EQ(workload_name(*parse_workload(name)), name);
  EXPECT_FALSE(parse_workload("storm"));
}

TEST(Simulation, SameSeedSameResult) {
  const auto a = by_name(run(WorkloadKind::kHop, 64, 100'000, 7));
  const auto b = by_name(run(WorkloadKind::kHop, 64, 100'000, 7));
  for (const auto& [name, s] : a) {
    EXPECT_EQ(s.largest_error, b.at(name).largest_error) << name;
    EXPECT_EQ(s.shared_updates, b.at(name).shared_updates) << name;
  }
}

TEST(Simulation, HopDriftsUpstreamButNotTheLazySchemes) {
  const SimulationResult r = run(WorkloadKind::kHop, 384, 300'000);
  const auto s = by_name(r);
  EXPECT_GE(r.updates, 300'000u);
  EXPECT_GT(s.at("upstream").largest_error, 0);
  EXPECT_LE(s.at("upstream").largest_error, *s.at("upstream").bound);
  // One task: HPCC and the lazy percpu counter never leave exact mode.
  EXPECT_EQ(s.at("hpcc").largest_error, 0);
  EXPECT_EQ(*s.at("hpcc").bound, 0);
  EXPECT_EQ(s.at("lazy_percpu").largest_error, 0);
  EXPECT_LT(s.at("hpcc").bytes_per_mm, s.at("upstream").bytes_per_mm);
}

TEST(Simulation, ThreadsActivateHpccAndStayWithinEveryBound) {
  const auto s = by_name(run(WorkloadKind::kThreads, 1024, 300'000));
  for (const char* name : {"upstream", "hpcc", "lazy_percpu", "sync_query"}) {
    ASSERT_TRUE(s.at(name).bound) << name;
    EXPECT_GT(*s.at(name).bound, 0) << name;
    EXPECT_LE(s.at(name).largest_error, *s.at(name).bound) << name;
  }
  EXPECT_GT(s.at("hpcc").largest_error, 0);
  EXPECT_LT(*s.at("hpcc").bound, *s.at("upstream").bound);
}

TEST(Simulation, ForkstormExitedChildrenAreExactOnlyWithSyncBeforeQuery) {
  const SimulationResult r = run(WorkloadKind::kForkstorm, 64, 200'000);
  const auto s = by_name(r);
  EXPECT_GT(r.mms, 100u);
  EXPECT_EQ(s.at("sync_query").final_error, 0);
  EXPECT_EQ(s.at("hpcc").final_error, 0);  // single-threaded: exact
  EXPECT_GT(s.at("upstream").largest_error, 0);
}

TEST(Simulation, ReportsProgress) {
  uint64_t last = 0;
  int calls = 0;
  WorkloadParams p;
  p.updates = 3'000'000;
  simulate(Topology::for_cpus(4), p, [&](uint64_t done) {
    EXPECT_GT(done, last);
    last = done;
    ++calls;
  });
  EXPECT_GE(calls, 2);
}

}  // namespace
}  // namespace rssaudit
