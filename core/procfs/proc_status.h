// /proc/PID/status: the named RSS members, the high-water mark and the thread
// count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/procfs/proc_parse_error.h"
#include "core/schemes/update.h"

namespace rssaudit {

struct ProcStatus {
  std::string name;  // unescaped: the kernel writes '\n' as "\n", '\' as "\\"
  uint32_t tgid = 0;
  uint32_t threads = 0;
  // kB. Absent, not 0, for tasks without an mm (kernel threads, zombies);
  // RssAnon/RssFile/RssShmem are also absent before Linux 4.5.
  std::optional<uint64_t> vm_rss_kb;
  std::optional<uint64_t> rss_anon_kb;
  std::optional<uint64_t> rss_file_kb;
  std::optional<uint64_t> rss_shmem_kb;
  std::optional<uint64_t> vm_swap_kb;
  std::optional<uint64_t> vm_hwm_kb;

  // The kernel prints pages << (PAGE_SHIFT - 10), so these are exact.
  // `page_size` is the host's, in bytes (a multiple of 1024).
  std::optional<uint64_t> vm_rss_pages(uint64_t page_size) const {
    return to_pages(vm_rss_kb, page_size);
  }
  std::optional<uint64_t> vm_hwm_pages(uint64_t page_size) const {
    return to_pages(vm_hwm_kb, page_size);
  }
  // RssFile, RssAnon, VmSwap or RssShmem: the rss_stat member `m`.
  std::optional<uint64_t> member_pages(Member m, uint64_t page_size) const;

  static std::optional<uint64_t> to_pages(std::optional<uint64_t> kb,
                                          uint64_t page_size) {
    if (!kb) return std::nullopt;
    return *kb / (page_size / 1024);
  }

  bool operator==(const ProcStatus&) const = default;
};

// Name, Tgid and Threads are required. Threads follows the Vm/Rss lines, so a
// text cut before it is an error rather than a status with fields missing.
Result<ProcStatus, ParseError> parse_proc_status(std::string_view text);

}  // namespace rssaudit
