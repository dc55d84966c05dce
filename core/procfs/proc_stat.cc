#include "core/procfs/proc_stat.h"

#include <fmt/format.h>

#include "core/procfs/proc_scan.h"

namespace rssaudit {

Result<ProcStat, ParseError> parse_proc_stat(std::string_view text) {
  ProcScanner s(ProcFile::kStat, text);
  ProcStat out;
  const size_t open = text.find('(');
  const std::optional<std::string_view> pid = s.next(' ');
  if (open == std::string_view::npos || !pid || s.offset() != open) {
    return s.error(text, "field 1 (pid)", "expected 'PID ('");
  }
  if (auto ok = s.number(*pid, "field 1 (pid)", out.pid); !ok)
    return unexpected(std::move(ok).error());

  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || close < open ||
      text.substr(close + 1, 1) != " ") {
    return s.error(s.rest(), "field 2 (comm)", "expected '(COMM) '");
  }
  out.comm = text.substr(open + 1, close - open - 1);

  s = s.within(text.substr(close + 2));
  for (int field = 3; field <= 24; ++field) {
    const std::optional<std::string_view> token = s.next(' ');
    if (!token) return s.missing(fmt::format("field {}", field));
    Result<void, ParseError> ok;
    switch (field) {
      case 3:
        if (token->size() != 1) {
          return s.error(*token, "field 3 (state)", "not one character");
        }
        out.state = token->front();
        break;
      case 4:
        ok = s.number(*token, "field 4 (ppid)", out.ppid);
        break;
      case 9:
        ok = s.number(*token, "field 9 (flags)", out.flags);
        break;
      case 20:
        ok = s.number(*token, "field 20 (num_threads)", out.num_threads);
        break;
      case 22:
        ok = s.number(*token, "field 22 (starttime)", out.start_time);
        break;
      case 23:
        ok = s.number(*token, "field 23 (vsize)", out.vsize);
        break;
      case 24:
        ok = s.number(*token, "field 24 (rss)", out.rss);
        break;
    }
    if (!ok) return unexpected(std::move(ok).error());
  }
  return out;
}

RssReads rss_reads_between(const ProcStat& before, const ProcStat& after) {
  // An exit tears the counters down, folding as it goes: its reads are of
  // no moment even where field 24 happened to hold still.
  if (before.exiting() || after.exiting()) return RssReads::kExiting;
  return before.rss == after.rss ? RssReads::kStill : RssReads::kMoving;
}

}  // namespace rssaudit
