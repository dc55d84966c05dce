#include "sampler/reader_probe.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/procfs/proc_smaps_rollup.h"
#include "core/procfs/proc_stat.h"
#include "core/procfs/proc_statm.h"
#include "core/procfs/proc_status.h"
#include "os/faults_counted.h"
#include "os/unique_fd.h"
#include "sampler/proc_reader.h"

namespace rssaudit {
namespace {

constexpr int32_t kExit = -1;

// The child: says it is ready (its own faults after fork done), then faults
// page i of `pages` on the CPU each command names, answers one byte per
// command, and exits on kExit. System calls only: it is the fork of a
// process that may have threads. Never sanitizer-checked: a checked
// build's shadow writes would move the RSS being measured.
[[noreturn]] RSSAUDIT_FAULTS_COUNTED void child_loop(int commands, int answers,
                                                     char* pages,
                                                     long page_size) {
  const char ready = 1;
  if (write(answers, &ready, 1) != 1) _exit(1);
  for (int i = 0;; ++i) {
    int32_t cpu = 0;
    if (read(commands, &cpu, sizeof cpu) != sizeof cpu || cpu == kExit)
      _exit(0);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    pages[int64_t{i} * page_size] = 1;
    const char done = 1;
    if (write(answers, &done, 1) != 1) _exit(1);
  }
}

struct Readings {
  int64_t walk = 0, stat = 0, statm = 0, status = 0, vm_hwm = 0;
};

// Every reader between two walks of the page tables; empty unless both
// walks agree (the child was quiet throughout).
std::optional<Readings> read_quiet(uint32_t pid, long page_size,
                                   std::string& error) {
  ProcReader reader;
  const ProcDir dir = ProcDir::open("/proc", pid);
  const int64_t kb_per_page = page_size / 1024;
  auto walk = [&]() -> std::optional<int64_t> {
    const auto text = reader.read(dir, "smaps_rollup");
    if (!text) {
      error = fmt::format("/proc/{}/smaps_rollup: {}", pid,
                          std::strerror(text.error().errnum));
      return std::nullopt;
    }
    const auto parsed = parse_proc_smaps_rollup(*text);
    if (!parsed) return std::nullopt;
    return static_cast<int64_t>(parsed->rss_kb) / kb_per_page;
  };
  // Parses file `name` with `parse`, empty when unreadable or malformed.
  auto parsed = [&]<class T>(const char* name,
                             Result<T, ParseError> (*parse)(
                                 std::string_view)) -> std::optional<T> {
    const auto text = reader.read(dir, name);
    if (!text) return std::nullopt;
    Result<T, ParseError> r = parse(*text);
    if (!r) return std::nullopt;
    return std::move(r).value();
  };
  const std::optional<int64_t> before = walk();
  if (!before) return std::nullopt;
  const auto stat = parsed("stat", parse_proc_stat);
  const auto statm = parsed("statm", parse_proc_statm);
  const auto status = parsed("status", parse_proc_status);
  const std::optional<int64_t> after = walk();
  if (!stat || !statm || !status || !status->vm_rss_kb || !status->vm_hwm_kb) {
    error = fmt::format("/proc/{}: stat, statm or status unreadable", pid);
    return std::nullopt;
  }
  if (!after || *after != *before) return std::nullopt;
  Readings r;
  r.walk = *before;
  r.stat = static_cast<int64_t>(stat->rss);
  r.statm = static_cast<int64_t>(statm->resident);
  r.status = static_cast<int64_t>(*status->vm_rss_kb) / kb_per_page;
  r.vm_hwm = static_cast<int64_t>(*status->vm_hwm_kb) / kb_per_page;
  return r;
}

ReaderVerdict verdict(int64_t value, int64_t walk) {
  return value == walk ? ReaderVerdict::kPrecise : ReaderVerdict::kApproximate;
}

}  // namespace

std::string_view reader_verdict_name(ReaderVerdict v) {
  switch (v) {
    case ReaderVerdict::kPrecise:
      return "precise";
    case ReaderVerdict::kApproximate:
      return "approximate";
    case ReaderVerdict::kUnknown:
      break;
  }
  return "unknown";
}

std::string reader_precision_text(const ReaderPrecision& p) {
  if (!p.error.empty()) return "unknown: " + p.error;
  return fmt::format(
      "stat {}, statm {}, status {}, VmHWM at its peak {}, ru_maxrss {} "
      "(page-table walk {} pages: stat {}, status {}, ru_maxrss {})",
      reader_verdict_name(p.stat), reader_verdict_name(p.statm),
      reader_verdict_name(p.status), reader_verdict_name(p.vm_hwm),
      reader_verdict_name(p.ru_maxrss), p.walk_pages, p.stat_pages,
      p.status_pages,
      p.ru_maxrss_pages ? std::to_string(*p.ru_maxrss_pages) : "?");
}

ReaderPrecision probe_reader_precision(
    int max_touches, const std::function<void(uint32_t pid)>& at_quiet_moment) {
  ReaderPrecision out;
  const long page_size = sysconf(_SC_PAGESIZE);
  cpu_set_t allowed;
  std::vector<int32_t> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int32_t c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.empty()) cpus.push_back(0);
  const size_t bytes = static_cast<size_t>(max_touches) * page_size;
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int commands[2], answers[2];
  if (region == MAP_FAILED || pipe2(commands, O_CLOEXEC) != 0) {
    out.error = fmt::format("probe set-up: {}", std::strerror(errno));
    if (region != MAP_FAILED) munmap(region, bytes);
    return out;
  }
  if (pipe2(answers, O_CLOEXEC) != 0) {
    out.error = fmt::format("probe set-up: {}", std::strerror(errno));
    close(commands[0]);
    close(commands[1]);
    munmap(region, bytes);
    return out;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(commands[1]);
    close(answers[0]);
    child_loop(commands[0], answers[1], static_cast<char*>(region), page_size);
  }
  close(commands[0]);
  close(answers[1]);
  munmap(region, bytes);
  const UniqueFd to_child(commands[1]), from_child(answers[0]);
  if (pid < 0) {
    out.error = fmt::format("fork: {}", std::strerror(errno));
    return out;
  }
  std::optional<Readings> found;
  char ready = 0;
  if (read(from_child.get(), &ready, 1) != 1)
    out.error = "the probe's child died";
  for (int touch = 0; touch <= max_touches && out.error.empty(); ++touch) {
    if (touch > 0) {
      const int32_t cpu = cpus[static_cast<size_t>(touch) % cpus.size()];
      char done = 0;
      if (write(to_child.get(), &cpu, sizeof cpu) != sizeof cpu ||
          read(from_child.get(), &done, 1) != 1) {
        out.error = "the probe's child died";
        break;
      }
    }
    const std::optional<Readings> r =
        read_quiet(static_cast<uint32_t>(pid), page_size, out.error);
    if (r && r->stat != r->walk) {
      found = r;
      out.touches = touch;
      if (at_quiet_moment) at_quiet_moment(static_cast<uint32_t>(pid));
      break;
    }
  }
  const int32_t exit_command = kExit;
  (void)!write(to_child.get(), &exit_command, sizeof exit_command);
  int wstatus = 0;
  rusage usage{};
  if (wait4(pid, &wstatus, 0, &usage) != pid) kill(pid, SIGKILL);
  if (!found) {
    if (out.error.empty())
      out.error = fmt::format(
          "stat's RSS equalled the page-table walk after {} pages faulted "
          "on {} CPUs: no drift to tell the readers apart",
          max_touches, cpus.size());
    return out;
  }
  out.walk_pages = found->walk;
  out.stat_pages = found->stat;
  out.statm_pages = found->statm;
  out.status_pages = found->status;
  out.vm_hwm_pages = found->vm_hwm;
  out.stat = ReaderVerdict::kApproximate;
  out.statm = verdict(found->statm, found->walk);
  out.status = verdict(found->status, found->walk);
  out.vm_hwm = verdict(found->vm_hwm, found->walk);
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    out.ru_maxrss_pages = usage.ru_maxrss / (page_size / 1024);
    out.ru_maxrss = verdict(*out.ru_maxrss_pages, found->walk);
  }
  return out;
}

}  // namespace rssaudit
