// A name another user controls (a comm, a cgroup path) as one token of a
// key=value log line. Any byte that could end the line, split the token,
// drive a terminal or be read as another encoding is written as \xNN:
// controls, space, DEL, '\', '"' and every byte past ASCII. So a process
// named "x\nmm tgid=1" cannot forge a line, and the token reads back
// exactly. An empty name is "".
#pragma once

#include <string>
#include <string_view>

namespace rssaudit {

inline std::string log_token(std::string_view name) {
  if (name.empty()) return "\"\"";
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(name.size());
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '\\' || c == '"') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace rssaudit
