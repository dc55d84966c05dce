#include "audit/audit_pipeline.h"

#include <algorithm>
#include <tuple>

namespace rssaudit {

void rank_by_error(std::vector<MmSummary>& mms) {
  auto key = [](const MmSummary& m) {
    const int64_t d = m.drift() < 0 ? -m.drift() : m.drift();
    const int64_t now = m.alive && m.drift_known() ? d : 0;
    return std::tuple(
        std::max(m.largest_error[kernel_scheme(m.task_cache)], now), m.peak_rss,
        m.updates);
  };
  std::sort(
      mms.begin(), mms.end(),
      [&](const MmSummary& a, const MmSummary& b) { return key(a) > key(b); });
}

Topology topology_of(const RecordHeader& h) {
  Topology t = Topology::for_cpus(h.nr_cpu_ids);
  t.upstream_batch = h.percpu_batch;
  return t;
}

AuditPipeline::AuditPipeline(const Topology& t, size_t finished_kept)
    : topology_(t), finished_kept_(finished_kept) {}

AuditPipeline::LiveMm* AuditPipeline::find(const MmKey& key) {
  if (last_ && last_->summary.key == key) {
    catch_up(*last_);
    return last_;
  }
  auto it = live_.find(key.addr);
  if (it == live_.end() || !(it->second->summary.key == key)) return nullptr;
  catch_up(*it->second);
  return last_ = it->second.get();
}

void AuditPipeline::catch_up(LiveMm& mm) const {
  if (!losses_.catch_up(mm.loss_epoch)) return;
  // The models no longer see every update either, and the kernel's count
  // moved unseen.
  mm.exact_known.fill(false);
  mm.kernel_count_known.fill(false);
  mm.model_synced = false;
}

const AuditPipeline::LiveMm* AuditPipeline::live(const MmKey& key) const {
  const auto it = live_.find(key.addr);
  if (it == live_.end() || !(it->second->summary.key == key)) return nullptr;
  catch_up(*it->second);
  return it->second.get();
}

void AuditPipeline::on_mm_created(const MmKey& mm, bool from_zero) {
  auto live = std::make_unique<LiveMm>(topology_);
  live->summary.key = mm;
  live->summary.from_zero = from_zero;
  live->exact_known.fill(from_zero);
  live->kernel_count_known.fill(from_zero);  // every count started at 0
  live->model_synced = from_zero;
  live->loss_epoch = losses_.now();
  if (last_ && last_->summary.key.addr == mm.addr) last_ = nullptr;
  live_[mm.addr] = std::move(live);
}

void AuditPipeline::on_update(const MmKey& key, const Update& u,
                              const UpdateInfo& info) {
  LiveMm* mm = find(key);
  if (!mm) return;  // the reconstructor always announces an mm first
  MmSummary& s = mm->summary;
  ++s.updates;
  s.task_cache |= info.task_cache;
  if (!s.tgid && u.by_owner()) s.tgid = info.tgid;
  mm->kernel_count[u.member] = info.kernel_count;
  mm->kernel_count_known[u.member] = true;
  mm->audit.add(u);
  if (info.fidelity == Fidelity::kNoBaseline) mm->exact_known[u.member] = false;
  if (!mm->model_synced) {
    // From a snapshot or relative: the true peak counts from the baseline,
    // and no
    // model holds the kernel's per-CPU state, so fidelity is not checked.
    s.flagged +=
        info.fidelity != Fidelity::kExact || !mm->exact_known[u.member];
    if (mm->rss_known()) {
      const int64_t rss = mm->exact(kFilePages) + mm->exact(kAnonPages) +
                          mm->exact(kShmemPages);
      if (rss > mm->peak_since_baseline) mm->peak_since_baseline = rss;
    }
    return;
  }
  if (info.fidelity != Fidelity::kExact) {
    ++s.flagged;
    return;
  }
  // Before 6.2 a cached update leaves the atomic as it was: the model is
  // checked where the atomic moves (an add, a fold).
  if (info.task_cache && u.in_fault()) {
    ++s.cached;
    return;
  }
  check_fidelity(*mm, u.member, info);
}

void AuditPipeline::check_fidelity(LiveMm& mm, int member,
                                   const UpdateInfo& info) {
  // The model of the kernel's own scheme must hold the kernel's count.
  const SchemeSet& models = mm.audit.schemes();
  const int64_t modelled =
      info.task_cache ? models.get<PerTaskCache>().approximate(member)
                      : models.get<UpstreamPercpu>().approximate(member);
  const bool match = modelled == info.kernel_count;
  MmSummary& s = mm.summary;
  ++s.fidelity_checked;
  ++fidelity_checked_;
  s.fidelity_matched += match;
  fidelity_matched_ += match;
}

void AuditPipeline::on_cache_fold(const MmKey& key, const LifeEvent& sync,
                                  const UpdateInfo& info) {
  LiveMm* mm = find(key);
  if (!mm) return;
  const auto member = static_cast<int>(sync.count);
  mm->audit.on_event(sync);
  mm->kernel_count[member] = info.kernel_count;
  mm->kernel_count_known[member] = true;
  if (mm->model_synced && info.fidelity == Fidelity::kExact) {
    ++mm->summary.folds;
    check_fidelity(*mm, member, info);
  }
}

void AuditPipeline::on_life(const MmKey& key, const LifeEvent& e) {
  LiveMm* mm = find(key);
  if (!mm) return;
  mm->audit.on_event(e);
  if (e.process_ended && e.process == mm->summary.tgid) {
    mm->summary.owner_ended = true;
    mm->summary.owner_start_ticks = e.start_ticks;
  }
}

void AuditPipeline::on_baseline(const MmKey& key, int member,
                                std::optional<int64_t> pages,
                                std::optional<int64_t> kernel_count) {
  LiveMm* mm = find(key);
  if (!mm) return;
  if (kernel_count) {
    mm->kernel_count[member] = *kernel_count;
    mm->kernel_count_known[member] = true;
  }
  if (!pages) {
    // A baseline taken back: what it made known, and what the stream showed
    // of the kernel's count since, is not known after all.
    mm->exact_known[member] = false;
    return;
  }
  mm->baseline[member] = *pages - mm->audit.exact(member);
  mm->exact_known[member] = true;
  if (mm->rss_known()) {
    const int64_t rss =
        mm->exact(kFilePages) + mm->exact(kAnonPages) + mm->exact(kShmemPages);
    if (rss > mm->peak_since_baseline) mm->peak_since_baseline = rss;
  }
}

void AuditPipeline::refresh(LiveMm& mm) const {
  catch_up(mm);
  MmSummary& s = mm.summary;
  s.absolute = mm.rss_known();
  s.exact_rss =
      mm.exact(kFilePages) + mm.exact(kAnonPages) + mm.exact(kShmemPages);
  s.kernel_rss = mm.kernel_count[kFilePages] + mm.kernel_count[kAnonPages] +
                 mm.kernel_count[kShmemPages];
  s.kernel_known = mm.kernel_count_known[kFilePages] &&
                   mm.kernel_count_known[kAnonPages] &&
                   mm.kernel_count_known[kShmemPages];
  s.peak_rss =
      mm.summary.from_zero ? mm.audit.peak_rss() : mm.peak_since_baseline;
  s.largest_error = mm.audit.largest_error();
}

void AuditPipeline::on_mm_destroyed(const MmKey& key) {
  LiveMm* mm = find(key);
  if (!mm) return;
  refresh(*mm);
  mm->summary.alive = false;
  if (exit_hook_) exit_hook_(*mm);
  finished_.push_front(mm->summary);
  ++finished_total_;
  if (finished_.size() > finished_kept_) finished_.pop_back();
  last_ = nullptr;
  live_.erase(key.addr);
}

std::vector<MmSummary> AuditPipeline::summaries() const {
  std::vector<MmSummary> out;
  out.reserve(live_.size() + finished_.size());
  for (const auto& [addr, mm] : live_) {
    refresh(*mm);
    out.push_back(mm->summary);
  }
  out.insert(out.end(), finished_.begin(), finished_.end());
  return out;
}

}  // namespace rssaudit
