// Which processes `top` lists, over the database and live alike: --comm,
// --cgroup (a subtree), --min-rss; and never a row without a name (a
// process whose identity was not read) or pid 0, which are counted apart.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rssaudit::cli {

struct TopFilter {
  std::string comm;     // exact comm; empty: any
  std::string cgroup;   // cgroup v2 path or an ancestor; empty: any
  std::string min_rss;  // a size as given ("64M"); empty: none

  // The options on `sub`.
  void add_options(CLI::App& sub);
  // --min-rss in bytes; a UsageError names a bad one.
  std::optional<int64_t> min_rss_bytes() const;
  // Whether a named process passes; `rss_bytes` empty: unknown (fails
  // --min-rss).
  bool passes(std::string_view process_comm, std::string_view process_cgroup,
              std::optional<int64_t> rss_bytes) const;
  // No name or pid 0: not a row.
  static bool nameless(uint32_t pid, std::string_view process_comm) {
    return pid == 0 || process_comm.empty();
  }
};

}  // namespace rssaudit::cli
