#include "capture/bpf_capture.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "capture/preemption_model.h"
#include "rssaudit.skel.h"
#include "rssaudit_kfuncs.skel.h"

namespace rssaudit {
namespace {

constexpr size_t kExitedBytes =
    size_t{RSS_EXITED_SLOTS} * sizeof(exited_process);

// The tracepoints the programs attach to, as tp_btf targets.
constexpr const char* kTracepoints[] = {
    "rss_stat",           "task_newtask", "sched_process_exec",
    "sched_process_exit", "exit_mmap",
};

// The inode of the initial PID namespace, fixed since Linux 3.8
// (PROC_PID_INIT_INO in include/linux/proc_ns.h; not in the uapi headers).
constexpr ino_t kInitialPidNamespaceInode = 0xEFFFFFFCU;

// Empty when the kernel's pids are ours and /proc's, else why not.
std::string pid_namespace_problem() {
  struct stat ns {};
  // Without CONFIG_PID_NS there is no /proc/self/ns/pid, and one namespace.
  if (stat("/proc/self/ns/pid", &ns) == 0 &&
      ns.st_ino != kInitialPidNamespaceInode)
    return "running in a PID namespace other than the host's "
           "(/proc/self/ns/pid is not pid:[4026531836]), where the host's "
           "pids that the kernel reports mean nothing: run in the host's "
           "PID namespace (docker run --pid=host, Kubernetes hostPID: true)";
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self", ec);
  if (ec) return "/proc/self: " + ec.message() + " (is /proc mounted?)";
  if (self.string() != std::to_string(getpid()))
    return fmt::format(
        "/proc belongs to another PID namespace (/proc/self is {}, this "
        "process is pid {}): mount the host's /proc",
        self.string(), getpid());
  return {};
}

// libbpf's messages while opening/loading, to quote in an error (the
// verifier log included). Kept short: the end says what went wrong.
thread_local std::string* libbpf_log = nullptr;

int collect_libbpf_log(enum libbpf_print_level level, const char* format,
                       va_list args) {
  if (!libbpf_log || level == LIBBPF_DEBUG) return 0;
  // Whole: the verifier prints its log as one message, its reason last.
  va_list again;
  va_copy(again, args);
  const int n = vsnprintf(nullptr, 0, format, args);
  if (n > 0) {
    const size_t at = libbpf_log->size();
    libbpf_log->resize(at + size_t(n) + 1);
    vsnprintf(libbpf_log->data() + at, size_t(n) + 1, format, again);
    libbpf_log->resize(at + size_t(n));
  }
  va_end(again);
  constexpr size_t kKeep = 4096;
  if (libbpf_log->size() > 2 * kKeep)
    libbpf_log->erase(0, libbpf_log->size() - kKeep);
  return 0;
}

class LogScope {
 public:
  explicit LogScope(std::string* sink) {
    libbpf_log = sink;
    previous_ = libbpf_set_print(collect_libbpf_log);
  }
  ~LogScope() {
    libbpf_set_print(previous_);
    libbpf_log = nullptr;
  }

 private:
  libbpf_print_fn_t previous_;
};

// A member of a BTF struct, and its byte offset in the outermost struct.
struct FoundMember {
  const btf_member* member = nullptr;
  uint64_t byte_offset = 0;
  explicit operator bool() const { return member != nullptr; }
};

// Finds `name` among the members of struct `type_id`, looking into
// anonymous structs and unions (mm_struct wraps most fields in one, x86's
// pcpu_hot its members in both).
FoundMember find_member(const btf* b, uint32_t type_id, const char* name) {
  const btf_type* t = btf__type_by_id(b, type_id);
  if (!t || !(btf_is_struct(t) || btf_is_union(t))) return {};
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    const uint64_t at = btf_member_bit_offset(t, i) / 8;
    const char* member_name = btf__name_by_offset(b, m->name_off);
    if (member_name && *member_name) {
      if (std::strcmp(member_name, name) == 0) return {m, at};
      continue;
    }
    FoundMember inner = find_member(b, btf__resolve_type(b, m->type), name);
    if (inner) return {inner.member, at + inner.byte_offset};
  }
  return {};
}

// Since f1a7941243c1 (6.2) mm->rss_stat is `struct percpu_counter[4]`;
// before, a `struct mm_rss_stat` of atomics, which has no slots to read.
bool has_percpu_rss(const btf* b) {
  const int mm = btf__find_by_name_kind(b, "mm_struct", BTF_KIND_STRUCT);
  if (mm < 0) return false;
  const FoundMember rss = find_member(b, mm, "rss_stat");
  if (!rss) return false;
  const btf_type* t = btf__type_by_id(b, rss.member->type);
  if (!t || !btf_is_array(t)) return false;
  const btf_type* elem = btf__type_by_id(b, btf_array(t)->type);
  const char* elem_name = elem ? btf__name_by_offset(b, elem->name_off) : "";
  return btf_is_struct(elem) && std::strcmp(elem_name, "percpu_counter") == 0;
}

// Before 6.2 the updates that fire no tracepoint are taken at the entry of
// add_mm_counter_fast() and sync_mm_rss() (bpf/task_cache.bpf.c): both
// out of line, with BTF, and the tracepoint passes `count` (mm, member,
// count). A kernel that inlined either would hide its updates.
bool has_task_cache_hooks(const btf* b) {
  return btf__find_by_name_kind(b, "add_mm_counter_fast", BTF_KIND_FUNC) >= 0 &&
         btf__find_by_name_kind(b, "sync_mm_rss", BTF_KIND_FUNC) >= 0;
}

// The per-CPU variables' offsets, from the BTF's DATASEC of the per-CPU
// section. Linux 6.15 split x86's struct pcpu_hot into plain variables.
PercpuLayout percpu_layout_of(const btf* b) {
  PercpuLayout l;
  const int sec = btf__find_by_name_kind(b, ".data..percpu", BTF_KIND_DATASEC);
  if (sec < 0) return l;
  const btf_type* t = btf__type_by_id(b, sec);
  const btf_var_secinfo* v = btf_var_secinfos(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++v) {
    const btf_type* var = btf__type_by_id(b, v->type);
    const char* name = var ? btf__name_by_offset(b, var->name_off) : nullptr;
    if (!name) continue;
    const auto member_at = [&](const char* member) -> uint64_t {
      const FoundMember m =
          find_member(b, btf__resolve_type(b, var->type), member);
      return m ? v->offset + m.byte_offset : 0;
    };
    if (std::strcmp(name, "__preempt_count") == 0) l.preempt_count = v->offset;
    if (std::strcmp(name, "current_task") == 0) l.current_task = v->offset;
    if (std::strcmp(name, "runqueues") == 0) l.runqueues = v->offset;
    if (std::strcmp(name, "pcpu_hot") == 0) {
      l.preempt_count = member_at("preempt_count");
      l.current_task = member_at("current_task");
    }
  }
  return l;
}

// The parameters of tracepoint `name`'s BTF prototype (its first is the
// tracepoint's context); -1 when the kernel BTF has no such tracepoint.
int tracepoint_params(const btf* b, const char* name) {
  const std::string typedef_name = fmt::format("btf_trace_{}", name);
  const int id =
      btf__find_by_name_kind(b, typedef_name.c_str(), BTF_KIND_TYPEDEF);
  if (id < 0) return -1;
  const btf_type* ptr = btf__type_by_id(b, btf__type_by_id(b, id)->type);
  if (!ptr || !btf_is_ptr(ptr)) return -1;
  const btf_type* proto = btf__type_by_id(b, ptr->type);
  return proto && btf_is_func_proto(proto) ? btf_vlen(proto) : -1;
}

// Where the exit record is taken (bpf/task_life.bpf.c): sched_process_exit
// where it passes group_dead (context, task, group_dead), else the entry of
// taskstats_exit(), which passes it: by fentry where a kfunc holds
// preemption in it, else by kprobe (preemption off) where the kernel has
// kprobes, else by fentry, preemptible; else nowhere.
ExitHook exit_hook_of(const btf* b, bool preempt_kfuncs, bool kprobes) {
  if (tracepoint_params(b, "sched_process_exit") >= 3)
    return ExitHook::kSchedProcessExit;
  if (btf__find_by_name_kind(b, "taskstats_exit", BTF_KIND_FUNC) < 0)
    return ExitHook::kNone;
  return !preempt_kfuncs && kprobes ? ExitHook::kKprobeTaskstatsExit
                                    : ExitHook::kTaskstatsExit;
}

// The kprobe PMU (CONFIG_KPROBE_EVENTS, Linux 4.17+), which libbpf attaches
// kprobes through.
bool has_kprobes() {
  return access("/sys/bus/event_source/devices/kprobe/type", R_OK) == 0;
}

// A verifier rejection (EACCES, EINVAL) is a bug of ours, not a missing
// feature, so it is not in this list.
bool capability_errno(int err) {
  return err == EPERM || err == ENOENT || err == ENOTSUP || err == EOPNOTSUPP ||
         err == ESRCH;
}

}  // namespace

const char* exit_hook_name(ExitHook h) {
  switch (h) {
    case ExitHook::kSchedProcessExit:
      return "tp_btf/sched_process_exit";
    case ExitHook::kTaskstatsExit:
      return "fentry/taskstats_exit";
    case ExitHook::kKprobeTaskstatsExit:
      return "kprobe/taskstats_exit";
    case ExitHook::kNone:
      break;
  }
  return "none";
}

uint32_t slots_per_cpu_for(size_t bytes, uint32_t cpus) {
  const bool automatic = bytes == 0;
  if (automatic) bytes = kAutomaticStreamBytes;
  const uint64_t fit = std::min<uint64_t>(bytes / cpus / sizeof(rss_slot),
                                          (uint64_t{1} << 31) / cpus);
  return static_cast<uint32_t>(std::clamp<uint64_t>(
      std::bit_floor(fit),
      automatic ? kAutomaticMinSlotsPerCpu : kMinSlotsPerCpu,
      kMaxSlotsPerCpu));
}

CaptureSupport probe_capture_support() {
  CaptureSupport s;
  s.root = geteuid() == 0;
  btf* b = btf__load_vmlinux_btf();
  s.btf = b != nullptr;
  if (b) {
    s.percpu_rss = has_percpu_rss(b);
    s.task_cache_hooks = !s.percpu_rss && has_task_cache_hooks(b) &&
                         tracepoint_params(b, "rss_stat") == 4;
    s.kprobes = has_kprobes();
    // The user fault's hook costs ~50 ns per fault here (bench/README.md):
    // only where no task bit tells a user fault already.
    const int task = btf__find_by_name_kind(b, "task_struct", BTF_KIND_STRUCT);
    s.in_user_fault =
        task >= 0 && static_cast<bool>(find_member(b, task, "in_user_fault"));
    s.user_fault_hook =
        !s.in_user_fault && tracepoint_params(b, "page_fault_user") > 0;
    s.kernel_fault_hook = tracepoint_params(b, "page_fault_kernel") > 0;
    s.preempt_kfuncs =
        btf__find_by_name_kind(b, "bpf_preempt_disable", BTF_KIND_FUNC) >= 0 &&
        btf__find_by_name_kind(b, "bpf_preempt_enable", BTF_KIND_FUNC) >= 0;
    s.kfuncs = s.preempt_kfuncs &&
               btf__find_by_name_kind(b, "bpf_rdonly_cast", BTF_KIND_FUNC) >= 0;
    s.exit_hook = exit_hook_of(b, s.preempt_kfuncs, s.kprobes);
    // The snapshot iterator walks every possible CPU with bpf_loop() (Linux
    // 5.17, e6f2dd0f8067), whose helper the kernel BTF names.
    s.snapshot_iterator =
        btf__find_by_name_kind(b, "bpf_loop", BTF_KIND_FUNC) >= 0;
    s.percpu = percpu_layout_of(b);
    s.preemption = read_preemption_model();
    s.tracepoints = true;
    for (const char* tp : kTracepoints) {
      const std::string type = fmt::format("btf_trace_{}", tp);
      if (btf__find_by_name_kind(b, type.c_str(), BTF_KIND_TYPEDEF) < 0) {
        s.tracepoints = false;
        s.missing +=
            fmt::format("tracepoint {} is not in the kernel BTF; ", tp);
      }
    }
    btf__free(b);
  }
  const std::string pids = pid_namespace_problem();
  s.host_pids = pids.empty();
  if (!s.host_pids) s.missing += pids + "; ";
  if (!s.root)
    s.missing += "not root: loading BPF needs CAP_BPF and CAP_PERFMON; ";
  if (!s.btf)
    s.missing +=
        "no kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF); ";
  else if (!s.percpu_rss && !s.task_cache_hooks)
    s.missing +=
        "mm->rss_stat is not a percpu_counter array (the kernel predates "
        "Linux 6.2, f1a7941243c1) and the kernel BTF lacks "
        "add_mm_counter_fast() or sync_mm_rss() as functions, or an "
        "rss_stat tracepoint passing `count`: the updates cached per task "
        "cannot be seen; ";
  if (!s.missing.empty()) s.missing.resize(s.missing.size() - 2);
  return s;
}

// The two builds of the programs (bpf/CMakeLists.txt) share the names of
// their maps, programs and settings: one template opens either.
template <class Skel, Skel* (*Open)(), void (*Destroy)(Skel*)>
int BpfCapture::load_build(const CaptureOptions& options) {
  Skel* skel = Open();
  if (!skel) return -errno;
  skel_ = skel;
  destroy_skel_ = [](void* p) { Destroy(static_cast<Skel*>(p)); };
  skeleton_ = skel->skeleton;
  obj_ = skel->obj;
  slots_map_ = skel->maps.slots;
  positions_map_ = skel->maps.positions;
  exited_map_ = skel->maps.exited;
  doorbell_map_ = skel->maps.doorbell;
  snapshot_wanted_map_ = skel->maps.snapshot_wanted;
  snapshot_program_ = skel->progs.snapshot_task;
  update_programs_ = {skel->progs.on_rss_stat, skel->progs.on_rss_stat_atomic,
                      skel->progs.on_add_mm_counter_fast};
  skel->rodata->self_tgid =
      options.self_tgid ? options.self_tgid : static_cast<uint32_t>(getpid());
  skel->rodata->target_tgid = options.target_tgid;
  slots_per_cpu_ = slots_per_cpu_for(options.stream_bytes, possible_cpus_);
  skel->rodata->slots_per_cpu = slots_per_cpu_;
  skel->rodata->pcpu_preempt_count = support_.percpu.preempt_count;
  skel->rodata->pcpu_current_task = support_.percpu.current_task;
  skel->rodata->pcpu_runqueues = support_.percpu.runqueues;
  skel->rodata->possible_cpus = possible_cpus_;
  if (int err = bpf_map__set_max_entries(skel->maps.slots,
                                         possible_cpus_ * slots_per_cpu_))
    return err;
  if (int err = bpf_map__set_max_entries(skel->maps.positions, possible_cpus_))
    return err;
  // A ring buffer is at least a page, and a whole number of them.
  if (int err = bpf_map__set_max_entries(
          skel->maps.doorbell, static_cast<uint32_t>(sysconf(_SC_PAGESIZE))))
    return err;
  // One scheme's programs (bpf/rss_stat.bpf.c or bpf/task_cache.bpf.c).
  const bool task_cache = !support_.percpu_rss;
  bpf_program__set_autoload(skel->progs.on_rss_stat, !task_cache);
  bpf_program__set_autoload(skel->progs.on_rss_stat_atomic, task_cache);
  bpf_program__set_autoload(skel->progs.on_add_mm_counter_fast, task_cache);
  // Preemptible hooks: by kprobe where the kernel has kprobes (see
  // bpf/task_cache.bpf.c announce_sync()).
  bpf_program__set_autoload(skel->progs.on_sync_mm_rss_kprobe,
                            task_cache && support_.kprobes);
  bpf_program__set_autoload(skel->progs.on_sync_mm_rss,
                            task_cache && !support_.kprobes);
  bpf_program__set_autoload(skel->progs.on_sched_process_exit,
                            exit_hook_ == ExitHook::kSchedProcessExit);
  bpf_program__set_autoload(skel->progs.on_taskstats_exit,
                            exit_hook_ == ExitHook::kTaskstatsExit);
  bpf_program__set_autoload(skel->progs.on_taskstats_exit_kprobe,
                            exit_hook_ == ExitHook::kKprobeTaskstatsExit);
  // Before 6.2 the kernel itself says which updates its fault path cached.
  bpf_program__set_autoload(skel->progs.on_page_fault_user,
                            !task_cache && support_.user_fault_hook);
  bpf_program__set_autoload(skel->progs.on_page_fault_kernel,
                            !task_cache && support_.kernel_fault_hook);
  bpf_program__set_autoload(skel->progs.snapshot_task,
                            support_.snapshot_iterator);
  snapshot_problem_ = support_.snapshot_iterator
                          ? ""
                          : "the kernel has no bpf_loop helper (Linux 5.17)";
  return bpf_object__load_skeleton(skeleton_);
}

int BpfCapture::load(const CaptureOptions& options) {
  if (support_.kfuncs)
    return load_build<rssaudit_kfuncs_bpf, rssaudit_kfuncs_bpf__open,
                      rssaudit_kfuncs_bpf__destroy>(options);
  return load_build<rssaudit_bpf, rssaudit_bpf__open, rssaudit_bpf__destroy>(
      options);
}

void BpfCapture::unload() {
  snapshots_.reset();
  for (bpf_link* l : links_) bpf_link__destroy(l);
  links_.clear();
  if (skel_) destroy_skel_(skel_);
  skel_ = nullptr;
  skeleton_ = nullptr;
}

// Programs attach one at a time (seconds apart in a TCG guest). An mm is
// taken to start from zero when a record shows its creation (a fork's or
// an exec's counter update, a new task without CLONE_VM, an exec): the
// programs that see one attach last, so that from a creation on every other
// program already records (before 6.2 a task's cached updates; exits).
int BpfCapture::attach() {
  const auto sees_creation = [](const bpf_program* p) {
    const std::string_view name = bpf_program__name(p);
    return name == "on_rss_stat" || name == "on_rss_stat_atomic" ||
           name == "on_task_newtask" || name == "on_sched_process_exec";
  };
  for (const bool creation : {false, true}) {
    bpf_program* p = nullptr;
    bpf_object__for_each_program(p, obj_) {
      if (!bpf_program__autoload(p) || sees_creation(p) != creation) continue;
      bpf_link* link = bpf_program__attach(p);
      // Without the iterator, mms joined mid-life wait for /proc instead.
      if (!link && p == snapshot_program_) {
        snapshot_problem_ = std::strerror(errno);
        continue;
      }
      if (!link) return -errno;
      links_.push_back(link);
      if (p == snapshot_program_)
        snapshots_ = std::make_unique<SnapshotIterator>(
            bpf_link__fd(link), bpf_map__fd(snapshot_wanted_map_));
    }
  }
  return 0;
}

Result<std::unique_ptr<BpfCapture>, CaptureError> BpfCapture::open(
    const CaptureOptions& options) {
  const CaptureSupport support = probe_capture_support();
  if (!support.missing.empty()) {
    return unexpected(CaptureError{
        "BPF capture unavailable: " + support.missing, /*unsupported=*/true});
  }

  std::unique_ptr<BpfCapture> c(new BpfCapture);
  std::string log;
  LogScope scope(&log);
  const auto fail = [&](const char* step, int err) {
    CaptureError e{fmt::format("BPF capture: {} failed: {}", step,
                               std::strerror(err < 0 ? -err : err)),
                   capability_errno(err < 0 ? -err : err)};
    if (!log.empty()) e.message += "\n" + log;
    return unexpected(std::move(e));
  };

  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return fail("counting possible CPUs", cpus);
  c->possible_cpus_ = static_cast<uint32_t>(cpus);

  // An fentry or kprobe program may still fail to load (no BTF for the
  // function's module, no trampolines on this machine): the capture then
  // runs without exit records and says so (exit_hook() is kNone).
  c->exit_hook_ = support.exit_hook;
  c->support_ = support;
  int err = c->load(options);
  std::string why_none = "the kernel offers no hook before exit_mm()";
  if (err && c->exit_hook_ != ExitHook::kSchedProcessExit &&
      c->exit_hook_ != ExitHook::kNone) {
    why_none = fmt::format("{} did not load ({})",
                           exit_hook_name(c->exit_hook_), std::strerror(-err));
    log.clear();
    c->unload();
    c->exit_hook_ = ExitHook::kNone;
    err = c->load(options);
  }
  if (err) return fail(c->skel_ ? "load" : "open", err);
  err = c->attach();
  // A kprobe is a perf event: Debian's perf_event_paranoid=3 allows one
  // only with CAP_SYS_ADMIN, which the service has not got. The fentry
  // programs then stand in, preemptible.
  std::string why_no_kprobes;
  if ((err == -EACCES || err == -EPERM) && c->support_.kprobes) {
    why_no_kprobes = std::strerror(-err);
    log.clear();
    c->unload();
    c->support_.kprobes = false;
    if (c->exit_hook_ == ExitHook::kKprobeTaskstatsExit)
      c->exit_hook_ = ExitHook::kTaskstatsExit;
    err = c->load(options);
    if (!err) err = c->attach();
  }
  if (err) return fail(c->skel_ ? "attach" : "open", err);
  c->add_limits(why_none, why_no_kprobes);

  Result<std::unique_ptr<StreamReader>> streams = StreamReader::map(
      bpf_map__fd(c->slots_map_), bpf_map__fd(c->positions_map_),
      c->possible_cpus_, c->slots_per_cpu_);
  if (!streams)
    return unexpected(
        CaptureError{"BPF capture: " + streams.error().message, false});
  c->streams_ = std::move(streams).value();
  Result<std::unique_ptr<Doorbell>> doorbell =
      Doorbell::open(bpf_map__fd(c->doorbell_map_));
  if (!doorbell)
    return unexpected(
        CaptureError{"BPF capture: " + doorbell.error().message, false});
  c->doorbell_ = std::move(doorbell).value();
  void* exited = mmap(nullptr, kExitedBytes, PROT_READ, MAP_SHARED,
                      bpf_map__fd(c->exited_map_), 0);
  if (exited == MAP_FAILED)
    return unexpected(
        CaptureError{fmt::format("BPF capture: mmap of the exited map: {}",
                                 std::strerror(errno)),
                     false});
  c->exited_table_ = static_cast<const exited_process*>(exited);
  return c;
}

void BpfCapture::add_limits(const std::string& why_no_exits,
                            const std::string& why_no_kprobes) {
  if (exit_hook_ == ExitHook::kNone)
    limits_.push_back(fmt::format(
        "task exits are not recorded ({}): the per_task and lazy_percpu "
        "models miss thread exits, and reaped processes go unnamed",
        why_no_exits));
  if (!snapshot_problem_.empty())
    limits_.push_back(fmt::format(
        "the snapshot iterator (iter/task) did not attach ({}): processes "
        "older than the capture get exact values only from /proc, at a "
        "quiet moment, and never before Linux 6.2",
        snapshot_problem_));
  const bool task_cache = !support_.percpu_rss;
  // fentry programs that run preemptible, with nothing to hold preemption.
  std::vector<std::string> preemptible;
  if (task_cache && !support_.kprobes)
    preemptible.push_back("fentry/sync_mm_rss");
  if (exit_hook_ == ExitHook::kTaskstatsExit && !support_.preempt_kfuncs)
    preemptible.push_back("fentry/taskstats_exit");
  if (!preemptible.empty())
    limits_.push_back(fmt::format(
        "neither the bpf_preempt_disable kfunc (Linux 6.10) nor kprobes{}: "
        "on a fully preemptible kernel {} can be preempted while it runs; "
        "records of its CPU are then dropped and other runs of it there "
        "skipped, both counted as drops",
        why_no_kprobes.empty()
            ? ""
            : fmt::format(" (attaching one: {}; Debian's "
                          "perf_event_paranoid=3 wants CAP_SYS_ADMIN)",
                          why_no_kprobes),
        fmt::join(preemptible, " and ")));
  if (task_cache)
    limits_.push_back(
        "atomic counters with per-task caches (before Linux 6.2): no "
        "reader shows a thread's cache, so the exact value of a process "
        "that was running before the capture is not known (a page-table "
        "walk, --walk, measures it); processes started under the capture "
        "are exact throughout");
  else
    add_percpu_limits();
}

// What the percpu_counter capture (bpf/rss_stat.bpf.c) cannot see on this
// kernel.
void BpfCapture::add_percpu_limits() {
  if (!support_.kfuncs)
    limits_.push_back(
        "the kernel BTF lacks bpf_rdonly_cast (Linux 6.2) or "
        "bpf_preempt_disable (Linux 6.10): the build without kfuncs loads, "
        "which reads each update's slot with bpf_probe_read_kernel (~35 ns "
        "more per update here)");
  if (support_.preempts_in_kernel() && !support_.percpu.found())
    limits_.push_back(
        "the kernel BTF does not place the per-CPU preemption count "
        "(__preempt_count or pcpu_hot, current_task, runqueues in "
        ".data..percpu): on a kernel that preempts in kernel code, an "
        "update whose add took no lock (an exec's argument pages, a "
        "collapse into a huge page) may be "
        "credited to the wrong CPU, unflagged");
  else if (support_.preemption.mode.empty())
    limits_.push_back(
        "preemption model unknown (neither /sys/kernel/debug/sched/preempt "
        "nor the kernel's config): updates whose add took no lock (an "
        "exec's argument pages, a collapse into a huge page) are flagged "
        "ambiguous, as on a kernel that preempts there");
  if (!support_.kernel_fault_hook)
    limits_.push_back(
        "no page_fault_kernel tracepoint (x86 only): an update in a fault "
        "the kernel takes on user memory (copy_to_user) counts as outside "
        "a fault unless the task's in_lru_fault bit shows it, so the "
        "per_task model may cache fewer updates than the kernel did");
  if (!support_.in_user_fault && !support_.user_fault_hook)
    limits_.push_back(
        "neither task->in_user_fault nor the page_fault_user tracepoint: "
        "an update in a user page fault is told by the task's in_lru_fault "
        "bit alone, where the kernel has one");
}

BpfCapture::~BpfCapture() {
  // Unmapped before the maps are freed with the skeleton.
  streams_.reset();
  doorbell_.reset();
  if (exited_table_)
    munmap(const_cast<exited_process*>(exited_table_), kExitedBytes);
  unload();
}

std::optional<exited_process> BpfCapture::exited(uint32_t tgid) const {
  if (!exited_table_) return std::nullopt;
  const exited_process& slot = exited_table_[tgid % RSS_EXITED_SLOTS];
  exited_process who{};
  who.tgid = __atomic_load_n(&slot.tgid, __ATOMIC_ACQUIRE);
  who.start_ticks = slot.start_ticks;
  std::memcpy(who.comm, slot.comm, sizeof(who.comm));
  // Not ended, or its slot taken by a later exit (since, or meanwhile).
  if (who.tgid != tgid || __atomic_load_n(&slot.tgid, __ATOMIC_ACQUIRE) != tgid)
    return std::nullopt;
  return who;
}

CaptureLosses BpfCapture::losses() const {
  return CaptureLosses{streams_->dropped(), streams_->unpublished(),
                       streams_->unexpanded(), misses(false)};
}

uint64_t BpfCapture::hook_misses() const { return misses(true); }

// Runs the kernel skipped: a trampoline does not run a program while
// another run of it is in progress on the CPU (one that was preempted),
// nor a tracepoint a program nested in itself. Those of the hooks that
// announce syncs and exits (`hooks`) lose no update: a fold is told
// without its announcement (audit/task_cache_decoder.cc).
uint64_t BpfCapture::misses(bool hooks) const {
  uint64_t sum = 0;
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, obj_) {
    const std::string_view name = bpf_program__name(p);
    const bool hook = name.starts_with("on_sync_mm_rss") ||
                      name.starts_with("on_taskstats_exit") ||
                      name == "on_sched_process_exit";
    const int fd = bpf_program__fd(p);
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (hook == hooks && fd >= 0 &&
        bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
      sum += info.recursion_misses;
  }
  return sum;
}

std::optional<double> BpfCapture::bpf_ns_per_event() const {
  uint64_t runs = 0, ns = 0;
  for (const bpf_program* p : update_programs_) {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    const int fd = bpf_program__fd(p);
    if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    runs += info.run_cnt;
    ns += info.run_time_ns;
  }
  if (runs == 0) return std::nullopt;
  return double(ns) / double(runs);
}

}  // namespace rssaudit
