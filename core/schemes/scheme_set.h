// Every counting scheme fed the same stream, dispatched statically.
#pragma once

#include <array>
#include <cstddef>
#include <tuple>

#include "core/schemes/hpcc_tree.h"
#include "core/schemes/lazy_percpu.h"
#include "core/schemes/per_cpu_cache.h"
#include "core/schemes/per_task_cache.h"
#include "core/schemes/scheme.h"
#include "core/schemes/sync_before_query.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {

template <CountingScheme... S>
class SchemeTuple {
 public:
  static constexpr size_t kCount = sizeof...(S);
  static constexpr std::array<std::string_view, kCount> kNames = {S::kName...};

  explicit SchemeTuple(const Topology& t) : schemes_(S(t)...) {}

  void add(const Update& u) {
    std::apply([&](S&... s) { (s.add(u), ...); }, schemes_);
  }
  // Bit i set: scheme i's approximate() may have changed.
  uint32_t on_event(const LifeEvent& e) {
    return on_event_impl(e, std::index_sequence_for<S...>{});
  }
  // Calls f(index, scheme) for each scheme, in kNames order.
  template <class F>
  void for_each(F&& f) const {
    for_each_impl(f, std::index_sequence_for<S...>{});
  }
  template <class T>
  const T& get() const {
    return std::get<T>(schemes_);
  }

 private:
  template <size_t... I>
  uint32_t on_event_impl(const LifeEvent& e, std::index_sequence<I...>) {
    return ((uint32_t{std::get<I>(schemes_).on_event(e)} << I) | ...);
  }
  template <class F, size_t... I>
  void for_each_impl(F& f, std::index_sequence<I...>) const {
    (f(I, std::get<I>(schemes_)), ...);
  }

  std::tuple<S...> schemes_;
};

using SchemeSet = SchemeTuple<UpstreamPercpu, HpccTree, PerTaskCache,
                              PerCpuCache, LazyPercpu, SyncBeforeQuery>;

// The index in SchemeSet of the audited kernel's own scheme: upstream
// since Linux 6.2, per_task before (`task_cache`).
constexpr size_t kernel_scheme(bool task_cache) {
  constexpr size_t kUpstream = 0, kPerTask = 2;
  static_assert(SchemeSet::kNames[kUpstream] == UpstreamPercpu::kName);
  static_assert(SchemeSet::kNames[kPerTask] == PerTaskCache::kName);
  return task_cache ? kPerTask : kUpstream;
}

}  // namespace rssaudit
