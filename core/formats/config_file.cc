#include "core/formats/config_file.h"

#include <fmt/core.h>

#include <unordered_map>

namespace rssaudit {
namespace {

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool valid_key(std::string_view key) {
  if (key.empty() || key.front() == '-') return false;
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
      return false;
  return true;
}

}  // namespace

Result<std::vector<ConfigEntry>, ConfigSyntaxError> parse_config(
    std::string_view text) {
  std::vector<ConfigEntry> entries;
  std::unordered_map<std::string, size_t> first_line;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text =
        nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return unexpected(ConfigSyntaxError{line_no, "expected 'key = value'"});
    const std::string key(trim(line.substr(0, eq)));
    if (!valid_key(key))
      return unexpected(ConfigSyntaxError{
          line_no, fmt::format("'{}' is not a key: lower-case letters, "
                               "digits and '-', as the long option names",
                               key)});
    const std::string_view value = trim(line.substr(eq + 1));
    if (value.empty())
      return unexpected(ConfigSyntaxError{
          line_no, fmt::format("key '{}' has no value", key)});
    if (auto [it, fresh] = first_line.emplace(key, line_no); !fresh)
      return unexpected(ConfigSyntaxError{
          line_no,
          fmt::format("key '{}' already set on line {}", key, it->second)});
    entries.push_back(ConfigEntry{line_no, key, std::string(value)});
  }
  return entries;
}

}  // namespace rssaudit
