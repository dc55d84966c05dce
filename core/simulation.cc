#include "core/simulation.h"

#include <algorithm>
#include <memory>

#include "core/mm_audit.h"

namespace rssaudit {
namespace {

// Feeds each mm of the workload to a fresh MmAudit and folds its outcome
// into the result when the mm ends.
class SimulationSink {
 public:
  SimulationSink(const Topology& t, const std::function<void(uint64_t)>& p,
                 SimulationResult& r)
      : topology_(t), progress_(p), result_(r) {
    for (std::string_view name : SchemeSet::kNames)
      result_.schemes.push_back(SchemeOutcome{name, 0, 0, 0, 0, 0});
  }

  void begin_mm() { mm_ = std::make_unique<MmAudit>(topology_); }
  void update(const Update& u) {
    mm_->add(u);
    if ((++result_.updates & kProgressMask) == 0 && progress_)
      progress_(result_.updates);
  }
  void event(const LifeEvent& e) { mm_->on_event(e); }
  void end_mm() {
    ++result_.mms;
    result_.peak_rss = std::max(result_.peak_rss, mm_->peak_rss());
    mm_->schemes().for_each([&](size_t i, const auto& s) {
      SchemeOutcome& o = result_.schemes[i];
      o.largest_error = std::max(o.largest_error, mm_->largest_error()[i]);
      o.shared_updates += s.shared_updates();
      o.bytes_per_mm = std::max(o.bytes_per_mm, s.bytes_per_mm());
      int64_t worst = 0;
      for (int m = 0; m < kMembers; ++m) {
        const int64_t e = s.approximate(m) - mm_->exact(m);
        if ((e < 0 ? -e : e) > (worst < 0 ? -worst : worst)) worst = e;
      }
      o.final_error = worst;
      Bound b = o.bound;
      for (int m = 0; m < kMembers && b; ++m) {
        const Bound mb = s.bound(m);
        b = mb ? std::max(*b, *mb) : mb;
      }
      o.bound = b;
    });
    mm_.reset();
  }

 private:
  static constexpr uint64_t kProgressMask = (1u << 20) - 1;
  const Topology& topology_;
  const std::function<void(uint64_t)>& progress_;
  SimulationResult& result_;
  std::unique_ptr<MmAudit> mm_;
};

}  // namespace

SimulationResult simulate(const Topology& t, const WorkloadParams& p,
                          const std::function<void(uint64_t)>& progress) {
  SimulationResult result;
  SimulationSink sink(t, progress, result);
  WorkloadGenerator<SimulationSink>(p, t.nr_cpus, sink).run();
  return result;
}

}  // namespace rssaudit
