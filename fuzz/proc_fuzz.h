// The promise every /proc parser shares (core/procfs/proc_parse_error.h): a
// value, or a ParseError of its file whose byte and line lie within the
// text handed to it, and whose message is one line for a log.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "core/procfs/proc_parse_error.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {

inline void check_parse_error(const ParseError& e, ProcFile file,
                              std::string_view text) {
  const std::string where =
      fmt::format("error {} in {}", shown(e.message), shown(text));
  FUZZ_CHECK(e.file == file, where);
  FUZZ_CHECK(
      e.offset <= text.size(),
      fmt::format("offset {} of {} bytes: {}", e.offset, text.size(), where));
  const auto newlines = static_cast<size_t>(
      std::count(text.begin(), text.begin() + e.offset, '\n'));
  FUZZ_CHECK(e.line == 1 + newlines,
             fmt::format("line {}, {} newlines before byte {}: {}", e.line,
                         newlines, e.offset, where));
  FUZZ_CHECK(!e.field.empty(), where);
  FUZZ_CHECK(e.message.find(fmt::format("at byte {} (line {})", e.offset,
                                        e.line)) != std::string::npos,
             where);
  FUZZ_CHECK(std::none_of(e.message.begin(), e.message.end(),
                          [](char c) {
                            return static_cast<unsigned char>(c) < ' ' ||
                                   c == '\x7f';
                          }),
             where);
}

// The round trip: `value`, parsed from `text`, written back as `again_text`
// (as its /proc file would show it) parses to the same value.
template <class T, class Parse>
void check_round_trip(const T& value, std::string_view text,
                      const std::string& again_text, Parse parse) {
  const auto again = parse(again_text);
  FUZZ_CHECK(again.has_value(),
             fmt::format("{} from {}: {}", shown(again_text), shown(text),
                         again.error().message));
  FUZZ_CHECK(*again == value,
             fmt::format("{} from {}", shown(again_text), shown(text)));
}

}  // namespace rssaudit::fuzz
