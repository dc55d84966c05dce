#include "core/procfs/proc_cgroup.h"

#include "core/procfs/proc_scan.h"

namespace rssaudit {

Result<ProcCgroup, ParseError> parse_proc_cgroup(std::string_view text) {
  ProcScanner s(ProcFile::kCgroup, text);
  ProcCgroup out;
  if (text.empty()) return s.missing("hierarchy-ID");
  while (!s.rest().empty()) {
    const std::optional<std::string_view> line = s.next('\n');
    // No newline: the read stopped inside the line, maybe inside the path.
    if (!line) return s.error(s.rest(), "line", "cut short (no newline)");
    ProcScanner f = s.within(*line);
    const std::optional<std::string_view> id = f.next(':');
    if (!id) return f.error(*line, "hierarchy-ID", "no ':' after it");
    uint32_t hierarchy = 0;
    if (auto ok = f.number(*id, "hierarchy-ID", hierarchy); !ok)
      return unexpected(std::move(ok).error());
    const std::optional<std::string_view> controllers = f.next(':');
    // The path is the rest of the line: it may itself hold ':'.
    if (!controllers) {
      return f.error(f.rest(), "controllers", "no ':' after them");
    }
    const std::string_view path = f.rest();
    if (hierarchy != 0 || !controllers->empty()) continue;  // cgroup v1
    if (out.v2_path) return f.error(*id, "hierarchy-ID", "second 0:: line");
    if (!path.starts_with('/')) {
      return f.error(path, "path", "does not start with '/'");
    }
    out.v2_path = std::string(path);
  }
  return out;
}

bool cgroup_within(std::string_view path, std::string_view root) {
  while (root.ends_with('/')) root.remove_suffix(1);  // "/" becomes ""
  return path.starts_with(root) &&
         (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace rssaudit
