#include "doctor/text_check.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include <iconv.h>
#include <uchardet/uchardet.h>

namespace edgedecode::doctor {
namespace {

// Files with fewer non-ASCII bytes than this are too short for a statistical detector.
constexpr size_t kMinNonAscii = 24;

// Length of the valid UTF-8 sequence at p (0 if invalid), strict per RFC 3629.
size_t Utf8Len(const uint8_t* p, size_t n) {
  uint8_t c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (p[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, i ? " %02x" : "%02x", p[i]);
    s += b;
  }
  return s;
}

// Maps uchardet's names onto glibc iconv's.
std::string IconvName(const std::string& u) {
  if (u == "UHC") return "CP949";
  if (u == "MAC-CENTRALEUROPE") return "MAC-CENTRALEUROPE";
  if (u == "ASCII") return "UTF-8";
  if (u == "GEORGIAN-ACADEMY" || u == "GEORGIAN-PS") return u;  // glibc has both
  return u;
}

// Decodes the whole buffer with iconv; true when no byte is rejected.
bool DecodesCleanly(const uint8_t* data, size_t n, const char* enc) {
  iconv_t cd = iconv_open("UTF-8", enc);
  if (cd == reinterpret_cast<iconv_t>(-1)) return false;
  char* in = reinterpret_cast<char*>(const_cast<uint8_t*>(data));
  size_t inleft = n;
  char buf[4096];
  bool ok = true;
  while (inleft > 0) {
    char* out = buf;
    size_t outleft = sizeof buf;
    if (iconv(cd, &in, &inleft, &out, &outleft) == static_cast<size_t>(-1) && errno != E2BIG) {
      ok = false;
      break;
    }
  }
  iconv_close(cd);
  return ok;
}

// Converts all of [p, p+n) with an open descriptor (state reset first, flushed after); false at
// the first byte it rejects.
bool IconvAll(iconv_t cd, const char* p, size_t n, std::string* out) {
  iconv(cd, nullptr, nullptr, nullptr, nullptr);
  char* in = const_cast<char*>(p);
  size_t left = n;
  char buf[4096];
  while (left > 0) {
    char* o = buf;
    size_t ol = sizeof buf;
    size_t rc = iconv(cd, &in, &left, &o, &ol);
    out->append(buf, o - buf);
    if (rc == static_cast<size_t>(-1) && errno != E2BIG) return false;
  }
  char* o = buf;
  size_t ol = sizeof buf;
  iconv(cd, nullptr, nullptr, &o, &ol);
  out->append(buf, o - buf);
  return true;
}

// UTF-16/32 without a BOM: NUL bytes in the high half of most code units. Checked before UTF-8,
// because ASCII-range UTF-16/32 is valid UTF-8 byte for byte (NUL is a UTF-8 character). A short
// file must also decode cleanly; a long one with a clear pattern is taken even if damaged, so the
// damage is reported as invalid bytes of UTF-16/32 rather than read as some other encoding.
std::string NulPattern(const uint8_t* d, size_t n) {
  if (n < 2 || !std::memchr(d, 0, n)) return "";
  size_t nul[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) nul[i % 4] += d[i] == 0;
  const size_t quads = n / 4, pairs = n / 2;
  auto fits = [&](const char* enc, size_t unit, size_t units) {
    return units >= 16 || DecodesCleanly(d, n - n % unit, enc);
  };
  if (quads >= 1) {
    // UTF-32: the top byte is always 0 (code points <= 0x10FFFF), the next one too in the BMP.
    if (nul[3] == quads && 4 * nul[2] >= 3 * quads && 4 * nul[0] < quads && fits("UTF-32LE", 4, quads)) return "UTF-32LE";
    if (nul[0] == quads && 4 * nul[1] >= 3 * quads && 4 * nul[3] < quads && fits("UTF-32BE", 4, quads)) return "UTF-32BE";
  }
  const size_t even = nul[0] + nul[2], odd = nul[1] + nul[3];
  if (2 * odd > pairs && 16 * even < pairs && fits("UTF-16LE", 2, pairs)) return "UTF-16LE";
  if (2 * even > pairs && 16 * odd < pairs && fits("UTF-16BE", 2, pairs)) return "UTF-16BE";
  return "";
}

// Mostly valid UTF-8 with a few bad bytes: at least 4 valid multi-byte characters per bad byte.
bool MostlyUtf8(const uint8_t* d, size_t n) {
  size_t valid_multi = 0, invalid = 0;
  for (size_t i = 0; i < n;) {
    size_t l = Utf8Len(d + i, n - i);
    if (!l) { ++invalid; ++i; continue; }
    valid_multi += l > 1;
    i += l;
  }
  return valid_multi >= 4 * invalid;
}

// Decoded text a person wrote: no C0 controls but tab and CR, no C1 controls (U+0080..U+009F, what
// binary bytes become in a single-byte code page), no U+FFFD.
bool PlausibleText(const std::string& u) {
  for (size_t i = 0; i < u.size(); ++i) {
    const unsigned char c = u[i];
    if (c < 0x20 && c != '\t' && c != '\r') return false;
    if (c == 0xC2 && i + 1 < u.size() && static_cast<unsigned char>(u[i + 1]) < 0xA0) return false;
    if (u.compare(i, 3, "\xEF\xBF\xBD") == 0) return false;
  }
  return true;
}

// Valid UTF-8 up to an incomplete (but so far valid) multi-byte sequence at its end: a cut file.
bool TruncatedUtf8Tail(const uint8_t* p, size_t n) {
  for (size_t k = 1; k <= 3 && k <= n; ++k) {
    const uint8_t lead = p[n - k];
    if ((lead & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xC2 && lead <= 0xDF ? 2 : 0;
    return need > k && IsStrictUtf8(p, n - k);
  }
  return false;
}

// [begin, end) of each line (newline excluded) that is not strict UTF-8.
std::vector<std::pair<size_t, size_t>> NonUtf8Lines(const uint8_t* d, size_t n, size_t from) {
  std::vector<std::pair<size_t, size_t>> v;
  for (size_t pos = from; pos < n;) {
    const void* nl = std::memchr(d + pos, '\n', n - pos);
    size_t end = nl ? static_cast<size_t>(static_cast<const uint8_t*>(nl) - d) : n;
    if (!IsStrictUtf8(d + pos, end - pos) && !(end == n && TruncatedUtf8Tail(d + pos, end - pos))) v.emplace_back(pos, end);
    pos = nl ? end + 1 : n;
  }
  return v;
}

// How many of `lines` decode cleanly in `enc`.
size_t CleanShare(const std::string& enc, const std::vector<std::pair<size_t, size_t>>& lines, const uint8_t* d) {
  iconv_t cd = iconv_open("UTF-8", enc.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) return 0;
  size_t clean = 0;
  std::string scratch;
  for (auto [b, e] : lines) {
    scratch.clear();
    clean += IconvAll(cd, reinterpret_cast<const char*>(d) + b, e - b, &scratch);
  }
  iconv_close(cd);
  return clean;
}

// The encoding the damaged lines of a mostly-UTF-8 file are in: uchardet on those lines alone,
// accepted if at least half of them decode cleanly in it (each line is still only repaired when
// it alone round-trips); when uchardet abstains (a line or two of CJK is too little for it), a
// CJK multi-byte encoding that alone decodes them all. A file cut inside its last UTF-8 sequence
// is truncation, not another encoding: that tail is left out.
std::string SecondaryEncoding(const uint8_t* d, size_t n, size_t from) {
  auto lines = NonUtf8Lines(d, n, from);
  if (lines.empty()) return "";
  std::string joined;
  for (auto [b, e] : lines) joined.append(reinterpret_cast<const char*>(d) + b, e - b).push_back('\n');
  uchardet_t ud = uchardet_new();
  uchardet_handle_data(ud, joined.data(), joined.size());
  uchardet_data_end(ud);
  const char* cs = uchardet_get_charset(ud);
  std::string det = IconvName(cs ? cs : "");
  uchardet_delete(ud);
  if (!det.empty() && det != "UTF-8" && CleanShare(det, lines, d) * 2 >= lines.size()) return det;
  std::string only;
  for (const char* c : {"GB18030", "BIG5", "SHIFT_JIS", "EUC-JP", "CP949"}) {
    if (CleanShare(c, lines, d) != lines.size()) continue;
    if (!only.empty()) return "";  // more than one fits: not decidable
    only = c;
  }
  return only;
}

// "3, 7-9, 12" for sorted line numbers, at most `max_ranges` ranges then ", ...".
std::string LineRanges(const std::vector<int64_t>& lines, size_t max_ranges = 40) {
  std::string s;
  size_t ranges = 0;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1] <= lines[j] + 1) ++j;
    if (ranges++ == max_ranges) {
      s += ", ...";
      return s;
    }
    if (!s.empty()) s += ", ";
    s += std::to_string(lines[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(lines[j]);
    }
    i = j + 1;
  }
  return s;
}

}  // namespace

bool IsStrictUtf8(const uint8_t* data, size_t n, size_t* first_bad) {
  for (size_t i = 0; i < n;) {
    size_t l = Utf8Len(data + i, n - i);
    if (!l) {
      if (first_bad) *first_bad = i;
      return false;
    }
    i += l;
  }
  return true;
}

Detection DetectEncoding(const uint8_t* d, size_t n) {
  Detection r;
  for (size_t i = 0; i < n; ++i) r.non_ascii += d[i] >= 0x80;
  // 1. Byte order marks (UTF-32 first: FF FE 00 00 starts like UTF-16LE).
  if (n >= 4 && !std::memcmp(d, "\xFF\xFE\0\0", 4)) { r.encoding = "UTF-32LE"; r.bom_bytes = 4; }
  else if (n >= 4 && !std::memcmp(d, "\0\0\xFE\xFF", 4)) { r.encoding = "UTF-32BE"; r.bom_bytes = 4; }
  else if (n >= 3 && !std::memcmp(d, "\xEF\xBB\xBF", 3)) { r.encoding = "UTF-8"; r.bom_bytes = 3; }
  else if (n >= 2 && !std::memcmp(d, "\xFF\xFE", 2)) { r.encoding = "UTF-16LE"; r.bom_bytes = 2; }
  else if (n >= 2 && !std::memcmp(d, "\xFE\xFF", 2)) { r.encoding = "UTF-16BE"; r.bom_bytes = 2; }
  if (!r.encoding.empty()) {
    r.how = "bom";
    if (r.encoding == "UTF-8" && !IsStrictUtf8(d + 3, n - 3) && MostlyUtf8(d + 3, n - 3))
      r.secondary = SecondaryEncoding(d, n, 3);
    return r;
  }
  // 2. UTF-16/32 without a BOM: NUL bytes on one parity.
  if (std::string enc = NulPattern(d, n); !enc.empty()) {
    r.encoding = enc;
    r.how = "nul-pattern";
    return r;
  }
  // 3. Strict UTF-8 (pure ASCII is a subset).
  const bool strict = IsStrictUtf8(d, n);
  if (strict && r.non_ascii == 0) {
    // 7-bit ISO-2022 encodings are valid ASCII byte-wise; their escape sequences give them away.
    std::string_view v(reinterpret_cast<const char*>(d), n);
    if (v.find("\x1b$)C") != std::string_view::npos) { r.encoding = "ISO-2022-KR"; r.how = "escape-sequences"; return r; }
    if (v.find("\x1b$B") != std::string_view::npos || v.find("\x1b$@") != std::string_view::npos) {
      r.encoding = "ISO-2022-JP"; r.how = "escape-sequences"; return r;
    }
  }
  if (strict) { r.encoding = "UTF-8"; r.how = r.non_ascii ? "utf-8" : "ascii"; return r; }
  // 4. Mostly valid UTF-8 with a few bad bytes: damage, or a few lines in another encoding (pasted
  //    from a GBK or Windows-1252 file), which SecondaryEncoding names when it can.
  if (MostlyUtf8(d, n)) {
    r.encoding = "UTF-8";
    r.how = "utf-8-with-invalid-bytes";
    r.secondary = SecondaryEncoding(d, n, 0);
    return r;
  }
  // 5. The detector, plus the candidates that decode the bytes cleanly.
  uchardet_t ud = uchardet_new();
  uchardet_handle_data(ud, reinterpret_cast<const char*>(d), n);
  uchardet_data_end(ud);
  const char* cs = uchardet_get_charset(ud);
  r.detector_said = cs ? cs : "";
  uchardet_delete(ud);
  static const char* kCandidates[] = {"GB18030", "BIG5", "SHIFT_JIS", "EUC-JP", "CP949", "EUC-TW",
                                      "ISO-2022-JP", "WINDOWS-1252", "WINDOWS-1251", "WINDOWS-1250",
                                      "KOI8-R"};
  for (const char* c : kCandidates)
    if (DecodesCleanly(d, n, c)) r.candidates.push_back(c);
  std::string det = IconvName(r.detector_said);
  bool det_clean = !det.empty() && DecodesCleanly(d, n, det.c_str());
  if (!det.empty() && det_clean && r.non_ascii >= kMinNonAscii) {
    r.encoding = det;
    r.how = "uchardet";
  } else if (r.candidates.size() == 1 && r.non_ascii >= kMinNonAscii) {
    r.encoding = r.candidates[0];
    r.how = "uchardet";  // the detector abstained but only one encoding fits
  } else {
    r.how = "undecidable";
    if (det_clean && !det.empty()) {
      bool listed = false;
      for (auto& c : r.candidates) listed |= c == det;
      if (!listed) r.candidates.insert(r.candidates.begin(), det);
    }
  }
  return r;
}

Conversion ConvertToUtf8(const uint8_t* data, size_t n, const std::string& enc, size_t skip_bom) {
  Conversion c;
  iconv_t cd = iconv_open("UTF-8", enc.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    c.error = "iconv cannot convert from " + enc;
    return c;
  }
  std::string clean;  // the output without our U+FFFD, for the round trip
  std::string expect; // the input without the bad sequences
  int64_t line = 1, col = 1;
  auto track = [&](const char* p, size_t len) {
    for (size_t i = 0; i < len; ++i) {
      unsigned char ch = p[i];
      if (ch == '\n') { ++line; col = 1; }
      else if ((ch & 0xC0) != 0x80) ++col;
    }
  };
  size_t pos = skip_bom;
  char buf[8192];
  size_t good_from = pos;
  while (pos < n) {
    char* in = reinterpret_cast<char*>(const_cast<uint8_t*>(data)) + pos;
    size_t inleft = n - pos;
    char* out = buf;
    size_t outleft = sizeof buf;
    size_t rc = iconv(cd, &in, &inleft, &out, &outleft);
    int err = errno;
    size_t produced = out - buf;
    c.utf8.append(buf, produced);
    clean.append(buf, produced);
    track(buf, produced);
    pos = in - reinterpret_cast<const char*>(data);
    if (rc != static_cast<size_t>(-1)) break;
    if (err == E2BIG) continue;
    // EILSEQ (invalid) or EINVAL (incomplete at end): one bad byte, or a run of them.
    expect.append(reinterpret_cast<const char*>(data) + good_from, pos - good_from);
    BadSequence b;
    b.offset = static_cast<int64_t>(pos);
    b.line = line;
    b.column = col;
    size_t len = 1;
    iconv(cd, nullptr, nullptr, nullptr, nullptr);  // reset shift state
    // Merge following bytes that also fail to start a character (up to 8).
    while (err == EILSEQ && pos + len < n && len < 8) {
      char* in2 = reinterpret_cast<char*>(const_cast<uint8_t*>(data)) + pos + len;
      size_t left2 = std::min<size_t>(n - pos - len, 8);
      char tmp[64];
      char* o2 = tmp;
      size_t ol2 = sizeof tmp;
      size_t r2 = iconv(cd, &in2, &left2, &o2, &ol2);
      int e2 = errno;
      iconv(cd, nullptr, nullptr, nullptr, nullptr);
      bool next_bad = r2 == static_cast<size_t>(-1) && e2 == EILSEQ &&
                      in2 == reinterpret_cast<char*>(const_cast<uint8_t*>(data)) + pos + len;
      if (!next_bad) break;
      ++len;
    }
    if (err == EINVAL) len = n - pos;
    b.length = len;
    b.hex = Hex(data + pos, len);
    for (size_t i = 0; i < len; ++i) c.utf8 += "\xEF\xBF\xBD";
    col += static_cast<int64_t>(len);
    c.AddBad(std::move(b));
    pos += len;
    good_from = pos;
  }
  if (good_from < n) expect.append(reinterpret_cast<const char*>(data) + good_from, n - good_from);
  iconv_close(cd);
  // Round trip: the clean UTF-8 back to the source encoding must give the good input bytes.
  iconv_t back = iconv_open(enc.c_str(), "UTF-8");
  if (back != reinterpret_cast<iconv_t>(-1)) {
    std::string rt;
    char* in = clean.data();
    size_t inleft = clean.size();
    bool ok = true;
    while (inleft > 0) {
      char* out = buf;
      size_t outleft = sizeof buf;
      size_t rc = iconv(back, &in, &inleft, &out, &outleft);
      rt.append(buf, out - buf);
      if (rc == static_cast<size_t>(-1) && errno != E2BIG) { ok = false; break; }
    }
    char* out = buf;
    size_t outleft = sizeof buf;
    iconv(back, nullptr, nullptr, &out, &outleft);  // flush shift state (ISO-2022)
    rt.append(buf, out - buf);
    iconv_close(back);
    // A BOM-less re-encode of UTF-16/32 may add a BOM; compare without it.
    std::string exp_nobom = expect;
    c.round_trip_ok = ok && (rt == exp_nobom || (rt.size() > exp_nobom.size() &&
                                                 rt.compare(rt.size() - exp_nobom.size(), exp_nobom.size(), exp_nobom) == 0));
  }
  return c;
}

Conversion ConvertMixedUtf8(const uint8_t* data, size_t n, const std::string& secondary, size_t skip_bom) {
  iconv_t to = iconv_open("UTF-8", secondary.c_str()), back = iconv_open(secondary.c_str(), "UTF-8");
  const iconv_t none = reinterpret_cast<iconv_t>(-1);
  if (to == none || back == none) {
    if (to != none) iconv_close(to);
    if (back != none) iconv_close(back);
    Conversion c = ConvertToUtf8(data, n, "UTF-8", skip_bom);
    c.error = "iconv cannot convert from " + secondary;
    return c;
  }
  Conversion c;
  c.secondary = secondary;
  c.round_trip_ok = true;
  const char* base = reinterpret_cast<const char*>(data);
  std::string u, rt;
  int64_t line = 1;
  for (size_t pos = skip_bom; pos < n; ++line) {
    const void* nl = std::memchr(data + pos, '\n', n - pos);
    const size_t end = nl ? static_cast<size_t>(static_cast<const uint8_t*>(nl) - data) : n, len = end - pos;
    u.clear();
    rt.clear();
    if (IsStrictUtf8(data + pos, len)) {
      c.utf8.append(base + pos, len);
    } else if (!(end == n && TruncatedUtf8Tail(data + pos, len)) &&  // a cut file, not an encoding
               IconvAll(to, base + pos, len, &u) && IconvAll(back, u.data(), u.size(), &rt) &&
               rt == std::string_view(base + pos, len) && PlausibleText(u)) {
      // Lossless or not at all: the decoded line encodes back to exactly its bytes.
      c.utf8 += u;
      c.repaired.push_back({line, static_cast<int64_t>(pos), len});
    } else {
      Conversion sub = ConvertToUtf8(data + pos, len, "UTF-8", 0);
      auto shift = [&](BadSequence b) {
        b.offset += static_cast<int64_t>(pos);
        b.line = line;
        return b;
      };
      for (const BadSequence& b : sub.bad) c.AddBad(shift(b));
      // A long binary line: its tail is counted, not listed. sub.bad was full, so c.bad is full now and
      // the whole tail goes to c.bad_tail as one entry plus its count.
      if (sub.bad_tail.count) {
        BadSequence t = shift(sub.bad_tail.first);
        t.length = sub.bad_tail.bytes;
        c.AddBad(t);
        c.bad_tail.count += sub.bad_tail.count - 1;
        c.bad_tail.last_offset = sub.bad_tail.last_offset + static_cast<int64_t>(pos);
      }
      c.utf8 += sub.utf8;
      c.round_trip_ok &= sub.round_trip_ok;
    }
    if (nl) c.utf8 += '\n';
    pos = nl ? end + 1 : n;
  }
  iconv_close(to);
  iconv_close(back);
  return c;
}

std::vector<int64_t> Gb18030VersionSensitive(const uint8_t* d, size_t n) {
  static const uint16_t kCodes[] = {0xA6D9, 0xA6DA, 0xA6DB, 0xA6DC, 0xA6DD, 0xA6DE, 0xA6DF,
                                    0xA6EC, 0xA6ED, 0xA6F3, 0xFE59, 0xFE61, 0xFE66, 0xFE67,
                                    0xFE6D, 0xFE7E, 0xFE90, 0xFEA0};
  std::vector<int64_t> at;
  for (size_t i = 0; i < n;) {
    if (d[i] < 0x80) { ++i; continue; }
    if (i + 3 < n && d[i + 1] >= 0x30 && d[i + 1] <= 0x39) { i += 4; continue; }  // four-byte form
    if (i + 1 < n) {
      uint16_t code = static_cast<uint16_t>(d[i] << 8 | d[i + 1]);
      for (uint16_t k : kCodes)
        if (k == code) at.push_back(static_cast<int64_t>(i));
      i += 2;
    } else {
      ++i;
    }
  }
  return at;
}

std::vector<Finding> TextFindings(const uint8_t* data, size_t n, const Detection& d,
                                  Conversion* conv_out) {
  std::vector<Finding> out;
  auto add = [&](FindingCode code, Severity sev, std::string msg, int64_t off = -1) {
    Finding f;
    f.code = code;
    f.severity = sev;
    f.message = std::move(msg);
    f.offset = off;
    out.push_back(std::move(f));
    return &out.back();
  };
  std::string cands;
  for (const auto& c : d.candidates) cands += (cands.empty() ? "" : ", ") + c;
  if (d.encoding.empty()) {
    Finding* f = add(FindingCode::kEncodingUndecidable, Severity::kWarning,
                     "not UTF-8, and too little non-ASCII text (" + std::to_string(d.non_ascii) +
                         " bytes) to decide; uchardet said '" + d.detector_said + "', candidates: " +
                         (cands.empty() ? "none" : cands));
    size_t bad = 0;
    IsStrictUtf8(data, n, &bad);
    f->offset = static_cast<int64_t>(bad);
    return out;
  }
  if (d.how == "bom" && d.encoding == "UTF-8") {
    Finding* f = add(FindingCode::kBom, Severity::kWarning,
                     "UTF-8 with a byte order mark: many loaders keep U+FEFF in the first label", 0);
    f->fix = "drop the 3-byte BOM";
  }
  const bool mixed = d.encoding == "UTF-8" && !d.secondary.empty();
  Conversion conv = mixed ? ConvertMixedUtf8(data, n, d.secondary, d.bom_bytes)
                          : ConvertToUtf8(data, n, d.encoding, d.bom_bytes);
  if (d.encoding != "UTF-8") {
    size_t bad = n;
    if (IsStrictUtf8(data, n, &bad)) bad = n;
    char hb[8];
    std::snprintf(hb, sizeof hb, "0x%02x", bad < n ? data[bad] : 0);
    std::string how = d.how == "folder-vote" ? "decided by voting across the folder"
                    : d.how == "uchardet" ? "detected by uchardet"
                    : d.how == "bom" ? "by its byte order mark"
                    : d.how == "escape-sequences" ? "by its ISO-2022 escape sequences"
                    : "by its NUL-byte pattern";
    std::string where = bad < n ? std::string("; read as UTF-8 it fails at byte ") + hb
                                : "; its bytes are also valid UTF-8, which a loader would misread";
    Finding* f = add(FindingCode::kEncodingNotUtf8, Severity::kError,
                     "encoded as " + d.encoding + " (" + how + (cands.empty() ? "" : "; candidates: " + cands) + ")" + where,
                     static_cast<int64_t>(bad < n ? bad : 0));
    f->fix = "convert " + d.encoding + " -> UTF-8" + (conv.round_trip_ok ? " (round trip checked)" : " (round trip FAILED)");
  }
  // Lines of another encoding inside a UTF-8 file: one finding per line, up to the cap.
  std::vector<int64_t> lines;
  for (const RepairedLine& rl : conv.repaired) lines.push_back(rl.line);
  for (size_t i = 0; i < conv.repaired.size() && i < kMaxFindingsPerCode; ++i) {
    const RepairedLine& rl = conv.repaired[i];
    Finding* f = add(FindingCode::kMixedEncoding, Severity::kError,
                     "line " + std::to_string(rl.line) + " is " + conv.secondary + ", not UTF-8 like the rest of the file",
                     rl.offset);
    f->line = rl.line;
    f->column = 1;
    f->fix = "decode line " + std::to_string(rl.line) + " as " + conv.secondary + " (lossless, round trip checked)";
  }
  if (conv.repaired.size() > kMaxFindingsPerCode) {
    const RepairedLine& rl = conv.repaired[kMaxFindingsPerCode];
    std::vector<int64_t> rest(lines.begin() + kMaxFindingsPerCode, lines.end());
    Finding* f = add(FindingCode::kMixedEncoding, Severity::kError,
                     std::to_string(rest.size()) + " more lines (" + std::to_string(conv.repaired.size()) +
                         " in all) are " + conv.secondary + ", not UTF-8: lines " + LineRanges(rest),
                     rl.offset);
    f->line = rl.line;
    f->column = 1;
    f->fix = "decode them as " + conv.secondary + " (lossless, round trip checked)";
  }
  for (size_t i = 0; i < conv.bad.size() && i < kMaxFindingsPerCode; ++i) {
    const BadSequence& b = conv.bad[i];
    Finding* f = add(FindingCode::kInvalidBytes, Severity::kError,
                     "bytes " + b.hex + " are not valid " + d.encoding +
                         (mixed ? " nor " + conv.secondary : std::string()) + "; replaced by U+FFFD",
                     b.offset);
    f->line = b.line;
    f->column = b.column;
  }
  if (conv.bad_tail.count) {
    // One summary instead of one finding per byte: counts, the byte total and the lines.
    const BadTail& t = conv.bad_tail;
    std::string ranges;
    for (size_t i = 0; i < t.line_ranges.size() && i < BadTail::kMaxRanges - 1; ++i) {
      const auto [a, z] = t.line_ranges[i];
      ranges += (ranges.empty() ? "" : ", ") + std::to_string(a) + (z > a ? "-" + std::to_string(z) : std::string());
    }
    if (t.line_ranges.size() >= BadTail::kMaxRanges || t.more_ranges) ranges += ", ...";
    Finding* f = add(FindingCode::kInvalidBytes, Severity::kError,
                     std::to_string(t.count) + " more invalid sequences (" + std::to_string(t.bytes) + " bytes; " +
                         std::to_string(conv.BadCount()) + " in all), each replaced by U+FFFD, "
                         "from byte " + std::to_string(t.first.offset) + " to byte " + std::to_string(t.last_offset) +
                         " on " + std::to_string(t.lines) + " line(s): " + ranges,
                     t.first.offset);
    f->line = t.first.line;
    f->column = t.first.column;
  }
  if (!conv.error.empty()) add(FindingCode::kEncodingNotUtf8, Severity::kError, conv.error);
  if (d.encoding == "UTF-8") {
    // U+FFFD already in the text: an earlier lossy conversion (ours with --fix included) lost bytes
    // here. Reported so that a repaired copy never checks clean.
    // The first ones past the cap are kept too (the summary names where they start); the rest counted.
    std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> at;  // offset, (line, column)
    size_t total = 0;
    int64_t line = 1, col = 1;
    for (size_t i = d.bom_bytes; i < n; ++i) {
      if (i + 2 < n && data[i] == 0xEF && data[i + 1] == 0xBF && data[i + 2] == 0xBD && total++ <= kMaxFindingsPerCode)
        at.push_back({static_cast<int64_t>(i), {line, col}});
      if (data[i] == '\n') { ++line; col = 1; }
      else if ((data[i] & 0xC0) != 0x80) ++col;
    }
    for (size_t i = 0; i < at.size() && i < kMaxFindingsPerCode; ++i) {
      Finding* f = add(FindingCode::kReplacementCharacter, Severity::kWarning,
                       "U+FFFD (the replacement character): bytes were lost here in an earlier conversion", at[i].first);
      f->line = at[i].second.first;
      f->column = at[i].second.second;
    }
    if (total > kMaxFindingsPerCode) {
      Finding* f = add(FindingCode::kReplacementCharacter, Severity::kWarning,
                       std::to_string(total - kMaxFindingsPerCode) + " more U+FFFD characters (" +
                           std::to_string(total) + " in all)", at[kMaxFindingsPerCode].first);
      f->line = at[kMaxFindingsPerCode].second.first;
      f->column = at[kMaxFindingsPerCode].second.second;
    }
  }
  auto gb = [](const std::string& e) { return e == "GB18030" || e == "GBK" || e == "GB2312"; };
  if (gb(d.encoding) || (mixed && gb(conv.secondary))) {
    std::vector<int64_t> at;
    if (!mixed) {
      at = Gb18030VersionSensitive(data, n);
    } else {
      for (const RepairedLine& rl : conv.repaired)
        for (int64_t off : Gb18030VersionSensitive(data + rl.offset, rl.length)) at.push_back(rl.offset + off);
    }
    for (size_t i = 0; i < at.size() && i < kMaxFindingsPerCode; ++i) {
      add(FindingCode::kGb18030VersionSensitive, Severity::kWarning,
          "bytes " + Hex(data + at[i], 2) + " map to a private-use code point under GB18030-2005 "
          "(glibc < 2.38, ICU < 73) but to a standard character under GB18030-2022", at[i]);
    }
    if (at.size() > kMaxFindingsPerCode)
      add(FindingCode::kGb18030VersionSensitive, Severity::kWarning,
          std::to_string(at.size() - kMaxFindingsPerCode) + " more version-sensitive two-byte codes (" +
              std::to_string(at.size()) + " in all), the next at byte " + std::to_string(at[kMaxFindingsPerCode]),
          at[kMaxFindingsPerCode]);
  }
  if (conv_out) *conv_out = std::move(conv);
  return out;
}

}  // namespace edgedecode::doctor
