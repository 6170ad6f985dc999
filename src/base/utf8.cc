#include "base/utf8.h"

#include <cstdint>
#include <cstdio>

namespace edgedecode {

size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  const size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
  if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
  if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
  if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
  return n;
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceAt(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string EscapeForTerminal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t len = Utf8SequenceAt(s, i);
    // C1 controls (U+0080..U+009F) are the two bytes C2 80..C2 9F.
    const bool control = (len == 1 && (c < 0x20 || c == 0x7F)) ||
                         (len == 2 && c == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0);
    if (len != 0 && !control) {
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    for (size_t k = 0, n = len ? len : 1; k < n; ++k) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<uint8_t>(s[i + k]));
      out += hex;
    }
    i += len ? len : 1;
  }
  return out;
}

}  // namespace edgedecode
