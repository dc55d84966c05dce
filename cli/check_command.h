#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit check`: what this host offers rssaudit (BPF features, the
// kernel's counting scheme and batch, privileges, the database and the
// daemon's socket); exits 1 when capture cannot run here, saying why.
void register_check(CLI::App& app);

}  // namespace rssaudit::cli
