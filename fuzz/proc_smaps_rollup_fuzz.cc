// /proc/PID/smaps_rollup (core/procfs/proc_smaps_rollup.h): a rollup or a
// ParseError within the text; a parsed rollup printed back parses the same.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/procfs/proc_smaps_rollup.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/proc_fuzz.h"

namespace rssaudit::fuzz {
namespace {

// In the kernel's order (fs/proc/task_mmu.c, show_smaps_rollup).
std::string rollup_text(const ProcSmapsRollup& r) {
  std::string out = fmt::format(
      "{:08x}-{:08x} ---p 00000000 00:00 0                          "
      "[rollup]\n",
      r.start, r.end);
  const auto kb = [&](std::string_view key, uint64_t v) {
    out += fmt::format("{:<16}{:8} kB\n", fmt::format("{}:", key), v);
  };
  const auto maybe = [&](std::string_view key, std::optional<uint64_t> v) {
    if (v) kb(key, *v);
  };
  kb("Rss", r.rss_kb);
  kb("Pss", r.pss_kb);
  maybe("Pss_Anon", r.pss_anon_kb);
  maybe("Pss_File", r.pss_file_kb);
  maybe("Pss_Shmem", r.pss_shmem_kb);
  kb("Shared_Clean", r.shared_clean_kb);
  kb("Shared_Dirty", r.shared_dirty_kb);
  kb("Private_Clean", r.private_clean_kb);
  kb("Private_Dirty", r.private_dirty_kb);
  kb("Referenced", r.referenced_kb);
  kb("Anonymous", r.anonymous_kb);
  out += "LazyFree:              0 kB\n";
  kb("Swap", r.swap_kb);
  kb("SwapPss", r.swap_pss_kb);
  out += "Locked:                0 kB\n";
  return out;
}

void check(std::string_view text) {
  const auto rollup = parse_proc_smaps_rollup(text);
  if (!rollup) {
    check_parse_error(rollup.error(), ProcFile::kSmapsRollup, text);
    return;
  }
  FUZZ_CHECK(rollup->start <= rollup->end, shown(text));
  const std::string again_text = rollup_text(*rollup);
  check_round_trip(*rollup, text, again_text, parse_proc_smaps_rollup);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
