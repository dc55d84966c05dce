#include "core/schemes/lazy_percpu.h"

namespace rssaudit {

bool LazyPercpu::on_event(const LifeEvent& e) {
  // copy_mm() of a clone(CLONE_VM) without CLONE_VFORK: the first second
  // thread allocates the percpu_counter holding the exact value so far.
  if (e.kind != LifeKind::kSecondUser || upstream_) return false;
  Topology t;
  t.nr_cpus = nr_cpus_;
  t.upstream_batch = batch_;
  upstream_ = std::make_unique<UpstreamPercpu>(t);
  for (int m = 0; m < kMembers; ++m)
    upstream_->add_to_count(m, plain_[m] + atomic_[m]);
  return false;  // the counter holds the same value
}

size_t LazyPercpu::bytes_per_mm() const {
  // The plain and atomic s64 per member live in the mm; the upgrade adds the
  // percpu_counter and its per-CPU slots.
  constexpr size_t kEmbedded = kMembers * 2 * sizeof(int64_t);
  return kEmbedded + (upstream_ ? upstream_->bytes_per_mm() : 0);
}

}  // namespace rssaudit
