// /proc/PID/maps (core/procfs/proc_maps.h), and parse_vma_line on a text
// of one line: VMAs or a ParseError within the text; parsed VMAs printed
// back parse the same.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/procfs/proc_maps.h"
#include "core/procfs/proc_scan.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/proc_fuzz.h"

namespace rssaudit::fuzz {
namespace {

// As show_map_vma() prints it, without the padding before the path.
std::string vma_line(const Vma& v) {
  return fmt::format("{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} {}",
                     v.start, v.end, v.readable ? 'r' : '-',
                     v.writable ? 'w' : '-', v.executable ? 'x' : '-',
                     v.shared ? 's' : 'p', v.offset, v.dev_major, v.dev_minor,
                     v.inode, v.pathname);
}

void check_vma(const Vma& v, std::string_view text) {
  FUZZ_CHECK(v.start <= v.end, shown(text));
  FUZZ_CHECK(v.pathname.find('\n') == std::string::npos, shown(text));
  FUZZ_CHECK(!v.pathname.starts_with(' ') && !v.pathname.starts_with('\t'),
             shown(text));
  static_cast<void>(v.kind());
  static_cast<void>(v.deleted());
}

void check_maps(std::string_view text) {
  const auto maps = parse_proc_maps(text);
  if (!maps) {
    check_parse_error(maps.error(), ProcFile::kMaps, text);
    return;
  }
  std::string again_text;
  for (const Vma& v : *maps) {
    check_vma(v, text);
    again_text += vma_line(v) + '\n';
  }
  check_round_trip(*maps, text, again_text, parse_proc_maps);
}

// One line without its '\n', as smaps_rollup's header is handed to it.
void check_line(std::string_view line) {
  Vma vma;
  if (auto ok = parse_vma_line(ProcScanner(ProcFile::kMaps, line), vma); !ok) {
    check_parse_error(ok.error(), ProcFile::kMaps, line);
    return;
  }
  check_vma(vma, line);
  const std::string again_line = vma_line(vma);
  Vma again;
  const auto ok =
      parse_vma_line(ProcScanner(ProcFile::kMaps, again_line), again);
  FUZZ_CHECK(ok && again == vma,
             fmt::format("{} from {}", shown(again_line), shown(line)));
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = rssaudit::fuzz::as_text(data, size);
  rssaudit::fuzz::check_maps(text);
  rssaudit::fuzz::check_line(text.substr(0, text.find('\n')));
  return 0;
}
