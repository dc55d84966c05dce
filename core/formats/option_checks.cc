#include "core/formats/option_checks.h"

#include <fmt/core.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace rssaudit {
namespace {

constexpr double kYear = 365.0 * 86400;

}  // namespace

CLI::Validator finite_in(double min, double max, bool zero, const char* unit) {
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) v = NAN;
        } catch (const std::exception&) {
          v = NAN;
        }
        if (std::isfinite(v) && ((zero && v == 0) || (v >= min && v <= max)))
          return "";
        return fmt::format("takes {}{:g} to {:g} {}, got '{}'",
                           zero ? "0 or " : "", min, max, unit, text);
      },
      "NUMBER");
}

CLI::Validator seconds_in(double min, bool zero) {
  return finite_in(min, kYear, zero, "seconds");
}

CLI::Validator whole_in(uint64_t min, uint64_t max, const char* unit) {
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.size() <= 20 &&
            text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long v =
            digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (digits && errno == 0 && v >= min && v <= max) return "";
        return fmt::format("takes a whole number from {} to {} ({}), got '{}'",
                           min, max, unit, text);
      },
      "COUNT");
}

}  // namespace rssaudit
