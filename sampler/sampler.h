// Samples the /proc sources of one audited process: the cheap ones (stat,
// statm, status, and cgroup for its identity) on every call, stat again
// after status when the caller pairs them as drift, the expensive walks
// (smaps_rollup, pagemap) when the caller asks, as WalkPolicy allows. Every
// file is read once (stat at most twice), through one open /proc/PID
// directory, between two CLOCK_MONOTONIC stamps.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/procfs/proc_cgroup.h"
#include "core/procfs/proc_parse_error.h"
#include "core/procfs/proc_smaps_rollup.h"
#include "core/procfs/proc_stat.h"
#include "core/procfs/proc_statm.h"
#include "core/procfs/proc_status.h"
#include "sampler/pagemap_walk.h"
#include "sampler/proc_reader.h"

namespace rssaudit {

// A process, as opposed to a pid: pids are reused, start times are not.
struct ProcessId {
  uint32_t pid = 0;
  uint64_t start_time = 0;  // /proc/PID/stat field 22, clock ticks after boot

  bool operator==(const ProcessId&) const = default;
};

// Which processes get the expensive walks, and how often.
struct WalkPolicy {
  bool all = false;                   // every audited process opts in ...
  std::unordered_set<uint32_t> pids;  // ... or only these
  uint64_t min_interval_ns = 60'000'000'000;  // per process
  uint64_t min_rss_pages = 0;  // smaller processes are not worth a walk
};

enum class WalkDecision : uint8_t {
  kWalk,
  kNotOptedIn,
  kTooSmall,
  kTooSoon,  // walked less than min_interval_ns ago
  // This tick's walks took their budget (kWalkBudgetPerTick): the process
  // is walked at a later tick, so walks never hold the caller's loop long.
  kTickSpent,
};
// The time the walks of one tick may take (a walk under way when it runs
// out finishes, within its own limit, sampler/pagemap_walk.h).
inline constexpr uint64_t kWalkBudgetPerTickNs = 1'000'000'000;
std::string_view walk_decision_name(WalkDecision d);

// Pure: whether process `pid`, now `rss_pages` big, last walked at
// `last_walk_ns` (CLOCK_MONOTONIC; nullopt: never), gets walked at `now_ns`.
WalkDecision decide_walk(const WalkPolicy& policy, uint32_t pid,
                         uint64_t rss_pages,
                         std::optional<uint64_t> last_walk_ns, uint64_t now_ns);

struct SampleRequest {
  uint32_t pid = 0;
  // The process the caller tracks under `pid`; another start time means
  // the pid was reused (kReplaced).
  std::optional<ProcessId> expected;
  // Consult the policy for the expensive walks (else cheap sources only).
  bool walks = false;
  std::optional<uint64_t> last_walk_ns;  // this process's, for the policy
  // Read stat again after status, to tell whether the counters held still
  // (Sample::rss_reads): where stat's rss minus status's is taken as drift.
  // A second read of stat costs about a fifth of a cheap sample
  // (bench/sampler_bench.cc).
  bool stat_again = false;
};

struct Sample {
  ProcessId id;
  // CLOCK_MONOTONIC just before the first read and just after the last:
  // the window to pair with the BPF-side values.
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  ProcStat stat;
  ProcStatm statm;
  ProcStatus status;
  // When asked (SampleRequest::stat_again): stat read again right after
  // status, and what the two reads say. Only while the central counts held
  // still (and no exit was under way) is stat's RSS minus status's one
  // drift of one moment (docs/kernel.md, "Drift of one moment").
  std::optional<ProcStat> stat_after;
  std::optional<RssReads> rss_reads;
  // /proc/PID/cgroup, read with the cheap sources. Empty when unreadable or
  // malformed (counted, explained in SampleResult::error: the memory
  // sources still stand); v2_path empty on a host without cgroup v2.
  std::optional<ProcCgroup> cgroup;
  // Only when walks were requested; why they were (not) taken.
  std::optional<WalkDecision> walk_decision;
  // Present when walked and read; a failed walk leaves it empty and says
  // why in SampleResult::error, while the cheap sources stand.
  std::optional<ProcSmapsRollup> smaps_rollup;
  std::optional<PagemapWalk> pagemap;
};

enum class SampleOutcome : uint8_t {
  kOk,
  // The process exited (or is a zombie: its mm is gone) before or during
  // the sample. Normal, not a loss. A live process whose thread-group
  // leader exited also shows as a zombie here.
  kVanished,
  // The pid now belongs to another process: `sample` is of that one.
  kReplaced,
  // A cheap source was unreadable or malformed: no sample.
  kFailed,
};

struct SampleResult {
  SampleOutcome outcome = SampleOutcome::kFailed;
  Sample sample;      // complete for kOk and kReplaced
  std::string error;  // for kFailed, or a failed walk or cgroup under kOk
};

// Who a pid is, from /proc/PID/stat and cgroup alone: readable for a
// zombie, whose mm (and so every other source) is gone.
struct IdentityResult {
  enum class State : uint8_t {
    kAlive,  // running or sleeping: it has an mm (or is a kernel thread)
    // Its exit has begun (PF_EXITING): its mm is being or was torn down,
    // though it is no zombie yet; under load it stays so for milliseconds.
    kExiting,
    kZombie,  // exited, not yet reaped: stat still names it
    kGone,    // no such pid, or unreadable
  };
  State state = State::kGone;
  std::optional<ProcStat> stat;      // for kAlive and kZombie
  std::optional<ProcCgroup> cgroup;  // when readable and well-formed
};

// Losses, per source, since the sampler was made.
struct SamplerStats {
  static constexpr size_t kFiles = static_cast<size_t>(ProcFile::kCgroup) + 1;

  uint64_t samples = 0;  // requests
  uint64_t vanished = 0;
  uint64_t replaced = 0;
  uint64_t smaps_rollup_walks = 0;
  uint64_t pagemap_walks = 0;
  // Failed reads (permission denied or an I/O error) and failed parses, by
  // ProcFile; pagemap is no parsed file, so it has its own count.
  std::array<uint64_t, kFiles> read_failures{};
  std::array<uint64_t, kFiles> parse_failures{};
  uint64_t pagemap_read_failures = 0;

  uint64_t read_failures_of(ProcFile f) const {
    return read_failures[static_cast<size_t>(f)];
  }
  uint64_t parse_failures_of(ProcFile f) const {
    return parse_failures[static_cast<size_t>(f)];
  }
};

class ProcessSampler {
 public:
  explicit ProcessSampler(WalkPolicy policy, std::string proc_root = "/proc",
                          PagemapWalker walker = PagemapWalker());

  SampleResult sample(const SampleRequest& request);
  // Two small reads; failures are not counted as losses (the caller asks
  // about a process that is expected to be gone).
  IdentityResult identify(uint32_t pid);
  // The pids /proc lists now, in no particular order.
  std::vector<uint32_t> pids() const;

  const SamplerStats& stats() const { return stats_; }
  // On a configuration reload (SIGHUP).
  void set_policy(WalkPolicy policy) { policy_ = std::move(policy); }
  // A tick begins at `now_ns` (CLOCK_MONOTONIC): its walks may take
  // kWalkBudgetPerTickNs from there. Without a tick, walks are unbounded
  // in number.
  void start_tick(uint64_t now_ns) {
    walks_until_ns_ = now_ns + kWalkBudgetPerTickNs;
  }

 private:
  // Reads and parses one cheap file into `out`; false ends the sample with
  // `result` set (vanished or failed).
  template <typename T, typename Parse>
  bool read_parsed(const ProcDir& dir, ProcFile file, const char* name,
                   Parse parse, T& out, SampleResult& result);
  // The cgroup, which no sample is refused for; false when the process
  // vanished meanwhile.
  bool read_cgroup(const ProcDir& dir, SampleResult& result);
  // The expensive walks, as the policy decides; false when the process
  // vanished meanwhile.
  bool take_walks(const ProcDir& dir, const SampleRequest& request,
                  SampleResult& result);
  void finish(SampleResult& result, SampleOutcome outcome);

  WalkPolicy policy_;
  std::string proc_root_;
  ProcReader reader_;
  PagemapWalker walker_;
  SamplerStats stats_;
  uint64_t page_size_;
  uint64_t walks_until_ns_ = UINT64_MAX;  // this tick's walk budget's end
};

}  // namespace rssaudit
