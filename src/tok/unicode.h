// Unicode helpers for the tokenizers: UTF-8 decoding the way llama.cpp does it (lenient: invalid
// bytes become U+FFFD one byte at a time), code point classes from ICU (general category and the
// White_Space property), and GPT-2's byte <-> printable code point mapping.
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgedecode::tok {

// Class bits of one code point. The pre-tokenizer regexes only ask for these.
enum CpFlags : uint16_t {
  kCpLetter = 1 << 0,       // \p{L}
  kCpNumber = 1 << 1,       // \p{N}
  kCpPunct = 1 << 2,        // \p{P}
  kCpMark = 1 << 3,         // \p{M}
  kCpSymbol = 1 << 4,       // \p{S}
  kCpSeparator = 1 << 5,    // \p{Z}
  kCpControl = 1 << 6,      // \p{C} (includes unassigned)
  kCpWhitespace = 1 << 8,   // \s: the Unicode White_Space property
};

uint16_t CodepointFlags(uint32_t cp);

// Length of the UTF-8 sequence a lead byte announces (1 for continuation/invalid bytes), as
// llama.cpp's unicode_len_utf8.
size_t Utf8SeqLen(uint8_t lead);

// Decodes text into code points. Bad sequences give U+FFFD and advance one byte (llama.cpp's
// unicode_cpts_from_utf8). Overlong forms are accepted like there.
std::vector<uint32_t> DecodeUtf8(std::string_view text);
void AppendUtf8(uint32_t cp, std::string* out);
std::string EncodeUtf8(const std::vector<uint32_t>& cps, size_t begin, size_t end);

// GPT-2 byte-level mapping: every byte gets a printable code point (printable Latin-1 bytes map to
// themselves, the others to U+0100 + n). ByteToUnicodeUtf8 gives the UTF-8 of that code point.
const std::string& ByteToUnicodeUtf8(uint8_t b);
// Inverse; -1 when cp is not the image of a byte.
int UnicodeToByte(uint32_t cp);

// True when s is valid UTF-8 (strict: no overlongs, surrogates or values past U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace edgedecode::tok
