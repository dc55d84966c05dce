#include "core/sim/simulation.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "core/schemes/mm_audit.h"

namespace rssaudit {
namespace {

// Adds one finished mm to a run's totals: the largest errors, bytes and
// read costs, summed shared updates, the bound of the worst mm (none if any
// mm has none), and this mm's final error as the run's last.
void accumulate(std::vector<SchemeOutcome>& run,
                const std::vector<SchemeOutcome>& mm) {
  for (size_t i = 0; i < mm.size(); ++i) {
    SchemeOutcome& r = run[i];
    const SchemeOutcome& o = mm[i];
    r.largest_error = std::max(r.largest_error, o.largest_error);
    r.shared_updates += o.shared_updates;
    r.bytes_per_mm = std::max(r.bytes_per_mm, o.bytes_per_mm);
    r.read_cost.approximate =
        std::max(r.read_cost.approximate, o.read_cost.approximate);
    r.read_cost.precise = r.read_cost.precise && o.read_cost.precise
                              ? std::optional(std::max(*r.read_cost.precise,
                                                       *o.read_cost.precise))
                              : std::nullopt;
    r.final_error = o.final_error;
    r.bound =
        r.bound && o.bound ? Bound(std::max(*r.bound, *o.bound)) : Bound();
  }
}

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
    accumulate(result_.schemes, mm_outcomes(*mm_));
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

std::vector<SchemeOutcome> mm_outcomes(const MmAudit& mm) {
  std::vector<SchemeOutcome> out;
  mm.schemes().for_each([&](size_t i, const auto& s) {
    SchemeOutcome o;
    o.name = SchemeSet::kNames[i];
    o.bound = 0;  // raised to the largest member bound, or none below
    o.largest_error = mm.largest_error()[i];
    o.shared_updates = s.shared_updates();
    o.bytes_per_mm = s.bytes_per_mm();
    o.read_cost = s.read_cost();
    for (int m = 0; m < kMembers; ++m) {
      const int64_t e = s.approximate(m) - mm.exact(m);
      if (std::llabs(e) > std::llabs(o.final_error)) o.final_error = e;
      const Bound b = s.bound(m);
      o.bound = o.bound && b ? Bound(std::max(*o.bound, *b)) : Bound();
    }
    out.push_back(o);
  });
  return out;
}

SimulationResult simulate(const Topology& t, const WorkloadParams& p,
                          const std::function<void(uint64_t)>& progress) {
  SimulationResult result;
  SimulationSink sink(t, progress, result);
  WorkloadGenerator<SimulationSink>(p, t.nr_cpus, sink).run();
  return result;
}

}  // namespace rssaudit
