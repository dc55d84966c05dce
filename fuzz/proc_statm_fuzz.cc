// /proc/PID/statm (core/procfs/proc_statm.h): seven numbers on one line or
// a ParseError within the text; a parsed statm printed back parses the
// same.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/procfs/proc_statm.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/proc_fuzz.h"

namespace rssaudit::fuzz {
namespace {

void check(std::string_view text) {
  const auto statm = parse_proc_statm(text);
  if (!statm) {
    check_parse_error(statm.error(), ProcFile::kStatm, text);
    return;
  }
  FUZZ_CHECK(text.ends_with('\n') && text.find('\n') == text.size() - 1,
             shown(text));
  const ProcStatm& m = *statm;
  const std::string line =
      fmt::format("{} {} {} {} {} {} {}\n", m.size, m.resident, m.shared,
                  m.text, m.lib, m.data, m.dt);
  check_round_trip(m, text, line, parse_proc_statm);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
