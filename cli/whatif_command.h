#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit whatif`: what every counting scheme would have reported for one
// source of updates: a live process (root), a recording, or a synthetic
// workload.
void register_whatif(CLI::App& app);

}  // namespace rssaudit::cli
