#include "core/formats/help_formatter.h"

#include <memory>
#include <sstream>

namespace rssaudit {

std::string wrap_words(std::string_view text, size_t first_col, size_t indent,
                       size_t width) {
  std::string out;
  size_t col = first_col;
  bool line_empty = true;
  std::istringstream words{std::string(text)};
  for (std::string w; words >> w;) {
    if (!line_empty && col + 1 + w.size() > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
      line_empty = true;
    }
    if (!line_empty) {
      out += ' ';
      ++col;
    }
    out += w;
    col += w.size();
    line_empty = false;
  }
  return out;
}

namespace {

// "  NAME   description", the description wrapped under its column; a name
// reaching the column puts the description on the next line.
std::string two_columns(const std::string& name, const std::string& desc,
                        size_t column) {
  std::string out = "  " + name;
  if (desc.empty()) return out + "\n";
  if (out.size() + 1 > column) {
    out += "\n" + std::string(column, ' ');
  } else {
    out += std::string(column - out.size(), ' ');
  }
  return out + wrap_words(desc, column, column) + "\n";
}

}  // namespace

std::string HelpFormatter::make_option(const CLI::Option* opt,
                                       bool is_positional) const {
  return two_columns(
      make_option_name(opt, is_positional) + make_option_opts(opt),
      make_option_desc(opt), get_column_width());
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  return two_columns(sub->get_display_name(true), sub->get_description(),
                     get_column_width());
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string desc = app->get_description();
  if (desc.empty()) return "";
  return wrap_words(desc, 0, 0) + "\n";
}

void use_help_formatter(CLI::App& app) {
  app.formatter(std::make_shared<HelpFormatter>());
}

}  // namespace rssaudit
