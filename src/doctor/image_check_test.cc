#include "doctor/image_check.h"

#include "doctor/image_offsets.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "doctor/profile.h"
#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {
using testing::ReadBytes;
using testing::Testdata;

bool HasError(const ImageCheck& c) {
  for (const auto& f : c.findings) if (f.severity == Severity::kError) return true;
  return false;
}
bool Has(const ImageCheck& c, FindingCode code) {
  for (const auto& f : c.findings) if (f.code == code) return true;
  return false;
}

ImageCheck CheckBytes(const std::vector<uint8_t>& b, Format ext) {
  Format f = SniffContent(b.data(), b.size(), b.size());
  return CheckImage(IsImageFormat(f) ? f : ext, b.data(), b.size());
}

TEST(ImageCheck, PngSuiteBrokenFlaggedValidPass) {
  int broken = 0, valid = 0;
  for (const auto& e : std::filesystem::directory_iterator(Testdata("images/pngsuite"))) {
    if (e.path().extension() != ".png") continue;
    const std::string name = e.path().filename().string();
    ImageCheck c = CheckBytes(ReadBytes(e.path().string()), Format::kPng);
    if (name[0] == 'x') {
      ++broken;
      EXPECT_TRUE(HasError(c)) << name << " is a broken PngSuite file but was not flagged";
    } else {
      ++valid;
      EXPECT_FALSE(HasError(c)) << name << ": " << (c.findings.empty() ? "" : c.findings[0].message);
      EXPECT_TRUE(c.info.decoded) << name;
    }
  }
  EXPECT_GE(broken, 10);
  EXPECT_GE(valid, 100);
}

TEST(ImageCheck, PillowTruncatedAndBrokenClasses) {
  struct Case { const char* file; FindingCode code; };
  const Case cases[] = {
      {"images/pillow/truncated_jpeg.jpg", FindingCode::kTruncated},
      {"images/pillow/truncated_image.png", FindingCode::kTruncated},
      {"images/pillow/truncated_end_chunk.png", FindingCode::kTruncated},
      {"images/pillow/broken.png", FindingCode::kCorrupt},
      {"images/pillow/broken_data_stream.png", FindingCode::kCorrupt},
      {"images/pillow/junk_jpeg_header.jpg", FindingCode::kCorrupt},
      {"images/pillow/bmp-bad/shortfile.bmp", FindingCode::kTruncated},
      {"images/pillow/bmp-bad/badplanes.bmp", FindingCode::kCorrupt},
      {"images/pillow/bmp-bad/badrle.bmp", FindingCode::kCorrupt},
  };
  for (const Case& k : cases) {
    auto b = ReadBytes(Testdata(k.file));
    ASSERT_FALSE(b.empty()) << k.file;
    ImageCheck c = CheckBytes(b, FormatFromExtension(k.file));
    EXPECT_TRUE(Has(c, k.code)) << k.file << " should be " << k.code
                                << (c.findings.empty() ? " (no findings)" : ", got " + std::string(FindingCodeName(c.findings[0].code)));
  }
  // The truncated JPEG: libjpeg "succeeds", the warning is what tells; offset = end of file.
  auto b = ReadBytes(Testdata("images/pillow/truncated_jpeg.jpg"));
  ImageCheck c = CheckImage(Format::kJpeg, b.data(), b.size());
  ASSERT_FALSE(c.findings.empty());
  EXPECT_EQ(c.findings[0].offset, static_cast<int64_t>(b.size()));
  EXPECT_NE(c.findings[0].message.find("Premature end"), std::string::npos);
}

TEST(ImageCheck, GoodFilesDecode) {
  for (const char* f : {"images/pillow/hopper.jpg", "images/pillow/hopper.png", "images/pillow/hopper.webp",
                        "images/pillow/hopper.gif", "images/pillow/hopper.bmp", "images/mitra/tiff-le.tif",
                        "images/mitra/webpl.webp", "images/libjpeg-turbo/testorig.jpg"}) {
    auto b = ReadBytes(Testdata(f));
    ImageCheck c = CheckBytes(b, FormatFromExtension(f));
    EXPECT_FALSE(HasError(c)) << f << ": " << (c.findings.empty() ? "" : c.findings[0].message);
    EXPECT_TRUE(c.info.decoded) << f;
    EXPECT_GT(c.info.width, 0) << f;
  }
}

TEST(ImageCheck, ArithmeticAnd12BitAgainstProfile) {
  auto ari = ReadBytes(Testdata("images/libjpeg-turbo/testimgari.jpg"));
  ImageCheck a = CheckImage(Format::kJpeg, ari.data(), ari.size());
  EXPECT_TRUE(a.info.arithmetic);
  EXPECT_TRUE(a.info.decoded) << "Debian libjpeg-turbo decodes arithmetic coding";
  auto m12 = ReadBytes(Testdata("images/libjpeg-turbo/monkey12.jpg"));
  ImageCheck m = CheckImage(Format::kJpeg, m12.data(), m12.size());
  EXPECT_EQ(m.info.bit_depth, 12);
  EXPECT_TRUE(m.info.decoded || Has(m, FindingCode::kUnsupportedVariant));

  HwDecoder hw;
  hw.target = "test-npu";
  hw.arithmetic = false;
  hw.max_bit_depth = 8;
  hw.max_width = 64;
  hw.max_height = 64;
  auto fa = CheckAgainstHw(a.info, hw);
  auto fm = CheckAgainstHw(m.info, hw);
  bool ari_flag = false, depth_flag = false, size_flag = false;
  for (auto& f : fa) { ari_flag |= f.message.find("arithmetic") != std::string::npos; size_flag |= f.fix.rfind("resize to", 0) == 0; }
  for (auto& f : fm) depth_flag |= f.message.find("12-bit") != std::string::npos;
  EXPECT_TRUE(ari_flag);
  EXPECT_TRUE(depth_flag);
  EXPECT_TRUE(size_flag);
  HwDecoder lax;
  EXPECT_TRUE(CheckAgainstHw(a.info, lax).empty());
}

TEST(ImageCheck, DamagedCopiesMadeHere) {
  auto jpg = ReadBytes(Testdata("images/pillow/hopper.jpg"));
  std::vector<uint8_t> half(jpg.begin(), jpg.begin() + jpg.size() / 2);
  EXPECT_TRUE(Has(CheckImage(Format::kJpeg, half.data(), half.size()), FindingCode::kTruncated));
  auto png = ReadBytes(Testdata("images/pillow/hopper.png"));
  std::vector<uint8_t> cut(png.begin(), png.begin() + png.size() / 2);
  EXPECT_TRUE(Has(CheckImage(Format::kPng, cut.data(), cut.size()), FindingCode::kTruncated));
  std::vector<uint8_t> flip = png;
  flip[flip.size() / 2] ^= 0x55;  // inside IDAT: CRC error
  EXPECT_TRUE(Has(CheckImage(Format::kPng, flip.data(), flip.size()), FindingCode::kCorrupt));
  auto gif = ReadBytes(Testdata("images/pillow/hopper.gif"));
  std::vector<uint8_t> gcut(gif.begin(), gif.begin() + gif.size() / 2);
  EXPECT_TRUE(Has(CheckImage(Format::kGif, gcut.data(), gcut.size()), FindingCode::kTruncated));
  auto webp = ReadBytes(Testdata("images/pillow/hopper.webp"));
  std::vector<uint8_t> wcut(webp.begin(), webp.begin() + webp.size() / 2);
  EXPECT_TRUE(Has(CheckImage(Format::kWebp, wcut.data(), wcut.size()), FindingCode::kTruncated));
  EXPECT_TRUE(Has(CheckImage(Format::kJpeg, nullptr, 0), FindingCode::kEmpty));
  // Baseline files are entropy-decoded by skipping scanlines, progressive ones into coefficients:
  // a cut anywhere in the scan data, up to dropping only the EOI marker (the last iMCU row, which
  // the skip path reads for real), is truncation on both paths.
  for (const char* f : {"images/pillow/hopper.jpg", "images/pillow/app13-multiple.progressive.jpg"}) {
    auto full = ReadBytes(Testdata(f));
    ImageCheck whole = CheckImage(Format::kJpeg, full.data(), full.size());
    ASSERT_TRUE(whole.info.decoded) << f;
    EXPECT_FALSE(HasError(whole)) << f;
    for (size_t n : {full.size() * 3 / 10, full.size() * 7 / 10, full.size() * 97 / 100, full.size() - 2}) {
      ImageCheck c = CheckImage(Format::kJpeg, full.data(), n);
      EXPECT_TRUE(Has(c, FindingCode::kTruncated)) << f << " cut at " << n << " of " << full.size();
    }
  }
  // Every prefix length of a small file: no crash, always a finding (ASan run covers memory safety).
  auto small = ReadBytes(Testdata("images/mitra/png.png"));
  for (size_t n = 1; n < small.size(); n += 7) EXPECT_TRUE(HasError(CheckImage(Format::kPng, small.data(), n))) << n;
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

// The layout of docs/profiles.md: per-format limits under "jpeg" / "png".
TEST(Profile, DocumentedLayout) {
  testing::TempDir t;
  testing::WriteBytes(t / "npu.json", std::string(R"({"name":"npu","image_decoder":{"name":"VPU","formats":["jpeg","png"],
    "min_width":48,"min_height":48,"max_width":200,"max_height":200,
    "jpeg":{"progressive":false,"arithmetic":false,"bit_depth":[8],"cmyk":false,"chroma_subsampling":["4:2:0","4:0:0"]},
    "png":{"bit_depth":[8],"interlaced":false}}})"));
  auto hw = LoadHwDecoder(t / "npu.json");
  ASSERT_TRUE(hw.ok()) << hw.status().message();
  auto check = [&](const char* rel) {
    auto b = testing::ReadBytes(testing::Testdata(rel));
    Format f = SniffContent(b.data(), b.size(), b.size());
    ImageCheck c = CheckImage(f, b.data(), b.size());
    std::string all;
    for (auto& x : CheckAgainstHw(c.info, hw.value())) all += x.message + "|";
    return all;
  };
  EXPECT_NE(check("images/libjpeg-turbo/testimgari.jpg").find("arithmetic"), std::string::npos);
  EXPECT_NE(check("images/libjpeg-turbo/monkey12.jpg").find("12-bit"), std::string::npos);
  EXPECT_NE(check("images/pillow/hopper.gif").find("format gif"), std::string::npos);
  EXPECT_NE(check("images/pngsuite/basi0g08.png").find("interlaced"), std::string::npos);
  EXPECT_NE(check("images/pngsuite/basn0g16.png").find("bit depth 16"), std::string::npos);
  EXPECT_NE(check("images/pillow/app13-multiple.progressive.jpg").find("progressive"), std::string::npos);
  EXPECT_EQ(check("images/pngsuite/basn0g08.png"), "VPU: 32x32 is smaller than the decoder minimum 48x48|");
  EXPECT_EQ(check("images/pillow/hopper.jpg"), "");  // 128x128 baseline 8-bit 4:2:0: accepted
}

TEST(Profile, NamedTargetFromTargetsDir) {
  auto hw = LoadHwDecoder(std::string(EDGEDECODE_SOURCE_DIR) + "/targets/rk3588-npu.json");
  if (!hw.ok()) GTEST_FAIL() << hw.status().message();
  EXPECT_FALSE(hw.value().formats.empty());
}


const Finding* Find(const ImageCheck& c, FindingCode code, const std::string& text = "") {
  for (const auto& f : c.findings)
    if (f.code == code && f.message.find(text) != std::string::npos) return &f;
  return nullptr;
}

// Every independent finding: a cut 12-bit JPEG is both unsupported here and truncated (the marker
// walk finds the cut the decoder never reached).
TEST(Image, TruncatedTwelveBitJpegGetsBothFindings) {
  auto m12 = ReadBytes(Testdata("images/libjpeg-turbo/monkey12.jpg"));
  std::vector<uint8_t> cut(m12.begin(), m12.begin() + m12.size() * 7 / 10);
  ImageCheck c = CheckImage(Format::kJpeg, cut.data(), cut.size());
  const Finding* t = Find(c, FindingCode::kTruncated);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->offset, static_cast<int64_t>(cut.size()));
  if (!c.info.decoded) {
    EXPECT_NE(Find(c, FindingCode::kUnsupportedVariant), nullptr);
  }
  // The whole file is not called truncated.
  ImageCheck whole = CheckImage(Format::kJpeg, m12.data(), m12.size());
  EXPECT_EQ(Find(whole, FindingCode::kTruncated), nullptr);
}

// Offsets where the decoder detected the damage (docs/doctor.md, per format).
TEST(Image, DamageOffsets) {
  // JPEG: extraneous bytes before EOI start where libjpeg began discarding (1 byte of the 5 went to
  // the Huffman decoder's bit buffer as padding).
  auto h = ReadBytes(Testdata("images/pillow/hopper.jpg"));
  auto e = h;
  const size_t eoi = e.size() - 2;
  e.insert(e.begin() + static_cast<std::ptrdiff_t>(eoi), {1, 2, 3, 4, 5});
  ImageCheck je = CheckImage(Format::kJpeg, e.data(), e.size());
  const Finding* x = Find(je, FindingCode::kCorrupt, "extraneous bytes");
  ASSERT_NE(x, nullptr);
  EXPECT_GE(x->offset, static_cast<int64_t>(eoi));
  EXPECT_LE(x->offset, static_cast<int64_t>(eoi) + 1);
  // PNG: a flipped byte early in IDAT is caught by zlib inside the IDAT chunk, just after the flip.
  auto p = ReadBytes(Testdata("images/pillow/hopper.png"));
  const auto chunks = PngChunks(p.data(), p.size());
  const PngChunk* idat = nullptr;
  for (const auto& c : chunks) if (c.type == "IDAT" && !idat) idat = &c;
  ASSERT_NE(idat, nullptr);
  auto f1 = p;
  const size_t flip1 = idat->offset + 8 + 60;
  f1[flip1] ^= 0x55;
  ImageCheck c1 = CheckImage(Format::kPng, f1.data(), f1.size());
  ASSERT_FALSE(c1.findings.empty());
  EXPECT_EQ(c1.findings[0].code, FindingCode::kCorrupt);
  EXPECT_GE(c1.findings[0].offset, static_cast<int64_t>(flip1));
  EXPECT_LT(c1.findings[0].offset, static_cast<int64_t>(flip1) + 64) << c1.findings[0].message;
  // A flip that inflates but yields a bad filter byte: the row and the byte it was inflated from.
  auto f2 = p;
  const size_t flip2 = p.size() / 2;
  f2[flip2] ^= 0x55;
  ImageCheck c2 = CheckImage(Format::kPng, f2.data(), f2.size());
  const Finding* bf = Find(c2, FindingCode::kCorrupt, "filter");
  ASSERT_NE(bf, nullptr);
  EXPECT_NE(bf->message.find("row "), std::string::npos) << bf->message;
  EXPECT_GE(bf->offset, static_cast<int64_t>(flip2));
  EXPECT_LT(bf->offset, static_cast<int64_t>(idat->offset + 12 + idat->length));
  EXPECT_NE(bf->message.find("fails its CRC too"), std::string::npos) << bf->message;
  // Independent damage after where libpng stopped: a bad IEND CRC is its own finding.
  f2[f2.size() - 1] ^= 1;
  ImageCheck c3 = CheckImage(Format::kPng, f2.data(), f2.size());
  const Finding* iend = Find(c3, FindingCode::kCorrupt, "chunk IEND");
  ASSERT_NE(iend, nullptr);
  EXPECT_EQ(iend->offset, static_cast<int64_t>(chunks.back().offset));
  // A CRC error libpng reports itself (an ancillary chunk) names the chunk, not where reading stopped.
  auto f4 = p;
  f4[chunks[1].offset + 9] ^= 1;  // gAMA data
  ImageCheck c4 = CheckImage(Format::kPng, f4.data(), f4.size());
  const Finding* crc = Find(c4, FindingCode::kCorrupt, "CRC");
  ASSERT_NE(crc, nullptr);
  EXPECT_EQ(crc->offset, static_cast<int64_t>(chunks[1].offset)) << crc->message;
}

}  // namespace
}  // namespace edgedecode::doctor
