// `edgedecode rewrite` on bad inputs and bad options: exit 2 / 3 with the file and the problem named, nothing
// written, the input untouched. None of these reach ONNX Runtime, so this runs in the ASan+UBSan suite too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/commands.h"

namespace fs = std::filesystem;
using namespace edgedecode;

namespace {

const std::string kData = EDGEDECODE_TESTDATA;
const std::string kMnist = kData + "/models/onnx/mnist-8.onnx";

std::string TmpDir() {
  static std::string d = [] {
    fs::path p = fs::temp_directory_path() / ("ed_rewrite_broken_" + std::to_string(::getpid()));
    fs::create_directories(p);
    return p.string();
  }();
  return d;
}

std::string Write(const std::string& name, const std::string& bytes) {
  std::string p = TmpDir() + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string ReadAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs the CLI; returns the exit code and stderr.
std::pair<int, std::string> RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "rewrite");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  int rc = cli::RewriteMain(static_cast<int>(argv.size()), argv.data());
  return {rc, testing::internal::GetCapturedStderr()};
}

}  // namespace

TEST(RewriteBroken, BadModelsExit3NamingTheFile) {
  std::string out = TmpDir() + "/out.onnx";
  std::string good = ReadAll(kMnist);
  struct Case { std::string file, expect; };
  std::vector<Case> cases = {
      {Write("empty.onnx", ""), "empty"},
      {Write("image.onnx", "\x89PNG\r\n\x1a\n0000"), "PNG"},
      {Write("model.gguf.onnx", "GGUF\x03\0\0\0"), "GGUF"},
      {Write("text.onnx", "this is not a model at all"), "not a valid ONNX"},
      {Write("truncated.onnx", good.substr(0, good.size() / 3)), ""},
      {TmpDir() + "/missing.onnx", "no such file"},
      {TmpDir(), "directory"},
  };
  for (const auto& c : cases) {
    auto [rc, err] = RunCli({c.file, "-o", out, "--target", "rk3588-npu"});
    EXPECT_EQ(rc, c.file == TmpDir() ? 2 : 3) << c.file << ": " << err;
    EXPECT_NE(err.find(c.file), std::string::npos) << err;
    if (!c.expect.empty()) {
      EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    }
    EXPECT_FALSE(fs::exists(out)) << c.file;
  }
}

TEST(RewriteBroken, BadOptionsExit2AndTheInputIsUntouched) {
  std::string in = Write("mnist.onnx", ReadAll(kMnist));
  std::string before = ReadAll(in), out = TmpDir() + "/out.onnx";
  auto same = RunCli({in, "-o", in, "--target", "rk3588-npu"});
  EXPECT_EQ(same.first, 2);
  EXPECT_NE(same.second.find("is the input file"), std::string::npos) << same.second;
  fs::create_symlink(in, TmpDir() + "/link.onnx");
  EXPECT_EQ(RunCli({in, "-o", TmpDir() + "/link.onnx", "--target", "rk3588-npu"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", TmpDir() + "/./mnist.onnx", "--target", "rk3588-npu"}).first, 2);
  EXPECT_EQ(RunCli({in, "--target", "rk3588-npu"}).first, 2);                        // no -o
  EXPECT_EQ(RunCli({in, "-o", out}).first, 2);                                        // no --target
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "no-such-device"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "rk3588-npu", "--only", "fuse-everything"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "rk3588-npu", "--input-shape", "Input3"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "rk3588-npu", "--input-shape", "Input3=1,x"}).first, 2);
  auto rank = RunCli({in, "-o", out, "--target", "rk3588-npu", "--input-shape", "Input3=1,28,28"});
  EXPECT_EQ(rank.first, 2);
  EXPECT_NE(rank.second.find("rank"), std::string::npos) << rank.second;
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "rk3588-npu", "--no-such-flag"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "rk3588-npu", "--input-range", "1,0"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", TmpDir() + "/no/such/dir/out.onnx", "--target", "rk3588-npu"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", TmpDir(), "--target", "rk3588-npu"}).first, 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "rk3588-npu", "--input-range", "0;1"}).first, 2);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(ReadAll(in), before);
  std::error_code ec;
  fs::remove_all(TmpDir(), ec);
}
