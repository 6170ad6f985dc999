// A finding: one problem (or note) about one file, with a stable code for --json and scripts.
// Plain value type; safe to copy between threads.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace edgedecode::doctor {

enum class Severity { kInfo, kWarning, kError };
const char* SeverityName(Severity s);

// THE table of finding codes: X(enumerator, name, text). The names are the contract with --json consumers
// and scripts (printed as is by every output; docs/doctor.md lists them with their usual severity): never
// rename one. Add a code by adding a row here and to docs/doctor.md (doctor_env_test checks both).
#define EDGEDECODE_DOCTOR_FINDING_CODES(X)                                                                   \
  /* doctor data: images */                                                                                 \
  X(kExtensionMismatch, "extension-mismatch", "the content's format is not the one the extension names")   \
  X(kTruncated, "truncated", "the data ends before the format says it does (a cut file)")                   \
  X(kCorrupt, "corrupt", "the decoder found invalid or damaged data")                                       \
  X(kUnsupportedVariant, "unsupported-variant", "a variant the decoder here does not decode (or too large)") \
  X(kEmpty, "empty", "the file is empty (0 bytes)")                                                         \
  X(kNotAnImage, "not-an-image", "an image name over content that is not an image (HTML, JSON, text)")      \
  X(kExceedsHwDecoder, "exceeds-hw-decoder", "outside the --target hardware decoder's limits")              \
  X(kNoDecoder, "no-decoder", "a format this build has no decoder for: not checked")                        \
  X(kDecoderWarning, "decoder-warning", "the decoder warned, without damage to the data")                   \
  /* doctor data: text */                                                                                   \
  X(kEncodingNotUtf8, "encoding-not-utf8", "text in an encoding other than UTF-8")                          \
  X(kEncodingUndecidable, "encoding-undecidable", "not UTF-8, and too little non-ASCII text to decide")     \
  X(kEncodingVoted, "encoding-voted", "a short file's encoding taken from the majority of its folder")      \
  X(kInvalidBytes, "invalid-bytes", "bytes invalid in the file's encoding (U+FFFD in the conversion)")      \
  X(kGb18030VersionSensitive, "gb18030-version-sensitive",                                                  \
    "GB18030 codes that map differently under GB18030-2005 and GB18030-2022")                               \
  X(kBom, "bom", "a byte order mark at the start of the text")                                              \
  X(kMixedEncoding, "mixed-encoding", "a line of a UTF-8 file in another encoding (--fix decodes it losslessly)") \
  X(kReplacementCharacter, "replacement-character", "U+FFFD in UTF-8 text: bytes lost by an earlier conversion") \
  /* doctor data: the walk and limits */                                                                   \
  X(kNotARegularFile, "not-a-regular-file", "a FIFO, socket or device file in the tree: never opened")      \
  X(kDanglingSymlink, "dangling-symlink", "a symlink whose target does not exist")                          \
  X(kTooLarge, "too-large", "over the size limit of a format check: hashed, not decoded")                   \
  /* doctor data --fix */                                                                                   \
  X(kFixRefused, "fix-refused", "--fix would have rewritten a damaged image into a copy that checks clean")  \
  /* doctor data --verify, doctor env --model */                                                            \
  X(kHashMismatch, "hash-mismatch", "the SHA-256 differs from the manifest's or side file's")               \
  X(kMissing, "missing", "listed in the manifest but not in the tree")                                      \
  X(kUnexpected, "unexpected", "in the tree but not in the manifest")                                       \
  X(kUnreadable, "unreadable", "the file cannot be read (or the folder cannot be listed)")                  \
  X(kChecksumLineInvalid, "checksum-line-invalid",                                                          \
    "a checksum line sha256sum -c calls improperly formatted (file and line)")                              \
  X(kChecksumNotListed, "checksum-not-listed", "a MODEL.sha256 that lists other files, not the model")      \
  /* doctor env --model */                                                                                  \
  X(kModelCorrupt, "model-corrupt", "the GGUF file fails structural validation")                            \
  X(kModelUnreadable, "model-unreadable", "the model file cannot be read to hash it")                       \
  /* doctor env --oci (oci.h) */                                                                            \
  X(kOciLayoutMissing, "oci-layout-missing", "no oci-layout file: not an OCI image layout")                 \
  X(kOciLayoutInvalid, "oci-layout-invalid", "oci-layout is not valid JSON as Go reads it, or an unexpected version") \
  X(kIndexInvalid, "index-invalid", "index.json is missing, not valid JSON as Go reads it, or not an image index") \
  X(kUnknownMediaType, "unknown-media-type", "a media type that is not type/subtype, not registered, or a vendor's") \
  X(kDigestInvalid, "digest-invalid", "a digest that is not algorithm:lowercase-hex")                       \
  X(kDigestPathTraversal, "digest-path-traversal", "a digest that would escape blobs/ (never opened)")      \
  X(kBlobMissing, "blob-missing", "a referenced blob is not in blobs/")                                     \
  X(kSizeMismatch, "size-mismatch", "a blob's size differs from its descriptor's")                          \
  X(kDigestMismatch, "digest-mismatch", "a blob's SHA-256 differs from its digest")                         \
  X(kManifestInvalid, "manifest-invalid", "a manifest or config that is invalid as Go reads it, or incomplete") \
  X(kPlatformIncomplete, "platform-incomplete", "a platform that cannot be pulled offline")                 \
  X(kSubjectMissing, "subject-missing", "a referrer's subject is not in this layout")                       \
  X(kOrphanBlob, "orphan-blob", "a blob not referenced from index.json (garbage, or a lost tag)")           \
  X(kSymlinkLoop, "symlink-loop", "a symlink loop in the layout")                                           \
  /* doctor env --referrers-response (ReferrersVerdict::code, oci.h) */                                     \
  X(kReferrersOk, "referrers-ok", "a valid referrers image index")                                          \
  X(kReferrersHtml, "referrers-html", "HTML served with 200 (\"failed to decode referrers index\")")        \
  X(kReferrersLoginRedirect, "referrers-login-redirect", "a redirect to a login page")                      \
  X(kReferrersRedirect, "referrers-redirect", "a redirect that was not followed")                           \
  X(kReferrersAuth, "referrers-auth", "401, 403 or 407: an authentication or authorisation problem")        \
  X(kReferrersNotFound, "referrers-not-found", "404: no referrers API (use the tag-schema fallback)")       \
  X(kReferrersNotAcceptable, "referrers-not-acceptable", "406: send the Accept header for an image index")  \
  X(kReferrersNotIndex, "referrers-not-index", "the reply is not an image index")                           \
  X(kReferrersUnreadable, "referrers-unreadable", "the saved reply cannot be read")

enum class FindingCode {
#define EDGEDECODE_DOCTOR_X(e, name, text) e,
  EDGEDECODE_DOCTOR_FINDING_CODES(EDGEDECODE_DOCTOR_X)
#undef EDGEDECODE_DOCTOR_X
};

// The code as printed (--json "code", the text report, by_finding keys).
const char* FindingCodeName(FindingCode c);
// One line: what the code means.
const char* FindingCodeText(FindingCode c);
// Every code, in table order.
std::vector<FindingCode> AllFindingCodes();
// Prints FindingCodeName (test messages).
std::ostream& operator<<(std::ostream& os, FindingCode c);

struct Finding {
  std::string path;      // relative to the scanned root
  FindingCode code = FindingCode::kCorrupt;
  Severity severity = Severity::kError;
  std::string message;   // what is wrong, in words (decoder's own message included where there is one)
  int64_t offset = -1;   // byte offset in the file where known, else -1
  int64_t line = -1, column = -1;  // text findings (1-based), else -1
  std::string fix;       // what would fix it (e.g. the rename), empty if nothing automatic
};

}  // namespace edgedecode::doctor
