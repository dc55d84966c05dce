// What every fuzz target shares: FUZZ_CHECK states a promise of the code
// under test; when it breaks, the target names it and aborts, so that
// libFuzzer keeps the input as a crash-* reproducer (fuzz/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace rssaudit::fuzz {

// `text` with every byte outside printable ASCII as \xNN, cut at 200 bytes:
// the inputs are anything.
inline std::string shown(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= ' ' && u <= '~' && u != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  if (text.size() > 200) out += "...";
  return out;
}

[[noreturn]] inline void broken(const char* file, int line, const char* promise,
                                const std::string& detail) {
  std::fprintf(stderr, "%s:%d: broken promise: %s\n  %s\n", file, line, promise,
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// The bytes libFuzzer hands a target, as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace rssaudit::fuzz

// `detail` (a std::string) is only built when `cond` is false.
#define FUZZ_CHECK(cond, detail)                                     \
  do {                                                               \
    if (!(cond))                                                     \
      ::rssaudit::fuzz::broken(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
