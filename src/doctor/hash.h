// SHA-256 through OpenSSL's EVP interface, and checksum lists read the way GNU coreutils'
// `sha256sum -c` (9.1, Debian bookworm) reads them. Thread-safe (each call has its own state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edgedecode/status.h"

namespace edgedecode::doctor {

// Opens `path` read-only only if it is a regular file: a FIFO is never waited on (opened O_NONBLOCK, then
// fstat decides) and a device is never read. Returns the fd (blocking again) and its size in *size, or
// -1 and why in *why.
int OpenRegularFile(const std::string& path, uint64_t* size, std::string* why);
// The whole of a regular file of at most `limit` bytes into *out; false and why otherwise.
bool ReadRegularFile(const std::string& path, uint64_t limit, std::string* out, std::string* why);
// Checksum lists (--verify, a model's .sha256) are read whole up to this size.
inline constexpr uint64_t kMaxChecksumListBytes = uint64_t{256} << 20;

// Lower-case hex digest of a buffer.
std::string Sha256Hex(const uint8_t* data, size_t n);
// Streams a file (any size) through SHA-256.
Result<std::string> Sha256File(const std::string& path, uint64_t* size_out = nullptr);

// One properly formatted line of a checksum list.
struct ChecksumEntry {
  std::string hex;       // 64 hex digits, lower-cased (sha256sum compares case-insensitively)
  std::string path;      // the file name as listed, escapes ("\\", "\n", "\r") undone
  bool binary = false;   // '*' marker (no effect on POSIX systems)
  bool bsd_tag = false;  // "SHA256 (FILE) = HASH" (sha256sum --tag)
  int64_t line = 0;      // 1-based
};

// A line sha256sum -c reports as "improperly formatted", with the reason in words.
struct ChecksumProblem {
  int64_t line = 0;
  std::string message;
};

struct ChecksumList {
  std::vector<ChecksumEntry> entries;
  std::vector<ChecksumProblem> problems;
};

// Accepts exactly what coreutils accepts: "HASH  FILE", "HASH *FILE", "HASH FILE" / "HASH\tFILE"
// (but not mixed with two-space lines), "SHA256 (FILE) = HASH", a leading '\' for escaped names,
// upper-case hex, leading blanks, CRLF line ends, '#' comments and blank lines. Everything else is a
// problem (bare digests, 63/65 digits, "sha256 (", trailing blanks after a tagged digest, ...).
ChecksumList ParseSha256Sums(std::string_view text);

// `sha256sum`'s own format for one file (escaped with a leading '\' when the name holds '\\', '\n'
// or '\r', as coreutils writes it), newline included.
std::string Sha256SumLine(const std::string& hex, const std::string& path);

// The expected digest of `target_name` from a side file such as MODEL.gguf.sha256: a sha256sum line
// (or list) naming it by its base name, or, as many publishers write it, the bare digest alone
// (the side file's name says which file it is for). Errors say file and line.
struct SidecarDigest {
  std::string hex;     // lower-case
  int64_t line = 0;
  bool bare = false;   // the file held only the digest
};
Result<SidecarDigest> ReadSha256Sidecar(const std::string& sidecar_path, const std::string& target_name);

}  // namespace edgedecode::doctor
