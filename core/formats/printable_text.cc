#include "core/formats/printable_text.h"

#include <cstdint>

namespace rssaudit {
namespace {

// The length of the UTF-8 sequence at `s[i]` and its code point, or 0
// where the bytes are no UTF-8 (a stray continuation, a truncated or
// overlong sequence, a surrogate, past U+10FFFF).
size_t utf8_at(std::string_view s, size_t i, uint32_t& code) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b = byte(i);
  size_t n = 0;
  uint32_t min = 0;
  if (b < 0x80) {
    code = b;
    return 1;
  } else if ((b & 0xe0) == 0xc0) {
    n = 2, code = b & 0x1f, min = 0x80;
  } else if ((b & 0xf0) == 0xe0) {
    n = 3, code = b & 0x0f, min = 0x800;
  } else if ((b & 0xf8) == 0xf0) {
    n = 4, code = b & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = code << 6 | (byte(i + k) & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
    return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view text, std::string_view keep) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t code = 0;
    const size_t n = utf8_at(text, i, code);
    const bool control = code < 0x20 || (code >= 0x7f && code <= 0x9f);
    if (n == 0 || (control && keep.find(char(code)) == std::string_view::npos))
      out += '?';
    else
      out.append(text.substr(i, n));
    i += n ? n : 1;
  }
  return out;
}

}  // namespace rssaudit
