// What every counting scheme model answers. Schemes are plain classes checked
// by this concept and dispatched statically (SchemeSet): no virtual call per
// update on the hot path.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/schemes/update.h"

namespace rssaudit {

// Largest |approximate - precise| a reader can see, in pages; nullopt when
// the scheme has no static bound (the error grows until a sync).
using Bound = std::optional<int64_t>;

// Cache lines one read of one counter touches, as the scheme's readers do
// it for this mm now (docs/counters.md, "What a read costs"): the price the
// schemes pay for accuracy. `precise` empty: the scheme offers no precise
// read.
struct ReadCost {
  int64_t approximate = 1;
  std::optional<int64_t> precise = 1;

  bool operator==(const ReadCost&) const = default;
};

template <class S>
concept CountingScheme = requires(S s, const S cs, const Update& u,
                                  const LifeEvent& e, int member) {
  { S::kName } -> std::convertible_to<std::string_view>;
  { s.add(u) } -> std::same_as<void>;
  // Returns whether approximate() of some member may have changed.
  { s.on_event(e) } -> std::same_as<bool>;
  // What the scheme's approximate readers (stat field 24, VmHWM, rusage)
  // get, before any clamping at 0: O(1) for most schemes.
  { cs.approximate(member) } -> std::same_as<int64_t>;
  // The scheme's precise read (may cost O(CPUs)).
  { cs.precise(member) } -> std::same_as<int64_t>;
  { cs.bound(member) } -> std::same_as<Bound>;
  // Updates that touched shared state: atomics, locks, carries up a tree.
  { cs.shared_updates() } -> std::same_as<uint64_t>;
  // Memory the scheme holds for this mm now, by its kernel design.
  { cs.bytes_per_mm() } -> std::same_as<size_t>;
  { cs.read_cost() } -> std::same_as<ReadCost>;
};

}  // namespace rssaudit
