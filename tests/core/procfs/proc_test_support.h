// Checks shared by the /proc parser tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace rssaudit {

// Parses every prefix of `text` (a cut read): each must be rejected or parse
// to exactly what the whole text parses to. Returns the length of the
// shortest prefix that parses.
template <typename Parse>
size_t shortest_parsing_prefix(Parse parse, std::string_view text) {
  const auto full = parse(text);
  EXPECT_TRUE(full.has_value()) << full.error().message;
  size_t shortest = text.size() + 1;
  for (size_t n = 0; n <= text.size(); ++n) {
    // A copy, so reads past the prefix would show up under sanitizers.
    const std::string prefix(text.substr(0, n));
    const auto r = parse(prefix);
    if (!r.has_value()) continue;
    if (shortest > n) shortest = n;
    EXPECT_EQ(r.value(), full.value()) << "prefix of " << n << " bytes";
  }
  return shortest;
}

// True when `haystack` contains `needle`; reads better in EXPECTs.
inline bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

}  // namespace rssaudit
