#include "cli/table_cells.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "cli/errors.h"

namespace rssaudit::cli {

Cell cell(const std::optional<int64_t>& v) {
  return v ? Cell(*v) : Cell(std::monostate{});
}

Cell cell(const std::optional<std::string>& v) {
  return v ? Cell(*v) : Cell(std::monostate{});
}

std::string csv_field(const Cell& c) {
  if (const auto* n = std::get_if<int64_t>(&c)) return std::to_string(*n);
  const auto* text = std::get_if<std::string>(&c);
  if (!text) return "";
  if (text->find_first_of(",\"\r\n") == std::string::npos) return *text;
  std::string quoted = "\"";
  for (char ch : *text) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

nlohmann::json json_cell(const Cell& c) {
  if (const auto* n = std::get_if<int64_t>(&c)) return *n;
  if (const auto* t = std::get_if<std::string>(&c)) return *t;
  return nullptr;
}

void FieldSelection::add_fields_option(CLI::App& sub) {
  sub.add_option("--fields", fields,
                 "Columns of CSV or JSON rows, comma-separated, in order "
                 "(default: all)");
}

void FieldSelection::add_options(CLI::App& sub, std::string& format,
                                 std::string_view row) {
  sub.add_option("--format", format,
                 fmt::format("text, csv (one row per {}, bytes; --fields "
                             "picks columns) or json (as --json)",
                             row))
      ->check(CLI::IsMember({"text", "csv", "json"}))
      ->capture_default_str();
  add_fields_option(sub);
}

std::vector<size_t> FieldSelection::pick(const Row& row) const {
  std::vector<size_t> out;
  if (fields.empty()) {
    for (size_t i = 0; i < row.size(); ++i) out.push_back(i);
    return out;
  }
  for (size_t at = 0; at <= fields.size();) {
    const size_t comma = std::min(fields.find(',', at), fields.size());
    const std::string name = fields.substr(at, comma - at);
    at = comma + 1;
    size_t i = 0;
    while (i < row.size() && row[i].first != name) ++i;
    if (i == row.size()) {
      std::vector<std::string> known;
      for (const auto& [n, c] : row) known.push_back(n);
      throw UsageError(fmt::format("--fields: no field '{}'; fields: {}", name,
                                   fmt::join(known, ",")));
    }
    out.push_back(i);
  }
  return out;
}

void write_csv_header(std::ostream& out, const Row& row,
                      const std::vector<size_t>& columns) {
  for (size_t i = 0; i < columns.size(); ++i)
    out << (i ? "," : "") << row[columns[i]].first;
  out << "\n";
}

void write_csv_line(std::ostream& out, const Row& row,
                    const std::vector<size_t>& columns) {
  for (size_t i = 0; i < columns.size(); ++i)
    out << (i ? "," : "") << csv_field(row[columns[i]].second);
  out << "\n";
}

void write_csv(std::ostream& out, const std::vector<Row>& rows,
               const std::vector<size_t>& columns, const Row& header_of) {
  write_csv_header(out, header_of, columns);
  for (const Row& r : rows) write_csv_line(out, r, columns);
}

}  // namespace rssaudit::cli
