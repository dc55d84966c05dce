#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit show PID|COMM`: every source of one process side by side.
void register_show(CLI::App& app);

}  // namespace rssaudit::cli
