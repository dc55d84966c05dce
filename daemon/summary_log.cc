#include "daemon/summary_log.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "core/formats/log_token.h"

namespace rssaudit {
namespace {

std::string live_comm(ProcessSampler& sampler, uint32_t tgid) {
  const IdentityResult who = sampler.identify(tgid);
  return who.stat ? who.stat->comm : "?";
}

}  // namespace

void write_summary_log(FILE* out, std::vector<MmSummary> mms,
                       const ReconstructorStats& stats,
                       const CaptureLosses& losses,
                       uint64_t hook_misses, int consumer_threads,
                       uint64_t drain_waits, const StreamHolds& holds,
                       uint64_t doorbells,
                       double lag_s, double loop_delay_s,
                       const AuditPipeline& pipeline,
                       const RecorderStats& history, const Store& store,
                       size_t top, const ExitedLookup& exited,
                       ProcessSampler& sampler) {
  const uint64_t checked = pipeline.fidelity_checked();
  std::string by_cause;
  for (const CaptureCause& cause : kCaptureCauses)
    by_cause += fmt::format(" drops_{}={}", cause.name, losses.*cause.count);
  fmt::print(
      out,
      "summary live_mms={} finished_mms={} updates={} exact={} "
      "ambiguous={} no_baseline={} inconsistent={} count_ahead={} "
      "unlocked={} late={} depth_unknown={} syncs={} "
      "sync_mismatches={} reordered={} unannounced_folds={} "
      "hook_misses={} drops={}{} losses={} forced_emits={} "
      "consumer_threads={} drain_waits={} doorbells={} held_back={} "
      "held_back_s={:.3f} "
      "held_back_max_ms={:.1f} lag_s={:.3f} "
      "loop_delay_max_s={:.3f} "
      "bad_records={} over_mm_limit={} "
      "inferred_second_users={} fidelity={} ({}/{})\n",
      pipeline.live_mms(), pipeline.finished_mms(), stats.updates, stats.exact,
      stats.ambiguous, stats.no_baseline, stats.inconsistent, stats.count_ahead,
      stats.unlocked, stats.late_overlaps, stats.depth_unknown, stats.syncs,
      stats.sync_mismatches, stats.reordered, stats.unannounced_folds,
      hook_misses, losses.total(), by_cause, stats.losses, stats.forced_emits,
      consumer_threads, drain_waits, doorbells, holds.count, double(holds.ns) / 1e9,
      double(holds.max_ns) / 1e6, lag_s,
      loop_delay_s,
      stats.bad_records, stats.over_mm_limit, stats.inferred_second_users,
      // Not measured, never a made-up 100%, when nothing was compared.
      checked ? fmt::format("{:.4f}%",
                            100.0 * pipeline.fidelity_matched() / checked)
              : std::string("?"),
      pipeline.fidelity_matched(), checked);
  fmt::print(
      out,
      "history samples={} below_min_rss={} exits={} "
      "unsampled_exits={} unnamed_exits={} exits_unseen={} exit_residues={} "
      "quiet_samples={} drift_moving={} drift_exiting={} "
      "drift_beyond_bound={} unwritten_rows={} dropped_rows={}\n",
      history.samples_written, history.below_min_rss, history.exits,
      history.unsampled_exits, history.unnamed_exits, history.exits_unseen,
      history.residues, history.quiet_samples,
      history.drift_unknown[static_cast<size_t>(DriftUnknown::kMoving)],
      history.drift_unknown[static_cast<size_t>(DriftUnknown::kExiting)],
      history.drift_unknown[static_cast<size_t>(DriftUnknown::kBeyondBound)],
      store.pending_rows(), store.dropped_rows());
  rank_by_error(mms);
  if (mms.size() > top) mms.resize(top);
  const auto ended_comm = [&](uint32_t tgid) {
    const auto who = exited ? exited(tgid) : std::nullopt;
    return who ? comm_of(*who) : std::string("-");
  };
  for (const MmSummary& m : mms) {
    std::string errors;
    for (size_t i = 0; i < SchemeSet::kCount; ++i)
      errors +=
          fmt::format(" err_{}={}", SchemeSet::kNames[i], m.largest_error[i]);
    fmt::print(
        out,
        "mm tgid={} comm={} alive={} from_zero={} absolute={} updates={} "
        "flagged={} exact_rss={} kernel_rss={} drift={} peak_rss={}"
        "{}\n",
        m.tgid,
        log_token(m.alive ? live_comm(sampler, m.tgid) : ended_comm(m.tgid)),
        m.alive, m.from_zero, m.absolute, m.updates, m.flagged, m.exact_rss,
        known_text(m.known_kernel_rss()), known_text(m.known_drift()),
        m.peak_rss, errors);
  }
  fflush(out);
}

void write_snapshot_log(FILE* out, const ReconstructorStats& stats,
                        const SnapshotPassStats& passes) {
  fmt::print(out,
             "snapshots passes={} bytes={} records={} unread={} members={} "
             "raced={} absorbed={} mismatches={} errors={}{}\n",
             passes.passes, passes.bytes, stats.snapshots,
             stats.snapshots_unread, stats.snapshot_members,
             stats.snapshot_raced, stats.snapshot_absorbed,
             stats.snapshot_mismatches, passes.errors,
             passes.last_error.empty()
                 ? ""
                 : " last_error=" + log_token(passes.last_error));
}

void write_server_log(FILE* out,
                      const std::optional<ControlServerStats>& control,
                      const std::optional<MetricsServerStats>& metrics) {
  if (control)
    fmt::print(out,
               "control accepted={} requests={} bad_requests={} "
               "refused_peers={} over_limit={} evicted={} timeouts={} "
               "oversized={}\n",
               control->accepted, control->requests, control->bad_requests,
               control->refused_peers, control->over_limit, control->evicted,
               control->timeouts, control->oversized);
  if (metrics)
    fmt::print(out,
               "metrics accepted={} over_limit={} evicted={} timeouts={} "
               "renders={} reused={} throttled={}\n",
               metrics->accepted, metrics->over_limit, metrics->evicted,
               metrics->timeouts, metrics->renders, metrics->reused,
               metrics->throttled);
  fflush(out);
}

}  // namespace rssaudit
