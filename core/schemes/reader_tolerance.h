// How far each RSS reader can be from the truth for a process of T threads,
// under each counting scheme: what a test author asks before asserting on
// time(1)'s maximum RSS or a compiler suite's maxrss (docs/counters.md,
// "Who reads which value" and each scheme's readers). Pure: the scheme,
// CPUs and batch go in; `rssaudit check` asks it of the running kernel's
// scheme, `simulate --tolerance` of every scheme on any CPU count.
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
  // exit (per-task caches); true: it is bounded whenever the reader runs.
  bool bounded_in_time = true;
};

// `scheme`: a name of SchemeSet::kNames (upstream is the kernel's since
// 6.2, per_task before); `threads` >= 1. `status_precise`: whether status
// and statm sum the per-CPU slots, as upstream's do only since a 2025
// change (docs/counters.md; `rssaudit check` measures it); else they read
// the count as stat does. Empty for an unknown scheme.
std::vector<ReaderTolerance> reader_tolerance(std::string_view scheme,
                                              const Topology& t,
                                              uint32_t threads,
                                              bool status_precise = true);

}  // namespace rssaudit
