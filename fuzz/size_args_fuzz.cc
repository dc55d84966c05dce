// The CLI's size arguments (cli/units.h parse_bytes, cli/top_filter.h
// --min-rss): a size in [0, 9.2e18) or none, printed back in bytes or KiB
// parses the same; --min-rss takes it or throws UsageError; no overflow.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "cli/errors.h"
#include "cli/top_filter.h"
#include "cli/units.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

void check(std::string_view text) {
  const std::optional<int64_t> bytes = cli::parse_bytes(text);
  if (bytes) {
    const std::string what = fmt::format("{} from {}", *bytes, shown(text));
    FUZZ_CHECK(*bytes >= 0 && *bytes < 9'200'000'000'000'000'000, what);
    for (const std::string& again :
         {fmt::format("{}", *bytes), fmt::format("{}B", *bytes)})
      FUZZ_CHECK(cli::parse_bytes(again) == bytes, what + " as " + again);
    if (*bytes % 1024 == 0) {
      const std::string kib = fmt::format("{}KiB", *bytes / 1024);
      FUZZ_CHECK(cli::parse_bytes(kib) == bytes, what + " as " + kib);
    }
  }

  cli::TopFilter filter;
  filter.min_rss = std::string(text);
  try {
    const std::optional<int64_t> min = filter.min_rss_bytes();
    FUZZ_CHECK(text.empty() ? !min : min == bytes, shown(text));
    // A process at the minimum passes; one of unknown RSS only without one.
    FUZZ_CHECK(filter.passes("bash", "/", min), shown(text));
    FUZZ_CHECK(filter.passes("bash", "/", std::nullopt) != min.has_value(),
               shown(text));
    if (min && *min > 0)
      FUZZ_CHECK(!filter.passes("bash", "/", *min - 1), shown(text));
  } catch (const cli::UsageError& e) {
    FUZZ_CHECK(!text.empty() && !bytes, shown(text) + ": " + e.what());
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, shown(text) + " threw " + e.what());
  }
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
