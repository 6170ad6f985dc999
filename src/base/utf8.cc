#include "base/utf8.h"

#include <cstdint>
#include <cstdio>

namespace edgedecode {

namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when the byte there does not start one.
size_t ValidSequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  uint8_t c1 = b(i + 1);
  if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
  if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
  if (c == 0xF4 && c1 > 0x8F) return 0;  // past U+10FFFF
  return n;
}

std::string Convert(std::string_view s, bool escape_controls) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = ValidSequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (escape_controls && n == 1 && (c < 0x20 || c == 0x7F) && c != '\n' && c != '\t') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string ToValidUtf8(std::string_view s) { return Convert(s, false); }
std::string ToPrintable(std::string_view s) { return Convert(s, true); }

}  // namespace edgedecode
