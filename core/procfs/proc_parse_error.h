// Where and why the text of one /proc read was rejected: the error of every
// /proc parser, which returns Result<T, ParseError> (core/result.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace rssaudit {

// The /proc files core/ parses. Also keys the daemon's per-file loss counts.
enum class ProcFile : uint8_t {
  kStat,
  kStatm,
  kStatus,
  kSmapsRollup,
  kMaps,
  kCgroup,
};

constexpr std::string_view proc_file_name(ProcFile file) {
  switch (file) {
    case ProcFile::kStat:
      return "/proc/PID/stat";
    case ProcFile::kStatm:
      return "/proc/PID/statm";
    case ProcFile::kStatus:
      return "/proc/PID/status";
    case ProcFile::kSmapsRollup:
      return "/proc/PID/smaps_rollup";
    case ProcFile::kMaps:
      return "/proc/PID/maps";
    case ProcFile::kCgroup:
      return "/proc/PID/cgroup";
  }
  return "/proc/PID/?";
}

struct ParseError {
  ProcFile file = ProcFile::kStat;
  std::string field;  // "field 22 (starttime)", "VmRSS", "inode", ...
  size_t offset = 0;  // byte of the text where parsing failed
  size_t line = 1;    // 1-based line of that byte
  // The file, field, place and reason in one sentence, for logs.
  std::string message;
};

}  // namespace rssaudit
