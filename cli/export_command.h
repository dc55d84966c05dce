#pragma once

#include <CLI/CLI.hpp>

namespace rssaudit::cli {

// `rssaudit export`: CSV, JSON or a self-contained HTML report.
void register_export(CLI::App& app);

}  // namespace rssaudit::cli
