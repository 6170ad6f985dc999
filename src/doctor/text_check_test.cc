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
  EXPECT_EQ(f[0].code, FindingCode::kEncodingNotUtf8);
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


// ASCII-range text in UTF-16/32 without a BOM is valid UTF-8 byte for byte (NUL is a UTF-8
// character); the NUL pattern must decide first, for every size down to one character.
TEST(Text, BomlessUtf16And32ByNulPattern) {
  for (const char* enc : {"UTF-16LE", "UTF-16BE", "UTF-32LE", "UTF-32BE"}) {
    for (const std::string& text : {std::string("cat\ndog\ntraffic light\nstop sign\n"), std::string("a"), std::string("ok\n")}) {
      const std::string bytes = Iconv(text, enc, "UTF-8");
      auto* d = reinterpret_cast<const uint8_t*>(bytes.data());
      Detection det = DetectEncoding(d, bytes.size());
      EXPECT_EQ(det.encoding, enc) << enc << " '" << text << "' by " << det.how;
      EXPECT_EQ(det.how, "nul-pattern") << enc;
      Conversion c;
      auto f = TextFindings(d, bytes.size(), det, &c);
      ASSERT_FALSE(f.empty()) << enc;
      EXPECT_EQ(f[0].code, FindingCode::kEncodingNotUtf8);
      EXPECT_EQ(c.utf8, text) << enc;
    }
  }
  // Not ASCII: UTF-16 of Latin and CJK text with enough ASCII still goes by the pattern.
  const std::string mixed = "label: 猫 cat\nlabel: 狗 dog\nlabel: 鸟 bird\n";
  for (const char* enc : {"UTF-16LE", "UTF-16BE"}) {
    const std::string bytes = Iconv(mixed, enc, "UTF-8");
    Detection det = DetectEncoding(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    EXPECT_EQ(det.encoding, enc);
  }
}

std::string ToGbk(const std::string& s) { return Iconv(s, "GBK", "UTF-8"); }

// A UTF-8 label file with a few lines pasted from a GBK file: those lines are decoded as GBK
// (GB18030), losslessly, and each is reported by line number; no U+FFFD in the output.
TEST(Text, MixedUtf8WithGbkLinesRepaired) {
  std::vector<std::string> lines;
  for (int i = 0; i < 30; ++i) lines.push_back(std::to_string(i) + " 交通信号灯 停车标志 公共汽车");
  lines[2] = "2 自行车 行人";
  lines[6] = "6 摩托车 飞机 火车";
  lines[8] = "8 长颈鹿 大象 斑马";
  std::string utf8, file;
  for (size_t i = 0; i < lines.size(); ++i) {
    utf8 += lines[i] + "\n";
    file += (i == 2 || i == 6 || i == 8 ? ToGbk(lines[i]) : lines[i]) + "\n";
  }
  auto* d = reinterpret_cast<const uint8_t*>(file.data());
  Detection det = DetectEncoding(d, file.size());
  EXPECT_EQ(det.how, "utf-8-with-invalid-bytes");
  EXPECT_EQ(det.secondary, "GB18030") << "uchardet said " << det.detector_said;
  Conversion c;
  auto f = TextFindings(d, file.size(), det, &c);
  EXPECT_EQ(c.utf8, utf8);
  EXPECT_EQ(c.utf8.find("\xEF\xBF\xBD"), std::string::npos);
  std::vector<int64_t> repaired;
  for (auto& x : f) {
    EXPECT_NE(x.code, FindingCode::kInvalidBytes) << x.message;
    if (x.code == FindingCode::kMixedEncoding) {
      repaired.push_back(x.line);
      EXPECT_EQ(x.offset, static_cast<int64_t>(file.find(ToGbk(lines[x.line - 1]))));
    }
  }
  EXPECT_EQ(repaired, (std::vector<int64_t>{3, 7, 9}));
  // A line with real damage (0xFF is no GBK byte) stays U+FFFD; the GBK lines are still repaired.
  std::string damaged = file;
  const size_t at = damaged.find("20 ");
  damaged.insert(at + 3, "\xFF");
  d = reinterpret_cast<const uint8_t*>(damaged.data());
  det = DetectEncoding(d, damaged.size());
  ASSERT_EQ(det.secondary, "GB18030");
  f = TextFindings(d, damaged.size(), det, &c);
  ASSERT_EQ(c.bad.size(), 1u);
  EXPECT_EQ(c.bad[0].line, 21);
  EXPECT_EQ(c.bad[0].offset, static_cast<int64_t>(at + 3));
  EXPECT_EQ(c.repaired.size(), 3u);
  // A file cut inside its last UTF-8 character is truncation, not another encoding.
  std::string cut = utf8.substr(0, utf8.size() - 2);
  d = reinterpret_cast<const uint8_t*>(cut.data());
  det = DetectEncoding(d, cut.size());
  EXPECT_EQ(det.secondary, "");
}

// Hundreds of thousands of bad bytes: a bounded number of findings, the rest summarised.
TEST(Text, InvalidBytesCappedAndSummarised) {
  std::string s = "\xEF\xBB\xBF猫 cat\n";
  for (int i = 0; i < 3000; ++i) s += std::string(100, '\xFF') + "\n";
  auto* d = reinterpret_cast<const uint8_t*>(s.data());
  Detection det = DetectEncoding(d, s.size());
  ASSERT_EQ(det.encoding, "UTF-8");
  Conversion c;
  auto f = TextFindings(d, s.size(), det, &c);
  size_t invalid = 0;
  bool summary = false;
  for (auto& x : f) {
    if (x.code != FindingCode::kInvalidBytes) continue;
    ++invalid;
    if (x.message.find("more invalid sequences") != std::string::npos) {
      summary = true;
      // The first 20 sequences are all on line 2 (100 bad bytes merge 8 at a time).
      EXPECT_NE(x.message.find("on 2999 line(s): 3-3001"), std::string::npos) << x.message;
    }
  }
  EXPECT_EQ(invalid, kMaxFindingsPerCode + 1);
  EXPECT_TRUE(summary);
  EXPECT_LE(f.size(), kMaxFindingsPerCode + 3);
  // The conversion counts every sequence but lists only the first ones (a list of every bad byte of a
  // binary file would cost many times the file).
  EXPECT_EQ(c.bad.size(), kMaxFindingsPerCode);
  EXPECT_EQ(c.BadCount(), 39000u);
  EXPECT_EQ(c.bad_tail.bytes, 300000u - 100 - 7 * 8);  // 13 sequences a line: line 2 and 7 of line 3 listed
}

}  // namespace
}  // namespace edgedecode::doctor
