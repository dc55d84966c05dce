// /proc/PID/stat (core/procfs/proc_stat.h), hostile comms included: a
// ProcStat whose comm runs from the first '(' to the last ')', or a
// ParseError within the text; a parsed stat printed back parses the same.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/procfs/proc_stat.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/proc_fuzz.h"

namespace rssaudit::fuzz {
namespace {

// `s` as the kernel prints it (fs/proc/array.c): fields 5 to 8, 10 to 19
// and 21, which the parser skips, as 0, and one field after 24.
std::string stat_line(const ProcStat& s) {
  return fmt::format(
      "{} ({}) {} {} 0 0 0 0 {} 0 0 0 0 0 0 0 0 0 0 {} 0 {} {} {} 0\n", s.pid,
      s.comm, s.state, s.ppid, s.flags, s.num_threads, s.start_time, s.vsize,
      s.rss);
}

void check(std::string_view text) {
  const auto stat = parse_proc_stat(text);
  if (!stat) {
    check_parse_error(stat.error(), ProcFile::kStat, text);
    return;
  }
  const size_t open = text.find('('), close = text.rfind(')');
  FUZZ_CHECK(open != text.npos && close != text.npos && open < close &&
                 stat->comm == text.substr(open + 1, close - open - 1),
             shown(text));
  check_round_trip(*stat, text, stat_line(*stat), parse_proc_stat);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
