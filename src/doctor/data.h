// `doctor data`: walks a tree in parallel, sniffs, decodes and checks every file, and reports.
// CheckTree is the library entry; the command (src/cli/doctor_data.cc) prints and writes the side files.
// Thread-safety: CheckTree runs its own worker pool; the options and result are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/image_check.h"
#include "doctor/profile.h"
#include "doctor/text_check.h"
#include "edgedecode/status.h"
#include <nlohmann/json.hpp>

namespace edgedecode::doctor {

// What is read whole into memory for a format check (images, text). A larger file is hashed streaming
// (--manifest / --verify) and gets a too-large finding instead of a decode; nothing else is read whole.
inline constexpr uint64_t kMaxImageReadBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxTextReadBytes = uint64_t{256} << 20;  // the conversion holds a few copies

struct DataOptions {
  std::string root;
  int jobs = 0;                    // 0 = hardware concurrency
  std::optional<HwDecoder> hw;     // --target
  bool hash = false;               // compute SHA-256 of every file (manifest/verify)
  // Called from CheckTree's thread about every 20 ms while files are checked (may be empty).
  std::function<void(size_t done, size_t total)> on_progress;
  // Asked before each file; once true, the remaining files are not checked (the report says interrupted).
  std::function<bool()> stop;
  bool keep_text = false;          // keep converted UTF-8 (for --fix)
};

struct FileReport {
  std::string path;                // relative to root, '/'-separated
  uint64_t size = 0;
  Format content = Format::kUnknown;
  Format by_extension = Format::kUnknown;
  bool is_image = false, is_text = false;
  ImageInfo image;
  Detection text;
  std::string utf8;                // converted text when keep_text and the file needs conversion
  size_t bad_sequences = 0;        // text: sequences replaced by U+FFFD in utf8
  std::vector<int64_t> repaired_lines;  // text: lines decoded as text.secondary (mixed-encoding)
  std::string sha256;
  std::vector<Finding> findings;
  // A folder that cannot be listed, a dangling link or loop, a FIFO, socket or device: reported by the
  // walk (a finding with its path) and never opened.
  bool not_a_file = false;
};

struct DataReport {
  std::string root;
  std::vector<FileReport> files;   // sorted by path
  double seconds = 0;
  int jobs = 1;
  bool interrupted = false;        // `stop` said so: files holds only the files that were checked
  size_t files_found = 0;          // entries in files (regular files and not_a_file entries) before any interrupt
  size_t FilesWithFindings() const;  // findings of severity warning or error
};

Result<DataReport> CheckTree(const DataOptions& opt);

// Manifest lines in `sha256sum` format ("<hex>  <path>"), paths relative to the root.
std::string ManifestText(const DataReport& r);
// Missing / changed / unexpected files against a manifest (sha256sum format); adds findings to r.
Status VerifyAgainst(const std::string& manifest_path, DataReport* r);

// Counts per format and per finding code, and per format how many files have findings.
struct DataSummary {
  std::map<std::string, int> by_format, by_finding;
  std::map<std::string, std::pair<int, int>> files_and_flagged;  // format -> files, files with findings
};
DataSummary Summarize(const DataReport& r);
// The report as JSON (root, counts, items, findings).
nlohmann::json DataReportJson(const DataReport& r, const DataSummary& s);
// Writes fixed copies under out_dir (renamed images, re-encoded text, JPEGs the target cannot decode) and
// never touches the input tree; a damaged image is not rewritten (a fix-refused finding on it). Returns the
// change log, one line per file.
std::vector<std::string> WriteFixes(DataReport& r, const std::string& out_dir);

}  // namespace edgedecode::doctor
