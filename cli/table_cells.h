// Rows of named cells, the one form every machine-readable output takes:
// export's CSV and JSON, and top's and history's --format csv; --fields
// picks and orders the columns (as below's `dump --fields` does).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rssaudit::cli {

// One cell: empty (a source not read, never 0), a number or text.
using Cell = std::variant<std::monostate, int64_t, std::string>;
using Row = std::vector<std::pair<std::string, Cell>>;

Cell cell(const std::optional<int64_t>& v);
Cell cell(const std::optional<std::string>& v);
// RFC 4180: quoted when it holds a separator, a quote or a line break.
std::string csv_field(const Cell& c);
nlohmann::json json_cell(const Cell& c);

// --fields a,b,c: the columns wanted, in order; empty: all.
struct FieldSelection {
  std::string fields;

  // --fields alone (export has its own --format).
  void add_fields_option(CLI::App& sub);
  // --format text|csv|json (json as --json) and --fields; `row` names what
  // a CSV row is ("process").
  void add_options(CLI::App& sub, std::string& format, std::string_view row);
  // The indices into `row`'s columns to print; a UsageError names an
  // unknown field and lists the known ones.
  std::vector<size_t> pick(const Row& row) const;
};

// The header, then one line per row, of the picked columns.
void write_csv(std::ostream& out, const std::vector<Row>& rows,
               const std::vector<size_t>& columns, const Row& header_of);
void write_csv_line(std::ostream& out, const Row& row,
                    const std::vector<size_t>& columns);
void write_csv_header(std::ostream& out, const Row& row,
                      const std::vector<size_t>& columns);

}  // namespace rssaudit::cli
