#include "core/procfs/proc_statm.h"

#include "core/procfs/proc_scan.h"

namespace rssaudit {

Result<ProcStatm, ParseError> parse_proc_statm(std::string_view text) {
  ProcScanner s(ProcFile::kStatm, text);
  ProcStatm out;
  const struct {
    std::string_view name;
    uint64_t* value;
    char terminator;
  } fields[] = {
      {"size", &out.size, ' '},     {"resident", &out.resident, ' '},
      {"shared", &out.shared, ' '}, {"text", &out.text, ' '},
      {"lib", &out.lib, ' '},       {"data", &out.data, ' '},
      {"dt", &out.dt, '\n'},
  };
  for (const auto& f : fields) {
    const std::optional<std::string_view> token = s.next(f.terminator);
    if (!token) return s.missing(f.name);
    if (auto ok = s.number(*token, f.name, *f.value); !ok)
      return unexpected(std::move(ok).error());
  }
  if (!s.rest().empty()) return s.error(s.rest(), "dt", "text after it");
  return out;
}

}  // namespace rssaudit
