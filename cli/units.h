// Human units for page counts, and the fidelity ratio.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rssaudit::cli {

// 4 KiB pages as MiB with one decimal, e.g. "1150.5".
std::string pages_as_mib(int64_t pages);

// How the query commands print memory amounts (--pages, --bytes).
enum class SizeUnit { kHuman, kPages, kBytes };

// --pages / --bytes as chosen on the command line.
struct UnitOptions {
  bool pages = false;
  bool bytes = false;
  SizeUnit unit() const {
    return pages   ? SizeUnit::kPages
           : bytes ? SizeUnit::kBytes
                   : SizeUnit::kHuman;
  }
};

// --pages and --bytes (exclusive).
void add_unit_options(CLI::App& sub, UnitOptions& o);

// `pages` of `page_size` bytes: "640 KiB", "1.5 MiB", "2.0 GiB", "96.0 TiB"
// (human: the largest unit whose figure is below 1024),
// "384 pg" or "1572864 B". Signed amounts (drift) get an explicit "+".
std::string format_size(int64_t pages, int64_t page_size, SizeUnit unit,
                        bool show_plus = false);

// "1.4G", "1.4GiB", "512M", "4096": bytes (binary units, K to T, an
// optional "iB" or "B"); empty when the text is no size.
std::optional<int64_t> parse_bytes(std::string_view text);

// "99.99% (999990 of 1000000 checked updates)", or "not measured" when no
// update was compared with the kernel's count (an mm not seen from its
// creation). Rounded down: a model that missed once never reads as 100%.
std::string fidelity_text(uint64_t matched, uint64_t checked);

}  // namespace rssaudit::cli
