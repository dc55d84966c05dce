#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit history PID|COMM`: drift and model errors over time.
void register_history(CLI::App& app);

}  // namespace rssaudit::cli
