// Checksum lists read as GNU coreutils' sha256sum -c reads them: the parser is compared with the
// installed sha256sum line by line, and --verify / the model side file must never call a file
// "corrupted" because of how its checksum was written.
#include "doctor/hash.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "doctor/data.h"
#include "doctor/env.h"
#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;
using testing::Testdata;
using testing::WriteBytes;

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const std::string kBody = "hello\n";
std::string BodyHex() { return Sha256Hex(reinterpret_cast<const uint8_t*>(kBody.data()), kBody.size()); }

// Manifest texts for a.txt (content kBody) in the styles found in the wild.
struct Case {
  const char* what;
  std::string text;
};
std::vector<Case> Cases() {
  const std::string h = BodyHex(), H = Upper(h);
  return {
      {"gnu", h + "  a.txt\n"},
      {"upper-case hex", H + "  a.txt\n"},
      {"binary marker", h + " *a.txt\n"},
      {"crlf", h + "  a.txt\r\n"},
      {"binary marker + crlf", H + " *a.txt\r\n"},
      {"bsd tag", "SHA256 (a.txt) = " + h + "\n"},
      {"bsd tag upper + crlf", "SHA256 (a.txt) = " + H + "\r\n"},
      {"bsd tag without blanks", "SHA256(a.txt)=" + h + "\n"},
      {"bsd tag lower-case", "sha256 (a.txt) = " + h + "\n"},
      {"bsd tag trailing blank", "SHA256 (a.txt) = " + h + " \n"},
      {"bsd tag 63 digits", "SHA256 (a.txt) = " + h.substr(0, 63) + "\n"},
      {"bare digest", h + "\n"},
      {"65 digits", h + "0  a.txt\n"},
      {"63 digits", h.substr(0, 63) + "  a.txt\n"},
      {"non-hex digit", "g" + h.substr(1) + "  a.txt\n"},
      {"one blank (md5 -r)", h + " a.txt\n"},
      {"tab", h + "\ta.txt\n"},
      {"tab + star", h + "\t*a.txt\n"},
      {"leading blanks", "  " + h + "  a.txt\n"},
      {"dot slash", h + "  ./a.txt\n"},
      {"comment and blank lines", "# made by hand\n\n" + h + "  a.txt\n"},
      {"escaped name", "\\" + h + "  a.txt\n"},
      {"bad escape", "\\" + h + "  a\\q.txt\n"},
      {"two CRs", h + "  a.txt\r\r\n"},
      {"trailing blank in name", h + "  a.txt \n"},
      {"no newline at end", h + "  a.txt"},
      {"utf-8 bom", "\xEF\xBB\xBF" + h + "  a.txt\n"},
  };
}

// Is the line accepted (and a.txt verified) by our parser?
bool OursOk(const std::string& dir, const std::string& text) {
  ChecksumList l = ParseSha256Sums(text);
  if (l.entries.size() != 1 || !l.problems.empty()) return false;
  const std::string p = dir + "/" + l.entries[0].path;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  return Sha256File(p).value() == l.entries[0].hex;
}

TEST(Checksums, AgreesWithCoreutilsSha256sum) {
  if (std::system("sha256sum --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no sha256sum";
  TempDir t;
  WriteBytes(t / "a.txt", kBody);
  for (const Case& c : Cases()) {
    WriteBytes(t / "m", c.text);
    const bool coreutils = std::system(("cd '" + t.path + "' && sha256sum -c --status m 2>/dev/null").c_str()) == 0;
    EXPECT_EQ(OursOk(t.path, c.text), coreutils) << c.what;
  }
}

TEST(Checksums, ExpectedVerdicts) {
  TempDir t;
  WriteBytes(t / "a.txt", kBody);
  for (const char* ok : {"gnu", "upper-case hex", "binary marker", "crlf", "bsd tag", "bsd tag upper + crlf",
                         "one blank (md5 -r)", "dot slash", "escaped name", "no newline at end"})
    for (const Case& c : Cases()) {
      if (std::string(c.what) == ok) {
        EXPECT_TRUE(OursOk(t.path, c.text)) << ok;
      }
    }
  for (const char* bad : {"bare digest", "65 digits", "63 digits", "bsd tag lower-case", "bsd tag trailing blank",
                          "bad escape", "utf-8 bom"})
    for (const Case& c : Cases())
      if (std::string(c.what) == bad) {
        ChecksumList l = ParseSha256Sums(c.text);
        ASSERT_EQ(l.problems.size(), 1u) << bad;
        EXPECT_EQ(l.problems[0].line, 1) << bad;
        EXPECT_NE(l.problems[0].message.find("improperly formatted"), std::string::npos) << bad;
      }
}

TEST(Checksums, LineNumbersAndMixedStyles) {
  const std::string h = BodyHex();
  // coreutils refuses a one-blank line after a two-blank line (and reports the line).
  ChecksumList l = ParseSha256Sums("# x\r\n" + h + "  a\r\n\r\n" + h + " b\r\n");
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].line, 2);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_EQ(l.problems[0].line, 4);
  // After a one-blank line the rest of the line is the name, leading blank included.
  l = ParseSha256Sums(h + " a\n" + h + "  b\n");
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[1].path, " b");
  // Escapes round-trip through our own writer.
  l = ParseSha256Sums(Sha256SumLine(h, "odd\\name\nwith newline"));
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].path, "odd\\name\nwith newline");
}

DataReport Tree(const std::string& root) {
  DataOptions opt;
  opt.root = root;
  opt.jobs = 1;
  opt.hash = true;
  return CheckTree(opt).value();
}
std::vector<FindingCode> AllCodes(const DataReport& r) {
  std::vector<FindingCode> v;
  for (auto& f : r.files) for (auto& x : f.findings) v.push_back(x.code);
  return v;
}

TEST(Checksums, VerifyAcceptsEveryCoreutilsStyle) {
  TempDir t, m;
  WriteBytes(t / "data/a.txt", kBody);
  WriteBytes(t / "data/sub/b.txt", std::string("second\n"));
  const std::string ha = BodyHex(), hb = Sha256File(t / "data/sub/b.txt").value();
  const std::vector<std::string> styles = {
      Upper(ha) + "  a.txt\r\n" + Upper(hb) + "  sub/b.txt\r\n",
      "SHA256 (a.txt) = " + ha + "\nSHA256 (sub/b.txt) = " + Upper(hb) + "\n",
      ha + " *./a.txt\n" + hb + " *./sub//b.txt\n",
      "# generated\n\n" + ha + " a.txt\n" + hb + " sub/b.txt\n",
  };
  for (const auto& text : styles) {
    WriteBytes(m / "SUMS", text);
    DataReport r = Tree(t / "data");
    ASSERT_TRUE(VerifyAgainst(m / "SUMS", &r).ok()) << text;
    EXPECT_TRUE(AllCodes(r).empty()) << text << " -> " << (AllCodes(r).empty() ? "" : FindingCodeName(AllCodes(r)[0]));
  }
  // A real change is still a mismatch.
  WriteBytes(t / "data/a.txt", std::string("hellO\n"));
  WriteBytes(m / "SUMS", Upper(ha) + "  a.txt\r\n" + hb + "  sub/b.txt\r\n");
  DataReport r = Tree(t / "data");
  ASSERT_TRUE(VerifyAgainst(m / "SUMS", &r).ok());
  EXPECT_EQ(AllCodes(r), std::vector<FindingCode>{FindingCode::kHashMismatch});
}

TEST(Checksums, VerifyReportsBadLinesByLine) {
  TempDir t, m;
  WriteBytes(t / "data/a.txt", kBody);
  WriteBytes(t / "data/b.txt", std::string("b\n"));
  const std::string ha = BodyHex();
  WriteBytes(m / "SUMS", ha + "  a.txt\n" + ha.substr(0, 63) + "  b.txt\n");
  DataReport r = Tree(t / "data");
  ASSERT_TRUE(VerifyAgainst(m / "SUMS", &r).ok());
  bool line2 = false;
  for (auto& f : r.files)
    for (auto& x : f.findings) {
      EXPECT_NE(x.code, FindingCode::kHashMismatch);
      if (x.code == FindingCode::kChecksumLineInvalid) {
        line2 = x.line == 2 && x.path == m / "SUMS";
        EXPECT_NE(x.message.find("63 hex digits"), std::string::npos) << x.message;
      }
    }
  EXPECT_TRUE(line2);
  // Nothing usable at all: an error naming the file and the first bad line, as sha256sum -c fails.
  WriteBytes(m / "SUMS", ha + "\n");
  DataReport r2 = Tree(t / "data");
  Status st = VerifyAgainst(m / "SUMS", &r2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no properly formatted"), std::string::npos);
  EXPECT_NE(st.message().find("line 1"), std::string::npos) << st.message();
}

TEST(Checksums, ManifestOfOddNamesVerifiesWithCoreutils) {
  if (std::system("sha256sum --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no sha256sum";
  TempDir t;
  WriteBytes(t / "data/back\\slash.txt", kBody);
  WriteBytes(t / "data/plain.txt", kBody);
  DataReport r = Tree(t / "data");
  WriteBytes(t / "SUMS", ManifestText(r));
  EXPECT_EQ(std::system(("cd '" + t.path + "/data' && sha256sum -c --status ../SUMS").c_str()), 0);
  ASSERT_TRUE(VerifyAgainst(t / "SUMS", &r).ok());
  EXPECT_TRUE(AllCodes(r).empty());
}

TEST(Checksums, ModelSideFile) {
  const std::string model = Testdata("llm/gguf/stories260K.f32.gguf");
  TempDir t;
  fs::copy_file(model, t / "m.gguf");
  const std::string h = Sha256File(model).value();
  auto codes = [&](const std::string& side) {
    WriteBytes(t / "m.gguf.sha256", side);
    std::vector<FindingCode> v;
    for (auto& f : CheckModel(t / "m.gguf").findings) v.push_back(f.code);
    return v;
  };
  using V = std::vector<FindingCode>;
  EXPECT_EQ(codes(h), V{});                                    // bare digest, no newline
  EXPECT_EQ(codes(Upper(h) + "\r\n"), V{});                    // bare, upper case, CRLF
  EXPECT_EQ(codes(Upper(h) + " *m.gguf\r\n"), V{});            // binary marker, CRLF
  EXPECT_EQ(codes("SHA256 (m.gguf) = " + Upper(h) + "\n"), V{});
  EXPECT_EQ(codes(h + "  models/m.gguf\n"), V{});              // listed with a folder
  EXPECT_EQ(codes(std::string(64, 'a') + "  other.gguf\n" + h + "  m.gguf\n"), V{});
  EXPECT_EQ(codes(std::string(64, '0') + "  m.gguf\n"), V{FindingCode::kHashMismatch});
  EXPECT_EQ(codes(h.substr(0, 63) + "  m.gguf\n"), V{FindingCode::kChecksumLineInvalid});
  EXPECT_EQ(codes("sha256 (m.gguf) = " + h + "\n"), V{FindingCode::kChecksumLineInvalid});
  EXPECT_EQ(codes(h + "  other.gguf\n"), V{FindingCode::kChecksumNotListed});
  WriteBytes(t / "m.gguf.sha256", h.substr(0, 63) + "  m.gguf\n");
  ModelCheck mc = CheckModel(t / "m.gguf");
  ASSERT_EQ(mc.findings.size(), 1u);
  EXPECT_NE(mc.findings[0].message.find("m.gguf.sha256:1:"), std::string::npos) << mc.findings[0].message;
}

}  // namespace
}  // namespace edgedecode::doctor
