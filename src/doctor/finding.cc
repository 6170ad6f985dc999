#include "doctor/finding.h"

#include <iterator>
#include <ostream>

namespace edgedecode::doctor {
namespace {

struct Row {
  FindingCode code;
  const char* name;
  const char* text;
};

constexpr Row kRows[] = {
#define EDGEDECODE_DOCTOR_X(e, name, text) {FindingCode::e, name, text},
    EDGEDECODE_DOCTOR_FINDING_CODES(EDGEDECODE_DOCTOR_X)
#undef EDGEDECODE_DOCTOR_X
};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (static_cast<size_t>(kRows[i].code) != i) return false;
  return true;
}
static_assert(InEnumOrder(), "kRows is indexed by FindingCode");

const Row* Find(FindingCode c) {
  const auto i = static_cast<size_t>(c);
  return i < std::size(kRows) ? &kRows[i] : nullptr;
}

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "error";
}

const char* FindingCodeName(FindingCode c) {
  const Row* r = Find(c);
  return r ? r->name : "unknown";
}

const char* FindingCodeText(FindingCode c) {
  const Row* r = Find(c);
  return r ? r->text : "";
}

std::vector<FindingCode> AllFindingCodes() {
  std::vector<FindingCode> v;
  v.reserve(std::size(kRows));
  for (const Row& r : kRows) v.push_back(r.code);
  return v;
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates), else 0.
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F) || (c == 0xF0 && b(1) < 0x90) ||
      (c == 0xF4 && b(1) > 0x8F))
    return 0;
  return len;
}

}  // namespace

std::string PrintableText(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = Utf8SequenceAt(s, i);
    // C1 controls (U+0080..U+009F) are two bytes, C2 80..C2 9F.
    const bool control = (len == 1 && (c < 0x20 || c == 0x7F)) ||
                         (len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0);
    if (len == 0 || control) {
      const size_t n = len ? len : 1;
      for (size_t k = 0; k < n; ++k) {
        const unsigned char b = static_cast<unsigned char>(s[i + k]);
        out += "\\x";
        out += kHex[b >> 4];
        out += kHex[b & 15];
      }
      i += n;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, FindingCode c) { return os << FindingCodeName(c); }

}  // namespace edgedecode::doctor
