// `top --live` and `show --live`: the same questions as over the database,
// answered by the running rssauditd from its in-memory audit.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <cstddef>
#include <string>

#include "cli/query_support.h"
#include "cli/top_filter.h"
#include "core/formats/live_view.h"

namespace rssaudit::cli {

struct LiveOptions {
  bool enabled = false;  // --live
  std::string socket;    // --socket
};

// --live and --socket. Call after the database options: --live excludes
// those of them `sub` has (--db, --since, --until, --run).
void add_live_options(CLI::App& sub, LiveOptions& o);

// `sort`: "drift", "ratio" or "rss"; at most `limit` processes.
void run_top_live(const LiveOptions& live, const QueryOptions& query,
                  const std::string& sort, size_t limit,
                  const TopFilter& filter);

// `which`: a pid, else a comm.
void run_show_live(const LiveOptions& live, const QueryOptions& query,
                   const std::string& which);

}  // namespace rssaudit::cli
