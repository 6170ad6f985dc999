// Magic numbers are from the format specifications (JFIF/JPEG ITU T.81, PNG ISO 15948, RIFF WebP,
// GIF89a, BMP, TIFF 6.0, ISO BMFF ftyp brands, ICO, Netpbm).
#include "doctor/sniff.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace edgedecode::doctor {

const char* FormatName(Format f) {
  switch (f) {
    case Format::kUnknown: return "unknown";
    case Format::kEmpty: return "empty";
    case Format::kJpeg: return "jpeg";
    case Format::kPng: return "png";
    case Format::kWebp: return "webp";
    case Format::kGif: return "gif";
    case Format::kBmp: return "bmp";
    case Format::kTiff: return "tiff";
    case Format::kHeif: return "heif";
    case Format::kAvif: return "avif";
    case Format::kIco: return "ico";
    case Format::kPnm: return "pnm";
    case Format::kHtml: return "html";
    case Format::kJson: return "json";
    case Format::kXml: return "xml";
    case Format::kText: return "text";
  }
  return "unknown";
}

const char* FormatExtension(Format f) {
  switch (f) {
    case Format::kJpeg: return "jpg";
    case Format::kPng: return "png";
    case Format::kWebp: return "webp";
    case Format::kGif: return "gif";
    case Format::kBmp: return "bmp";
    case Format::kTiff: return "tif";
    case Format::kHeif: return "heic";
    case Format::kAvif: return "avif";
    case Format::kIco: return "ico";
    case Format::kPnm: return "ppm";
    case Format::kHtml: return "html";
    case Format::kJson: return "json";
    case Format::kXml: return "xml";
    case Format::kText: return "txt";
    default: return "";
  }
}

bool IsImageFormat(Format f) {
  switch (f) {
    case Format::kJpeg: case Format::kPng: case Format::kWebp: case Format::kGif: case Format::kBmp:
    case Format::kTiff: case Format::kHeif: case Format::kAvif: case Format::kIco: case Format::kPnm:
      return true;
    default:
      return false;
  }
}

std::string Extension(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  std::string e(base.substr(dot + 1));
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

Format FormatFromExtension(std::string_view path) {
  const std::string e = Extension(path);
  if (e == "jpg" || e == "jpeg" || e == "jpe" || e == "jfif") return Format::kJpeg;
  if (e == "png") return Format::kPng;
  if (e == "webp") return Format::kWebp;
  if (e == "gif") return Format::kGif;
  if (e == "bmp" || e == "dib") return Format::kBmp;
  if (e == "tif" || e == "tiff") return Format::kTiff;
  if (e == "heic" || e == "heif") return Format::kHeif;
  if (e == "avif") return Format::kAvif;
  if (e == "ico" || e == "cur") return Format::kIco;
  if (e == "ppm" || e == "pgm" || e == "pbm" || e == "pnm") return Format::kPnm;
  if (e == "html" || e == "htm") return Format::kHtml;
  if (e == "json" || e == "jsonl") return Format::kJson;
  if (e == "xml") return Format::kXml;
  if (e == "txt" || e == "csv" || e == "tsv" || e == "names" || e == "labels" || e == "yaml" ||
      e == "yml")
    return Format::kText;
  return Format::kUnknown;
}

bool ExtensionMatches(Format by_ext, Format by_content) {
  if (by_ext == by_content) return true;
  if (by_ext == Format::kUnknown) return true;  // not a name we judge
  // Text-like names: json/xml/html content under .txt, text under .json (invalid json is not our
  // business here) are all fine; what matters is images.
  auto textish = [](Format f) {
    return f == Format::kText || f == Format::kJson || f == Format::kXml || f == Format::kHtml;
  };
  if (textish(by_ext) && textish(by_content)) return true;
  if (by_ext == Format::kHeif && by_content == Format::kAvif) return false;
  return false;
}

namespace {

bool StartsWith(const uint8_t* p, size_t n, const char* magic, size_t m) {
  return n >= m && std::memcmp(p, magic, m) == 0;
}

// Skips a UTF-8 BOM and ASCII whitespace; returns the index of the first significant byte.
size_t SkipSpace(const uint8_t* p, size_t n) {
  size_t i = 0;
  if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) i = 3;
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) ++i;
  return i;
}

bool IStartsWith(const uint8_t* p, size_t n, const char* s) {
  size_t m = std::strlen(s);
  if (n < m) return false;
  for (size_t i = 0; i < m; ++i)
    if (std::tolower(p[i]) != std::tolower(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// Text if there are no NULs and few control bytes (any 8-bit encoding counts; the text checker
// decides which). UTF-16/32 are recognised by their BOM or regular NUL pattern.
bool LooksLikeText(const uint8_t* p, size_t n) {
  if (n == 0) return false;
  if (n >= 2 && ((p[0] == 0xFF && p[1] == 0xFE) || (p[0] == 0xFE && p[1] == 0xFF))) return true;
  size_t nul_even = 0, nul_odd = 0, ctrl = 0;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] == 0) (i % 2 ? nul_odd : nul_even)++;
    else if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r' && p[i] != 0x0C &&
             p[i] != 0x1B)
      ++ctrl;
  }
  if (nul_even + nul_odd > 0) {
    // UTF-16 text of mostly ASCII/Latin/CJK has NULs on one parity only.
    size_t half = n / 2;
    return (nul_odd > half / 4 && nul_even == 0) || (nul_even > half / 4 && nul_odd == 0) ||
           (nul_even + nul_odd > n / 3 && (nul_even == 0 || nul_odd == 0 ||
                                           std::max(nul_even, nul_odd) > 2 * std::min(nul_even, nul_odd)));
  }
  return ctrl * 100 <= n;  // under 1% control bytes
}

}  // namespace

Format SniffContent(const uint8_t* p, size_t n, uint64_t size) {
  if (size == 0) return Format::kEmpty;
  if (StartsWith(p, n, "\xFF\xD8\xFF", 3)) return Format::kJpeg;
  if (StartsWith(p, n, "\x89PNG\r\n\x1A\n", 8)) return Format::kPng;
  if (StartsWith(p, n, "GIF87a", 6) || StartsWith(p, n, "GIF89a", 6)) return Format::kGif;
  if (n >= 12 && StartsWith(p, n, "RIFF", 4) && std::memcmp(p + 8, "WEBP", 4) == 0)
    return Format::kWebp;
  if (StartsWith(p, n, "II*\0", 4) || StartsWith(p, n, "MM\0*", 4) || StartsWith(p, n, "II+\0", 4) ||
      StartsWith(p, n, "MM\0+", 4))
    return Format::kTiff;
  if (n >= 12 && std::memcmp(p + 4, "ftyp", 4) == 0) {
    const char* b = reinterpret_cast<const char*>(p + 8);
    if (!std::memcmp(b, "avif", 4) || !std::memcmp(b, "avis", 4)) return Format::kAvif;
    if (!std::memcmp(b, "heic", 4) || !std::memcmp(b, "heix", 4) || !std::memcmp(b, "mif1", 4) ||
        !std::memcmp(b, "msf1", 4) || !std::memcmp(b, "heim", 4) || !std::memcmp(b, "hevc", 4))
      return Format::kHeif;
  }
  // BMP: "BM" then a plausible header size at offset 14.
  if (n >= 18 && p[0] == 'B' && p[1] == 'M') {
    uint32_t hs = p[14] | p[15] << 8 | p[16] << 16 | static_cast<uint32_t>(p[17]) << 24;
    if (hs >= 12 && hs <= 256) return Format::kBmp;
  }
  // ICO/CUR: reserved 0, type 1 or 2, count >= 1.
  if (n >= 6 && p[0] == 0 && p[1] == 0 && (p[2] == 1 || p[2] == 2) && p[3] == 0 && (p[4] | p[5]) != 0)
    return Format::kIco;
  if (n >= 3 && p[0] == 'P' && p[1] >= '1' && p[1] <= '7' &&
      (p[2] == ' ' || p[2] == '\n' || p[2] == '\r' || p[2] == '\t'))
    return Format::kPnm;
  size_t i = SkipSpace(p, n);
  if (IStartsWith(p + i, n - i, "<!doctype html") || IStartsWith(p + i, n - i, "<html") ||
      IStartsWith(p + i, n - i, "<head") || IStartsWith(p + i, n - i, "<body"))
    return Format::kHtml;
  if (IStartsWith(p + i, n - i, "<?xml") || IStartsWith(p + i, n - i, "<svg")) return Format::kXml;
  if (!LooksLikeText(p, n)) return Format::kUnknown;
  if (i < n && (p[i] == '{' || p[i] == '[')) return Format::kJson;
  return Format::kText;
}

}  // namespace edgedecode::doctor
