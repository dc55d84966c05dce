#include "daemon/history_recorder.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>

#include "core/formats/log_token.h"
#include "os/clock.h"

namespace rssaudit {
namespace {

std::string cgroup_of(const std::optional<ProcCgroup>& c) {
  return c && c->v2_path ? *c->v2_path : std::string();
}

// Whether a sample row of `mm` takes its drift from the capture (the
// kernel's count and the exact sum of every RSS member known, as
// write_sample() fills them): then /proc's pair needs no second stat read.
bool capture_pair_known(const AuditPipeline::LiveMm& mm) {
  return mm.rss_known() && mm.kernel_count_known[kFilePages] &&
         mm.kernel_count_known[kAnonPages] &&
         mm.kernel_count_known[kShmemPages];
}

// Why /proc's values are not of one moment, as the history says it. Not
// read again (empty): asked only where the drift is the capture's.
std::optional<DriftUnknown> proc_reads_unknown(std::optional<RssReads> reads) {
  if (!reads) return std::nullopt;
  switch (*reads) {
    case RssReads::kStill:
      return std::nullopt;
    case RssReads::kMoving:
      return DriftUnknown::kMoving;
    case RssReads::kExiting:
      return DriftUnknown::kExiting;
  }
  return DriftUnknown::kMoving;
}

std::optional<int64_t> pages_of_kb(std::optional<uint64_t> kb,
                                   int64_t page_size) {
  if (!kb) return std::nullopt;
  return static_cast<int64_t>(*kb * 1024 / page_size);
}

}  // namespace

HistoryRecorder::HistoryRecorder(Store& store, ProcessSampler& sampler,
                                 RecorderOptions options, int64_t page_size,
                                 bool status_precise,
                                 std::optional<int64_t> rss_bound)
    : store_(store),
      sampler_(sampler),
      options_(std::move(options)),
      page_size_(page_size),
      status_precise_(status_precise),
      rss_bound_(rss_bound),
      self_pid_(static_cast<uint32_t>(getpid())) {}

HistoryRecorder::Tracked& HistoryRecorder::tracked(
    const AuditPipeline::LiveMm& mm) {
  Tracked& t = tracked_[mm.summary.key.addr];
  if (t.generation != mm.summary.key.generation) {
    t = Tracked{};  // an address reused by a new mm
    t.generation = mm.summary.key.generation;
  }
  return t;
}

bool HistoryRecorder::wanted(const std::string& comm, const std::string& cgroup,
                             uint64_t updates) const {
  return updates >= options_.min_updates &&
         (options_.comm.empty() || comm == options_.comm) &&
         (options_.cgroup.empty() || cgroup_within(cgroup, options_.cgroup));
}

const RecordedIdentity* HistoryRecorder::identity(uint64_t mm_addr) const {
  const auto it = tracked_.find(mm_addr);
  if (it == tracked_.end() || it->second.who.process_id == 0) return nullptr;
  return &it->second.who;
}

bool HistoryRecorder::owner_gone(const AuditPipeline::LiveMm& mm,
                                 const SampleResult& r, bool superseded) {
  if (superseded || r.outcome == SampleOutcome::kReplaced) return true;
  if (r.outcome != SampleOutcome::kVanished) return false;
  // A zombie (or exiting) leader whose other threads run still has its mm.
  const IdentityResult who = sampler_.identify(mm.summary.tgid);
  return who.state == IdentityResult::State::kGone ||
         (who.state != IdentityResult::State::kAlive && who.stat &&
          who.stat->num_threads <= 1);
}

void HistoryRecorder::sample(AuditPipeline& pipeline, int64_t wall_ns) {
  begin_tick(pipeline, wall_ns);
  continue_tick(pipeline, wall_ns, UINT64_MAX);
}

void HistoryRecorder::begin_tick(AuditPipeline& pipeline, int64_t wall_ns) {
  last_tick_ns_ = wall_ns;
  sampler_.start_tick(monotonic_ns());
  tick_mms_.clear();
  tick_next_ = 0;
  tick_newest_.clear();
  tick_tgids_.clear();
  tick_open_ = true;
  // The newest mm of each process: an older one lives on only where its
  // exit_mmap record was lost after an exec.
  pipeline.for_each_live([&](AuditPipeline::LiveMm& mm) {
    if (!mm.summary.tgid) return;  // no owner seen yet: nothing to sample
    tick_mms_.push_back(mm.summary.key);
    uint64_t& g = tick_newest_[mm.summary.tgid];
    g = std::max(g, mm.summary.key.generation);
  });
}

bool HistoryRecorder::continue_tick(AuditPipeline& pipeline, int64_t wall_ns,
                                    uint64_t until_ns) {
  if (!tick_open_) return true;
  while (tick_next_ < tick_mms_.size()) {
    // Ended since the tick began: its exit was recorded.
    if (AuditPipeline::LiveMm* mm = pipeline.refreshed(tick_mms_[tick_next_]))
      sample_mm(*mm, wall_ns);
    ++tick_next_;
    if (tick_next_ < tick_mms_.size() && monotonic_ns() >= until_ns)
      return false;
  }
  sample_quiet(tick_tgids_, wall_ns);
  tick_open_ = false;
  return true;
}

void HistoryRecorder::sample_mm(AuditPipeline::LiveMm& mm, int64_t wall_ns) {
  tick_tgids_.insert(mm.summary.tgid);
  Tracked& t = tracked(mm);
  SampleRequest req;
  req.pid = mm.summary.tgid;
  if (t.who.process_id) req.expected = ProcessId{t.who.pid, t.who.start_ticks};
  req.walks = true;  // the sampler's policy decides
  req.last_walk_ns = t.last_walk_ns;
  req.stat_again = !capture_pair_known(mm);
  const bool superseded =
      tick_newest_[mm.summary.tgid] != mm.summary.key.generation;
  const SampleResult r = sampler_.sample(req);
  if (owner_gone(mm, r, superseded)) {
    // Its exit_mmap record may still be on its way at the first tick.
    if (!t.gone_tick) {
      t.gone_tick = ticks_ + 1;
    } else if (t.gone_tick <= ticks_ && !t.ended_unseen) {
      t.ended_unseen = true;
      ended_unseen_.push_back(mm.summary.key);
    }
    return;
  }
  t.gone_tick = 0;
  if (r.outcome != SampleOutcome::kOk) return;  // unreadable: next tick
  const Sample& s = r.sample;
  // An unreadable cgroup keeps the one recorded before.
  std::string cgroup = s.cgroup ? cgroup_of(s.cgroup) : t.who.cgroup;
  if (!wanted(s.stat.comm, cgroup, mm.summary.updates)) return;
  if (s.smaps_rollup || s.pagemap) t.last_walk_ns = s.end_ns;
  const uint64_t rss = s.statm.resident;
  if (rss < options_.min_rss_pages) {
    ++stats_.below_min_rss;
    return;
  }
  const bool first = !t.who.process_id;
  const int64_t id = store_.upsert_process(
      ProcessIdentity{s.id.pid, s.id.start_time}, s.stat.comm, cgroup, wall_ns);
  if (first) t.interval_start_ns = wall_ns;
  t.who = RecordedIdentity{id, s.id.pid, s.id.start_time, s.stat.comm,
                           std::move(cgroup)};
  write_sample(mm, t, s, wall_ns);
  note_model_errors(mm, t, wall_ns, false);
}

void HistoryRecorder::sample_quiet(
    const std::unordered_set<uint32_t>& live_tgids, int64_t wall_ns) {
  ++ticks_;
  if (options_.quiet_interval_s <= 0) {  // off, maybe since a reload
    quiet_.clear();
    return;
  }
  const std::vector<uint32_t> pids =
      options_.pid ? std::vector{options_.pid} : sampler_.pids();
  const auto interval_ns =
      static_cast<int64_t>(options_.quiet_interval_s * 1e9);
  size_t budget = kQuietSamplesPerTick;
  for (const uint32_t pid : pids) {
    // An mm in the audit: sampled with it, above. The daemon's own is left
    // out of the capture, and so here.
    if (live_tgids.contains(pid) || pid == self_pid_) continue;
    Quiet& q = quiet_[pid];
    q.seen_tick = ticks_;
    if (q.sampled_ns && wall_ns - *q.sampled_ns < interval_ns) continue;
    if (budget == 0) continue;  // next tick
    --budget;
    if (!sample_quiet(pid, q, wall_ns)) quiet_.erase(pid);
  }
  // Gone from /proc, or now updating (sampled with its mm).
  std::erase_if(quiet_, [&](const auto& e) {
    return e.second.seen_tick != ticks_ || live_tgids.contains(e.first);
  });
}

bool HistoryRecorder::sample_quiet(uint32_t pid, Quiet& q, int64_t wall_ns) {
  SampleRequest req;
  req.pid = pid;
  if (q.who.start_ticks) req.expected = ProcessId{pid, q.who.start_ticks};
  req.walks = true;  // the sampler's policy decides
  req.last_walk_ns = q.last_walk_ns;
  req.stat_again = true;  // its drift is /proc's
  const SampleResult r = sampler_.sample(req);
  if (r.outcome != SampleOutcome::kOk && r.outcome != SampleOutcome::kReplaced)
    return false;
  const Sample& s = r.sample;
  if (r.outcome == SampleOutcome::kReplaced) {
    q = Quiet{};
    q.seen_tick = ticks_;
  }
  q.sampled_ns = wall_ns;
  // A kernel thread has no mm (status has no VmRSS): looked at again only
  // after the interval, like the others.
  if (!s.status.vm_rss_kb) return true;
  if (s.smaps_rollup || s.pagemap) q.last_walk_ns = s.end_ns;
  std::string cgroup = s.cgroup ? cgroup_of(s.cgroup) : q.who.cgroup;
  q.who.pid = pid;
  q.who.start_ticks = s.id.start_time;
  q.who.comm = s.stat.comm;
  q.who.cgroup = cgroup;
  q.who.process_id = 0;
  if (!wanted(s.stat.comm, cgroup, 0)) return true;
  if (s.statm.resident < options_.min_rss_pages) {
    ++stats_.below_min_rss;
    return true;
  }
  q.who.process_id =
      store_.upsert_process(ProcessIdentity{pid, s.id.start_time}, s.stat.comm,
                            std::move(cgroup), wall_ns);
  SampleRow row = proc_row(s, q.who.process_id, wall_ns, status_precise_);
  judge_drift(row, s.rss_reads, q.who);
  q.kernel_rss = *row.stat_rss;
  // Live views show its drift only where the history has one.
  q.precise_rss.reset();
  if (!row.drift_unknown) q.precise_rss = rss_of(row.precise);
  store_.add_sample(row);
  ++stats_.samples_written;
  ++stats_.quiet_samples;
  return true;
}

std::vector<LiveProcess> HistoryRecorder::quiet_processes(int64_t bound) const {
  std::vector<LiveProcess> out;
  for (const auto& [pid, q] : quiet_) {
    if (!q.who.process_id) continue;
    if (const auto gone = exited_slot(pid);
        gone && gone->start_ticks == q.who.start_ticks)
      continue;
    LiveProcess p;
    p.pid = pid;
    p.start_ticks = q.who.start_ticks;
    p.comm = q.who.comm;
    p.cgroup = q.who.cgroup;
    p.quiet = true;
    p.kernel_rss = q.kernel_rss;
    p.kernel_known = true;
    p.from_zero = q.precise_rss.has_value();
    p.exact_rss = q.precise_rss.value_or(0);
    p.rss_bound = bound;
    out.push_back(std::move(p));
  }
  return out;
}

SampleRow HistoryRecorder::proc_row(const Sample& s, int64_t process_id,
                                    int64_t wall_ns,
                                    bool status_precise) const {
  SampleRow row;
  row.process_id = process_id;
  row.time_ns = wall_ns;
  // Before 6.2 status reads the atomics, as every reader; up to 6.15 it
  // may read the count as stat does: then it is no precise value.
  for (int m = 0; m < kMembers && status_precise; ++m)
    if (auto pages = s.status.member_pages(static_cast<Member>(m), page_size_))
      row.precise[m] = static_cast<int64_t>(*pages);
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
  row.threads = s.status.threads;
  return row;
}

void HistoryRecorder::write_sample(AuditPipeline::LiveMm& mm, Tracked& t,
                                   const Sample& s, int64_t wall_ns) {
  SampleRow row = proc_row(s, t.who.process_id, wall_ns,
                           status_precise_ && !mm.summary.task_cache);
  for (int m = 0; m < kMembers; ++m) {
    if (mm.kernel_count_known[m]) row.approximate[m] = mm.kernel_count[m];
    // Absolute from creation, or since a snapshot of its counters.
    if (mm.exact_known[m]) row.exact[m] = mm.exact(m);
  }
  // The true peak needs the whole life; a snapshot gives only a part.
  if (mm.summary.from_zero) row.true_peak = mm.summary.peak_rss;
  // Only an mm seen from creation is compared with the kernel's count: the
  // others' fidelity is not measured (NULL), never 0 of 0.
  if (mm.summary.from_zero) {
    row.fidelity_checked = static_cast<int64_t>(mm.summary.fidelity_checked -
                                                t.fidelity_checked_before);
    row.fidelity_matched = static_cast<int64_t>(mm.summary.fidelity_matched -
                                                t.fidelity_matched_before);
  }
  t.fidelity_checked_before = mm.summary.fidelity_checked;
  t.fidelity_matched_before = mm.summary.fidelity_matched;
  judge_drift(row, s.rss_reads, t.who);
  store_.add_sample(row);
  ++stats_.samples_written;
}

void HistoryRecorder::judge_drift(SampleRow& row,
                                  std::optional<RssReads> proc_reads,
                                  const RecordedIdentity& who) {
  row.drift_unknown =
      drift_unknown_of(row, proc_reads_unknown(proc_reads), rss_bound_);
  if (!row.drift_unknown) return;
  ++stats_.drift_unknown[static_cast<size_t>(*row.drift_unknown)];
  if (*row.drift_unknown != DriftUnknown::kBeyondBound) return;
  const bool from_capture = rss_of(row.approximate) && rss_of(row.exact);
  const std::string detail = fmt::format(
      "drift {:+} pages, beyond the kernel's RSS bound of {} pages: {} {} "
      "pages - {} {} pages, {}",
      *source_drift(row), *rss_bound_,
      from_capture ? "the capture's count" : "stat's rss",
      from_capture ? *rss_of(row.approximate) : *row.stat_rss,
      from_capture ? "the exact sum of the same record" : "status's precise",
      from_capture ? *rss_of(row.exact) : *rss_of(row.precise),
      from_capture ? "one moment by construction"
                   : "read while stat's count held still");
  store_.add_anomaly(
      AnomalyRow{who.process_id, row.time_ns, "drift_beyond_bound", detail});
  say_beyond_bound(who, row.time_ns, detail);
}

void HistoryRecorder::say_beyond_bound(const RecordedIdentity& who,
                                       int64_t time_ns,
                                       const std::string& detail) {
  if (beyond_bound_said_ns_ &&
      time_ns - *beyond_bound_said_ns_ < kBeyondBoundSaidEveryNs) {
    ++beyond_bound_unsaid_;
    return;
  }
  fmt::print(stderr,
             "rssauditd: ANOMALY: pid {} ({}): {}; a kernel bug or a read "
             "that was not of one moment; recorded as an anomaly "
             "(drift_beyond_bound), not as drift{}\n",
             who.pid, log_token(who.comm), detail,
             beyond_bound_unsaid_
                 ? fmt::format(" ({} more in the last minute, unsaid)",
                               beyond_bound_unsaid_)
                 : "");
  beyond_bound_said_ns_ = time_ns;
  beyond_bound_unsaid_ = 0;
}

void HistoryRecorder::note_model_errors(AuditPipeline::LiveMm& mm, Tracked& t,
                                        int64_t wall_ns, bool ending) {
  const auto errors = mm.audit.take_interval_error();
  std::array<ModelErrorRow, SchemeSet::kCount> tick{};
  mm.audit.schemes().for_each([&](size_t i, const auto& scheme) {
    ModelErrorRow& row = tick[i];
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
    row.read_cost = scheme.read_cost();
  });
  // Another bound, size or read cost (a scheme's state grew with the CPUs
  // the process ran on) is no maximum or sum: it ends the rows.
  const auto same_scheme_state = [&] {
    for (size_t i = 0; i < SchemeSet::kCount; ++i) {
      const ModelErrorRow &open = t.errors[i], &now = tick[i];
      if (now.bound != open.bound || now.bytes_per_mm != open.bytes_per_mm ||
          now.read_cost != open.read_cost)
        return false;
    }
    return true;
  };
  if (t.errors_open && !same_scheme_state()) write_open_errors(t);
  if (!t.errors_open) {
    t.errors = tick;
    t.errors_open = true;
  } else {
    for (size_t i = 0; i < SchemeSet::kCount; ++i) {
      t.errors[i].largest_error =
          std::max(t.errors[i].largest_error, tick[i].largest_error);
      t.errors[i].shared_updates += tick[i].shared_updates;
    }
  }
  t.errors_end_ns = wall_ns;
  const auto interval_ns =
      static_cast<int64_t>(options_.model_error_interval_s * 1e9);
  if (ending || wall_ns - t.interval_start_ns >= interval_ns)
    write_open_errors(t);
}

void HistoryRecorder::write_open_errors(Tracked& t) {
  for (ModelErrorRow& row : t.errors) {
    row.process_id = t.who.process_id;
    row.start_ns = t.interval_start_ns;
    row.end_ns = t.errors_end_ns;
    store_.add_model_error(row);
  }
  t.interval_start_ns = t.errors_end_ns;
  t.errors_open = false;
}

void HistoryRecorder::write_open_model_errors() {
  for (auto& [addr, t] : tracked_)
    if (t.errors_open && t.who.process_id) write_open_errors(t);
}

void HistoryRecorder::on_exit(AuditPipeline::LiveMm& mm, int64_t wall_ns) {
  const auto it = tracked_.find(mm.summary.key.addr);
  const bool known = it != tracked_.end() &&
                     it->second.generation == mm.summary.key.generation &&
                     it->second.who.process_id != 0;
  if (known) {
    Tracked& t = it->second;
    // An exec replaces the mm of a living process: its history goes on with
    // the new mm, only a process that is gone gets an exit row. One whose
    // exit has begun is gone too: its mm ended before it became a zombie
    // (its exit row was lost when this was taken for an exec).
    const IdentityResult who = sampler_.identify(t.who.pid);
    const bool process_gone = who.state != IdentityResult::State::kAlive ||
                              who.stat->start_time != t.who.start_ticks;
    if (process_gone)
      record_end(mm, t, wall_ns);
    else  // the mm's last errors, under the process that goes on
      note_model_errors(mm, t, wall_ns, true);
  } else {
    // Ended before a tick sampled it (or before its owner was seen): its
    // identity can only be read now, from a zombie's stat at best.
    Tracked t;
    t.generation = mm.summary.key.generation;
    t.ended_unseen = it != tracked_.end() &&
                     it->second.generation == t.generation &&
                     it->second.ended_unseen;
    if (record_unsampled(mm, t, wall_ns)) record_end(mm, t, wall_ns);
  }
  if (it != tracked_.end()) tracked_.erase(it);
}

bool HistoryRecorder::record_unsampled(const AuditPipeline::LiveMm& mm,
                                       Tracked& t, int64_t wall_ns) {
  if (mm.summary.updates == 0 || mm.summary.tgid == 0) return false;
  const IdentityResult who = sampler_.identify(mm.summary.tgid);
  // Alive and its owner never exited: an exec replaced this mm, and the
  // process is sampled with its next mm. Alive although its owner exited:
  // the pid was reused since, and the process that is gone is named by
  // its exit (the live one's stat is another process's). Exiting: its exit
  // record may come after its mm's end, and it is named from its stat.
  const bool alive = who.state == IdentityResult::State::kAlive;
  if (alive && !mm.summary.owner_ended) return false;
  t.who.pid = mm.summary.tgid;
  // Its exit record's start time, where it has one, says which process a
  // name belongs to: the pid may have been reused, and the reuser ended,
  // before this exit was handled (its /proc entry, its exited slot).
  const uint64_t ended = mm.summary.owner_start_ticks;
  const auto is_it = [&](uint64_t start) { return !ended || start == ended; };
  if (who.stat && !alive && is_it(who.stat->start_time)) {
    t.who.start_ticks = who.stat->start_time;
    t.who.comm = who.stat->comm;
    t.who.cgroup = cgroup_of(who.cgroup);
  } else if (const auto gone = exited_slot(t.who.pid);
             gone && is_it(gone->start_ticks)) {
    // Reaped already, but named when it ended (its cgroup stays unknown).
    t.who.start_ticks = gone->start_ticks;
    t.who.comm = comm_of(*gone);
  } else {
    // Reaped before we looked, its name lost: an empty comm means unknown,
    // and so does start time 0 where the exit record had none. A known
    // start time keeps it apart from the process that reused its pid.
    t.who.start_ticks = ended;
    ++stats_.unnamed_exits;
  }
  if (!wanted(t.who.comm, t.who.cgroup, mm.summary.updates)) return false;
  // At exit_mmap its RSS is gone: the size that counts is its true peak,
  // when known (an mm seen only partly may have been larger).
  if (mm.summary.absolute &&
      mm.summary.peak_rss < static_cast<int64_t>(options_.min_rss_pages)) {
    ++stats_.below_min_rss;
    return false;
  }
  t.who.process_id =
      store_.upsert_process(ProcessIdentity{t.who.pid, t.who.start_ticks},
                            t.who.comm, t.who.cgroup, wall_ns);
  // The mm started after the previous tick at the earliest that matters:
  // its errors are those of its whole life, reported over that interval.
  t.interval_start_ns =
      last_tick_ns_ > 0 ? std::min(last_tick_ns_, wall_ns) : wall_ns;
  ++stats_.unsampled_exits;
  return true;
}

void HistoryRecorder::record_end(AuditPipeline::LiveMm& mm, Tracked& t,
                                 int64_t wall_ns) {
  note_model_errors(mm, t, wall_ns, true);
  ++stats_.exits;
  const MmSummary& s = mm.summary;
  if (t.ended_unseen) {
    // Its teardown's updates were lost with its exit_mmap record: the
    // exact value at the end is not known, and the end is a tick late.
    ++stats_.exits_unseen;
    store_.record_exit(t.who.process_id, wall_ns, std::nullopt, std::nullopt);
    store_.add_anomaly(AnomalyRow{
        t.who.process_id, wall_ns, "exit_unseen",
        fmt::format("pid {}: its exit_mmap record was lost; found gone from "
                    "/proc at two sampling ticks, ended then",
                    t.who.pid)});
    return;
  }
  store_.record_exit(t.who.process_id, wall_ns,
                     s.absolute ? std::optional(s.exact_rss) : std::nullopt,
                     s.from_zero ? std::optional(s.peak_rss) : std::nullopt);
  if (!s.absolute) return;  // no absolute value to check
  const int64_t residue = s.exact_rss;
  if (residue != 0) {
    ++stats_.residues;
    store_.add_anomaly(AnomalyRow{
        t.who.process_id, wall_ns, "exit_residue",
        fmt::format("exact RSS {} pages at exit_mmap, expected 0", residue)});
  }
}

}  // namespace rssaudit
