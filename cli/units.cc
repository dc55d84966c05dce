#include "cli/units.h"

#include <fmt/core.h>

#include "core/topology.h"

namespace rssaudit::cli {

std::string pages_as_mib(int64_t pages) {
  return fmt::format("{:.1f}", pages * double(kPageSize) / (1 << 20));
}

}  // namespace rssaudit::cli
