#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit simulate`: every scheme on a simulated CPU topology.
void register_simulate(CLI::App& app);

}  // namespace rssaudit::cli
