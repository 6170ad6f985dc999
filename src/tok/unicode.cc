#include "tok/unicode.h"

#include <algorithm>
#include <array>

#ifndef ED_TOK_CP_TABLE
#include <unicode/uchar.h>
#endif

namespace edgedecode::tok {

#ifdef ED_TOK_CP_TABLE
// Built without ICU (the cross build of the core): the classes ICU gives on the build host, as runs of
// code points written by cp_table_gen.cc from the ICU code below, so both builds classify alike.
namespace {
struct CpRun {
  uint32_t first;
  uint16_t flags;
};
constexpr CpRun kCpRuns[] = {
#include ED_TOK_CP_TABLE
};
}  // namespace

uint16_t CodepointFlags(uint32_t cp) {
  const auto* it = std::upper_bound(std::begin(kCpRuns), std::end(kCpRuns), cp,
                                    [](uint32_t c, const CpRun& r) { return c < r.first; });
  return (it - 1)->flags;  // kCpRuns[0].first == 0
}
#else
namespace {
// llama.cpp's code point classes (its unicode-data.cpp) are Unicode 15.1's; ICU's are those of its own version.
// A code point assigned after 15.1 is unassigned for llama.cpp, and so here whatever the ICU; an ICU older than
// 15.1 (Debian 12's ICU 72 is Unicode 15.0) lacks 15.1's additions, which are put back: CJK Unified Ideographs
// Extension I (letters) and four ideographic description characters (symbols).
bool AssignedAfterUnicode15_1(UChar32 cp) {
  UVersionInfo age;
  u_charAge(cp, age);
  return age[0] > 15 || (age[0] == 15 && age[1] > 1);
}

int Unicode15_1Addition(uint32_t cp) {
  if (cp >= 0x2EBF0 && cp <= 0x2EE5D) return U_OTHER_LETTER;
  if ((cp >= 0x2FFC && cp <= 0x2FFF) || cp == 0x31EF) return U_OTHER_SYMBOL;
  return -1;
}

int GeneralCategory(uint32_t cp) {
  const UChar32 c = static_cast<UChar32>(cp);
  if (cp > 0x10FFFF) return U_UNASSIGNED;
  const int type = u_charType(c);
  if (type == U_UNASSIGNED) {
    const int added = Unicode15_1Addition(cp);
    return added >= 0 ? added : type;
  }
  return AssignedAfterUnicode15_1(c) ? U_UNASSIGNED : type;
}
}  // namespace

uint16_t CodepointFlags(uint32_t cp) {
  uint16_t f = 0;
  switch (GeneralCategory(cp)) {
    case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER: case U_OTHER_LETTER:
      f = kCpLetter; break;
    case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER:
      f = kCpNumber; break;
    case U_CONNECTOR_PUNCTUATION: case U_DASH_PUNCTUATION: case U_START_PUNCTUATION:
    case U_END_PUNCTUATION: case U_INITIAL_PUNCTUATION: case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      f = kCpPunct; break;
    case U_NON_SPACING_MARK: case U_ENCLOSING_MARK: case U_COMBINING_SPACING_MARK:
      f = kCpMark; break;
    case U_MATH_SYMBOL: case U_CURRENCY_SYMBOL: case U_MODIFIER_SYMBOL: case U_OTHER_SYMBOL:
      f = kCpSymbol; break;
    case U_SPACE_SEPARATOR: case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR:
      f = kCpSeparator; break;
    default:
      f = kCpControl; break;
  }
  if (u_isUWhiteSpace(static_cast<UChar32>(cp))) f |= kCpWhitespace;
  return f;
}
#endif

size_t Utf8SeqLen(uint8_t lead) {
  // Indexed by the high nibble, like llama.cpp: 0x8-0xB (continuation) count as 1.
  static const size_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

std::vector<uint32_t> DecodeUtf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  const size_t n = s.size();
  auto cont = [&](size_t k) { return k < n && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80; };
  while (i < n) {
    const uint8_t b = static_cast<uint8_t>(s[i]);
    if (!(b & 0x80)) {
      out.push_back(b);
      i += 1;
    } else if ((b & 0xE0) == 0xC0 && cont(i + 1)) {
      out.push_back(((b & 0x1F) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3F));
      i += 2;
    } else if ((b & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
      out.push_back(((b & 0x0F) << 12) | ((static_cast<uint8_t>(s[i + 1]) & 0x3F) << 6) |
                    (static_cast<uint8_t>(s[i + 2]) & 0x3F));
      i += 3;
    } else if ((b & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      out.push_back(((b & 0x07) << 18) | ((static_cast<uint8_t>(s[i + 1]) & 0x3F) << 12) |
                    ((static_cast<uint8_t>(s[i + 2]) & 0x3F) << 6) |
                    (static_cast<uint8_t>(s[i + 3]) & 0x3F));
      i += 4;
    } else {
      out.push_back(0xFFFD);
      i += 1;
    }
  }
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string EncodeUtf8(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  out.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) AppendUtf8(cps[i], &out);
  return out;
}

namespace {

struct ByteMap {
  std::array<std::string, 256> utf8;
  std::array<uint32_t, 256> cp;
  ByteMap() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      cp[b] = printable ? static_cast<uint32_t>(b) : next++;
      AppendUtf8(cp[b], &utf8[b]);
    }
  }
};

const ByteMap& Map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::string& ByteToUnicodeUtf8(uint8_t b) { return Map().utf8[b]; }

int UnicodeToByte(uint32_t cp) {
  if (cp < 0x100) {
    const ByteMap& m = Map();
    return m.cp[cp] == cp ? static_cast<int>(cp) : -1;
  }
  if (cp >= 0x100 && cp < 0x100 + 68) {
    // The 68 non-printable bytes, in increasing order, map to U+0100..U+0143.
    const ByteMap& m = Map();
    for (int b = 0; b < 256; ++b) {
      if (m.cp[b] == cp) return b;
    }
  }
  return -1;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const uint8_t b = static_cast<uint8_t>(s[i]);
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b < 0x80) { i++; continue; }
    if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b >= 0xE0 && b <= 0xEF) { len = 3; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { len = 4; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
    else return false;
    if (i + len > n) return false;
    const uint8_t b1 = static_cast<uint8_t>(s[i + 1]);
    if (b1 < lo || b1 > hi) return false;
    for (size_t k = 2; k < len; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

}  // namespace edgedecode::tok
