// The daemon's configuration file: one `key = value` per line, `#` starts a
// comment line, blank lines ignored. Keys are rssauditd's long option names
// (`sample-interval = 2`), so every setting is also a flag and one parser
// (CLI11, in daemon/) checks both. Hand-written because CLI11's own config
// reader reports neither the line nor keeps the order we need to name them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace rssaudit {

// Largest config file read: a settings file is a few hundred bytes; what
// is larger (or not a regular file: /dev/zero, a FIFO) is refused.
inline constexpr size_t kMaxConfigBytes = 1 << 20;

struct ConfigEntry {
  size_t line = 0;  // 1-based
  std::string key;
  std::string value;
};

struct ConfigSyntaxError {
  size_t line = 0;
  std::string message;  // without the file name: the caller adds it
};

// Entries in file order, or the first line that is not `key = value`, or a
// key given twice (naming both lines).
Result<std::vector<ConfigEntry>, ConfigSyntaxError> parse_config(
    std::string_view text);

}  // namespace rssaudit
