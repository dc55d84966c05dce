// Text from processes and files (a comm, a cgroup, a host name) made safe
// to show: every C0 control and DEL, every C1 control (U+0080 to U+009F,
// which xterm-like terminals take as escape sequences: U+009B is CSI,
// raw byte 0x9B too), and every byte that is not UTF-8 becomes '?'.
// Valid UTF-8 else is kept as it is.
#pragma once

#include <string>
#include <string_view>

namespace rssaudit {

// `keep`: C0 controls kept as they are (a multi-line text's '\n').
std::string printable(std::string_view text, std::string_view keep = {});

}  // namespace rssaudit
