#include "core/procfs/proc_mountinfo.h"

#include <vector>

namespace rssaudit {
namespace {

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  while (!line.empty()) {
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    line.remove_prefix(start);
    const size_t end = line.find(' ');
    fields.push_back(line.substr(0, end));
    line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  }
  return fields;
}

}  // namespace

std::optional<std::string> procfs_hidepid(std::string_view mountinfo) {
  std::optional<std::string> top;
  bool proc_seen = false;
  while (!mountinfo.empty()) {
    const size_t eol = mountinfo.find('\n');
    const std::string_view line = mountinfo.substr(0, eol);
    mountinfo.remove_prefix(eol == std::string_view::npos ? mountinfo.size()
                                                          : eol + 1);
    const std::vector<std::string_view> f = fields_of(line);
    size_t dash = 6;  // the separator, after the optional fields
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 5 || dash + 3 >= f.size() || f[4] != "/proc" ||
        f[dash + 1] != "proc")
      continue;
    proc_seen = true;
    top.reset();
    std::string_view options = f[dash + 3];
    while (!options.empty()) {
      const size_t comma = options.find(',');
      const std::string_view option = options.substr(0, comma);
      options.remove_prefix(comma == std::string_view::npos ? options.size()
                                                            : comma + 1);
      if (!option.starts_with("hidepid=")) continue;
      const std::string_view value = option.substr(8);
      if (value != "0" && value != "off") top = std::string(value);
    }
  }
  return proc_seen ? top : std::nullopt;
}

}  // namespace rssaudit
