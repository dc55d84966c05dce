#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit top`: processes ranked by RSS drift over a time window.
void register_top(CLI::App& app);

}  // namespace rssaudit::cli
