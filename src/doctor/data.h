// `doctor data`: walks a tree in parallel, sniffs, decodes and checks every file, and reports.
// CheckTree is the library entry (tests call it); RunData prints and writes the side files.
// Thread-safety: CheckTree runs its own worker pool; the options and result are plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/image_check.h"
#include "doctor/profile.h"
#include "doctor/text_check.h"
#include "edgedecode/status.h"

namespace edgedecode::doctor {

struct DataOptions {
  std::string root;
  int jobs = 0;                    // 0 = hardware concurrency
  std::optional<HwDecoder> hw;     // --target
  bool hash = false;               // compute SHA-256 of every file (manifest/verify)
  bool progress = false;           // progress bar / lines on stderr
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
};

struct DataReport {
  std::string root;
  std::vector<FileReport> files;   // sorted by path
  double seconds = 0;
  int jobs = 1;
  size_t FilesWithFindings() const;  // findings of severity warning or error
};

Result<DataReport> CheckTree(const DataOptions& opt);

// Manifest lines in `sha256sum` format ("<hex>  <path>"), paths relative to the root.
std::string ManifestText(const DataReport& r);
// Missing / changed / unexpected files against a manifest (sha256sum format); adds findings to r.
Status VerifyAgainst(const std::string& manifest_path, DataReport* r);

// The whole command: prints the summary, writes --json/--manifest/--fix output. Returns the exit code.
struct DataCommand {
  DataOptions opt;
  std::string json_path, manifest_path, verify_path, out_dir;
  bool fix = false;
};
int RunData(const DataCommand& cmd);

}  // namespace edgedecode::doctor
