// Help text at most 80 columns wide, for rssaudit and rssauditd alike.
// CLI11 2.1 (Debian 12) prints each description on one line whatever its
// length (`rssaudit --help` reached 172 columns, rssauditd's 180); this
// formatter wraps descriptions under their column, and the programs' own
// description, at kHelpWidth.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace rssaudit {

inline constexpr size_t kHelpWidth = 80;

// `text` in lines of at most `width` columns, words kept whole (a longer
// word gets a line of its own), the first line starting at column
// `first_col` (the caller printed that much), the others indented by
// `indent`. No trailing newline.
std::string wrap_words(std::string_view text, size_t first_col, size_t indent,
                       size_t width = kHelpWidth);

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(30); }
  std::string make_option(const CLI::Option* opt,
                          bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
};

// Gives `app` the formatter; call before adding subcommands, which inherit
// it.
void use_help_formatter(CLI::App& app);

}  // namespace rssaudit
