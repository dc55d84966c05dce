#include "core/procfs/proc_smaps_rollup.h"

#include "core/procfs/proc_maps.h"
#include "core/procfs/proc_scan.h"

namespace rssaudit {
namespace {

using Rollup = ProcSmapsRollup;

constexpr struct {
  std::string_view key;
  uint64_t Rollup::*kb;
} kRequired[] = {
    {"Rss", &Rollup::rss_kb},
    {"Pss", &Rollup::pss_kb},
    {"Shared_Clean", &Rollup::shared_clean_kb},
    {"Shared_Dirty", &Rollup::shared_dirty_kb},
    {"Private_Clean", &Rollup::private_clean_kb},
    {"Private_Dirty", &Rollup::private_dirty_kb},
    {"Referenced", &Rollup::referenced_kb},
    {"Anonymous", &Rollup::anonymous_kb},
    {"Swap", &Rollup::swap_kb},
    {"SwapPss", &Rollup::swap_pss_kb},
};

constexpr struct {
  std::string_view key;
  std::optional<uint64_t> Rollup::*kb;
} kOptional[] = {
    {"Pss_Anon", &Rollup::pss_anon_kb},
    {"Pss_File", &Rollup::pss_file_kb},
    {"Pss_Shmem", &Rollup::pss_shmem_kb},
};

}  // namespace

Result<ProcSmapsRollup, ParseError> parse_proc_smaps_rollup(
    std::string_view text) {
  ProcScanner s(ProcFile::kSmapsRollup, text);
  ProcSmapsRollup out;
  const std::optional<std::string_view> header = s.next('\n');
  if (!header) return s.missing("header");
  Vma range;
  if (auto ok = parse_vma_line(s.within(*header), range); !ok)
    return unexpected(std::move(ok).error());
  if (range.pathname != "[rollup]") {
    return s.error(*header, "header", "not a [rollup] line");
  }
  out.start = range.start;
  out.end = range.end;

  uint32_t seen = 0;  // bit i: kRequired[i]
  while (!s.rest().empty()) {
    const std::optional<std::string_view> line = s.next('\n');
    if (!line) return s.error(s.rest(), "line", "not ended by a newline");
    ProcScanner fields = s.within(*line);
    const std::optional<std::string_view> key = fields.next(':');
    if (!key) continue;  // not a "Key:" line; none of ours
    for (size_t i = 0; i < std::size(kRequired); ++i) {
      if (*key != kRequired[i].key) continue;
      if (auto ok = s.kb(fields.rest(), *key, out.*kRequired[i].kb); !ok)
        return unexpected(std::move(ok).error());
      seen |= 1u << i;
    }
    for (const auto& f : kOptional) {
      if (*key != f.key) continue;
      uint64_t kb = 0;
      if (auto ok = s.kb(fields.rest(), *key, kb); !ok)
        return unexpected(std::move(ok).error());
      out.*f.kb = kb;
    }
  }
  for (size_t i = 0; i < std::size(kRequired); ++i) {
    if (!(seen & (1u << i))) return s.missing(kRequired[i].key);
  }
  return out;
}

}  // namespace rssaudit
