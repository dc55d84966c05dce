// How far each RSS reader of a kernel can be from the truth for a process of
// T threads: what a test author asks before asserting on time(1)'s maximum
// RSS or a compiler suite's maxrss (docs/counters.md, "Who reads which
// value"). Pure: the kernel's scheme, CPUs and batch go in.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/schemes/topology.h"

namespace rssaudit {

// A file fault maps up to fault_around_bytes (64 KiB by default) of pages
// in one event; an anonymous fault one page.
inline constexpr int64_t kFaultAroundPages = 16;

struct ReaderTolerance {
  std::string_view reader;  // stat, vm_hwm, ru_maxrss, status
  std::string_view what;    // the files and calls that read it
  int64_t rss_pages = 0;    // largest |read - true| of RSS (file+anon+shmem)
  int64_t anon_pages = 0;   // of its anon counter alone
  // False: the error lasts for as long as the threads neither fault nor
  // exit (before 6.2); true: it is bounded whenever the reader runs.
  bool bounded_in_time = true;
};

// `percpu_counter`: the kernel is 6.2+ (else atomics + per-task caches);
// `host`: its CPUs and rss_stat batch; `threads` >= 1.
std::vector<ReaderTolerance> reader_tolerance(bool percpu_counter,
                                              const Topology& host,
                                              uint32_t threads);

}  // namespace rssaudit
