// /proc/PID/smaps_rollup: the kernel's page-table walk summed over all VMAs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/procfs/proc_parse_error.h"

namespace rssaudit {

// All values in kB.
struct ProcSmapsRollup {
  // The header's range: first VMA start to last VMA end (0-0 without VMAs).
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t rss_kb = 0;
  uint64_t pss_kb = 0;
  // Since Linux 5.9.
  std::optional<uint64_t> pss_anon_kb;
  std::optional<uint64_t> pss_file_kb;
  std::optional<uint64_t> pss_shmem_kb;
  uint64_t shared_clean_kb = 0;
  uint64_t shared_dirty_kb = 0;
  uint64_t private_clean_kb = 0;
  uint64_t private_dirty_kb = 0;
  uint64_t referenced_kb = 0;
  uint64_t anonymous_kb = 0;
  uint64_t swap_kb = 0;
  uint64_t swap_pss_kb = 0;

  bool operator==(const ProcSmapsRollup&) const = default;
};

// The header line must end in "[rollup]". Fields present since smaps_rollup
// appeared (4.14) are required, so a text cut before SwapPss is an error.
Result<ProcSmapsRollup, ParseError> parse_proc_smaps_rollup(
    std::string_view text);

}  // namespace rssaudit
