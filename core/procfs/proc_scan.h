// The one field scanner shared by the /proc parsers: splits the text of one
// read at delimiters, converts numbers with std::from_chars, and builds
// ParseErrors whose offsets are relative to the whole text.
//
// Its checks return Result<void, ParseError>; error() and missing() return
// the error ready to return from a parser: `return s.missing("VmRSS");`.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

#include "core/procfs/proc_parse_error.h"
#include "core/result.h"

namespace rssaudit {

class ProcScanner {
 public:
  ProcScanner(ProcFile file, std::string_view text)
      : file_(file), text_(text), rest_(text) {}

  // A scanner over `part`, a view into this text; its errors keep offsets in
  // the whole text.
  ProcScanner within(std::string_view part) const {
    ProcScanner s = *this;
    s.rest_ = part;
    return s;
  }

  std::string_view rest() const { return rest_; }
  size_t offset() const { return offset_of(rest_); }

  // The text before the next `delim`, consuming both. Nullopt when the text
  // ends first: an unterminated field may have been cut by a short read.
  std::optional<std::string_view> next(char delim) {
    const size_t end = rest_.find(delim);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view field = rest_.substr(0, end);
    rest_.remove_prefix(end + 1);
    return field;
  }

  // Drops leading spaces and tabs (the padding of "Key:   value" lines).
  void skip_blanks() {
    rest_.remove_prefix(std::min(rest_.find_first_not_of(" \t"), rest_.size()));
  }

  // Stores `token` (a view into the text), which must be a whole number of
  // type T, in `out`; otherwise returns an error naming `field`.
  template <typename T>
  Result<void, ParseError> number(std::string_view token,
                                  std::string_view field, T& out,
                                  int base = 10) const {
    const char* end = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(token.data(), end, out, base);
    if (ec == std::errc::result_out_of_range) {
      return error(token, field, "out of range");
    }
    if (ec != std::errc() || ptr != end) {
      return error(token, field, "not a number");
    }
    return {};
  }

  // Parses "   1704 kB" (status and smaps values) into 1704.
  Result<void, ParseError> kb(std::string_view value, std::string_view field,
                              uint64_t& out) const;

  // An error at `at`, a view into the text; the message quotes its start.
  Unexpected<ParseError> error(std::string_view at, std::string_view field,
                               std::string_view reason) const;
  // A field that the text ends before.
  Unexpected<ParseError> missing(std::string_view field) const {
    return error(rest_.substr(rest_.size()), field, "missing (text ends)");
  }

 private:
  size_t offset_of(std::string_view part) const {
    return static_cast<size_t>(part.data() - text_.data());
  }

  ProcFile file_;
  std::string_view text_;
  std::string_view rest_;
};

}  // namespace rssaudit
