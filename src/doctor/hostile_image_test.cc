// Hostile images built in the test: every allocation a header asks for is bounded before it is made
// (checked in a child under RLIMIT_AS), work is bounded (scans, ICO entries), and what is dropped past a
// cap is summarised. Each case fails on a decoder that trusts the header.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "doctor/bounded_child.h"
#include "doctor/image_check.h"
#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {

using testing::ReadBytes;
using testing::RunBounded;
using testing::Testdata;
using Bytes = std::vector<uint8_t>;

void Le16(Bytes* b, uint32_t v) {
  b->push_back(v & 0xFF);
  b->push_back((v >> 8) & 0xFF);
}
void Le32(Bytes* b, uint32_t v) {
  Le16(b, v & 0xFFFF);
  Le16(b, v >> 16);
}
void Be32(Bytes* b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b->push_back((v >> s) & 0xFF);
}
void Append(Bytes* b, const std::string& s) { b->insert(b->end(), s.begin(), s.end()); }

// One line per finding: "code: message".
std::string Listed(const ImageCheck& c) {
  std::ostringstream s;
  for (const Finding& f : c.findings) s << FindingCodeName(f.code) << ": " << f.message << "\n";
  return s.str();
}

// CheckImage in a bounded child; its findings as Listed() gives them.
std::string CheckBounded(Format f, const Bytes& b) {
  auto r = RunBounded([&] { return Listed(CheckImage(f, b.data(), b.size())); });
  EXPECT_TRUE(r.ok()) << "the check died (" << r.how() << "): " << r.out;
  return r.out;
}

// A little-endian TIFF with one IFD of (tag, type, value) entries (count 1 each) and `data` bytes after it.
struct Tag {
  uint16_t tag, type;
  uint32_t value;
};
Bytes Tiff(std::vector<Tag> tags, size_t data) {
  Bytes b = {'I', 'I', 42, 0};
  Le32(&b, 8);
  const uint32_t data_at = 8 + 2 + 12 * static_cast<uint32_t>(tags.size()) + 4;
  Le16(&b, static_cast<uint32_t>(tags.size()));
  for (Tag t : tags) {
    if (t.value == 0xFFFFFFFF) t.value = data_at;  // the offset of the data
    Le16(&b, t.tag);
    Le16(&b, t.type);
    Le32(&b, 1);
    if (t.type == 3) { Le16(&b, t.value); Le16(&b, 0); }
    else Le32(&b, t.value);
  }
  Le32(&b, 0);
  b.resize(b.size() + data, 0x55);
  return b;
}
constexpr uint16_t kShort = 3, kLong = 4;
constexpr uint32_t kDataAt = 0xFFFFFFFF;

TEST(HostileImage, TiffTileOfOneTebibyteIsRefusedBeforeAllocating) {
  // 1x1 image in one 2^20 x 2^20 tile: TIFFTileSize says 1 TiB for a file of 150 bytes.
  const Bytes b = Tiff({{256, kLong, 1}, {257, kLong, 1}, {258, kShort, 8}, {259, kShort, 1}, {262, kShort, 1},
                        {277, kShort, 1}, {322, kLong, 1u << 20}, {323, kLong, 1u << 20}, {324, kLong, kDataAt},
                        {325, kLong, 16}},
                       16);
  ASSERT_LT(b.size(), 200u);
  const std::string out = CheckBounded(Format::kTiff, b);
  EXPECT_NE(out.find("unsupported-variant: TIFF tile of 1099511627776 bytes"), std::string::npos) << out;
}

TEST(HostileImage, TiffStripOfGibibytesIsRefusedBeforeAllocating) {
  // 16384x16384 (at the pixel limit) of 4 x 16-bit samples in one deflated strip: 2 GiB for one strip.
  // (Compressed: libtiff chops a big uncompressed strip into rows by itself.)
  const Bytes b = Tiff({{256, kLong, 16384}, {257, kLong, 16384}, {258, kShort, 16}, {259, kShort, 8},
                        {262, kShort, 1}, {273, kLong, kDataAt}, {277, kShort, 4}, {278, kLong, 16384},
                        {279, kLong, 16}},
                       16);
  const std::string out = CheckBounded(Format::kTiff, b);
  EXPECT_NE(out.find("unsupported-variant: TIFF strip of 2147483648 bytes"), std::string::npos) << out;
}

// RIFF/WEBP around one chunk.
Bytes Riff(const std::string& fourcc, const Bytes& payload) {
  Bytes b;
  Append(&b, "RIFF");
  Le32(&b, static_cast<uint32_t>(4 + 8 + payload.size() + (payload.size() & 1)));
  Append(&b, "WEBP");
  Append(&b, fourcc);
  Le32(&b, static_cast<uint32_t>(payload.size()));
  b.insert(b.end(), payload.begin(), payload.end());
  if (payload.size() & 1) b.push_back(0);
  return b;
}

TEST(HostileImage, WebpPixelBombsAreRefusedFromTheHeader) {
  // Lossless, 16383x16383, 28 bytes: libwebp would allocate two whole-image buffers (2 GiB).
  Bytes vp8l = {0x2f};
  Le32(&vp8l, 16382u | (16382u << 14));
  vp8l.resize(8, 0);
  const Bytes lossless = Riff("VP8L", vp8l);
  ASSERT_EQ(lossless.size(), 28u);
  std::string out = CheckBounded(Format::kWebp, lossless);
  EXPECT_NE(out.find("unsupported-variant: image too large to decode safely: 16383x16383"), std::string::npos) << out;

  // Lossy key frame, 16383x16383.
  Bytes vp8 = {0x50, 0x01, 0x00, 0x9d, 0x01, 0x2a, 0xff, 0x3f, 0xff, 0x3f};
  vp8.resize(32, 0);
  out = CheckBounded(Format::kWebp, Riff("VP8 ", vp8));
  EXPECT_NE(out.find("unsupported-variant: image too large to decode safely: 16383x16383"), std::string::npos) << out;

  // An animation on a 16384x16384 canvas (the canvas buffers are whole-image).
  Bytes vp8x = {0x02, 0, 0, 0};
  for (int k = 0; k < 2; ++k) { vp8x.push_back(0xff); vp8x.push_back(0x3f); vp8x.push_back(0); }
  out = CheckBounded(Format::kWebp, Riff("VP8X", vp8x));
  EXPECT_NE(out.find("unsupported-variant: image too large to decode safely: 16384x16384"), std::string::npos) << out;
  EXPECT_NE(out.find("animation"), std::string::npos) << out;
}

// Offset of the first marker segment `m` (0xFF m), walking the segments from SOI up to the first SOS;
// npos if none.
size_t FindMarker(const Bytes& b, uint8_t m) {
  size_t i = 2;
  while (i + 4 <= b.size() && b[i] == 0xFF) {
    if (b[i + 1] == m) return i;
    if (b[i + 1] == 0xDA) break;
    i += 2 + (static_cast<size_t>(b[i + 2]) << 8 | b[i + 3]);
  }
  return std::string::npos;
}

void SetJpegSize(Bytes* b, uint8_t sof, uint16_t w, uint16_t h) {
  const size_t at = FindMarker(*b, sof);
  ASSERT_NE(at, std::string::npos);
  (*b)[at + 5] = h >> 8; (*b)[at + 6] = h & 0xFF;
  (*b)[at + 7] = w >> 8; (*b)[at + 8] = w & 0xFF;
}

TEST(HostileImage, JpegPixelBombsAreRefusedFromTheHeader) {
  Bytes base = ReadBytes(Testdata("images/pillow/hopper.jpg"));
  // 65500 is libjpeg's own maximum dimension (it refuses 65535 itself).
  SetJpegSize(&base, 0xC0, 65500, 65500);
  std::string out = CheckBounded(Format::kJpeg, base);
  EXPECT_NE(out.find("unsupported-variant: image too large to decode safely: 65500x65500"), std::string::npos) << out;

  // Progressive files are decoded into whole-image coefficient arrays: the lower limit applies.
  Bytes prog = ReadBytes(Testdata("images/pillow/app13-multiple.progressive.jpg"));
  SetJpegSize(&prog, 0xC2, 16384, 8192);
  out = CheckBounded(Format::kJpeg, prog);
  EXPECT_NE(out.find("unsupported-variant: image too large to decode safely: 16384x8192"), std::string::npos) << out;
  EXPECT_NE(out.find("held whole in memory"), std::string::npos) << out;
}

TEST(HostileImage, JpegWithThousandsOfScansStopsAtTheScanLimit) {
  // The progressive file's first scan repeated 3000 times before the rest of the file.
  const Bytes src = ReadBytes(Testdata("images/pillow/app13-multiple.progressive.jpg"));
  const size_t sos = FindMarker(src, 0xDA);
  ASSERT_NE(sos, std::string::npos);
  size_t end = sos + 2;
  while (end + 1 < src.size() && !(src[end] == 0xFF && src[end + 1] != 0 && (src[end + 1] < 0xD0 || src[end + 1] > 0xD7)))
    ++end;
  const Bytes scan(src.begin() + static_cast<long>(sos), src.begin() + static_cast<long>(end));
  Bytes b(src.begin(), src.begin() + static_cast<long>(end));
  for (int i = 0; i < 3000; ++i) b.insert(b.end(), scan.begin(), scan.end());
  b.insert(b.end(), src.begin() + static_cast<long>(end), src.end());
  const ImageCheck c = CheckImage(Format::kJpeg, b.data(), b.size());
  const std::string out = Listed(c);
  EXPECT_NE(out.find("unsupported-variant: JPEG has more than " + std::to_string(kMaxJpegScans) + " scans"),
            std::string::npos) << out;
  EXPECT_FALSE(c.info.decoded);
  EXPECT_LE(c.findings.size(), kMaxDecoderMessages + 2) << out;
}

TEST(HostileImage, PnmSizeThatWrapsTheByteCountIsTruncatedNotDecoded) {
  // 2^32 x 2^32 one-byte samples: the old product wrapped to 0 bytes, which "fit" in the file.
  const std::string s = "P5\n4294967296 4294967296\n255\n" + std::string(16, '\0');
  const Bytes b(s.begin(), s.end());
  const ImageCheck c = CheckImage(Format::kPnm, b.data(), b.size());
  EXPECT_FALSE(c.info.decoded);
  EXPECT_NE(Listed(c).find("truncated: PNM: pixel data of 4294967296x4294967296 needs more than 2^64 bytes"),
            std::string::npos) << Listed(c);
  // P6 (3 samples a pixel) whose product wraps only after the multiplication by 3.
  const std::string s6 = "P6\n6148914691236517206 1\n255\n" + std::string(16, '\0');
  const ImageCheck c6 = CheckImage(Format::kPnm, reinterpret_cast<const uint8_t*>(s6.data()), s6.size());
  EXPECT_FALSE(c6.info.decoded) << Listed(c6);
}

// A PNG whose IHDR CRC is wrong (libpng stops with a corrupt error).
Bytes DamagedPng() {
  Bytes p = ReadBytes(Testdata("images/mitra/png.png"));
  p[8 + 8 + 13] ^= 0xFF;  // the IHDR CRC's first byte
  return p;
}

Bytes Ico(const std::vector<std::pair<uint32_t, uint32_t>>& entries /* offset, size */, const Bytes& tail) {
  Bytes b = {0, 0, 1, 0};
  Le16(&b, static_cast<uint32_t>(entries.size()));
  for (auto [off, size] : entries) {
    b.insert(b.end(), {16, 16, 0, 0});
    Le16(&b, 1);
    Le16(&b, 32);
    Le32(&b, size);
    Le32(&b, off);
  }
  b.insert(b.end(), tail.begin(), tail.end());
  return b;
}

TEST(HostileImage, IcoEntriesSharingOnePayloadAreCheckedOnce) {
  const Bytes png = DamagedPng();
  const uint32_t at = 6 + 16 * 65535;
  const Bytes b = Ico(std::vector<std::pair<uint32_t, uint32_t>>(65535, {at, static_cast<uint32_t>(png.size())}), png);
  const ImageCheck c = CheckImage(Format::kIco, b.data(), b.size());
  const std::string out = Listed(c);
  size_t corrupt = 0;
  for (const Finding& f : c.findings) corrupt += f.code == FindingCode::kCorrupt;
  EXPECT_EQ(corrupt, 1u) << out.substr(0, 2000);
  EXPECT_NE(out.find("65534 of 65535 entries repeat an earlier entry's image"), std::string::npos) << out.substr(0, 2000);
}

TEST(HostileImage, IcoWithManyDistinctEntriesIsCappedWithASummary) {
  // 300 entries at 300 different offsets into 340 bytes of garbage: each a distinct (bad) DIB.
  std::vector<std::pair<uint32_t, uint32_t>> e;
  const uint32_t at = 6 + 16 * 300;
  for (uint32_t i = 0; i < 300; ++i) e.push_back({at + i, 40});
  const Bytes b = Ico(e, Bytes(340, 0x7F));
  const ImageCheck c = CheckImage(Format::kIco, b.data(), b.size());
  const std::string out = Listed(c);
  EXPECT_LE(c.findings.size(), static_cast<size_t>(kMaxIcoEntriesChecked) + 1) << out.substr(0, 2000);
  EXPECT_NE(out.find("the first 64 distinct images were checked, 236 more were not"), std::string::npos)
      << out.substr(0, 2000);
}

TEST(HostileImage, DecoderMessagesPastTheCapAreSummarised) {
  // 500 ancillary chunks with bad CRCs after IHDR: libpng warns on each.
  const Bytes png = ReadBytes(Testdata("images/mitra/png.png"));
  Bytes b(png.begin(), png.begin() + 33);  // signature + IHDR
  for (int i = 0; i < 500; ++i) {
    Be32(&b, 4);
    Append(&b, "tEXt");
    Append(&b, std::string("a\0bc", 4));
    Be32(&b, 0xDEADBEEF);
  }
  b.insert(b.end(), png.begin() + 33, png.end());
  const ImageCheck c = CheckImage(Format::kPng, b.data(), b.size());
  const std::string out = Listed(c);
  EXPECT_LE(c.findings.size(), kMaxDecoderMessages + 1) << out;
  size_t summarised = 0;
  for (const Finding& f : c.findings)
    if (f.message.rfind("... and ", 0) == 0) summarised = std::stoul(f.message.substr(8));
  // Every chunk's warning is either listed or counted (the CRC walk may add its own).
  EXPECT_GE(summarised + c.findings.size(), 500u) << out;
}

}  // namespace
}  // namespace edgedecode::doctor
