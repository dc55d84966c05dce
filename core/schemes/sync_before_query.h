// Scheme 6: Michal Koutný's RFC. The upstream percpu_counter (scheme 1), plus
// a fold of every slot into count when the mm exits and before rusage or
// taskstats are read, so an exited child's numbers are exact. Updates of a
// running process are unchanged.
#pragma once

#include <cstdint>

#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {

class SyncBeforeQuery {
 public:
  static constexpr std::string_view kName = "sync_query";

  explicit SyncBeforeQuery(const Topology& t) : upstream_(t) {}

  void add(const Update& u) { upstream_.add(u); }
  bool on_event(const LifeEvent& e);

  int64_t approximate(int member) const {
    return upstream_.approximate(member);
  }
  int64_t precise(int member) const { return upstream_.precise(member); }
  Bound bound(int member) const { return upstream_.bound(member); }
  uint64_t shared_updates() const { return upstream_.shared_updates(); }
  size_t bytes_per_mm() const { return upstream_.bytes_per_mm(); }
  // Reads as upstream; its O(CPUs) folds at exit and rusage are no read.
  ReadCost read_cost() const { return upstream_.read_cost(); }

  const UpstreamPercpu& upstream() const { return upstream_; }

 private:
  UpstreamPercpu upstream_;
};

static_assert(CountingScheme<SyncBeforeQuery>);

}  // namespace rssaudit
