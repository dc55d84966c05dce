// /proc/PID/cgroup: the process's cgroup v2 path.
//
// One line per hierarchy, "hierarchy-ID:controllers:path". The unified (v2)
// hierarchy is the line "0::path"; v1 hierarchies (other IDs, or named ones
// such as "1:name=systemd:/") are skipped. The kernel prints the path
// verbatim: spaces and other bytes are not escaped, but it refuses '\n' in a
// cgroup name (cgroup_mkdir, -EINVAL; checked on 6.1), so one line is one
// entry. Inside a cgroup namespace the path is relative to its root and may
// start with "/.."; a removed v2 cgroup gets " (deleted)" appended, which
// cannot be told apart from a cgroup named so: both are kept as printed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/procfs/proc_parse_error.h"

namespace rssaudit {

struct ProcCgroup {
  // The "0::" line's path; empty when the process has none (a v1-only host).
  std::optional<std::string> v2_path;

  bool operator==(const ProcCgroup&) const = default;
};

// Every line must have the three fields and end in '\n' (a read cut short
// is an error, never a shorter path); the v2 path must start with '/'; at
// most one "0::" line.
Result<ProcCgroup, ParseError> parse_proc_cgroup(std::string_view text);

// Whether the cgroup v2 `path` is `root` or below it: "/a/b" is within "/a"
// and "/a/", "/ab" is not; everything is within "/".
bool cgroup_within(std::string_view path, std::string_view root);

}  // namespace rssaudit
