#include "capture/bpf_capture.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
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

namespace rssaudit {
namespace {

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
// taskstats_exit(), which passes it; else nowhere.
ExitHook exit_hook_of(const btf* b) {
  if (tracepoint_params(b, "sched_process_exit") >= 3)
    return ExitHook::kSchedProcessExit;
  if (btf__find_by_name_kind(b, "taskstats_exit", BTF_KIND_FUNC) >= 0)
    return ExitHook::kTaskstatsExit;
  return ExitHook::kNone;
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
    case ExitHook::kNone:
      break;
  }
  return "none";
}

uint32_t slots_per_cpu_for(size_t bytes, uint32_t cpus) {
  const uint64_t fit = std::min<uint64_t>(bytes / cpus / sizeof(rss_slot),
                                          (uint64_t{1} << 31) / cpus);
  return static_cast<uint32_t>(
      std::clamp<uint64_t>(std::bit_floor(fit), 4096, uint64_t{1} << 20));
}

CaptureSupport probe_capture_support() {
  CaptureSupport s;
  s.root = geteuid() == 0;
  btf* b = btf__load_vmlinux_btf();
  s.btf = b != nullptr;
  if (b) {
    s.percpu_rss = has_percpu_rss(b);
    s.exit_hook = exit_hook_of(b);
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
  else if (!s.percpu_rss)
    s.missing +=
        "mm->rss_stat is not a percpu_counter array: the kernel predates "
        "Linux 6.2 (f1a7941243c1), whose counters rssaudit audits; ";
  if (!s.missing.empty()) s.missing.resize(s.missing.size() - 2);
  return s;
}

int BpfCapture::load(const CaptureOptions& options) {
  skel_ = rssaudit_bpf__open();
  if (!skel_) return -errno;
  skel_->rodata->self_tgid =
      options.self_tgid ? options.self_tgid : static_cast<uint32_t>(getpid());
  skel_->rodata->target_tgid = options.target_tgid;
  slots_per_cpu_ = slots_per_cpu_for(options.stream_bytes, possible_cpus_);
  skel_->rodata->slots_per_cpu = slots_per_cpu_;
  skel_->rodata->has_preempt_kfuncs = support_.preempt_kfuncs;
  skel_->rodata->pcpu_preempt_count = support_.percpu.preempt_count;
  skel_->rodata->pcpu_current_task = support_.percpu.current_task;
  skel_->rodata->pcpu_runqueues = support_.percpu.runqueues;
  if (int err = bpf_map__set_max_entries(skel_->maps.slots,
                                         possible_cpus_ * slots_per_cpu_))
    return err;
  if (int err = bpf_map__set_max_entries(skel_->maps.positions, possible_cpus_))
    return err;
  bpf_program__set_autoload(skel_->progs.on_sched_process_exit,
                            exit_hook_ == ExitHook::kSchedProcessExit);
  bpf_program__set_autoload(skel_->progs.on_taskstats_exit,
                            exit_hook_ == ExitHook::kTaskstatsExit);
  bpf_program__set_autoload(skel_->progs.on_page_fault_user,
                            support_.user_fault_hook);
  bpf_program__set_autoload(skel_->progs.on_page_fault_kernel,
                            support_.kernel_fault_hook);
  return rssaudit_bpf__load(skel_);
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
  c->drop_values_.resize(c->possible_cpus_);

  // An fentry program may still fail to load (no BTF for the function's
  // module, no trampolines on this machine): the capture then runs without
  // exit records and says so (exit_hook() is kNone).
  c->exit_hook_ = support.exit_hook;
  c->support_ = support;
  int err = c->load(options);
  std::string why_none = "the kernel offers no hook before exit_mm()";
  if (err && c->exit_hook_ == ExitHook::kTaskstatsExit) {
    why_none = fmt::format("fentry/taskstats_exit did not load ({})",
                           std::strerror(-err));
    log.clear();
    rssaudit_bpf__destroy(c->skel_);
    c->skel_ = nullptr;
    c->exit_hook_ = ExitHook::kNone;
    err = c->load(options);
  }
  if (c->exit_hook_ == ExitHook::kNone)
    c->limits_.push_back(fmt::format(
        "task exits are not recorded ({}): the per_task and lazy_percpu "
        "models miss thread exits, and reaped processes go unnamed",
        why_none));
  if (c->exit_hook_ == ExitHook::kTaskstatsExit && !support.preempt_kfuncs)
    c->limits_.push_back(
        "no bpf_preempt_disable kfunc (Linux 6.10): on a fully preemptible "
        "kernel, fentry/taskstats_exit can be preempted while it writes its "
        "record, and records of its CPU meanwhile are dropped (counted)");
  if (support.preempts_in_kernel() && !support.percpu.found())
    c->limits_.push_back(
        "the kernel BTF does not place the per-CPU preemption count "
        "(__preempt_count or pcpu_hot, current_task, runqueues in "
        ".data..percpu): on a kernel that preempts in kernel code, an "
        "update whose add took no lock (an exec's argument pages, a "
        "collapse into a huge page) may be "
        "credited to the wrong CPU, unflagged");
  else if (support.preemption.mode.empty())
    c->limits_.push_back(
        "preemption model unknown (neither /sys/kernel/debug/sched/preempt "
        "nor the kernel's config): updates whose add took no lock (an "
        "exec's argument pages, a collapse into a huge page) are flagged "
        "ambiguous, as on a kernel that preempts there");
  if (!support.kernel_fault_hook)
    c->limits_.push_back(
        "no page_fault_kernel tracepoint (x86 only): an update in a fault "
        "the kernel takes on user memory (copy_to_user) counts as outside "
        "a fault unless the task's in_lru_fault bit shows it, so the "
        "per_task model may cache fewer updates than the kernel did");
  if (!support.in_user_fault && !support.user_fault_hook)
    c->limits_.push_back(
        "neither task->in_user_fault nor the page_fault_user tracepoint: "
        "an update in a user page fault is told by the task's in_lru_fault "
        "bit alone, where the kernel has one");
  if (err) return fail(c->skel_ ? "load" : "open", err);
  if (int err = rssaudit_bpf__attach(c->skel_)) return fail("attach", err);

  Result<std::unique_ptr<StreamReader>> streams = StreamReader::map(
      bpf_map__fd(c->skel_->maps.slots), bpf_map__fd(c->skel_->maps.positions),
      c->possible_cpus_, c->slots_per_cpu_);
  if (!streams)
    return unexpected(
        CaptureError{"BPF capture: " + streams.error().message, false});
  c->streams_ = std::move(streams).value();
  return c;
}

BpfCapture::~BpfCapture() {
  streams_.reset();  // unmapped before the maps are freed with the skeleton
  rssaudit_bpf__destroy(skel_);
}

std::optional<exited_process> BpfCapture::exited(uint32_t tgid) const {
  exited_process who{};
  const uint32_t slot = tgid % RSS_EXITED_SLOTS;
  if (bpf_map__lookup_elem(skel_->maps.exited, &slot, sizeof(slot), &who,
                           sizeof(who), 0) ||
      who.tgid != tgid)
    return std::nullopt;  // not ended, or its slot reused since
  return who;
}

uint64_t BpfCapture::drops() const {
  const uint32_t zero = 0;
  if (bpf_map__lookup_elem(skel_->maps.drops, &zero, sizeof(zero),
                           drop_values_.data(),
                           drop_values_.size() * sizeof(uint64_t), 0))
    return last_drops_;  // cannot fail on a live map; never under-report
  uint64_t sum = streams_->skipped();
  for (uint64_t v : drop_values_) sum += v;
  last_drops_ = sum;
  return sum;
}

std::optional<double> BpfCapture::bpf_ns_per_event() const {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(bpf_program__fd(skel_->progs.on_rss_stat), &info,
                             &len) != 0 ||
      info.run_cnt == 0)
    return std::nullopt;
  return double(info.run_time_ns) / double(info.run_cnt);
}

}  // namespace rssaudit
