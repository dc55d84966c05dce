// /proc/PID/maps: the VMAs a pagemap walk visits, and the names that explain
// where the walk and the RSS counters legitimately differ.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/procfs/proc_parse_error.h"
#include "core/procfs/proc_scan.h"

namespace rssaudit {

enum class VmaKind : uint8_t {
  kAnonymous,  // no name, or "[anon:NAME]" (PR_SET_VMA_ANON_NAME)
  kShmem,      // "[anon_shmem:NAME]"; unnamed shared anon shows as a file
  kFile,       // a path (maybe " (deleted)") or "anon_inode:[...]" etc.
  kHeap,       // "[heap]"
  kStack,      // "[stack]", "[stack:TID]" before Linux 4.5
  kVdso,       // "[vdso]"
  // "[vvar]", "[vvar_vclock]": PFN maps, skipped by the kernel's page walks
  // (pagemap shows them not present) and never counted in RSS.
  kVvar,
  // "[vsyscall]": above the user range that pagemap covers.
  kVsyscall,
  kOther,  // any other "[...]" name, e.g. "[uprobes]"
};

struct Vma {
  uint64_t start = 0;
  uint64_t end = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  bool shared = false;  // 's' rather than 'p'
  uint64_t offset = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  // As printed: the kernel escapes '\n' in paths as "\012" but not '\', so
  // this is not unescaped. Leading padding is dropped (paths start with '/').
  std::string pathname;

  uint64_t size() const { return end - start; }
  VmaKind kind() const;
  bool deleted() const { return pathname.ends_with(" (deleted)"); }

  bool operator==(const Vma&) const = default;
};

// An empty text is a process without an mm: no VMAs. Every line must end in
// '\n'; a text cut at a line boundary cannot be told from a shorter map.
Result<std::vector<Vma>, ParseError> parse_proc_maps(std::string_view text);

// One line without its '\n', scanned by `line`. Shared with smaps_rollup,
// whose header has the same layout.
Result<void, ParseError> parse_vma_line(ProcScanner line, Vma& out);

}  // namespace rssaudit
