// JPEG rewrites for `doctor data --fix` (libjpeg-turbo). Thread-safe: each call owns its codec state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "edgedecode/status.h"

namespace edgedecode::doctor {

// Both refuse (kCorrupt) a source that is cut or has corrupt entropy-coded data: libjpeg reads such
// a file with warnings only and fills the gaps with grey, so the rewrite would check clean while
// its lost rows are garbage.

// Lossless transcode (DCT coefficients copied, as jpegtran does) to baseline sequential Huffman:
// removes progressive and arithmetic coding, which many hardware decoders reject.
Result<std::vector<uint8_t>> JpegToBaseline(const uint8_t* data, size_t n);

// Decodes with libjpeg's DCT scaling (M/8, M = 1..16) to the largest size that fits in
// max_w x max_h (aspect kept), and re-encodes baseline 8-bit 4:2:0 at `quality`.
Result<std::vector<uint8_t>> JpegResizeToFit(const uint8_t* data, size_t n, int64_t max_w, int64_t max_h,
                                             int quality = 90);

}  // namespace edgedecode::doctor
