#include "doctor/sniff.h"

#include <gtest/gtest.h>

#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {
using testing::ReadBytes;
using testing::Testdata;

Format SniffFile(const std::string& rel) {
  auto b = ReadBytes(Testdata(rel));
  return SniffContent(b.data(), b.size(), b.size());
}

TEST(Sniff, MitraFilesAreTheirFormats) {
  EXPECT_EQ(SniffFile("images/mitra/bmp.bmp"), Format::kBmp);
  EXPECT_EQ(SniffFile("images/mitra/gif87.gif"), Format::kGif);
  EXPECT_EQ(SniffFile("images/mitra/gif89.gif"), Format::kGif);
  EXPECT_EQ(SniffFile("images/mitra/jpg.jpg"), Format::kJpeg);
  EXPECT_EQ(SniffFile("images/mitra/png.png"), Format::kPng);
  EXPECT_EQ(SniffFile("images/mitra/cgbi.png"), Format::kPng);
  EXPECT_EQ(SniffFile("images/mitra/tiff-le.tif"), Format::kTiff);
  EXPECT_EQ(SniffFile("images/mitra/tiff-be.tif"), Format::kTiff);
  EXPECT_EQ(SniffFile("images/mitra/webp.webp"), Format::kWebp);
  EXPECT_EQ(SniffFile("images/mitra/webpl.webp"), Format::kWebp);
  EXPECT_EQ(SniffFile("images/mitra/ico.ico"), Format::kIco);
}

TEST(Sniff, TextUnderImageNames) {
  std::string html = "\n  <!DOCTYPE html><html><body>404</body></html>";
  EXPECT_EQ(SniffContent(reinterpret_cast<const uint8_t*>(html.data()), html.size(), html.size()), Format::kHtml);
  std::string js = "{\"error\": \"rate limited\"}";
  EXPECT_EQ(SniffContent(reinterpret_cast<const uint8_t*>(js.data()), js.size(), js.size()), Format::kJson);
  std::string txt = "cat\ndog\n";
  EXPECT_EQ(SniffContent(reinterpret_cast<const uint8_t*>(txt.data()), txt.size(), txt.size()), Format::kText);
  EXPECT_EQ(SniffContent(nullptr, 0, 0), Format::kEmpty);
  const uint8_t bin[] = {0x00, 0x01, 0x02, 0x03, 0x9f, 0x00, 0x17, 0x03};
  EXPECT_EQ(SniffContent(bin, sizeof bin, sizeof bin), Format::kUnknown);
}

TEST(Sniff, Extensions) {
  EXPECT_EQ(FormatFromExtension("a/b/C.JPEG"), Format::kJpeg);
  EXPECT_EQ(FormatFromExtension("x.tif"), Format::kTiff);
  EXPECT_EQ(FormatFromExtension("labels.csv"), Format::kText);
  EXPECT_EQ(FormatFromExtension("noext"), Format::kUnknown);
  EXPECT_FALSE(ExtensionMatches(Format::kJpeg, Format::kPng));
  EXPECT_TRUE(ExtensionMatches(Format::kText, Format::kJson));
}

}  // namespace
}  // namespace edgedecode::doctor
