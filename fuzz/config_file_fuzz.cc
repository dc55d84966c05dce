// rssauditd's config file (core/formats/config_file.h): entries with valid,
// unique keys, non-empty trimmed values and strictly increasing lines, or an
// error on a line of the text; entries printed back parse the same.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "core/formats/config_file.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

void check(std::string_view text) {
  const size_t lines = 1 + std::count(text.begin(), text.end(), '\n');
  const auto config = parse_config(text);
  if (!config) {
    const ConfigSyntaxError& e = config.error();
    FUZZ_CHECK(e.line >= 1 && e.line <= lines && !e.message.empty(),
               fmt::format("line {} of {}: {}: {}", e.line, lines,
                           shown(e.message), shown(text)));
    return;
  }
  size_t previous = 0;
  std::set<std::string> keys;
  std::string again_text;
  for (const ConfigEntry& entry : *config) {
    const std::string what =
        fmt::format("line {} key {} value {} of {}", entry.line,
                    shown(entry.key), shown(entry.value), shown(text));
    FUZZ_CHECK(entry.line > previous && entry.line <= lines, what);
    previous = entry.line;
    FUZZ_CHECK(keys.insert(entry.key).second, what);
    FUZZ_CHECK(!entry.key.empty() && entry.key.front() != '-' &&
                   std::all_of(entry.key.begin(), entry.key.end(),
                               [](char c) {
                                 return (c >= 'a' && c <= 'z') ||
                                        (c >= '0' && c <= '9') || c == '-';
                               }),
               what);
    FUZZ_CHECK(!entry.value.empty() && !is_blank(entry.value.front()) &&
                   !is_blank(entry.value.back()) &&
                   entry.value.find('\n') == std::string::npos,
               what);
    again_text += fmt::format("{} = {}\n", entry.key, entry.value);
  }
  const auto again = parse_config(again_text);
  FUZZ_CHECK(again.has_value() && again->size() == config->size(),
             fmt::format("{} from {}", shown(again_text), shown(text)));
  for (size_t i = 0; i < again->size(); ++i) {
    FUZZ_CHECK((*again)[i].line == i + 1 &&
                   (*again)[i].key == (*config)[i].key &&
                   (*again)[i].value == (*config)[i].value,
               fmt::format("entry {} of {} from {}", i, shown(again_text),
                           shown(text)));
  }
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
