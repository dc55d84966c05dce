// /proc/PID/cgroup (core/procfs/proc_cgroup.h): the v2 path (starting with
// '/', one line) or a ParseError within the text; a parsed path printed
// back parses the same and lies within "/" and within itself.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/procfs/proc_cgroup.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/proc_fuzz.h"

namespace rssaudit::fuzz {
namespace {

void check(std::string_view text) {
  const auto cgroup = parse_proc_cgroup(text);
  if (!cgroup) {
    check_parse_error(cgroup.error(), ProcFile::kCgroup, text);
    return;
  }
  // A v1 hierarchy beside it, as on a hybrid host; alone it says "no v2".
  std::string again_text = "1:name=systemd:/init.scope\n";
  if (const auto& path = cgroup->v2_path) {
    FUZZ_CHECK(path->starts_with('/') && path->find('\n') == path->npos,
               shown(text));
    FUZZ_CHECK(cgroup_within(*path, "/") && cgroup_within(*path, *path),
               shown(*path));
    again_text += fmt::format("0::{}\n", *path);
  }
  check_round_trip(*cgroup, text, again_text, parse_proc_cgroup);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
