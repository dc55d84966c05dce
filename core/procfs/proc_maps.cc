#include "core/procfs/proc_maps.h"

namespace rssaudit {

VmaKind Vma::kind() const {
  const std::string_view name = pathname;
  if (name.empty() || name.starts_with("[anon:")) return VmaKind::kAnonymous;
  if (name.starts_with("[anon_shmem:")) return VmaKind::kShmem;
  if (!name.starts_with('[')) return VmaKind::kFile;
  if (name == "[heap]") return VmaKind::kHeap;
  if (name == "[stack]" || name.starts_with("[stack:")) return VmaKind::kStack;
  if (name == "[vdso]") return VmaKind::kVdso;
  if (name == "[vvar]" || name == "[vvar_vclock]") return VmaKind::kVvar;
  if (name == "[vsyscall]") return VmaKind::kVsyscall;
  return VmaKind::kOther;
}

Result<void, ParseError> parse_vma_line(ProcScanner line, Vma& out) {
  std::optional<std::string_view> token = line.next('-');
  if (!token) return line.missing("start");
  if (auto ok = line.number(*token, "start", out.start, 16); !ok) return ok;
  if (!(token = line.next(' '))) return line.missing("end");
  if (auto ok = line.number(*token, "end", out.end, 16); !ok) return ok;
  if (out.end < out.start) return line.error(*token, "end", "below start");

  if (!(token = line.next(' '))) return line.missing("perms");
  const std::string_view p = *token;
  if (p.size() != 4 || (p[0] != 'r' && p[0] != '-') ||
      (p[1] != 'w' && p[1] != '-') || (p[2] != 'x' && p[2] != '-') ||
      (p[3] != 's' && p[3] != 'p')) {
    return line.error(p, "perms", "not [r-][w-][x-][sp]");
  }
  out.readable = p[0] == 'r';
  out.writable = p[1] == 'w';
  out.executable = p[2] == 'x';
  out.shared = p[3] == 's';

  if (!(token = line.next(' '))) return line.missing("offset");
  if (auto ok = line.number(*token, "offset", out.offset, 16); !ok) return ok;

  if (!(token = line.next(' '))) return line.missing("dev");
  const size_t colon = token->find(':');
  if (colon == std::string_view::npos) {
    return line.error(*token, "dev", "not MAJOR:MINOR");
  }
  if (auto ok = line.number(token->substr(0, colon), "dev", out.dev_major, 16);
      !ok) {
    return ok;
  }
  if (auto ok = line.number(token->substr(colon + 1), "dev", out.dev_minor, 16);
      !ok) {
    return ok;
  }

  // The kernel always prints a space after the inode.
  if (!(token = line.next(' '))) return line.missing("inode");
  if (auto ok = line.number(*token, "inode", out.inode); !ok) return ok;
  line.skip_blanks();
  out.pathname = line.rest();
  return {};
}

Result<std::vector<Vma>, ParseError> parse_proc_maps(std::string_view text) {
  ProcScanner s(ProcFile::kMaps, text);
  std::vector<Vma> vmas;
  while (!s.rest().empty()) {
    const std::optional<std::string_view> line = s.next('\n');
    if (!line) return s.error(s.rest(), "line", "not ended by a newline");
    if (auto ok = parse_vma_line(s.within(*line), vmas.emplace_back()); !ok) {
      return unexpected(std::move(ok).error());
    }
  }
  return vmas;
}

}  // namespace rssaudit
