#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit status`: the running daemon's health, over its control socket.
void register_status(CLI::App& app);

}  // namespace rssaudit::cli
