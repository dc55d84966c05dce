#include "core/procfs/proc_status.h"

#include "core/procfs/proc_scan.h"

namespace rssaudit {
namespace {

constexpr struct {
  std::string_view key;
  std::optional<uint64_t> ProcStatus::*kb;
} kKbFields[] = {
    {"VmRSS", &ProcStatus::vm_rss_kb},
    {"RssAnon", &ProcStatus::rss_anon_kb},
    {"RssFile", &ProcStatus::rss_file_kb},
    {"RssShmem", &ProcStatus::rss_shmem_kb},
    {"VmSwap", &ProcStatus::vm_swap_kb},
    {"VmHWM", &ProcStatus::vm_hwm_kb},
};

// Undoes task_name()'s escaping, which only touches '\n' and '\'.
Result<void, ParseError> unescape_name(const ProcScanner& s,
                                       std::string_view value,
                                       std::string& out) {
  out.clear();
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '\\') {
      out += value[i];
      continue;
    }
    const char escaped = i + 1 < value.size() ? value[i + 1] : '\0';
    if (escaped != 'n' && escaped != '\\') {
      return s.error(value.substr(i), "Name", "unknown escape");
    }
    out += escaped == 'n' ? '\n' : '\\';
    ++i;
  }
  return {};
}

}  // namespace

std::optional<uint64_t> ProcStatus::member_pages(Member m,
                                                 uint64_t page_size) const {
  switch (m) {
    case kFilePages:
      return to_pages(rss_file_kb, page_size);
    case kAnonPages:
      return to_pages(rss_anon_kb, page_size);
    case kSwapEnts:
      return to_pages(vm_swap_kb, page_size);
    case kShmemPages:
      return to_pages(rss_shmem_kb, page_size);
  }
  return std::nullopt;
}

Result<ProcStatus, ParseError> parse_proc_status(std::string_view text) {
  ProcScanner s(ProcFile::kStatus, text);
  ProcStatus out;
  bool has_name = false, has_tgid = false, has_threads = false;
  while (!s.rest().empty()) {
    const std::optional<std::string_view> line = s.next('\n');
    if (!line) return s.error(s.rest(), "line", "not ended by a newline");
    ProcScanner fields = s.within(*line);
    const std::optional<std::string_view> key = fields.next(':');
    if (!key) continue;  // not a "Key:" line; none of ours
    const std::string_view value = fields.rest();
    fields.skip_blanks();
    const std::string_view number = fields.rest();
    if (*key == "Name") {
      // One tab follows the colon; a comm may itself start with blanks.
      if (!value.starts_with('\t')) return s.error(value, "Name", "no tab");
      if (auto ok = unescape_name(s, value.substr(1), out.name); !ok)
        return unexpected(std::move(ok).error());
      has_name = true;
    } else if (*key == "Tgid") {
      if (auto ok = s.number(number, "Tgid", out.tgid); !ok)
        return unexpected(std::move(ok).error());
      has_tgid = true;
    } else if (*key == "Threads") {
      if (auto ok = s.number(number, "Threads", out.threads); !ok)
        return unexpected(std::move(ok).error());
      has_threads = true;
    } else {
      for (const auto& f : kKbFields) {
        if (*key != f.key) continue;
        uint64_t kb = 0;
        if (auto ok = s.kb(value, f.key, kb); !ok)
          return unexpected(std::move(ok).error());
        out.*f.kb = kb;
        break;
      }
    }
  }
  if (!has_name) return s.missing("Name");
  if (!has_tgid) return s.missing("Tgid");
  if (!has_threads) return s.missing("Threads");
  return out;
}

}  // namespace rssaudit
