// Full decode of one image by the real decoders (libjpeg-turbo, libpng, libwebp, giflib, libtiff;
// small hand-written checks for BMP/ICO/PNM headers), with each failure classified.
// Thread-safe: every call owns its decoder state (no global handlers are installed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/sniff.h"

namespace edgedecode::doctor {

// What the decoder learned about the image (from its header), for hardware-profile checks.
struct ImageInfo {
  Format format = Format::kUnknown;
  int64_t width = 0, height = 0;
  int bit_depth = 8;         // per channel (JPEG data precision, PNG bit depth, TIFF bits/sample)
  bool progressive = false;  // JPEG progressive (SOF2/SOF10), PNG/GIF interlace
  bool arithmetic = false;   // JPEG arithmetic coding (SOF9..)
  bool cmyk = false;         // JPEG CMYK/YCCK, TIFF separated
  std::string subsampling;   // JPEG chroma subsampling "4:2:0", "4:2:2", "4:4:4", "4:1:1", "4:0:0" (grey), "other"
  int frames = 1;
  bool decoded = false;      // every pixel went through the decoder without error
};

struct ImageCheck {
  ImageInfo info;
  std::vector<Finding> findings;  // path left empty; the caller fills it
  // Decoder messages past the per-file cap (kMaxDecoderMessages): one corrupt stream can warn thousands
  // of times. CheckImage turns the count into one summary finding, so nothing is dropped silently.
  size_t messages_not_listed = 0;
};

// Limits of the image checks (docs/doctor.md, "Size limits"). Every allocation a decoder makes from a
// header field is bounded by one of them before it is made.
inline constexpr int64_t kMaxPixels = int64_t{1} << 28;          // row-by-row decoders (JPEG baseline, PNG, GIF, TIFF)
inline constexpr int64_t kMaxPixelsInMemory = int64_t{1} << 26;  // decoders that hold the whole image (WebP, progressive JPEG)
inline constexpr int64_t kMaxAnimationCanvasPixels = int64_t{1} << 25;  // WebP animation (canvas buffers)
inline constexpr int64_t kMaxAnimationWork = int64_t{1} << 33;   // WebP animation: frames x canvas pixels
inline constexpr int kMaxJpegScans = 1000;                        // as djpeg -maxscans
inline constexpr int64_t kMaxTiffChunkBytes = int64_t{256} << 20;  // one decoded TIFF strip or tile
inline constexpr size_t kMaxDecoderMessages = 20;                 // listed per file; the rest are counted
inline constexpr int kMaxIcoEntriesChecked = 64;                  // distinct ICO payloads decoded

// Decodes `data` as `format` (the sniffed format, or the extension's when the signature is damaged).
ImageCheck CheckImage(Format format, const uint8_t* data, size_t n);

}  // namespace edgedecode::doctor
