// /proc/self/mountinfo, for one fact: whether the procfs mounted at /proc
// hides processes from other users (hidepid=1/noaccess, 2/invisible,
// 4/ptraceable). Each line is "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS
// [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"; since Linux 5.8 every procfs
// mount is an instance with its own hidepid, shown among its super
// options. Of several mounts at /proc the last listed is on top.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rssaudit {

// The hidepid value of the procfs on top at /proc ("invisible", "2", ...),
// or nothing when it hides no process (no hidepid, hidepid=0 or "off", no
// procfs at /proc). Malformed lines are skipped: a fact, not a parse.
std::optional<std::string> procfs_hidepid(std::string_view mountinfo);

}  // namespace rssaudit
