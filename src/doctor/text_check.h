// Encoding of label/annotation text files: BOM, then the NUL pattern of UTF-16/32, then strict UTF-8,
// then uchardet (with the candidate encodings that decode the bytes cleanly), and conversion to UTF-8
// with glibc iconv that reports unconvertible byte sequences by line, column, byte offset and hex.
// A mostly-UTF-8 file whose damaged lines are another encoding (a few GBK lines pasted in) has those
// lines decoded in it, losslessly (round trip checked per line).
// Thread-safe: each call opens its own detector and iconv handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "doctor/finding.h"

namespace edgedecode::doctor {

struct Detection {
  std::string encoding;  // iconv name ("UTF-8", "GB18030", "UTF-16LE", ...); empty if undecidable
  std::string how;       // "ascii", "bom", "utf-8", "utf-8-with-invalid-bytes", "nul-pattern",
                         // "escape-sequences", "uchardet", "undecidable", "folder-vote"
  std::string detector_said;            // uchardet's raw answer ("" if not asked)
  std::vector<std::string> candidates;  // encodings that decode the whole file without error
  size_t bom_bytes = 0;
  size_t non_ascii = 0;                 // bytes >= 0x80
  // how == "utf-8-with-invalid-bytes": the encoding the non-UTF-8 lines are in (uchardet on those
  // lines, every one of them decoding cleanly in it), e.g. "GB18030"; empty if none was found.
  std::string secondary;
};

Detection DetectEncoding(const uint8_t* data, size_t n);

// One unconvertible byte sequence; each was replaced by U+FFFD in the output.
struct BadSequence {
  int64_t offset = 0;  // byte offset in the original file
  int64_t line = 1, column = 1;  // 1-based, column in code points of the converted text
  std::string hex;     // "d5 c4"
  size_t length = 0;
};

// A line of a mostly-UTF-8 file decoded in the secondary encoding (whole line, lossless).
struct RepairedLine {
  int64_t line = 0;     // 1-based
  int64_t offset = 0;   // byte offset of the line's first byte
  size_t length = 0;    // bytes, newline excluded
};

// Findings of one code beyond this many per file are summarised in one finding (a binary file
// under a .txt name must not give one finding per byte).
inline constexpr size_t kMaxFindingsPerCode = 20;

// The bad sequences past the ones listed, as counts: a binary file under a .txt name has one every few
// bytes, and a list of them would cost many times the file.
struct BadTail {
  size_t count = 0, bytes = 0;
  BadSequence first;                                     // the first one not listed
  int64_t last_offset = -1;
  size_t lines = 0;                                      // distinct lines
  std::vector<std::pair<int64_t, int64_t>> line_ranges;  // runs of consecutive lines, the first kMaxRanges
  bool more_ranges = false;                              // runs past those
  static constexpr size_t kMaxRanges = 11;               // the summary prints 10, then "..."
  void Add(const BadSequence& b) {  // in file order, so lines never decrease
    if (count++ == 0) first = b;
    bytes += b.length;
    last_offset = b.offset;
    if (lines > 0 && b.line == last_line) return;
    ++lines;
    if (!line_ranges.empty() && !more_ranges && b.line == line_ranges.back().second + 1) line_ranges.back().second = b.line;
    else if (line_ranges.size() < kMaxRanges) line_ranges.push_back({b.line, b.line});
    else more_ranges = true;
    last_line = b.line;
  }
  int64_t last_line = 0;
};

struct Conversion {
  std::string utf8;                 // the text in UTF-8, U+FFFD where a sequence was bad, BOM dropped
  std::vector<BadSequence> bad;     // the first kMaxFindingsPerCode bad sequences, in file order
  BadTail bad_tail;                 // the others, counted
  size_t BadCount() const { return bad.size() + bad_tail.count; }
  void AddBad(BadSequence b) {
    if (bad.size() < kMaxFindingsPerCode) bad.push_back(std::move(b));
    else bad_tail.Add(b);
  }
  bool round_trip_ok = false;       // converting back reproduces every byte that was not bad
  std::string error;                // iconv could not open the encoding
  std::string secondary;            // ConvertMixedUtf8: the encoding of the repaired lines
  std::vector<RepairedLine> repaired;
};

Conversion ConvertToUtf8(const uint8_t* data, size_t n, const std::string& encoding, size_t skip_bom);

// A mostly-UTF-8 file: valid lines copied, each other line decoded as `secondary` when that is
// lossless (UTF-8 -> secondary gives the line's bytes back), else U+FFFD per bad sequence.
Conversion ConvertMixedUtf8(const uint8_t* data, size_t n, const std::string& secondary, size_t skip_bom);

// GB18030 two-byte codes whose mapping changed between GB18030-2005 (private use area) and
// GB18030-2022 (standard code points); offsets of those present in the file.
std::vector<int64_t> Gb18030VersionSensitive(const uint8_t* data, size_t n);

// Is this strictly valid UTF-8 (no overlongs, surrogates or > U+10FFFF)?
bool IsStrictUtf8(const uint8_t* data, size_t n, size_t* first_bad = nullptr);

// Findings for one text file given its (possibly folder-voted) detection.
std::vector<Finding> TextFindings(const uint8_t* data, size_t n, const Detection& d,
                                  Conversion* conv_out = nullptr);

}  // namespace edgedecode::doctor
