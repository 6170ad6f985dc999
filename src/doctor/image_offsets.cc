#include "doctor/image_offsets.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <zlib.h>

namespace edgedecode::doctor {
namespace {

uint32_t Be32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }

std::string MarkerName(uint8_t m) {
  char b[16];
  std::snprintf(b, sizeof b, "0xFF%02X", m);
  if (m == 0xDA) return std::string("SOS (") + b + ")";
  if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) return std::string("SOF (") + b + ")";
  return std::string("marker ") + b;
}

}  // namespace

std::string JpegStructureEnd(const uint8_t* d, size_t n, int64_t* end_offset) {
  *end_offset = static_cast<int64_t>(n);
  if (n < 2 || d[0] != 0xFF || d[1] != 0xD8) return "no SOI marker at the start";
  size_t p = 2;
  auto cut = [&](const std::string& where, size_t at) {
    return "the file ends at byte " + std::to_string(n) + " inside " + where + " at byte " + std::to_string(at) +
           ", before any EOI marker (found by walking the JPEG markers)";
  };
  while (p < n) {
    if (d[p] != 0xFF) { ++p; continue; }  // stray bytes between segments (libjpeg warns about them)
    if (p + 1 >= n) return cut("a marker", p);
    const uint8_t m = d[p + 1];
    if (m == 0xFF) { ++p; continue; }     // fill byte
    if (m == 0xD9) return "";             // EOI
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) { p += 2; continue; }  // no length
    if (p + 4 > n) return cut(MarkerName(m), p);
    const size_t len = static_cast<size_t>(d[p + 2]) << 8 | d[p + 3];
    if (p + 2 + len > n) return cut("the segment of " + MarkerName(m), p);
    const size_t seg = p;
    p += 2 + len;
    if (m == 0xDA) {
      // Entropy-coded data runs to the next marker that is not a stuffed 0xFF00 or a restart.
      while (p + 1 < n && !(d[p] == 0xFF && d[p + 1] != 0 && !(d[p + 1] >= 0xD0 && d[p + 1] <= 0xD7))) ++p;
      if (p + 1 >= n) return cut("the scan data of the " + MarkerName(m) + " segment", seg);
    }
  }
  return cut("the data after the last segment", p);
}

std::vector<PngChunk> PngChunks(const uint8_t* d, size_t n) {
  std::vector<PngChunk> v;
  for (size_t p = 8; p + 8 <= n;) {
    PngChunk c;
    c.offset = p;
    c.length = Be32(d + p);
    c.type.assign(reinterpret_cast<const char*>(d + p + 4), 4);
    const uint64_t end = uint64_t{p} + 12 + c.length;
    if (end > n) {
      c.complete = false;
      v.push_back(c);
      break;
    }
    const uint32_t crc = static_cast<uint32_t>(crc32(crc32(0, nullptr, 0), d + p + 4, c.length + 4));
    c.crc_ok = crc == Be32(d + p + 8 + c.length);
    v.push_back(c);
    if (c.type == "IEND") break;
    p = static_cast<size_t>(end);
  }
  return v;
}

int64_t PngInflateFailure(const uint8_t* d, const std::vector<PngChunk>& chunks, std::string* zmsg) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit(&zs) != Z_OK) return -1;
  static thread_local unsigned char out[1 << 16];  // output is discarded; only where it fails matters
  int64_t result = -2;
  bool done = false;
  for (const PngChunk& c : chunks) {
    if (c.type != "IDAT" || done) continue;
    const size_t avail = c.complete ? c.length : 0;
    zs.next_in = const_cast<Bytef*>(d + c.offset + 8);
    zs.avail_in = static_cast<uInt>(avail);
    while (zs.avail_in > 0) {
      zs.next_out = out;
      zs.avail_out = sizeof out;
      const int rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) { result = -1; done = true; break; }
      if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
        *zmsg = zs.msg ? zs.msg : "inflate error";
        result = static_cast<int64_t>(c.offset + 8 + (avail - zs.avail_in));
        done = true;
        break;
      }
      if (rc == Z_BUF_ERROR && zs.avail_out != 0) break;  // wants the next chunk's bytes
    }
  }
  inflateEnd(&zs);
  return result;
}

int64_t PngBadFilterOffset(const uint8_t* d, const std::vector<PngChunk>& chunks, int64_t* row) {
  if (chunks.empty() || chunks[0].type != "IHDR" || chunks[0].length < 13 || !chunks[0].complete) return -1;
  const uint8_t* h = d + chunks[0].offset + 8;
  const uint64_t width = Be32(h), height = Be32(h + 4);
  const int depth = h[8], color = h[9], interlace = h[12];
  const int channels = color == 0 ? 1 : color == 2 ? 3 : color == 3 ? 1 : color == 4 ? 2 : color == 6 ? 4 : 0;
  if (interlace != 0 || channels == 0 || width == 0) return -1;
  const uint64_t stride = 1 + (width * channels * depth + 7) / 8;  // filter byte + row bytes
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit(&zs) != Z_OK) return -1;
  static thread_local unsigned char out[1 << 16];
  uint64_t produced = 0;
  int64_t result = -1;
  // Output is taken in pieces that end at the next row start, so when a filter byte is produced the
  // input consumed so far is where zlib was (its bit buffer may hold a few bytes more).
  for (const PngChunk& c : chunks) {
    if (c.type != "IDAT" || !c.complete || result >= 0) continue;
    zs.next_in = const_cast<Bytef*>(d + c.offset + 8);
    zs.avail_in = c.length;
    while (zs.avail_in > 0 && result < 0) {
      const uint64_t to_row = stride - produced % stride;  // bytes up to and including the next filter byte
      const uint64_t want = produced % stride == 0 ? 1 : to_row;
      zs.next_out = out;
      zs.avail_out = static_cast<uInt>(std::min<uint64_t>(want, sizeof out));
      const int rc = inflate(&zs, Z_NO_FLUSH);
      const uint64_t got = static_cast<uInt>(std::min<uint64_t>(want, sizeof out)) - zs.avail_out;
      if (got > 0 && produced % stride == 0 && out[0] > 4 && produced / stride < height) {
        *row = static_cast<int64_t>(produced / stride);
        result = static_cast<int64_t>(c.offset + 8 + (c.length - zs.avail_in));
      }
      produced += got;
      if (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR)) { zs.avail_in = 0; break; }
      if (rc == Z_BUF_ERROR && zs.avail_out != 0) break;
    }
  }
  inflateEnd(&zs);
  return result;
}

}  // namespace edgedecode::doctor
