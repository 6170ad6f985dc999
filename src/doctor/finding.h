// A finding: one problem (or note) about one file, with a stable code for --json and scripts.
// Plain value type; safe to copy between threads.
#pragma once

#include <cstdint>
#include <string>

namespace edgedecode::doctor {

enum class Severity { kInfo, kWarning, kError };
const char* SeverityName(Severity s);

// Stable finding codes (the strings are the contract with --json consumers):
//   extension-mismatch, truncated, corrupt, unsupported-variant, empty, not-an-image,
//   exceeds-hw-decoder, no-decoder, decoder-warning,
//   encoding-not-utf8, encoding-undecidable, invalid-bytes, gb18030-version-sensitive, bom,
//   mixed-encoding (a line of a UTF-8 file in another encoding; --fix decodes it losslessly),
//   fix-refused (--fix would have rewritten a damaged image into a copy that checks clean),
//   replacement-character (U+FFFD in UTF-8 text: bytes lost by an earlier conversion),
//   hash-mismatch, missing, unexpected, unreadable,
//   checksum-line-invalid (a manifest / .sha256 line sha256sum -c calls improperly formatted; file and line),
//   checksum-not-listed (a MODEL.sha256 that lists other files, not the model)
// `doctor env --model`: model-corrupt, model-unreadable, hash-mismatch, checksum-line-invalid, checksum-not-listed.
// `doctor env --oci` (oci.h): oci-layout-missing, oci-layout-invalid, index-invalid, unknown-media-type,
//   digest-invalid, digest-path-traversal, blob-missing, size-mismatch, digest-mismatch, manifest-invalid,
//   platform-incomplete, subject-missing, orphan-blob, symlink-loop.
// `doctor env --referrers-response` (ReferrersVerdict::code): referrers-ok, referrers-html,
//   referrers-login-redirect, referrers-redirect, referrers-auth, referrers-not-found,
//   referrers-not-acceptable, referrers-not-index, referrers-unreadable.
struct Finding {
  std::string path;      // relative to the scanned root
  std::string code;
  Severity severity = Severity::kError;
  std::string message;   // what is wrong, in words (decoder's own message included where there is one)
  int64_t offset = -1;   // byte offset in the file where known, else -1
  int64_t line = -1, column = -1;  // text findings (1-based), else -1
  std::string fix;       // what would fix it (e.g. the rename), empty if nothing automatic
};

}  // namespace edgedecode::doctor
