// The outcome of parsing the text of one /proc read: the parsed value, or
// where and why the text was rejected. Every /proc parser returns this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

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

template <typename T>
class [[nodiscard]] ParseResult {
 public:
  // Implicit, so a parser can `return value;` and `return error;`.
  ParseResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  ParseResult(ParseError error)
      : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  // Throw std::bad_variant_access when called on the wrong alternative.
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const ParseError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ParseError> v_;
};

}  // namespace rssaudit
