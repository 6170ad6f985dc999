// Content sniffing: the real format of a file from its first bytes, independent of its name.
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edgedecode::doctor {

enum class Format {
  kUnknown,  // binary we do not recognise
  kEmpty,
  kJpeg, kPng, kWebp, kGif, kBmp, kTiff, kHeif, kAvif, kIco, kPnm,
  kHtml, kJson, kXml, kText,
};

const char* FormatName(Format f);
// Canonical extension for a format ("jpg", "png", ...); empty for non-images without one.
const char* FormatExtension(Format f);
bool IsImageFormat(Format f);

// Format from content. `head` is the first bytes of the file (>= 64 recommended), `size` the full size.
Format SniffContent(const uint8_t* head, size_t n, uint64_t size);

// Format a file name claims by its extension (lower-cased); kUnknown if the extension is not one of
// ours. Text-ish extensions (txt, csv, tsv, json, jsonl, xml, yaml, names, labels) map to kText/kJson/kXml.
Format FormatFromExtension(std::string_view path);

// Does a file with this extension and this content count as consistent?  (jpg vs jpeg, json vs text...)
bool ExtensionMatches(Format by_ext, Format by_content);

// Lower-cased extension without the dot ("" if none).
std::string Extension(std::string_view path);

}  // namespace edgedecode::doctor
