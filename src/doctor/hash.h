// SHA-256 through OpenSSL's EVP interface. Thread-safe (each call has its own context).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "edgedecode/status.h"

namespace edgedecode::doctor {

// Lower-case hex digest of a buffer.
std::string Sha256Hex(const uint8_t* data, size_t n);
// Streams a file (any size) through SHA-256.
Result<std::string> Sha256File(const std::string& path, uint64_t* size_out = nullptr);

}  // namespace edgedecode::doctor
