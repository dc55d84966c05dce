// Scheme 5: Gabriel Krisman Bertazi's lazy percpu counter RFC. While one
// thread uses the mm, the owner adds to a plain count and other tasks to an
// atomic: exact, O(1), no per-CPU memory. A second thread upgrades the mm to
// the upstream percpu_counter (scheme 1), seeded with the value so far.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "core/schemes/scheme.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit {

class LazyPercpu {
 public:
  static constexpr std::string_view kName = "lazy_percpu";

  explicit LazyPercpu(const Topology& t)
      : nr_cpus_(t.nr_cpus), batch_(t.upstream_batch) {}

  void add(const Update& u) {
    if (upstream_) {
      upstream_->add(u);
    } else if (u.by_owner()) {
      plain_[u.member] += u.delta;
    } else {
      atomic_[u.member] += u.delta;
      ++shared_updates_;
    }
  }
  bool on_event(const LifeEvent& e);

  int64_t approximate(int member) const {
    return upstream_ ? upstream_->approximate(member)
                     : plain_[member] + atomic_[member];
  }
  int64_t precise(int member) const {
    return upstream_ ? upstream_->precise(member)
                     : plain_[member] + atomic_[member];
  }
  Bound bound(int member) const {
    return upstream_ ? upstream_->bound(member) : Bound{0};
  }
  uint64_t shared_updates() const {
    return shared_updates_ + (upstream_ ? upstream_->shared_updates() : 0);
  }
  size_t bytes_per_mm() const;
  // One line (plain count and atomic) until the percpu_counter exists.
  ReadCost read_cost() const {
    return upstream_ ? upstream_->read_cost() : ReadCost{1, 1};
  }

  // The percpu_counter, once a second thread has allocated it.
  const UpstreamPercpu* upstream() const { return upstream_.get(); }

 private:
  // What the percpu_counter needs, kept without the Topology's HPCC shape.
  uint32_t nr_cpus_;
  int32_t batch_;
  std::array<int64_t, kMembers> plain_{};
  std::array<int64_t, kMembers> atomic_{};
  uint64_t shared_updates_ = 0;  // atomic adds before the upgrade
  std::unique_ptr<UpstreamPercpu> upstream_;
};

static_assert(CountingScheme<LazyPercpu>);

}  // namespace rssaudit
