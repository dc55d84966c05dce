#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit record` and `rssaudit replay`: save the raw update stream to a
// file and audit it later, here or elsewhere.
void register_record(CLI::App& app);
void register_replay(CLI::App& app);

}  // namespace rssaudit::cli
