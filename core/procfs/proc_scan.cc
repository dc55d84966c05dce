#include "core/procfs/proc_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace rssaudit {

Result<void, ParseError> ProcScanner::kb(std::string_view value,
                                         std::string_view field,
                                         uint64_t& out) const {
  ProcScanner s = within(value);
  s.skip_blanks();
  const std::optional<std::string_view> digits = s.next(' ');
  if (!digits) return error(value, field, "expected 'N kB'");
  if (auto n = number(*digits, field, out); !n) return n;
  if (s.rest() != "kB") return error(s.rest(), field, "unit is not kB");
  return {};
}

Unexpected<ParseError> ProcScanner::error(std::string_view at,
                                          std::string_view field,
                                          std::string_view reason) const {
  ParseError e;
  e.file = file_;
  e.field = field;
  e.offset = offset_of(at);
  e.line = 1 + std::count(text_.begin(), text_.begin() + e.offset, '\n');
  // Quote a bounded, printable excerpt: the text may be anything.
  std::string quoted(at.substr(0, 24));
  for (char& c : quoted) {
    if (c < ' ' || c > '~') c = '?';
  }
  e.message = fmt::format("{}: {}: {} at byte {} (line {}): '{}'",
                          proc_file_name(file_), field, reason, e.offset,
                          e.line, quoted);
  return unexpected(std::move(e));
}

}  // namespace rssaudit
