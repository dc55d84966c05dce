// Seeded streams that interleave counter updates with life-cycle events, for
// the schemes whose behaviour depends on faults, CPU switches, threads and
// exits. Complements random_stream() (owner fault updates only).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/schemes/update.h"
#include "tests/core/schemes/scheme_invariants.h"

namespace rssaudit::testing {

// One step of a stream: an update, or a life event when `is_event`.
struct Step {
  bool is_event = false;
  Update update;
  LifeEvent event;
};

// About n steps on nr_cpus CPUs. One thread runs until a second user appears
// (within the first half), then `threads` threads. Each page fault is a
// kFault followed by 0..3 updates from that thread on one CPU; the owner also
// updates outside faults (munmap, zap) and other tasks update remotely. CPU
// switches, rusage queries and thread exits come at random. No kMmExit:
// tests end with it themselves.
inline std::vector<Step> life_stream(uint64_t seed, size_t n, uint32_t nr_cpus,
                                     int32_t max_delta, uint32_t threads = 4) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> cpu(0, nr_cpus - 1);
  std::uniform_int_distribution<int32_t> delta(-max_delta, max_delta + 1);
  std::uniform_int_distribution<int> member(0, kMembers - 1);
  std::uniform_int_distribution<int> per_fault(0, 3);
  std::uniform_int_distribution<int> pick(0, 99);
  const size_t second_user =
      std::uniform_int_distribution<size_t>(0, n / 2)(rng);
  uint32_t live_threads = 1;

  std::vector<Step> out;
  out.reserve(n + 3);
  auto update = [&](uint32_t task, uint32_t on_cpu, uint8_t flags) {
    Step s;
    s.update = Update{.time_ns = out.size(),
                      .task = task,
                      .cpu = on_cpu,
                      .delta = delta(rng),
                      .member = static_cast<uint8_t>(member(rng)),
                      .flags = flags};
    out.push_back(s);
  };
  auto event = [&](LifeKind kind, uint32_t task, uint32_t on_cpu) {
    Step s;
    s.is_event = true;
    s.event = LifeEvent{.kind = kind, .task = task, .cpu = on_cpu};
    out.push_back(s);
  };
  while (out.size() < n) {
    if (live_threads == 1 && out.size() >= second_user) {
      event(LifeKind::kSecondUser, kFirstTid + 1, cpu(rng));
      live_threads = threads;
      continue;
    }
    const uint32_t task = kFirstTid + rng() % live_threads;
    const uint32_t on_cpu = cpu(rng);
    const int p = pick(rng);
    if (p < 50) {
      event(LifeKind::kFault, task, on_cpu);
      for (int i = per_fault(rng); i > 0; --i)
        update(task, on_cpu, kOwnerFault);
    } else if (p < 65) {
      update(task, on_cpu, kUpdateByOwner);
    } else if (p < 85) {
      update(kRemoteTid, on_cpu, 0);
    } else if (p < 96) {
      event(LifeKind::kCpuSwitch, task, on_cpu);
    } else if (p < 98) {
      event(LifeKind::kRusageQuery, task, on_cpu);
    } else if (live_threads > 1) {
      // The exiting tid may come back later as a new thread.
      event(LifeKind::kTaskExit, task, on_cpu);
    }
  }
  return out;
}

template <CountingScheme S>
void apply(InvariantChecker<S>& check, const Step& s) {
  if (s.is_event)
    check.event(s.event);
  else
    check.apply(s.update);
}

inline LifeEvent life_event(LifeKind kind, uint32_t task = kFirstTid,
                            uint32_t cpu = 0) {
  return LifeEvent{.kind = kind, .task = task, .cpu = cpu};
}

}  // namespace rssaudit::testing
