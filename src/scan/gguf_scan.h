// GGUF LLMs against a device profile's "llm" section: which layers' matmuls the device takes (by ggml
// weight type), which ops fall back, and how many bytes cross CPU<->accelerator per token.
#pragma once

#include <string>

#include "edgedecode/status.h"
#include "scan/scanner.h"

namespace edgedecode::scan {

bool LooksLikeGguf(const std::string& path);  // first four bytes are "GGUF"
// One NodeResult per weight tensor (op: matmul / embedding / rms_norm ...), plus per-layer ops the
// architecture needs (rope, attention, softmax, swiglu). kCorrupt etc. from the GGUF reader.
Result<ScanReport> ScanGguf(const std::string& path, const Profile& profile);

}  // namespace edgedecode::scan
