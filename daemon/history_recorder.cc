#include "daemon/history_recorder.h"

#include <fmt/core.h>

namespace rssaudit {
namespace {

std::optional<int64_t> pages_of_kb(std::optional<uint64_t> kb,
                                   int64_t page_size) {
  if (!kb) return std::nullopt;
  return static_cast<int64_t>(*kb * 1024 / page_size);
}

}  // namespace

HistoryRecorder::HistoryRecorder(Store& store, ProcessSampler& sampler,
                                 RecorderOptions options, int64_t page_size)
    : store_(store),
      sampler_(sampler),
      options_(std::move(options)),
      page_size_(page_size) {}

HistoryRecorder::Tracked& HistoryRecorder::tracked(
    const AuditPipeline::LiveMm& mm) {
  Tracked& t = tracked_[mm.summary.key.addr];
  if (t.generation != mm.summary.key.generation) {
    t = Tracked{};  // an address reused by a new mm
    t.generation = mm.summary.key.generation;
  }
  return t;
}

void HistoryRecorder::sample(AuditPipeline& pipeline, int64_t wall_ns) {
  pipeline.for_each_live([&](AuditPipeline::LiveMm& mm) {
    if (!mm.summary.tgid) return;  // no owner seen yet: nothing to sample
    Tracked& t = tracked(mm);
    SampleRequest req;
    req.pid = mm.summary.tgid;
    if (t.process_id) req.expected = t.identity;
    req.walks = true;  // the sampler's policy decides
    req.last_walk_ns = t.last_walk_ns;
    const SampleResult r = sampler_.sample(req);
    if (r.outcome != SampleOutcome::kOk &&
        r.outcome != SampleOutcome::kReplaced)
      return;  // vanished between events and this tick: normal
    const Sample& s = r.sample;
    if (!options_.comm.empty() && s.stat.comm != options_.comm) return;
    if (s.smaps_rollup || s.pagemap) t.last_walk_ns = s.end_ns;
    const uint64_t rss = s.statm.resident;
    if (rss < options_.min_rss_pages) {
      ++stats_.skipped_small;
      return;
    }
    if (!t.process_id || r.outcome == SampleOutcome::kReplaced) {
      t.identity = s.id;
      t.process_id = store_.upsert_process(
          ProcessIdentity{s.id.pid, s.id.start_time}, s.stat.comm, "", wall_ns);
      t.interval_start_ns = wall_ns;
    } else {
      store_.upsert_process(ProcessIdentity{s.id.pid, s.id.start_time},
                            s.stat.comm, "", wall_ns);
    }
    write_sample(mm, t, s, wall_ns);
    write_model_errors(mm, t, wall_ns);
  });
}

void HistoryRecorder::write_sample(AuditPipeline::LiveMm& mm, Tracked& t,
                                   const Sample& s, int64_t wall_ns) {
  SampleRow row;
  row.process_id = t.process_id;
  row.time_ns = wall_ns;
  for (int m = 0; m < kMembers; ++m) {
    if (mm.kernel_count_known[m]) row.approximate[m] = mm.kernel_count[m];
    if (mm.summary.from_zero) row.exact[m] = mm.audit.exact(m);
    if (auto pages = s.status.member_pages(static_cast<Member>(m), page_size_))
      row.precise[m] = static_cast<int64_t>(*pages);
  }
  row.stat_rss = static_cast<int64_t>(s.stat.rss);
  row.statm_resident = static_cast<int64_t>(s.statm.resident);
  if (s.pagemap) {
    row.walk[kAnonPages] = static_cast<int64_t>(s.pagemap->anon_counted());
    row.walk_rss = static_cast<int64_t>(s.pagemap->present_counted());
    row.walk[kSwapEnts] = static_cast<int64_t>(s.pagemap->total.swapped);
  } else if (s.smaps_rollup) {
    row.walk[kAnonPages] =
        pages_of_kb(s.smaps_rollup->anonymous_kb, page_size_);
    row.walk[kSwapEnts] = pages_of_kb(s.smaps_rollup->swap_kb, page_size_);
    row.walk_rss = pages_of_kb(s.smaps_rollup->rss_kb, page_size_);
  }
  if (auto hwm = s.status.vm_hwm_pages(page_size_))
    row.vm_hwm = static_cast<int64_t>(*hwm);
  if (mm.summary.from_zero) row.true_peak = mm.summary.peak_rss;
  row.threads = s.status.threads;
  store_.add_sample(row);
  ++stats_.samples_written;
}

void HistoryRecorder::write_model_errors(AuditPipeline::LiveMm& mm, Tracked& t,
                                         int64_t wall_ns) {
  const auto errors = mm.audit.take_interval_error();
  mm.audit.schemes().for_each([&](size_t i, const auto& scheme) {
    ModelErrorRow row;
    row.process_id = t.process_id;
    row.start_ns = t.interval_start_ns;
    row.end_ns = wall_ns;
    row.scheme = i;
    row.largest_error = errors[i];
    Bound bound = scheme.bound(kAnonPages);
    for (int m = 0; m < kMembers && bound; ++m) {
      const Bound b = scheme.bound(m);
      bound = b ? std::max(*bound, *b) : b;
    }
    row.bound = bound;
    row.shared_updates = scheme.shared_updates() - t.shared_before[i];
    t.shared_before[i] = scheme.shared_updates();
    row.bytes_per_mm = static_cast<int64_t>(scheme.bytes_per_mm());
    store_.add_model_error(row);
  });
  t.interval_start_ns = wall_ns;
}

void HistoryRecorder::on_exit(AuditPipeline::LiveMm& mm, int64_t wall_ns) {
  auto it = tracked_.find(mm.summary.key.addr);
  if (it == tracked_.end() ||
      it->second.generation != mm.summary.key.generation)
    return;
  Tracked& t = it->second;
  // An exec replaces the mm of a living process: its history goes on with
  // the new mm, only a process that is gone gets an exit row.
  const bool process_gone =
      sampler_.sample(SampleRequest{t.identity.pid, t.identity, false, {}})
          .outcome != SampleOutcome::kOk;
  if (t.process_id && process_gone) {
    write_model_errors(mm, t, wall_ns);
    ++stats_.exits;
    if (mm.summary.from_zero) {
      const int64_t residue = mm.summary.exact_rss;
      store_.record_exit(t.process_id, wall_ns, residue);
      if (residue != 0) {
        ++stats_.residues;
        store_.add_anomaly(AnomalyRow{
            t.process_id, wall_ns, "exit_residue",
            fmt::format("exact RSS {} pages at exit_mmap, expected 0",
                        residue)});
      }
    }
  }
  tracked_.erase(it);
}

}  // namespace rssaudit
