#include "doctor/text_check.h"

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {
using testing::ReadBytes;
using testing::Testdata;

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Does the detected name agree with the file's name (uchardet test naming: <lang>/<charset>.txt)?
bool Agrees(const std::string& named, const Detection& d) {
  std::string want = Upper(named), got = Upper(d.encoding);
  if (got == want) return true;
  if (want == "ASCII") return got == "UTF-8";
  if (want == "UHC" || want == "EUC-KR") return got == "CP949" || got == "EUC-KR" || got == "UHC";
  if (want == "UTF-16") return got.rfind("UTF-16", 0) == 0;
  if (want == "UTF-32") return got.rfind("UTF-32", 0) == 0;
  return false;
}

Detection DetectFile(const std::string& rel) {
  auto b = ReadBytes(Testdata(rel));
  return DetectEncoding(b.data(), b.size());
}

TEST(Text, UchardetCorpusAccuracyPerEncoding) {
  std::map<std::string, std::pair<int, int>> per;  // charset -> (right, total)
  for (const auto& e : std::filesystem::recursive_directory_iterator(Testdata("text/uchardet"))) {
    if (!e.is_regular_file() || e.path().filename() == "COPYING.uchardet") continue;
    std::string stem = e.path().stem().string();  // "utf-16" for utf-16.le
    if (stem.find('.') != std::string::npos) stem = stem.substr(0, stem.find('.'));
    auto b = ReadBytes(e.path().string());
    Detection d = DetectEncoding(b.data(), b.size());
    auto& p = per[stem];
    p.second++;
    p.first += Agrees(stem, d);
  }
  int right = 0, total = 0;
  for (auto& [cs, p] : per) {
    std::printf("  %-18s %d/%d\n", cs.c_str(), p.first, p.second);
    right += p.first;
    total += p.second;
  }
  std::printf("  overall %d/%d (undecidable short files count as misses)\n", right, total);
  EXPECT_GT(total, 100);
}

TEST(Text, CjkAndUtf16Detected) {
  struct Case { const char* file; const char* want; };
  for (const Case& k : {Case{"text/uchardet/zh/gb18030.txt", "GB18030"}, Case{"text/uchardet/zh/big5.txt", "BIG5"},
                        Case{"text/uchardet/ja/shift_jis.txt", "SHIFT_JIS"}, Case{"text/uchardet/ja/euc-jp.txt", "EUC-JP"},
                        Case{"text/uchardet/ko/uhc.smi", "UHC"}, Case{"text/uchardet/ja/utf-16le.txt", "UTF-16LE"},
                        Case{"text/uchardet/ja/utf-16be.txt", "UTF-16BE"}, Case{"text/uchardet/ko/utf-16.le", "UTF-16"},
                        Case{"text/uchardet/fr/utf-16.be", "UTF-16"}}) {
    Detection d = DetectFile(k.file);
    EXPECT_TRUE(Agrees(k.want, d)) << k.file << ": got '" << d.encoding << "' by " << d.how << " (uchardet said '"
                                   << d.detector_said << "')";
  }
}

std::string Iconv(const std::string& s, const char* to, const char* from) {
  iconv_t cd = iconv_open(to, from);
  std::string out(s.size() * 4 + 16, '\0');
  char* in = const_cast<char*>(s.data());
  size_t il = s.size(), ol = out.size();
  char* o = out.data();
  EXPECT_NE(iconv(cd, &in, &il, &o, &ol), static_cast<size_t>(-1));
  iconv_close(cd);
  out.resize(out.size() - ol);
  return out;
}

TEST(Text, GbkLabelFileConvertsToRightUtf8) {
  std::string utf8;
  for (const char* l : {"猫", "狗", "鸟", "汽车", "自行车", "行人", "交通信号灯", "停车标志", "公共汽车", "卡车",
                        "摩托车", "飞机", "火车", "船", "长颈鹿", "大象", "斑马", "熊", "椅子", "沙发"})
    utf8 += std::string(l) + "\n";
  std::string gbk = Iconv(utf8, "GBK", "UTF-8");
  auto* d = reinterpret_cast<const uint8_t*>(gbk.data());
  Detection det = DetectEncoding(d, gbk.size());
  EXPECT_EQ(det.encoding, "GB18030") << det.how << " " << det.detector_said;
  Conversion c = ConvertToUtf8(d, gbk.size(), "GB18030", 0);
  EXPECT_EQ(c.utf8, utf8);
  EXPECT_TRUE(c.bad.empty());
  EXPECT_TRUE(c.round_trip_ok);
  auto f = TextFindings(d, gbk.size(), det);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "encoding-not-utf8");
  // GBK 猫 (c3 a8) happens to be valid UTF-8; the report names the first byte that is not.
  size_t first_bad = 0;
  ASSERT_FALSE(IsStrictUtf8(d, gbk.size(), &first_bad));
  EXPECT_EQ(f[0].offset, static_cast<int64_t>(first_bad));
  EXPECT_GT(first_bad, 0u);
}

TEST(Text, InvalidBytesExactPositions) {
  // Line 2, after "狗 " (3 code points): 0xFF; line 3 col 1: 0xC3 0x28 (bad continuation).
  std::string s = "猫 cat\n狗 d\xFFog\n\xC3(bird\n";
  auto* d = reinterpret_cast<const uint8_t*>(s.data());
  Conversion c = ConvertToUtf8(d, s.size(), "UTF-8", 0);
  ASSERT_EQ(c.bad.size(), 2u);
  EXPECT_EQ(c.bad[0].offset, static_cast<int64_t>(s.find('\xFF')));
  EXPECT_EQ(c.bad[0].line, 2);
  EXPECT_EQ(c.bad[0].column, 4);
  EXPECT_EQ(c.bad[0].hex, "ff");
  EXPECT_EQ(c.bad[1].offset, static_cast<int64_t>(s.find('\xC3')));
  EXPECT_EQ(c.bad[1].line, 3);
  EXPECT_EQ(c.bad[1].column, 1);
  EXPECT_EQ(c.bad[1].hex, "c3");
  EXPECT_EQ(c.utf8, "猫 cat\n狗 d\xEF\xBF\xBDog\n\xEF\xBF\xBD(bird\n");
  EXPECT_TRUE(c.round_trip_ok);
}

TEST(Text, BomsAndStrictUtf8) {
  const uint8_t bom[] = {0xEF, 0xBB, 0xBF, 'a'};
  Detection d = DetectEncoding(bom, sizeof bom);
  EXPECT_EQ(d.how, "bom");
  EXPECT_EQ(d.bom_bytes, 3u);
  const uint8_t overlong[] = {0xC0, 0xAF};
  const uint8_t surrogate[] = {0xED, 0xA0, 0x80};
  EXPECT_FALSE(IsStrictUtf8(overlong, 2));
  EXPECT_FALSE(IsStrictUtf8(surrogate, 3));
  EXPECT_TRUE(IsStrictUtf8(reinterpret_cast<const uint8_t*>("h\xC3\xA9"), 3));
}

TEST(Text, ShortFileUndecidable) {
  const std::string s = "caf\xE9\n";  // one Latin-1 byte: any single-byte code page fits
  Detection d = DetectEncoding(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  EXPECT_EQ(d.how, "undecidable");
  EXPECT_GT(d.candidates.size(), 1u);
}

TEST(Text, Gb18030VersionSensitiveBytes) {
  const uint8_t b[] = {'a', 0xA6, 0xD9, 0xB0, 0xA1, 0xFE, 0x59};
  auto at = Gb18030VersionSensitive(b, sizeof b);
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[0], 1);
  EXPECT_EQ(at[1], 5);
}

}  // namespace
}  // namespace edgedecode::doctor
