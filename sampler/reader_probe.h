// Which of the running kernel's RSS readers are precise, measured rather than
// assumed from the version: status and statm summed the per-CPU slots only
// from Linux 6.16 (stable kernels may carry the change back), and before 6.2
// every reader misses the task caches. A child process faults pages one at a
// time on each CPU in turn until stat's RSS differs from a walk of its page
// tables (smaps_rollup, which counts the pages themselves); at that quiet
// moment every reader is compared with the walk, and the child's exit gives
// ru_maxrss. rssauditd takes its verdict on status from this very probe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace rssaudit {

enum class ReaderVerdict : uint8_t {
  kUnknown,      // not measured: see ReaderPrecision::error
  kPrecise,      // equal to the walk while stat was not
  kApproximate,  // differed from the walk at a quiet moment
};
std::string_view reader_verdict_name(ReaderVerdict v);  // "precise", ...

struct ReaderPrecision {
  ReaderVerdict stat = ReaderVerdict::kUnknown;       // field 24
  ReaderVerdict statm = ReaderVerdict::kUnknown;      // resident
  ReaderVerdict status = ReaderVerdict::kUnknown;     // VmRSS
  ReaderVerdict vm_hwm = ReaderVerdict::kUnknown;     // VmHWM
  ReaderVerdict ru_maxrss = ReaderVerdict::kUnknown;  // wait4's rusage
  // The pages behind the verdicts, at the child's quiet moment (ru_maxrss:
  // at its exit, which touches nothing after it).
  int64_t walk_pages = 0;
  int64_t stat_pages = 0;
  int64_t statm_pages = 0;
  int64_t status_pages = 0;
  int64_t vm_hwm_pages = 0;
  std::optional<int64_t> ru_maxrss_pages;
  int touches = 0;    // pages faulted before stat left the walk
  std::string error;  // why the verdicts are unknown; empty when measured
};

// One line for logs: "stat approximate, statm precise, status precise, VmHWM
// at its peak precise, ru_maxrss approximate (walk W pages: stat S, status
// V, ru_maxrss R)", or "unknown: why".
std::string reader_precision_text(const ReaderPrecision& p);

// At most `max_touches` pages; root (or CAP_SYS_PTRACE) to read the child's
// smaps_rollup. The child only makes system calls, so a process with threads
// may call it. `at_quiet_moment`, if given, is called with the child's pid
// while it is quiet and stat's RSS differs from the walk, for other readers
// (ps, top) to be measured against the same figures.
ReaderPrecision probe_reader_precision(
    int max_touches = 512,
    const std::function<void(uint32_t pid)>& at_quiet_moment = {});

}  // namespace rssaudit
