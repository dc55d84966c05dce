// /proc/PID/status (core/procfs/proc_status.h): a ProcStatus or a
// ParseError within the text; a parsed status printed back, its name
// escaped as task_name() escapes it, parses the same.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/procfs/proc_status.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/proc_fuzz.h"

namespace rssaudit::fuzz {
namespace {

// As fs/proc/array.c prints it: '\n' as "\n" and '\' as "\\".
std::string status_text(const ProcStatus& s) {
  std::string name;
  for (const char c : s.name) {
    if (c == '\n') {
      name += "\\n";
    } else if (c == '\\') {
      name += "\\\\";
    } else {
      name += c;
    }
  }
  std::string out = fmt::format("Name:\t{}\nUmask:\t0022\nState:\tS\n", name);
  out += fmt::format("Tgid:\t{}\nPid:\t{}\n", s.tgid, s.tgid);
  const auto kb = [&](std::string_view key, std::optional<uint64_t> v) {
    if (v) out += fmt::format("{}:\t{:8} kB\n", key, *v);
  };
  kb("VmHWM", s.vm_hwm_kb);
  kb("VmRSS", s.vm_rss_kb);
  kb("RssAnon", s.rss_anon_kb);
  kb("RssFile", s.rss_file_kb);
  kb("RssShmem", s.rss_shmem_kb);
  kb("VmSwap", s.vm_swap_kb);
  out += fmt::format("Threads:\t{}\n", s.threads);
  return out;
}

void check(std::string_view text) {
  const auto status = parse_proc_status(text);
  if (!status) {
    check_parse_error(status.error(), ProcFile::kStatus, text);
    return;
  }
  // Any page size the kernel has (a multiple of 1024) divides safely.
  for (const uint64_t page_size : {4096u, 16384u, 65536u}) {
    static_cast<void>(status->vm_rss_pages(page_size));
    for (const Member m : {kFilePages, kAnonPages, kSwapEnts, kShmemPages})
      static_cast<void>(status->member_pages(m, page_size));
  }
  const std::string again_text = status_text(*status);
  check_round_trip(*status, text, again_text, parse_proc_status);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
