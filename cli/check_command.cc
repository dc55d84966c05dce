#include "cli/check_command.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "capture/bpf_capture.h"
#include "cli/daemon_client.h"
#include "cli/query_support.h"
#include "cli/scheme_report.h"
#include "core/formats/option_checks.h"
#include "core/schemes/per_task_cache.h"
#include "core/schemes/reader_tolerance.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"
#include "sampler/pagemap_walk.h"
#include "sampler/reader_probe.h"
#include "store/store_db.h"

namespace rssaudit::cli {
namespace {

// rssauditd's default control socket (its --socket).

struct CheckOptions {
  QueryOptions query;  // --db, --json, --pages, --bytes
  std::string socket;
  uint32_t threads = 0;  // --threads: each reader's tolerance (0: not asked)
};

// The capabilities rssaudit uses, with what each is for.
struct CapabilityUse {
  const char* name;
  int bit;
  const char* purpose;
};
constexpr CapabilityUse kCapabilities[] = {
    {"CAP_BPF", 39, "load the BPF programs"},
    {"CAP_PERFMON", 38, "attach tracing programs and read kernel memory"},
    {"CAP_SYS_PTRACE", 19, "walk other processes' pagemap and smaps_rollup"},
    {"CAP_DAC_READ_SEARCH", 2, "read /proc files of other users' processes"},
};
// Before Linux 5.8 CAP_SYS_ADMIN stood for CAP_BPF and CAP_PERFMON; it
// still grants both.
constexpr int kCapSysAdmin = 21;

// CapEff from /proc/self/status: the set the kernel checks, whatever the
// uid (a root shell in a container may lack some).
std::optional<uint64_t> effective_capabilities() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    try {
      return std::stoull(line.substr(7), nullptr, 16);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  return line;
}

// "6.18.0-1-amd64" is at least 6.2.
bool release_at_least(const std::string& release, int major, int minor) {
  int a = 0, b = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &a, &b) != 2) return false;
  return a > major || (a == major && b >= minor);
}

// Probes run without libbpf's own warnings on stderr: check reports them.
class QuietLibbpf {
 public:
  QuietLibbpf() : previous_(libbpf_set_print(nullptr)) {}
  ~QuietLibbpf() { libbpf_set_print(previous_); }

 private:
  libbpf_print_fn_t previous_;
};

struct Streams {
  std::optional<bool> present;  // null: could not tell
  std::string how;
};

// The capture's per-CPU streams are BPF_F_MMAPABLE arrays (Linux 5.5+).
// Creating one is the real test; without the privilege to create maps, the
// kernel's BTF still says whether arrays can be mapped (array_map_mmap).
Streams probe_streams() {
  QuietLibbpf quiet;
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
  const int fd =
      bpf_map_create(BPF_MAP_TYPE_ARRAY, "rssaudit_probe", 4, 8, 1, &opts);
  if (fd >= 0) {
    close(fd);
    return {true, "created one"};
  }
  const int err = errno;
  if (err == EINVAL) return {false, "creating one: invalid argument"};
  if (btf* b = btf__load_vmlinux_btf()) {
    const bool found =
        btf__find_by_name_kind(b, "array_map_mmap", BTF_KIND_FUNC) >= 0;
    btf__free(b);
    return {found, fmt::format("kernel BTF; creating one failed: {}",
                               std::strerror(err))};
  }
  return {std::nullopt,
          fmt::format("cannot create one: {}", std::strerror(err))};
}

struct DbState {
  bool exists = false;
  std::optional<int> schema_version;
  std::string status;  // why it cannot be read, or empty
  // Absent, readable, or one rssauditd would upgrade (an older schema,
  // none yet) or open as root (a reader without the permission): false
  // for a file rssauditd refuses too (a FIFO, a device, a directory,
  // corrupt, another program's, a newer schema).
  bool usable = true;
};

DbState probe_database(const std::string& path) {
  DbState d;
  std::error_code ec;
  d.exists = std::filesystem::exists(path, ec);
  if (!d.exists) return d;
  // Read-only: a check must never create, upgrade or lock the history.
  auto db = rssaudit::Database::open(path, rssaudit::Database::Mode::kReadOnly);
  if (db) {
    d.schema_version = latest_schema_version();
    return d;
  }
  d.status = db.error().message;
  using Code = StoreError::Code;
  const Code code = db.error().code;
  d.usable = code == Code::kOlder || code == Code::kBusy ||
             (code == Code::kIo && access(path.c_str(), R_OK) != 0 &&
              errno == EACCES);
  return d;
}

struct Socket {
  bool exists = false;
  bool accepting = false;
  std::string status;
};

Socket probe_socket(const std::string& path) {
  Socket s;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    s.status = std::strerror(errno);
    return s;
  }
  s.exists = true;
  if (!S_ISSOCK(st.st_mode)) {
    s.status = "not a socket";
    return s;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    s.status = "path too long for a Unix socket";
    return s;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    s.status = std::strerror(errno);
    return s;
  }
  // Connecting and closing is all: the protocol is the socket client's.
  s.accepting =
      connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  if (!s.accepting) s.status = std::strerror(errno);
  close(fd);
  return s;
}

// Before 6.2 a cache holds the updates of up to
// PerTaskCache::kMaxCachedFaults faults.
constexpr int kCachedFaults = PerTaskCache::kMaxCachedFaults;

struct Report {
  utsname uts{};
  long online_cpus = 0;
  int possible_cpus = 0;
  int64_t page_size = 0;
  CaptureSupport support;
  Streams streams;
  bool percpu_rss = false;
  std::string scheme_source;  // "btf" or "kernel version"
  Topology host;              // the kernel's batch for the online CPUs
  int64_t bound = 0;          // pages per counter, percpu_counter only
  std::optional<uint64_t> caps;
  std::vector<std::string> missing_caps;
  std::optional<bool> bpf_stats;
  ZeroPagePfns zero_page;   // what a page-table walk sets aside
  ReaderPrecision readers;  // measured, by the probe rssauditd runs
  std::string db_path;
  DbState db;
  std::string socket_path;
  Socket socket;
  std::vector<std::string> blockers;  // why capture cannot run
  // The capture rssauditd loads, loaded and attached here for a moment:
  // null when the probes above already ruled it out.
  std::optional<bool> loaded;
  std::string load_error;  // libbpf's and the verifier's words
  ExitHook exit_hook = ExitHook::kNone;
  std::string sync_hook;            // before 6.2, when loaded
  std::vector<std::string> limits;  // BpfCapture::limits()
  uint32_t threads = 0;             // --threads, when asked
  std::vector<ReaderTolerance> tolerance;
};

bool has_cap(const Report& r, int bit) {
  return r.caps && (*r.caps >> bit & 1);
}

Report gather(const CheckOptions& o) {
  Report r;
  uname(&r.uts);
  r.online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  {
    QuietLibbpf quiet;
    r.possible_cpus = libbpf_num_possible_cpus();
  }
  r.page_size = sysconf(_SC_PAGESIZE);
  r.support = probe_capture_support();
  r.streams = probe_streams();
  if (r.support.btf) {
    r.percpu_rss = r.support.percpu_rss;
    r.scheme_source = "btf";
  } else {
    // f1a7941243c1 merged in 6.2.
    r.percpu_rss = release_at_least(r.uts.release, 6, 2);
    r.scheme_source = "kernel version";
  }
  r.host =
      Topology::for_cpus(static_cast<uint32_t>(std::max(1L, r.online_cpus)));
  r.bound = *UpstreamPercpu(r.host).bound(kAnonPages);
  r.threads = o.threads;
  r.readers = probe_reader_precision();
  if (o.threads) {
    // A 6.2+ kernel without the 2025 change reads status as stat: measured.
    r.tolerance = reader_tolerance(
        r.percpu_rss ? "upstream" : "per_task", r.host, o.threads,
        r.readers.status != ReaderVerdict::kApproximate);
  }
  r.caps = effective_capabilities();
  for (const CapabilityUse& c : kCapabilities) {
    const bool admin_covers =
        c.bit >= 38 && has_cap(r, kCapSysAdmin);  // CAP_BPF, CAP_PERFMON
    if (!has_cap(r, c.bit) && !admin_covers) r.missing_caps.push_back(c.name);
  }
  if (auto v = read_line("/proc/sys/kernel/bpf_stats_enabled"))
    r.bpf_stats = *v != "0";
  r.zero_page = learn_zero_page_pfns();
  r.db_path = o.query.db;
  r.db = probe_database(o.query.db);
  r.socket_path = o.socket;
  r.socket = probe_socket(o.socket);

  // What BpfCapture::open() refuses on, in its words, then the mappable
  // arrays it also needs.
  std::stringstream missing(r.support.missing);
  for (std::string why; std::getline(missing, why, ';');) {
    if (why.starts_with(' ')) why.erase(0, 1);
    if (!why.empty()) r.blockers.push_back(why);
  }
  if (r.streams.present == false)
    r.blockers.push_back("the kernel cannot map BPF arrays (Linux 5.5+)");
  if (r.blockers.empty()) {
    // The daemon's own open, so that a yes here is a yes there.
    CaptureOptions co;
    co.stream_bytes = 1;  // the smallest streams
    auto capture = BpfCapture::open(co);
    r.loaded = capture.has_value();
    if (capture) {
      r.exit_hook = (*capture)->exit_hook();
      // Before 6.2: where the syncs of the per-task caches are taken.
      if (!r.percpu_rss)
        r.sync_hook = (*capture)->support().kprobes ? "kprobe/sync_mm_rss"
                                                    : "fentry/sync_mm_rss";
      r.limits = (*capture)->limits();
    } else {
      r.load_error = capture.error().message;
      r.blockers.push_back(r.load_error.substr(0, r.load_error.find('\n')));
    }
  }
  return r;
}

nlohmann::json optional_json(const std::optional<bool>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

void print_json(const Report& r) {
  nlohmann::json caps = nlohmann::json::object();
  for (const CapabilityUse& c : kCapabilities)
    caps[c.name] =
        r.caps ? nlohmann::json(has_cap(r, c.bit)) : nlohmann::json(nullptr);
  const bool percpu = r.percpu_rss;
  nlohmann::json j = {
      {"kernel_release", r.uts.release},
      {"machine", r.uts.machine},
      {"online_cpus", r.online_cpus},
      {"possible_cpus", r.possible_cpus},
      {"page_size", r.page_size},
      {"btf", r.support.btf},
      {"tp_btf_targets", r.support.tracepoints},
      {"mmapable_arrays", optional_json(r.streams.present)},
      {"host_pid_namespace", r.support.host_pids},
      {"counting_scheme", percpu ? "percpu_counter" : "atomic_per_task_cache"},
      {"counting_scheme_from", r.scheme_source},
      {"batch", percpu ? nlohmann::json(r.host.upstream_batch)
                       : nlohmann::json(nullptr)},
      {"bound_per_counter_pages",
       percpu ? nlohmann::json(r.bound) : nlohmann::json(nullptr)},
      {"bound_per_counter_bytes", percpu ? nlohmann::json(r.bound * r.page_size)
                                         : nlohmann::json(nullptr)},
      {"rss_bound_pages", percpu ? nlohmann::json(kRssCounters * r.bound)
                                 : nlohmann::json(nullptr)},
      {"task_cache",
       percpu
           ? nlohmann::json(nullptr)
           : nlohmann::json{{"events_threshold", PerTaskCache::kEventsThresh},
                            {"max_cached_faults", kCachedFaults},
                            {"per_thread_bound_pages",
                             {{"file", kCachedFaults * kFaultAroundPages},
                              {"anon", kCachedFaults},
                              {"swap", kCachedFaults},
                              {"shmem", kCachedFaults * kFaultAroundPages}}},
                            {"bounded_in_time", false}}},
      {"root", geteuid() == 0},
      {"capabilities", caps},
      {"missing_capabilities", r.missing_caps},
      {"bpf_stats_enabled", optional_json(r.bpf_stats)},
      {"readers",
       {{"stat", reader_verdict_name(r.readers.stat)},
        {"statm", reader_verdict_name(r.readers.statm)},
        {"status", reader_verdict_name(r.readers.status)},
        {"vm_hwm_at_peak", reader_verdict_name(r.readers.vm_hwm)},
        {"ru_maxrss", reader_verdict_name(r.readers.ru_maxrss)},
        {"walk_pages", r.readers.walk_pages},
        {"stat_pages", r.readers.stat_pages},
        {"status_pages", r.readers.status_pages},
        {"error", r.readers.error.empty() ? nlohmann::json(nullptr)
                                          : nlohmann::json(r.readers.error)}}},
      {"zero_page", !r.zero_page.known() ? nlohmann::json(nullptr)
                    : r.zero_page.unused ? "none"
                                         : "shared"},
      {"database",
       {{"path", r.db_path},
        {"exists", r.db.exists},
        {"schema_version", r.db.schema_version
                               ? nlohmann::json(*r.db.schema_version)
                               : nlohmann::json(nullptr)},
        {"error", r.db.status.empty() ? nlohmann::json(nullptr)
                                      : nlohmann::json(r.db.status)},
        {"usable", r.db.usable}}},
      {"socket",
       {{"path", r.socket_path},
        {"exists", r.socket.exists},
        {"accepting", r.socket.accepting}}},
      {"capture_loaded", optional_json(r.loaded)},
      {"load_error", r.load_error.empty() ? nlohmann::json(nullptr)
                                          : nlohmann::json(r.load_error)},
      {"exit_hook",
       r.loaded == true ? nlohmann::json(exit_hook_name(r.exit_hook))
                        : nlohmann::json(nullptr)},
      {"sync_hook", r.sync_hook.empty() ? nlohmann::json(nullptr)
                                        : nlohmann::json(r.sync_hook)},
      {"preemption",
       r.loaded == true && !r.support.preemption.mode.empty()
           ? nlohmann::json{{"mode", r.support.preemption.mode},
                            {"source", r.support.preemption.source}}
           : nlohmann::json(nullptr)},
      {"limits", r.limits},
      {"can_capture", r.blockers.empty()},
      {"reasons", r.blockers}};
  if (r.threads) {
    nlohmann::json readers = nlohmann::json::array();
    for (const ReaderTolerance& t : r.tolerance)
      readers.push_back(tolerance_json(t, r.page_size));
    j["tolerance"] = {{"threads", r.threads}, {"readers", readers}};
  }
  fmt::print("{}\n", json_text(j));
}

// "label        text", the text wrapped at 80 columns under itself.
void line(std::string_view label, const std::string& text) {
  constexpr size_t kIndent = 13, kWidth = 80;
  std::string out = fmt::format("{:<{}}", label, kIndent);
  size_t col = kIndent;
  std::istringstream words(text);
  bool first = true;
  for (std::string w; words >> w; first = false) {
    if (!first && col + 1 + w.size() > kWidth) {
      out += "\n" + std::string(kIndent, ' ');
      col = kIndent;
    } else if (!first) {
      out += ' ';
      ++col;
    }
    out += w;
    col += w.size();
  }
  fmt::print("{}\n", out);
}

// How far each reader can be off for a process of --threads threads.
void print_tolerance(const Report& r, SizeUnit unit) {
  line("tolerance",
       fmt::format("a process of {} thread{} on this host: how far each "
                   "reader's RSS (anon alone) can be from the truth{}",
                   r.threads, r.threads == 1 ? "" : "s",
                   r.percpu_rss ? ", whatever the threads"
                                : ", for as long as the threads neither "
                                  "fault nor exit"));
  for (const ReaderTolerance& t : r.tolerance) {
    const std::string size =
        t.rss_pages == 0
            ? std::string("exact")
            : fmt::format("{} ({})",
                          format_size(t.rss_pages, r.page_size, unit),
                          format_size(t.anon_pages, r.page_size, unit));
    // Aligned rows, not line(): it would fold the padding.
    fmt::print("{:13}{:<10}{:>22}  {}\n", "", t.reader, size, t.what);
  }
}

void print_human(const Report& r, SizeUnit unit) {
  line("kernel",
       fmt::format("{} {}; {} CPUs online, {} possible", r.uts.release,
                   r.uts.machine, r.online_cpus, r.possible_cpus));
  line("BTF", r.support.btf ? "yes, /sys/kernel/btf/vmlinux"
                            : "no: /sys/kernel/btf/vmlinux does not load "
                              "(CONFIG_DEBUG_INFO_BTF)");
  line("tp_btf", !r.support.btf ? "unknown without BTF"
                 : r.support.tracepoints
                     ? "every target: rss_stat, task_newtask, "
                       "sched_process_exec, sched_process_exit, exit_mmap"
                     : "missing some (see below)");
  line("pids", r.support.host_pids
                   ? "the host's PID namespace, as the kernel reports them"
                   : "not the host's (see below)");
  line("streams",
       r.streams.present
           ? fmt::format("{} ({})", *r.streams.present ? "yes" : "no",
                         r.streams.how)
           : fmt::format("unknown ({})", r.streams.how));
  if (r.percpu_rss) {
    line("counting",
         fmt::format("percpu_counter (Linux 6.2+, f1a7941243c1), from {}",
                     r.scheme_source));
    line("batch", fmt::format("{} = max(32, 2 x {} online CPUs)",
                              r.host.upstream_batch, r.online_cpus));
    line("bound", fmt::format("{} per counter = {} CPUs x (batch {} - 1) "
                              "= {} pages",
                              format_size(r.bound, r.page_size, unit),
                              r.online_cpus, r.host.upstream_batch, r.bound));
  } else {
    line("counting",
         fmt::format("atomic counters + per-task caches (Linux < 6.2, "
                     "SPLIT_RSS_COUNTING), from {}; every reader (stat, "
                     "statm, status, VmHWM, ru_maxrss) sees the atomics only",
                     r.scheme_source));
    line("sync", fmt::format("a thread's cache folds into the atomics at the "
                             "entry of its next fault once it counted {} "
                             "since its last sync (rss_stat.events > {}), and "
                             "at its exit, exec and zaps of its own mm",
                             PerTaskCache::kEventsThresh + 1,
                             PerTaskCache::kEventsThresh));
    line("bound",
         fmt::format("per thread, what up to {} faults cached: {} anon or "
                     "swap pages, up to {} file or shmem pages per counter "
                     "(fault-around of {} pages); T threads hide up to T "
                     "times that, for as long as they neither fault nor "
                     "exit (no time bound)",
                     kCachedFaults, kCachedFaults,
                     kCachedFaults * kFaultAroundPages, kFaultAroundPages));
  }
  std::string privileges =
      fmt::format("uid {}, euid {}; ", getuid(), geteuid());
  if (!r.caps) {
    privileges +=
        "effective capabilities unknown (no CapEff in "
        "/proc/self/status)";
  } else if (r.missing_caps.empty()) {
    privileges +=
        "all of CAP_BPF CAP_PERFMON CAP_SYS_PTRACE "
        "CAP_DAC_READ_SEARCH";
  } else {
    privileges += "missing:";
    for (const CapabilityUse& c : kCapabilities)
      if (std::find(r.missing_caps.begin(), r.missing_caps.end(), c.name) !=
          r.missing_caps.end())
        privileges += fmt::format(" {} (to {});", c.name, c.purpose);
    privileges.pop_back();
  }
  line("privileges", privileges);
  line("bpf_stats", !r.bpf_stats ? "unknown (no kernel.bpf_stats_enabled)"
                    : *r.bpf_stats
                        ? "on: bpftool prog show reports BPF run time"
                        : "off (sysctl kernel.bpf_stats_enabled=1 to measure "
                          "BPF run time)");
  line("readers",
       "measured against a page-table walk, as rssauditd does at start: " +
           reader_precision_text(r.readers));
  line("zero page",
       !r.zero_page.known() ? "unknown (PFNs are hidden without CAP_SYS_ADMIN)"
       : r.zero_page.unused
           ? "none: a read fault of fresh memory gets a page of its own, "
             "in RSS (no walk gap from it)"
           : "shared: read faults of fresh memory map it, present in a "
             "walk and not in RSS (the walk gap)");
  // The store's own messages already name the file.
  line("database", !r.db.exists ? r.db_path + ": absent"
                   : r.db.schema_version
                       ? fmt::format("{}: schema version {}, readable",
                                     r.db_path, *r.db.schema_version)
                       : r.db.status);
  line("socket",
       r.socket_path + ": " +
           (r.socket.accepting ? std::string("rssauditd accepts connections")
            : r.socket.exists
                ? "present, not accepting (" + r.socket.status + ")"
                : "absent"));
  if (r.loaded == true) {
    line("exits",
         r.exit_hook == ExitHook::kNone
             ? std::string("not recorded")
             : std::string("recorded at ") + exit_hook_name(r.exit_hook));
    if (!r.sync_hook.empty())
      line("syncs", "of the per-task caches, recorded at " + r.sync_hook);
    const PreemptionModel& pm = r.support.preemption;
    line("preemption",
         (pm.mode.empty() ? std::string("unknown")
                          : fmt::format("{} (from {})", pm.mode, pm.source)) +
             (!r.percpu_rss
                  ? ": adds to an atomic whose records take their places "
                    "in the stream out of order are flagged"
              : r.support.preempts_in_kernel()
                  ? ": an update whose add took no lock is flagged"
                  : ": the kernel does not preempt kernel code, so an "
                    "update whose add took no lock is exact"));
    for (const std::string& limit : r.limits) line("limit", limit);
  }
  if (r.threads) print_tolerance(r, unit);
  if (r.blockers.empty()) {
    line("capture",
         "yes: loaded and attached as rssauditd does; rssauditd, record "
         "and whatif --pid can run here");
  } else {
    line("capture", "no:");
    for (const std::string& why : r.blockers) line("", "- " + why);
  }
}

void check(const CheckOptions& o) {
  const Report r = gather(o);
  if (o.query.json)
    print_json(r);
  else
    print_human(r, o.query.unit());
  std::vector<std::string> failed;
  if (!r.blockers.empty())
    failed.push_back(fmt::format("cannot capture on this host: {}",
                                 fmt::join(r.blockers, "; ")));
  // rssauditd would refuse this --db at its start: a failed check too.
  if (!r.db.usable)
    failed.push_back(
        fmt::format("the history database cannot be used: {}", r.db.status));
  if (!failed.empty())
    throw std::runtime_error(fmt::format("{}", fmt::join(failed, "; ")));
}

}  // namespace

void register_check(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  o->socket = default_socket_path();
  CLI::App* sub = app.add_subcommand(
      "check",
      "What this host offers: BPF features, the kernel's counting scheme and "
      "batch, privileges, the history database and rssauditd's socket");
  add_query_options(*sub, o->query);
  sub->add_option("--socket", o->socket,
                  "rssauditd's control socket (env RSSAUDIT_SOCKET)")
      ->capture_default_str();
  sub->add_option("--threads", o->threads,
                  "Also say how far each RSS reader (stat, VmHWM, ru_maxrss, "
                  "status) can be off for a process of this many threads")
      ->check(whole_in(1, 1u << 22, "threads"));
  sub->callback([o] { check(*o); });
}

}  // namespace rssaudit::cli
