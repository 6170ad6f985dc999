// Where in the file the damage is, found from the format's own structure, independent of (and in
// addition to) what the decoder reported: the JPEG marker sequence, PNG chunk CRCs and the IDAT zlib
// stream (replayed with zlib to the byte where inflate fails). Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace edgedecode::doctor {

// Walks the JPEG markers (segment lengths, entropy-coded data to the next marker) from SOI. Returns
// "" when an EOI is reached, else where and in what the file ends, with *end_offset set.
std::string JpegStructureEnd(const uint8_t* d, size_t n, int64_t* end_offset);

struct PngChunk {
  size_t offset = 0;   // of the length field
  uint32_t length = 0;
  std::string type;
  bool crc_ok = true;
  bool complete = true;  // data and CRC inside the file
};
// The chunks after the signature, in order, as far as the file holds them.
std::vector<PngChunk> PngChunks(const uint8_t* d, size_t n);

// Replays the IDAT zlib stream with zlib. Returns the file offset of the input byte inflate had
// reached when it reported an error (zlib's message in *zmsg), -2 if the stream ends before its
// end-of-stream block (cut), or -1 if it inflates cleanly.
int64_t PngInflateFailure(const uint8_t* d, const std::vector<PngChunk>& chunks, std::string* zmsg);

// For a non-interlaced image whose IDAT inflates but holds a row with a filter type above 4 (libpng:
// "bad adaptive filter value"): the file offset of the input byte zlib had reached when it produced
// that row's filter byte, with the row in *row; -1 if no such row or the image is interlaced.
int64_t PngBadFilterOffset(const uint8_t* d, const std::vector<PngChunk>& chunks, int64_t* row);

}  // namespace edgedecode::doctor
