// rssaudit's command line: the program's own flags and every subcommand,
// registered on `app`. main() parses and runs it; fuzz/cli_args_fuzz.cc
// parses it without running anything.
#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

inline constexpr const char* kProgramDescription =
    "rssaudit: how wrong the kernel's RSS counters are, and what each "
    "counting scheme would report";

void register_commands(CLI::App& app);

}  // namespace rssaudit::cli
