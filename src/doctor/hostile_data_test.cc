// Hostile trees and layouts built in the test: special files and broken links in a dataset, a FIFO where a
// file is expected, files too large to read whole (sparse, so they cost no disk), OCI layouts with shared,
// cyclic and deeply nested documents, and names that are not UTF-8 in the reports.
#include <gtest/gtest.h>

#include "base/utf8.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/doctor_data.h"
#include "doctor/bounded_child.h"
#include "doctor/data.h"
#include "doctor/env.h"
#include "doctor/hash.h"
#include "doctor/oci.h"
#include "doctor/test_util.h"
#include "doctor/text_check.h"

namespace edgedecode::doctor {
namespace {

namespace fs = std::filesystem;
using testing::RunBounded;
using testing::TempDir;
using testing::WriteBytes;

// "path code message" per finding, one a line.
std::string Listed(const std::vector<Finding>& fs_) {
  std::ostringstream s;
  for (const Finding& f : fs_) s << f.path << " " << FindingCodeName(f.code) << " " << f.message << "\n";
  return s.str();
}
std::string Listed(const DataReport& r) {
  std::string s;
  for (const auto& f : r.files) s += Listed(f.findings);
  return s;
}

std::string CheckTreeListed(const DataOptions& opt) {
  auto r = CheckTree(opt);
  return r.ok() ? Listed(r.value()) : "error: " + r.status().message();
}

TEST(HostileData, SpecialEntriesInTheTreeEachGetAFindingAndNothingBlocks) {
  TempDir t;
  WriteBytes(t / "labels/ok.txt", std::string("cat\n"));
  ASSERT_EQ(mkfifo((t / "labels/pipe.txt").c_str(), 0644), 0);
  const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", (t / "sock").c_str());
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  fs::create_directories(t / "img");
  fs::create_symlink("missing.jpg", t / "img/gone.jpg");
  fs::create_symlink("loop", t / "loop");
  DataOptions opt;
  opt.root = t.path;
  opt.jobs = 2;
  auto r = RunBounded([&] { return CheckTreeListed(opt); });
  close(sock);
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  EXPECT_NE(r.out.find("labels/pipe.txt not-a-regular-file a FIFO (named pipe)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sock not-a-regular-file a socket"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("img/gone.jpg dangling-symlink a symlink to a missing target (missing.jpg)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loop symlink-loop"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("labels/ok.txt"), std::string::npos) << r.out;
}

TEST(HostileData, UnlistableFolderIsAFinding) {
  if (geteuid() == 0) GTEST_SKIP() << "root lists any folder: an unreadable folder cannot be made here";
  TempDir t;
  WriteBytes(t / "a/secret/x.txt", std::string("x\n"));
  fs::permissions(t / "a/secret", fs::perms::none);
  DataOptions opt;
  opt.root = t.path;
  const std::string out = CheckTreeListed(opt);
  fs::permissions(t / "a/secret", fs::perms::owner_all);
  EXPECT_NE(out.find("a/secret/ unreadable folder cannot be listed"), std::string::npos) << out;
}

TEST(HostileData, FifoWhereAFileIsExpectedIsRefusedWithoutBlocking) {
  TempDir t;
  WriteBytes(t / "data/a.txt", std::string("a\n"));
  ASSERT_EQ(mkfifo((t / "list.sha256").c_str(), 0644), 0);
  ASSERT_EQ(mkfifo((t / "model.gguf").c_str(), 0644), 0);
  auto r = RunBounded([&] {
    DataOptions opt;
    opt.root = t / "data";
    opt.hash = true;
    auto rep = CheckTree(opt);
    if (!rep.ok()) return "tree: " + rep.status().message();
    Status st = VerifyAgainst(t / "list.sha256", &rep.value());
    ModelCheck m = CheckModel(t / "model.gguf");
    auto h = Sha256File(t / "model.gguf");
    return "verify: " + st.message() + "\nmodel: " + Listed(m.findings) + "hash: " + h.status().message() + "\n";
  }, testing::kTestAddressSpace, 60);
  ASSERT_TRUE(r.ok()) << r.how() << " (a FIFO blocked?): " << r.out;
  EXPECT_NE(r.out.find("verify: " + (t / "list.sha256") + ": cannot read the manifest (is a FIFO"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model-unreadable " + (t / "model.gguf") + ": is a FIFO"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hash: " + (t / "model.gguf") + ": is a FIFO"), std::string::npos) << r.out;
}

// A sparse file of `size` bytes starting with `head`.
void Sparse(const std::string& path, const std::string& head, uint64_t size) {
  WriteBytes(path, head);
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(size)), 0);
}

TEST(HostileData, FilesLargerThanTheReadLimitAreNotReadWhole) {
  TempDir t;
  const std::string jpeg_head("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", 20);
  Sparse(t / "big.jpg", jpeg_head, uint64_t{3} << 30);
  Sparse(t / "big.bin", "", uint64_t{3} << 30);
  Sparse(t / "big.txt", "cat\n", kMaxTextReadBytes + 1);
  WriteBytes(t / "small.txt", std::string("dog\n"));
  DataOptions opt;
  opt.root = t.path;
  opt.jobs = 2;
  auto r = RunBounded([&] { return CheckTreeListed(opt); });
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  EXPECT_NE(r.out.find("big.jpg too-large 3221225472 bytes of jpeg, over the limit of 1073741824 bytes read whole for a decode"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("big.txt too-large " + std::to_string(kMaxTextReadBytes + 1)), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("big.bin"), std::string::npos) << r.out;  // not a checked format: nothing to say
}

TEST(HostileData, LargeFilesAreHashedStreaming) {
  TempDir t;
  const uint64_t size = kMaxImageReadBytes + 4096;  // just over the limit: hashing it costs ~1 s
  Sparse(t / "big.jpg", "\xFF\xD8\xFF", size);
  auto r = RunBounded([&] {
    DataOptions opt;
    opt.root = t.path;
    opt.hash = true;
    auto rep = CheckTree(opt);
    if (!rep.ok()) return "error: " + rep.status().message();
    return rep.value().files.at(0).sha256 + "\n" + Listed(rep.value());
  });
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  // The same digest as hashing the file by the streaming hasher in this process.
  auto want = Sha256File(t / "big.jpg");
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(r.out.substr(0, 64), want.value());
  EXPECT_NE(r.out.find("too-large " + std::to_string(size) + " bytes of jpeg"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(hashed)"), std::string::npos) << r.out;
}

TEST(HostileData, NamesThatAreNotUtf8KeepTheReportsValid) {
  TempDir t;
  TempDir out_dir;
  const std::string latin1 = "caf\xE9.jpg", escape = "\x1B[2Jx.jpg";
  WriteBytes(t / latin1, std::string("<html><body>not found</body></html>"));
  WriteBytes(t / escape, std::string("<html><body>not found</body></html>"));
  const std::string json_path = out_dir / "report.json", text_path = out_dir / "report.txt";
  auto r = RunBounded([&] {
    const int fd = ::open(text_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    cli::DoctorDataCommand cmd;
    cmd.opt.root = t.path;
    cmd.json_path = json_path;
    const int rc = cli::RunDoctorData(cmd);
    std::fflush(stdout);
    return std::to_string(rc);
  });
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  EXPECT_EQ(r.out, "1");
  std::ifstream in(json_path);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(in)) << "the JSON report must be valid UTF-8";
  std::string paths;
  for (const auto& f : j["findings"]) paths += f["path"].get<std::string>() + "\n";
  EXPECT_NE(paths.find("caf\xEF\xBF\xBD.jpg"), std::string::npos) << paths;  // U+FFFD
  std::ifstream tin(text_path);
  std::stringstream text;
  text << tin.rdbuf();
  EXPECT_NE(text.str().find("caf\\xE9.jpg: not-an-image"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\\x1B[2Jx.jpg: not-an-image"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find('\x1B'), std::string::npos) << "a name must not drive the terminal";
}

TEST(HostileData, PrintableTextEscapesOnlyWhatIsNotPrintableUtf8) {
  EXPECT_EQ(EscapeForTerminal("plain"), "plain");
  EXPECT_EQ(EscapeForTerminal("\xE4\xB8\xAD\xE6\x96\x87"), "\xE4\xB8\xAD\xE6\x96\x87");  // 中文 kept
  EXPECT_EQ(EscapeForTerminal("a\xFF" "b"), "a\\xFFb");
  EXPECT_EQ(EscapeForTerminal("\xC0\xAF"), "\\xC0\\xAF");            // overlong '/'
  EXPECT_EQ(EscapeForTerminal("\xED\xA0\x80"), "\\xED\\xA0\\x80");   // a surrogate
  EXPECT_EQ(EscapeForTerminal("\xE4\xB8"), "\\xE4\\xB8");            // cut sequence
  EXPECT_EQ(EscapeForTerminal("t\tn\n"), "t\\x09n\\x0A");
  EXPECT_EQ(EscapeForTerminal("\xC2\x9B" "1m"), "\\xC2\\x9B1m");      // C1 CSI
}

// ---- OCI layouts

const char* kIndexType = "application/vnd.oci.image.index.v1+json";
const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";

// Writes a blob and returns its descriptor.
nlohmann::json Blob(const std::string& dir, const std::string& media_type, const std::string& body) {
  const std::string hex = Sha256Hex(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  WriteBytes(dir + "/blobs/sha256/" + hex, body);
  return {{"mediaType", media_type}, {"digest", "sha256:" + hex}, {"size", body.size()}};
}

void Layout(const std::string& dir, const std::string& index_json) {
  WriteBytes(dir + "/oci-layout", std::string(R"({"imageLayoutVersion":"1.0.0"})"));
  WriteBytes(dir + "/index.json", index_json);
}

nlohmann::json IndexOf(const std::vector<nlohmann::json>& entries) {
  return {{"schemaVersion", 2}, {"mediaType", kIndexType}, {"manifests", entries}};
}

TEST(HostileOci, SharedNestedIndexesAreWalkedAndHashedOnce) {
  TempDir t;
  const auto config = Blob(t.path, "application/vnd.oci.image.config.v1+json", "{}");
  const auto layer = Blob(t.path, "application/vnd.oci.image.layer.v1.tar", "layer");
  nlohmann::json child = Blob(t.path, kManifestType,
                              nlohmann::json({{"schemaVersion", 2}, {"mediaType", kManifestType}, {"config", config},
                                              {"layers", {layer}}}).dump());
  // Five levels of indexes, each listing its child 8 times: 8^5 paths to one manifest.
  for (int level = 0; level < 5; ++level)
    child = Blob(t.path, kIndexType, IndexOf(std::vector<nlohmann::json>(8, child)).dump());
  Layout(t.path, IndexOf(std::vector<nlohmann::json>(8, child)).dump());
  auto r = RunBounded([&] {
    OciReport rep = CheckOciLayout(t.path);
    return std::to_string(rep.blobs_checked) + " " + std::to_string(rep.manifests) + "\n" + Listed(rep.findings);
  }, testing::kTestAddressSpace, 120);
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out.substr(0, 2000);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "8 1") << r.out.substr(0, 2000);  // 5 indexes + manifest, config, layer
}

TEST(HostileOci, AnIndexThatReferencesItselfIsACycleFinding) {
  // sha512 blobs are not hashed here, so a blob can name its own digest.
  TempDir t;
  const std::string hex(128, 'a');
  const nlohmann::json self = {{"mediaType", kIndexType}, {"digest", "sha512:" + hex}, {"size", 0}};
  std::string body = IndexOf({self}).dump();
  for (int k = 0; k < 3; ++k) {  // the size field is part of the body: settle it
    nlohmann::json s = self;
    s["size"] = body.size();
    body = IndexOf({s}).dump();
  }
  WriteBytes(t / ("blobs/sha512/" + hex), body);
  nlohmann::json top = self;
  top["size"] = body.size();
  Layout(t.path, IndexOf({top}).dump());
  auto r = RunBounded([&] { return Listed(CheckOciLayout(t.path).findings); }, testing::kTestAddressSpace, 60);
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  EXPECT_NE(r.out.find("manifest-invalid index cycle: sha512:" + hex + " references itself"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nesting deeper"), std::string::npos) << r.out;
}

TEST(HostileOci, JsonNestedAMillionDeepIsRefusedWithAClearFinding) {
  TempDir t;
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  Layout(t.path, R"({"schemaVersion":)" + deep + R"(,"manifests":[]})");
  WriteBytes(t / "reply.json", R"({"schemaVersion":2,"mediaType":")" + std::string(kIndexType) +
                                   R"(","manifests":)" + deep + "}");
  auto r = RunBounded([&] {
    return Listed(CheckOciLayout(t.path).findings) + "referrers: " + ClassifyReferrersResponse(t / "reply.json").message;
  });
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("index.json index-invalid index.json nests arrays/objects more than 256 levels deep"),
            std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("referrers: the body nests arrays/objects more than 256 levels deep"), std::string::npos)
      << r.out.substr(0, 2000);
}

TEST(HostileOci, OversizedManifestIsAFindingNotARead) {
  TempDir t;
  const std::string body = "{" + std::string((4 << 20) + 10, ' ') + "}";
  Layout(t.path, IndexOf({Blob(t.path, kManifestType, body)}).dump());
  const std::string out = Listed(CheckOciLayout(t.path).findings);
  EXPECT_NE(out.find("manifest-invalid " + std::string(kManifestType) + " blob is " + std::to_string(body.size()) +
                     " bytes, over the limit of 4194304 bytes"),
            std::string::npos) << out;
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

TEST(HostileText, MillionsOfInvalidSequencesStayBoundedAndCounted) {
  // 24 MiB of "a\xFF" converted as UTF-8: 12 million bad sequences. Listing each cost ~100 bytes (over
  // 1 GB); the first 20 are listed and the rest counted. Under ASan, where the address-space limit does
  // not apply and this loop is ~50 times slower, 256 Ki sequences check the counting alone.
  const int bad = testing::AddressSpaceLimitApplies() ? (12 << 20) : (256 << 10);
  std::string s;
  s.reserve(2 * static_cast<size_t>(bad));
  for (int i = 0; i < bad; ++i) s += (i % 64 == 63) ? "\n\xFF" : "a\xFF";
  auto r = RunBounded([&] {
    Conversion c = ConvertToUtf8(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "UTF-8", 0);
    return std::to_string(c.bad.size()) + " " + std::to_string(c.BadCount()) + " " + std::to_string(c.bad_tail.lines);
  });
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  EXPECT_EQ(r.out, std::to_string(kMaxFindingsPerCode) + " " + std::to_string(bad) + " " +
                       std::to_string(bad / 64 + 1))  // every line: line 1's 21st on are counted too
      << r.out;
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

TEST(HostileReferrers, NonUtf8HeaderInATranscriptKeepsTheJsonValid) {
  TempDir t;
  WriteBytes(t / "reply.txt", std::string("HTTP/1.1 302 Found\r\nLocation: https://sso.example/caf\xE9/login\x1B[2J\r\n"
                                          "Content-Length: 0\r\n\r\n"));
  const std::string cmd = std::string(EDGEDECODE_BINARY) + " doctor env --no-bandwidth --referrers-response " +
                          (t / "reply.txt") + " --json " + (t / "out.json") + " > " + (t / "out.txt") + " 2>&1";
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st)) << cmd;
  EXPECT_EQ(WEXITSTATUS(st), 1) << cmd;
  std::ifstream in(t / "out.json");
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(in)) << "the JSON report must be valid UTF-8";
  EXPECT_EQ(j["referrers_response"]["code"], "referrers-login-redirect");
  EXPECT_NE(j["referrers_response"]["message"].get<std::string>().find("caf\xEF\xBF\xBD/login"), std::string::npos)
      << j.dump();
  std::ifstream tin(t / "out.txt");
  std::stringstream text;
  text << tin.rdbuf();
  EXPECT_NE(text.str().find("caf\\xE9/login\\x1B[2J"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find('\x1B'), std::string::npos) << "a header must not drive the terminal";
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

TEST(HostileData, FixNeverRewritesAJpegOverTheSizeLimit) {
  // A 65500x65500 header on a small JPEG: not decoded (unsupported-variant); --fix must not resize it,
  // which would decode it with no limit of its own.
  TempDir t, out;
  std::vector<uint8_t> b = testing::ReadBytes(testing::Testdata("images/pillow/hopper.jpg"));
  size_t i = 2;
  while (i + 9 < b.size() && !(b[i] == 0xFF && b[i + 1] == 0xC0)) i += 2 + (static_cast<size_t>(b[i + 2]) << 8 | b[i + 3]);
  ASSERT_LT(i + 9, b.size());
  b[i + 5] = b[i + 7] = 0xFF;
  b[i + 6] = b[i + 8] = 0xDC;  // 65500
  WriteBytes(t / "huge.jpg", b);
  DataOptions opt;
  opt.root = t.path;
  HwDecoder hw;
  hw.max_width = hw.max_height = 1024;
  opt.hw = hw;
  auto r = RunBounded([&] {
    auto rep = CheckTree(opt);
    if (!rep.ok()) return "error: " + rep.status().message();
    std::string log;
    for (const std::string& l : WriteFixes(rep.value(), out.path)) log += l + "\n";
    return log + Listed(rep.value());
  });
  ASSERT_TRUE(r.ok()) << r.how() << ": " << r.out;
  EXPECT_NE(r.out.find("huge.jpg: REFUSED to rewrite for the target (unsupported-variant: image too large"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out / "huge.jpg"));
}

}  // namespace
}  // namespace edgedecode::doctor
