#include "doctor/data.h"

#include <iconv.h>

#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/doctor_data.h"
#include "doctor/hash.h"
#include "doctor/jpeg_fix.h"
#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {
namespace fs = std::filesystem;
using testing::ReadBytes;
using testing::TempDir;
using testing::Testdata;
using testing::WriteBytes;

std::string Gbk(const std::string& utf8) {
  iconv_t cd = iconv_open("GBK", "UTF-8");
  std::string out(utf8.size() * 2 + 8, '\0');
  char* in = const_cast<char*>(utf8.data());
  size_t il = utf8.size(), ol = out.size();
  char* o = out.data();
  iconv(cd, &in, &il, &o, &ol);
  iconv_close(cd);
  out.resize(out.size() - ol);
  return out;
}

const std::string kLabels = "猫\n狗\n鸟\n汽车\n自行车\n行人\n交通信号灯\n停车标志\n公共汽车\n卡车\n摩托车\n飞机\n火车\n船\n";

// A small dataset with every kind of lie, made from the shared test images.
void MakeTree(const std::string& root) {
  WriteBytes(root + "/img/cat.png", ReadBytes(Testdata("images/pillow/hopper.jpg")));   // JPEG named .png
  WriteBytes(root + "/img/dog.jpg", ReadBytes(Testdata("images/pillow/hopper.png")));   // PNG named .jpg
  WriteBytes(root + "/img/bird.jpg", ReadBytes(Testdata("images/mitra/webp.webp")));    // WebP named .jpg
  WriteBytes(root + "/img/ok.jpg", ReadBytes(Testdata("images/pillow/hopper.jpg")));
  WriteBytes(root + "/img/page.jpg", std::string("<!DOCTYPE html><html><body>Access denied</body></html>\n"));
  WriteBytes(root + "/img/empty.jpg", std::string());
  WriteBytes(root + "/img/cut.jpg", ReadBytes(Testdata("images/pillow/truncated_jpeg.jpg")));
  WriteBytes(root + "/labels.txt", Gbk(kLabels));
  WriteBytes(root + "/classes.txt", std::string("cat\ndog\n"));
}

std::map<std::string, std::vector<FindingCode>> Codes(const DataReport& r) {
  std::map<std::string, std::vector<FindingCode>> m;
  for (const auto& f : r.files)
    for (const auto& x : f.findings) m[f.path].push_back(x.code);
  return m;
}
bool Contains(const std::vector<FindingCode>& v, FindingCode s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::map<std::string, std::string> HashTree(const std::string& root) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) m[e.path().string()] = Sha256File(e.path().string()).value();
  return m;
}

TEST(Data, LyingExtensionsAndClasses) {
  TempDir t;
  MakeTree(t.path);
  DataOptions opt;
  opt.root = t.path;
  opt.jobs = 2;
  auto r = CheckTree(opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto c = Codes(r.value());
  EXPECT_TRUE(Contains(c["img/cat.png"], FindingCode::kExtensionMismatch));
  EXPECT_TRUE(Contains(c["img/dog.jpg"], FindingCode::kExtensionMismatch));
  EXPECT_TRUE(Contains(c["img/bird.jpg"], FindingCode::kExtensionMismatch));
  EXPECT_TRUE(Contains(c["img/page.jpg"], FindingCode::kNotAnImage));
  EXPECT_TRUE(Contains(c["img/empty.jpg"], FindingCode::kEmpty));
  EXPECT_TRUE(Contains(c["img/cut.jpg"], FindingCode::kTruncated));
  EXPECT_TRUE(Contains(c["labels.txt"], FindingCode::kEncodingNotUtf8));
  EXPECT_EQ(c.count("img/ok.jpg"), 0u);
  EXPECT_EQ(c.count("classes.txt"), 0u);
  for (const auto& f : r.value().files)
    for (const auto& x : f.findings)
      if (x.code == FindingCode::kExtensionMismatch && f.path == "img/cat.png") {
        EXPECT_EQ(x.fix, "rename to img/cat.jpg");
      }
}

TEST(Data, FixNeverAltersInputAndWritesCopies) {
  TempDir t, out;
  MakeTree(t.path);
  auto before = HashTree(t.path);
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  cmd.fix = true;
  cmd.out_dir = out.path + "/fixed";
  cmd.json_path = out.path + "/report.json";
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  EXPECT_EQ(HashTree(t.path), before);
  EXPECT_TRUE(fs::exists(out.path + "/fixed/img/cat.jpg"));
  EXPECT_TRUE(fs::exists(out.path + "/fixed/img/dog.png"));
  EXPECT_TRUE(fs::exists(out.path + "/fixed/doctor-fixes.log"));
  auto lab = ReadBytes(out.path + "/fixed/labels.txt");
  EXPECT_EQ(std::string(lab.begin(), lab.end()), kLabels);
  EXPECT_TRUE(fs::exists(out.path + "/report.json"));
  // --fix without --out, or --out inside the input: usage errors, nothing written.
  cli::DoctorDataCommand bad = cmd;
  bad.out_dir.clear();
  EXPECT_EQ(cli::RunDoctorData(bad), 2);
  bad.out_dir = t.path + "/fixed";
  EXPECT_EQ(cli::RunDoctorData(bad), 2);
  EXPECT_FALSE(fs::exists(t.path + "/fixed"));
  EXPECT_EQ(HashTree(t.path), before);
  // A folder named "..fixed" inside the input is still inside it; the input's parent contains it.
  bad.out_dir = t.path + "/..fixed";
  EXPECT_EQ(cli::RunDoctorData(bad), 2);
  bad.out_dir = fs::path(t.path).parent_path().string();
  EXPECT_EQ(cli::RunDoctorData(bad), 2);
  // A bare relative name outside the input is fine.
  const fs::path cwd = fs::current_path();
  fs::current_path(out.path);
  bad.out_dir = "rel-out";
  EXPECT_EQ(cli::RunDoctorData(bad), 1);
  EXPECT_TRUE(fs::exists(out.path + "/rel-out/doctor-fixes.log"));
  fs::current_path(cwd);
  // An output tree holding a symlink into the input: nothing is written through it.
  const std::string planted = out.path + "/planted";
  fs::create_directories(planted);
  fs::create_symlink(t.path + "/img", planted + "/img");
  bad.out_dir = planted;
  cli::RunDoctorData(bad);
  EXPECT_EQ(HashTree(t.path), before);
  EXPECT_FALSE(fs::exists(t.path + "/img/cat.jpg"));
}

TEST(Data, ManifestAndVerify) {
  TempDir t, o;
  MakeTree(t.path);
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  cmd.manifest_path = o.path + "/MANIFEST.sha256";
  cli::RunDoctorData(cmd);
  ASSERT_TRUE(fs::exists(cmd.manifest_path));
  ASSERT_TRUE(fs::exists(cmd.manifest_path + ".json"));
  // A "lossy WebP" flip that decoders would accept: only the manifest sees it.
  auto b = ReadBytes(t.path + "/img/ok.jpg");
  b[b.size() / 2] ^= 1;
  WriteBytes(t.path + "/img/ok.jpg", b);
  fs::remove(t.path + "/classes.txt");
  WriteBytes(t.path + "/new.txt", std::string("x\n"));
  DataOptions opt;
  opt.root = t.path;
  opt.hash = true;
  auto r = CheckTree(opt);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(VerifyAgainst(cmd.manifest_path, &r.value()).ok());
  auto c = Codes(r.value());
  EXPECT_TRUE(Contains(c["img/ok.jpg"], FindingCode::kHashMismatch));
  EXPECT_TRUE(Contains(c["classes.txt"], FindingCode::kMissing));
  EXPECT_TRUE(Contains(c["new.txt"], FindingCode::kUnexpected));
  EXPECT_FALSE(Contains(c["img/dog.jpg"], FindingCode::kHashMismatch));
}

TEST(Data, ExitCodes) {
  TempDir t;
  WriteBytes(t.path + "/a.png", ReadBytes(Testdata("images/pillow/hopper.png")));
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  EXPECT_EQ(cli::RunDoctorData(cmd), 0);
  cmd.opt.root = t.path + "/does-not-exist";
  EXPECT_EQ(cli::RunDoctorData(cmd), 3);
}

TEST(Data, ShortFileDecidedByFolderVote) {
  TempDir t;
  for (int i = 0; i < 3; ++i) WriteBytes(t.path + "/l/" + std::to_string(i) + ".txt", Gbk(kLabels));
  WriteBytes(t.path + "/l/short.txt", Gbk("狗熊\n")  /* b9 b7 ...: not UTF-8 (GBK 猫 c3 a8 would be) */);
  DataOptions opt;
  opt.root = t.path;
  auto r = CheckTree(opt);
  ASSERT_TRUE(r.ok());
  for (const auto& f : r.value().files)
    if (f.path == "l/short.txt") {
      EXPECT_EQ(f.text.how, "folder-vote");
      EXPECT_EQ(f.text.encoding, "GB18030");
    }
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

TEST(Data, FixReencodesJpegsForTheHardwareDecoder) {
  testing::TempDir t, o;
  testing::WriteBytes(t / "ari.jpg", testing::ReadBytes(testing::Testdata("images/libjpeg-turbo/testimgari.jpg")));
  testing::WriteBytes(t / "big.jpg", testing::ReadBytes(testing::Testdata("images/pillow/hopper.jpg")));
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  HwDecoder hw;
  hw.target = "npu";
  hw.arithmetic = false;
  hw.max_width = 227;  // testimgari is 227x149: fits; hopper is 128x128: fits
  hw.max_height = 149;
  hw.input_width = 64;
  hw.input_height = 64;
  cmd.opt.hw = hw;
  cmd.fix = true;
  cmd.out_dir = o / "fixed";
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  // The arithmetic file was transcoded; the copy now passes the same profile and decodes.
  DataOptions again;
  again.root = o / "fixed";
  again.hw = hw;
  auto r = CheckTree(again);
  ASSERT_TRUE(r.ok());
  bool found = false;
  for (const auto& f : r.value().files) {
    if (f.path != "ari.jpg") continue;
    found = true;
    EXPECT_FALSE(f.image.arithmetic);
    EXPECT_TRUE(f.image.decoded);
    EXPECT_EQ(f.image.width, 227);
    for (const auto& x : f.findings) ADD_FAILURE() << x.code << ": " << x.message;
  }
  EXPECT_TRUE(found);
  // Resize: a limit below hopper's size gives a copy that fits the model input.
  testing::TempDir o2;
  cmd.opt.hw->max_width = cmd.opt.hw->max_height = 100;
  cmd.out_dir = o2 / "fixed";
  cli::RunDoctorData(cmd);
  auto b = testing::ReadBytes(o2 / "fixed/big.jpg");
  ASSERT_FALSE(b.empty());
  ImageCheck c = CheckImage(Format::kJpeg, b.data(), b.size());
  EXPECT_TRUE(c.info.decoded);
  EXPECT_LE(c.info.width, 64);
  EXPECT_LE(c.info.height, 64);
  EXPECT_GT(c.info.width, 0);
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

// --fix on a UTF-8 label file with a few GBK lines: those lines are decoded as GBK, not replaced
// by U+FFFD, and the log names every repaired line.
TEST(Data, FixDecodesGbkLinesOfAUtf8File) {
  testing::TempDir t, o;
  std::string utf8, file;
  for (int i = 1; i <= 30; ++i) {
    std::string line = std::to_string(i) + (i == 4 || i == 11 ? " 自行车 行人 卡车" : " 交通信号灯 停车标志 公共汽车");
    utf8 += line + "\n";
    file += (i == 4 || i == 11 ? Gbk(line) : line) + "\n";
  }
  testing::WriteBytes(t / "labels.txt", file);
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  cmd.fix = true;
  cmd.out_dir = o / "fixed";
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  auto out = testing::ReadBytes(o / "fixed/labels.txt");
  EXPECT_EQ(std::string(out.begin(), out.end()), utf8);
  auto log = testing::ReadBytes(o / "fixed/doctor-fixes.log");
  const std::string l(log.begin(), log.end());
  EXPECT_NE(l.find("2 line(s) decoded as GB18030 (lossless, round trip checked): lines 4, 11"), std::string::npos) << l;
  EXPECT_EQ(l.find("U+FFFD"), std::string::npos) << l;
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

// Every format the profile's decoder does not list gets the same finding and severity, whether or
// not this build can decode it (HEIF has no decoder here; WebP does; PNG did before).
TEST(Data, UnlistedFormatsSameRuleOnAJpegOnlyDecoder) {
  testing::TempDir t;
  testing::WriteBytes(t / "a.png", testing::ReadBytes(testing::Testdata("images/pillow/hopper.png")));
  testing::WriteBytes(t / "b.webp", testing::ReadBytes(testing::Testdata("images/pillow/hopper.webp")));
  testing::WriteBytes(t / "c.webp", testing::ReadBytes(testing::Testdata("images/pillow/anim_frame1.webp")));
  testing::WriteBytes(t / "d.webp", testing::ReadBytes(testing::Testdata("images/mitra/webpl.webp")));
  // A minimal HEIF: an ISO BMFF ftyp box with the heic brand (no decoder in this build).
  std::string heic("\0\0\0\x18" "ftypheic\0\0\0\0mif1heic", 24);
  heic += std::string("\0\0\0\x08" "mdat", 8);
  testing::WriteBytes(t / "e.heic", heic);
  testing::WriteBytes(t / "f.jpg", testing::ReadBytes(testing::Testdata("images/pillow/hopper.jpg")));
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  auto hw = LoadHwDecoder(std::string(EDGEDECODE_SOURCE_DIR) + "/targets/rk3588-npu.json");
  ASSERT_TRUE(hw.ok()) << hw.status().message();
  cmd.opt.hw = hw.value();
  auto r = CheckTree(cmd.opt);
  ASSERT_TRUE(r.ok());
  std::map<std::string, Severity> sev;
  for (const auto& f : r.value().files)
    for (const auto& x : f.findings)
      if (x.code == FindingCode::kExceedsHwDecoder) sev[f.path] = x.severity;
  for (const char* p : {"a.png", "b.webp", "c.webp", "d.webp", "e.heic"}) {
    ASSERT_TRUE(sev.count(p)) << p << " has no exceeds-hw-decoder finding";
    EXPECT_EQ(sev[p], Severity::kError) << p;
  }
  EXPECT_EQ(sev.count("f.jpg"), 0u);
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  // Only the HEIF: still exit 1 (it was an info note and exit 0).
  testing::TempDir h;
  testing::WriteBytes(h / "only.heic", heic);
  cmd.opt.root = h.path;
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  // A profile that lists HEIF: the no-decoder note alone, exit 0.
  cmd.opt.hw->formats.insert("heif");
  EXPECT_EQ(cli::RunDoctorData(cmd), 0);
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

// A fix may never turn a damaged file into one that checks clean.
TEST(Data, FixRefusesToHideDamage) {
  auto prog = testing::ReadBytes(testing::Testdata("images/pillow/app13-multiple.progressive.jpg"));
  // Its SOF2 is at byte 65690 (an APP13 thumbnail comes first): cut inside the progressive scans.
  std::vector<uint8_t> cut_prog(prog.begin(), prog.begin() + prog.size() * 95 / 100);
  auto cut_base = testing::ReadBytes(testing::Testdata("images/pillow/truncated_jpeg.jpg"));
  // The library refuses on its own: libjpeg only warns on these and fills the gap with grey.
  auto t1 = JpegToBaseline(cut_prog.data(), cut_prog.size());
  ASSERT_FALSE(t1.ok());
  EXPECT_NE(t1.status().message().find("damaged"), std::string::npos) << t1.status().message();
  auto t2 = JpegResizeToFit(cut_base.data(), cut_base.size(), 16, 16);
  ASSERT_FALSE(t2.ok());
  EXPECT_TRUE(JpegToBaseline(prog.data(), prog.size()).ok());  // the whole file still transcodes

  testing::TempDir t, o;
  testing::WriteBytes(t / "cut_prog.jpg", cut_prog);
  testing::WriteBytes(t / "cut_base.jpg", cut_base);
  testing::WriteBytes(t / "cut_named.png", cut_prog);  // damaged and misnamed: copied, not rewritten
  testing::WriteBytes(t / "good_prog.jpg", prog);
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  HwDecoder hw;
  hw.target = "npu";
  hw.progressive = false;
  hw.max_width = hw.max_height = 32;
  cmd.opt.hw = hw;
  cmd.fix = true;
  cmd.out_dir = o / "fixed";
  cmd.json_path = o / "report.json";
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  auto js = testing::ReadBytes(o / "report.json");
  const std::string report(js.begin(), js.end());
  std::set<std::string> refused;
  const nlohmann::json parsed = nlohmann::json::parse(report);
  for (const auto& x : parsed["findings"])
    if (x["code"] == "fix-refused") refused.insert(x["path"].get<std::string>());
  EXPECT_EQ(refused, (std::set<std::string>{"cut_base.jpg", "cut_named.png", "cut_prog.jpg"}));
  EXPECT_FALSE(fs::exists(o / "fixed/cut_prog.jpg"));
  EXPECT_FALSE(fs::exists(o / "fixed/cut_base.jpg"));
  // The misnamed one is copied byte for byte under its content's extension: still damaged.
  ASSERT_TRUE(fs::exists(o / "fixed/cut_named.jpg"));
  EXPECT_EQ(testing::ReadBytes(o / "fixed/cut_named.jpg"), cut_prog);
  // The undamaged progressive file is rewritten, and whatever was written never checks clean if
  // its source was damaged.
  EXPECT_TRUE(fs::exists(o / "fixed/good_prog.jpg"));
  DataOptions again;
  again.root = o / "fixed";
  auto r = CheckTree(again);
  ASSERT_TRUE(r.ok());
  for (const auto& f : r.value().files) {
    if (f.path != "cut_named.jpg") continue;
    bool flagged = false;
    for (const auto& x : f.findings) flagged |= x.code == FindingCode::kTruncated || x.code == FindingCode::kCorrupt;
    EXPECT_TRUE(flagged);
  }
  auto log = testing::ReadBytes(o / "fixed/doctor-fixes.log");
  EXPECT_NE(std::string(log.begin(), log.end()).find("cut_prog.jpg: REFUSED"), std::string::npos);
}

}  // namespace
}  // namespace edgedecode::doctor

namespace edgedecode::doctor {
namespace {

// --fix of a text file with bytes that cannot be recovered: the copy is marked PARTIAL in the log
// and its U+FFFD are flagged when the copy is checked: it never checks clean.
TEST(Data, FixedTextWithLostBytesNeverChecksClean) {
  testing::TempDir t, o;
  std::string text;
  for (int i = 0; i < 20; ++i) text += "交通信号灯 停车标志\n";
  text.insert(text.find("停车"), "\xFF");
  testing::WriteBytes(t / "labels.txt", text);
  cli::DoctorDataCommand cmd;
  cmd.opt.root = t.path;
  cmd.fix = true;
  cmd.out_dir = o / "fixed";
  EXPECT_EQ(cli::RunDoctorData(cmd), 1);
  auto log = testing::ReadBytes(o / "fixed/doctor-fixes.log");
  EXPECT_NE(std::string(log.begin(), log.end()).find("PARTIAL: 1 bad sequence"), std::string::npos);
  DataOptions again;
  again.root = o / "fixed";
  auto r = CheckTree(again);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().files.size(), 2u);  // labels.txt and the log
  bool flagged = false;
  for (const auto& f : r.value().files)
    for (const auto& x : f.findings)
      if (f.path == "labels.txt" && x.code == FindingCode::kReplacementCharacter) flagged = x.line == 1 && x.column == 7;
  EXPECT_TRUE(flagged);
}

}  // namespace
}  // namespace edgedecode::doctor
