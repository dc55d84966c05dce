// Human units for page counts.
#pragma once

#include <cstdint>
#include <string>

namespace rssaudit::cli {

// 4 KiB pages as MiB with one decimal, e.g. "1150.5".
std::string pages_as_mib(int64_t pages);

}  // namespace rssaudit::cli
