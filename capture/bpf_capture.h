// Loads the capture BPF programs (bpf/*.bpf.c), attaches them and drains
// their per-CPU streams of rss_event records. Owns no loop and no clock: the
// caller polls on its own timer, since the programs never wake it up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpf/rss_event.h"
#include "capture/doorbell.h"
#include "capture/preemption_model.h"
#include "capture/snapshot_iterator.h"
#include "capture/stream_reader.h"
#include "core/capture_losses.h"
#include "core/result.h"

struct bpf_link;
struct bpf_map;
struct bpf_object;
struct bpf_object_skeleton;
struct bpf_program;

namespace rssaudit {

struct CaptureOptions {
  // Only this process's mm (0: every process). Learned from the target's
  // first update of its own mm, so updates to it made from other contexts
  // before that are not seen.
  uint32_t target_tgid = 0;
  // This process's own mm is never captured (mapping its streams alone
  // makes thousands of updates). 0: the calling process.
  uint32_t self_tgid = 0;
  // Memory for the per-CPU streams, shared out between the possible CPUs
  // (slots_per_cpu_for()); 0: automatic. The daemon polls before a stream
  // can be a quarter full, and longer sleeps cost less per record: with
  // 16 MiB its CPU time per record at 1 M/s was 15-25 ns more
  // (bench/consumer_rate.sh).
  size_t stream_bytes = 0;
};

// Each CPU's share of `bytes` of streams, in slots: a power of two within
// [kMinSlotsPerCpu, kMaxSlotsPerCpu], and small enough that every slot
// index fits the BPF side's 32 bits; within `bytes` unless every CPU's
// floor is more. Automatic (`bytes` 0): 32 MiB, at least 1 Ki slots per
// CPU: 256 Ki each on 2 CPUs (0.25 s of 1 M records/s on one CPU), 1 Ki
// each from 293 CPUs (21 MiB at 384), the floor past 585 CPUs. The floor
// holds because a stream a quarter full rings the drain awake
// (capture/doorbell.h), whatever sleep the last rate advised. With 1 Ki
// slots per CPU on this 2-CPU host: 16 threads each mapping, touching and
// unmapping 64 pages lost 55 746 records in 15 s before the doorbell,
// 470-1 307 with it at nice 0 (the drain waiting behind them for a CPU),
// none at the unit's Nice=-10; fault loops on both CPUs and a fork storm
// lose none (bench/stream_budget.sh; none since repeats, 2.4-3.4% before).
inline constexpr size_t kAutomaticStreamBytes = size_t{32} << 20;
inline constexpr uint32_t kAutomaticMinSlotsPerCpu = 1024;
inline constexpr uint32_t kMinSlotsPerCpu = 512;
inline constexpr uint32_t kMaxSlotsPerCpu = uint32_t{1} << 20;
uint32_t slots_per_cpu_for(size_t bytes, uint32_t cpus);

// Where a task's exit is recorded while its mm is still attached
// (bpf/task_life.bpf.c). kNone: no exit records, so the per_task and
// lazy_percpu models miss each thread's exit and reaped processes go
// unnamed; everything else runs.
enum class ExitHook : uint8_t {
  kSchedProcessExit,     // tp_btf/sched_process_exit(task, group_dead)
  kTaskstatsExit,        // fentry/taskstats_exit(task, group_dead)
  kKprobeTaskstatsExit,  // kprobe/taskstats_exit: preemption off
  kNone,
};
// "tp_btf/sched_process_exit", "fentry/taskstats_exit",
// "kprobe/taskstats_exit" or "none".
const char* exit_hook_name(ExitHook h);

// Where three per-CPU variables sit in the kernel's per-CPU section.
struct PercpuLayout {
  uint64_t preempt_count = 0;  // __preempt_count (6.15+), pcpu_hot's before
  uint64_t current_task = 0;   // current_task (6.15+), pcpu_hot's before
  uint64_t runqueues = 0;
  bool found() const { return preempt_count && current_task && runqueues; }
};

// What the running kernel offers for capture.
struct CaptureSupport {
  bool root = false;        // CAP_BPF + CAP_PERFMON, in practice root
  bool btf = false;         // /sys/kernel/btf/vmlinux loads
  bool percpu_rss = false;  // mm->rss_stat is struct percpu_counter[] (6.2+)
  // Before 6.2: the kernel's atomics + per-task caches can be audited
  // (bpf/task_cache.bpf.c finds its hooks in the kernel BTF).
  bool task_cache_hooks = false;
  bool tracepoints = false;  // every tp_btf target has its btf_trace_ type
  // The pids the kernel reports (task->tgid, in the initial PID namespace)
  // are this process's own and those /proc shows: false in a container
  // without the host's PID namespace, where every /proc read by pid would
  // find no process, or another one.
  bool host_pids = false;
  // From the kernel BTF: the hook BpfCapture::open() will try first.
  ExitHook exit_hook = ExitHook::kNone;
  // What tells an update inside a page fault (bpf/rss_stat.bpf.c
  // in_page_fault()): task->in_user_fault (CONFIG_MEMCG_V1), and x86's
  // exception tracepoints, page_fault_user attached only without it.
  bool in_user_fault = false;
  bool user_fault_hook = false;
  bool kernel_fault_hook = false;
  // bpf_preempt_disable()/enable() are kfuncs of this kernel (6.10+): the
  // fentry exit hook then holds preemption while it writes its record.
  bool preempt_kfuncs = false;
  // And bpf_rdonly_cast (6.2): the build that calls kfuncs loads here
  // (bpf/CMakeLists.txt); elsewhere the other, which reads each slot with
  // bpf_probe_read_kernel() (~35 ns more per update).
  bool kfuncs = false;
  // The kprobe PMU: hooks in preemptible code are kprobes, which run with
  // preemption off, where an fentry program could be preempted (before
  // 6.10: sync_mm_rss(), taskstats_exit()).
  bool kprobes = false;
  // bpf_loop() (5.17): the snapshot iterator (bpf/snapshot.bpf.c) loads.
  bool snapshot_iterator = false;
  // Offsets in the per-CPU section (.data..percpu) of the variables the
  // rss_stat program reads its CPU's preemption count by (bpf/rss_stat.bpf.c
  // learn_preempt_count()); all 0 when the kernel BTF lacks one of them.
  PercpuLayout percpu;
  // The preemption model in force (capture/preemption_model.h).
  PreemptionModel preemption;
  // Whether a task may be preempted in kernel code: the model says so, or
  // it is not known.
  bool preempts_in_kernel() const {
    return preemption.mode != "none" && preemption.mode != "voluntary";
  }
  // Empty when capture can run, else what is missing, for a human.
  std::string missing;
};
CaptureSupport probe_capture_support();

// Why the capture could not start.
struct CaptureError {
  std::string message;  // why, with libbpf's own words
  // A missing kernel feature or privilege, not a bug: tests skip on it.
  bool unsupported = false;
};

class BpfCapture {
 public:
  // Probes, loads and attaches. Never raises RLIMIT_MEMLOCK: kernels with
  // memcg accounting of BPF memory (5.11+) do not need it.
  static Result<std::unique_ptr<BpfCapture>, CaptureError> open(
      const CaptureOptions& options);

  BpfCapture(const BpfCapture&) = delete;
  BpfCapture& operator=(const BpfCapture&) = delete;
  ~BpfCapture();

  // Records one poll hands over at most, after which the loop serves its
  // other work: 32 768 took 0.13 s of wall time with 10 000 processes and
  // 32 threads faulting on 2 CPUs (2.8 us a record then), where 131 072
  // held the loop 0.37 s after a stop (bench/memory_budget.sh); but under
  // the full soak's mass exit (load ~270, the daemon a share of a CPU)
  // 25 000 records took 0.54 s, and a query waited behind two such turns.
  static constexpr uint32_t kMaxPerPoll = 1 << 13;

  // Hands the published records, at most kMaxPerPoll (producers can
  // outpace one drain: the loop then serves its timers and comes back), to
  // `fn(const rss_event&)`, in sequence order, without blocking; returns how
  // many. `now_ns`: CLOCK_MONOTONIC, read before. No allocation, no syscall.
  template <class Fn>
  int poll(uint64_t now_ns, Fn&& fn) {
    return poll(now_ns, kMaxPerPoll, fn);
  }
  // The same, at most `max` records.
  template <class Fn>
  int poll(uint64_t now_ns, uint32_t max, Fn&& fn) {
    return static_cast<int>(streams_->consume(max, now_ns, fn));
  }
  // The streams poll() reads, for a DrainThread to read instead.
  StreamReader& streams() { return *streams_; }
  // Rung when a stream is a quarter full (capture/doorbell.h): whoever
  // drains the streams waits on it too.
  Doorbell& doorbell() { return *doorbell_; }
  const Doorbell& doorbell() const { return *doorbell_; }
  // The last poll stopped at a record still being written
  // (StreamReader::held_back()).
  bool held_back() const { return streams_->held_back(); }
  StreamHolds holds() const { return streams_->holds(); }

  // Records lost since open, by cause: refused by a full stream (counted
  // in BPF, summed over CPUs), never published (StreamReader::
  // unpublished()), repeats that could not be handed over (StreamReader::
  // unexpanded()), or never written because the kernel skipped a run of an
  // update program (recursion misses). A few syscalls: call per drain, not
  // per event.
  CaptureLosses losses() const;
  // Their sum.
  uint64_t drops() const { return losses().total(); }
  // Updates that travelled as repeats of a record (StreamReader::repeats()).
  uint64_t repeats() const { return streams_->repeats(); }
  // Runs of the sync and exit hooks the kernel skipped: their records are
  // missing, no update is (a kprobe's skips go uncounted before 6.7).
  uint64_t hook_misses() const;

  // Mean kernel time of the update programs per run (rss_stat; before 6.2
  // also add_mm_counter_fast), from the kernel's
  // own accounting; empty unless kernel.bpf_stats_enabled is on (or was:
  // the counts are kept). A syscall: call per query, not per event.
  std::optional<double> bpf_ns_per_event() const;

  // Who process `tgid` was, if its last thread exited under the capture
  // and no later exit took its slot (tgid % RSS_EXITED_SLOTS). Each of its
  // mms, the one an exec left included, may ask. A read of the mapped
  // table: its record is published after the slot is written, so once
  // the daemon has consumed the process's exit the slot is whole.
  std::optional<exited_process> exited(uint32_t tgid) const;

  // CPUs the kernel may ever use: the range of rss_event::cpu.
  uint32_t possible_cpus() const { return possible_cpus_; }
  // The exit hook that loaded.
  ExitHook exit_hook() const { return exit_hook_; }
  // What the capture cannot see on this kernel, a sentence each for a
  // human (what is missing and what the audit misses without it); empty
  // when it sees everything it is built to.
  const std::vector<std::string>& limits() const { return limits_; }
  // What probe_capture_support() found when the capture opened.
  const CaptureSupport& support() const { return support_; }
  // Records one CPU's stream holds when full.
  uint64_t stream_records() const { return streams_->slots_per_cpu(); }
  // The snapshot iterator (bpf/snapshot.bpf.c), or null when it could not
  // attach (snapshot_problem() says why).
  SnapshotIterator* snapshots() { return snapshots_.get(); }
  const std::string& snapshot_problem() const { return snapshot_problem_; }

 private:
  BpfCapture() = default;

  // The skeleton of the build this kernel loads (bpf/CMakeLists.txt), and
  // what the capture uses of it.
  void* skel_ = nullptr;
  void (*destroy_skel_)(void*) = nullptr;
  bpf_object_skeleton* skeleton_ = nullptr;
  bpf_object* obj_ = nullptr;
  bpf_map *slots_map_ = nullptr, *positions_map_ = nullptr;
  bpf_map* exited_map_ = nullptr;
  bpf_map* doorbell_map_ = nullptr;
  bpf_map* snapshot_wanted_map_ = nullptr;
  bpf_program* snapshot_program_ = nullptr;
  std::unique_ptr<SnapshotIterator> snapshots_;
  std::string snapshot_problem_;
  const exited_process* exited_table_ = nullptr;  // the map, mapped
  std::vector<bpf_program*> update_programs_;
  // Opens the build the kernel's kfuncs allow, with exit_hook_'s program,
  // and loads it; 0 or a negative errno.
  int load(const CaptureOptions& options);
  template <class Skel, Skel* (*Open)(), void (*Destroy)(Skel*)>
  int load_build(const CaptureOptions& options);
  void unload();
  // Attaches every loaded program, those that see an mm's creation last;
  // 0 or a negative errno.
  int attach();
  std::vector<bpf_link*> links_;
  // Adds to limits_ what the capture misses on this kernel, and why.
  void add_limits(const std::string& why_no_exits,
                  const std::string& why_no_kprobes);
  void add_percpu_limits();
  uint64_t misses(bool hooks) const;

  std::unique_ptr<StreamReader> streams_;
  std::unique_ptr<Doorbell> doorbell_;
  uint32_t possible_cpus_ = 0;
  uint32_t slots_per_cpu_ = 0;
  ExitHook exit_hook_ = ExitHook::kNone;
  CaptureSupport support_;  // what open() probed
  std::vector<std::string> limits_;
};

}  // namespace rssaudit
