// Broken inputs: clear errors (kCorrupt / kNotFound naming the file), never a crash; CLI exit codes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "scan/onnx_model.h"
#include "scan/scanner.h"

namespace fs = std::filesystem;
using namespace edgedecode;
using namespace edgedecode::scan;

namespace {

const std::string kData = EDGEDECODE_TESTDATA;

std::string TmpDir() {
  fs::path d = fs::temp_directory_path() / ("ed_scan_broken_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d.string();
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

int RunScan(std::vector<std::string> args) {
  args.insert(args.begin(), "scan");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::ScanMain(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST(ScanBroken, MissingFile) {
  auto r = OnnxModel::Load("/nonexistent/model.onnx");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/model.onnx"), std::string::npos);
}

TEST(ScanBroken, EmptyFile) {
  auto r = OnnxModel::Load(Write("empty.onnx", ""));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);
}

TEST(ScanBroken, WrongFormats) {
  auto png = OnnxModel::Load(Write("image.onnx", "\x89PNG\r\n\x1a\n0000"));
  ASSERT_FALSE(png.ok());
  EXPECT_NE(png.status().message().find("PNG"), std::string::npos);
  auto tfl = OnnxModel::Load(kData + "/models/tflite/face_detection_short_range.tflite");
  ASSERT_FALSE(tfl.ok());
  EXPECT_NE(tfl.status().message().find("TFLite"), std::string::npos);
  auto text = OnnxModel::Load(Write("text.onnx", "this is a plain text file, not a model\n"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kCorrupt);
}

TEST(ScanBroken, TruncatedAtManyOffsets) {
  std::string good = ReadAll(kData + "/models/onnx/mnist-8.onnx");
  ASSERT_GT(good.size(), 1000u);
  int rejected = 0;
  for (size_t cut : {size_t{10}, size_t{100}, good.size() / 3, good.size() / 2, good.size() - 200, good.size() - 1}) {
    auto r = OnnxModel::Load(Write("cut.onnx", good.substr(0, cut)));
    if (!r.ok()) {
      ++rejected;
      EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << cut;
      EXPECT_NE(r.status().message().find("cut.onnx"), std::string::npos) << r.status().message();
    }
  }
  EXPECT_EQ(rejected, 6);
}

TEST(ScanBroken, EmptyGraphAndMissingExternalData) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name("g");
  auto empty = OnnxModel::Load(Write("emptygraph.onnx", m.SerializeAsString()));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty graph"), std::string::npos);

  onnx::GraphProto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value("weights_that_do_not_exist.bin");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  g->add_output()->set_name("y");
  std::string p = Write("external.onnx", m.SerializeAsString());
  auto ext = OnnxModel::Load(p);
  ASSERT_FALSE(ext.ok());
  EXPECT_EQ(ext.status().code(), StatusCode::kNotFound);
  EXPECT_NE(ext.status().message().find("weights_that_do_not_exist.bin"), std::string::npos);
  // With the file present (16 bytes) it loads.
  Write("weights_that_do_not_exist.bin", std::string(16, '\0'));
  auto ok = OnnxModel::Load(p);
  EXPECT_TRUE(ok.ok()) << ok.status().message();
  // A short external file is corrupt.
  Write("weights_that_do_not_exist.bin", std::string(8, '\0'));
  auto shortf = OnnxModel::Load(p);
  ASSERT_FALSE(shortf.ok());
  EXPECT_EQ(shortf.status().code(), StatusCode::kCorrupt);
}

TEST(ScanBroken, CliExitCodes) {
  std::string mnist = kData + "/models/onnx/mnist-8.onnx";
  std::string targets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets/";
  EXPECT_EQ(RunScan({mnist, "--target", targets + "rk3588-npu.json"}), 0);
  EXPECT_EQ(RunScan({mnist, "--target", targets + "rk3588-npu.json", "--strict"}), 0);  // all on NPU
  EXPECT_EQ(RunScan({mnist, "--target", targets + "ethos-u55.json", "--strict"}), 1);   // float falls back
  EXPECT_EQ(RunScan({Write("e.onnx", ""), "--target", targets + "cpu.json"}), 3);
  EXPECT_EQ(RunScan({mnist, "--target", targets + "missing-profile.json"}), 3);  // a missing file
  EXPECT_EQ(RunScan({mnist, "--target", "no-such-device"}), 2);            // an unknown name
  EXPECT_EQ(RunScan({mnist}), 2);  // --target required
  EXPECT_EQ(RunScan({mnist, "--target", targets + "cpu.json", "--input-shape", "bogus"}), 2);
  std::string json = TmpDir() + "/r.json", csv = TmpDir() + "/r.csv";
  EXPECT_EQ(RunScan({mnist, "--target", targets + "hexagon-htp.json", "--json", json, "--csv", csv}), 0);
  EXPECT_NE(ReadAll(json).find("\"verdict\""), std::string::npos);
  EXPECT_NE(ReadAll(csv).find("Convolution28,Conv"), std::string::npos);
}

// A profile whose constraints have the wrong JSON types is refused at load, naming the field (the scan read
// them as strings/integers/booleans and threw out of the library).
TEST(ScanBroken, ProfileFieldTypes) {
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"ops": {"ai.onnx": {"Conv": {"dtypes": [1]}}}})", "ops.ai.onnx.Conv.dtypes"},
           {R"({"defaults": {"static_shapes": 1}, "ops": {}})", "defaults.static_shapes"},
           {R"({"ops": {"ai.onnx": {"Pad": {"max_batch": "1"}}}})", "ops.ai.onnx.Pad.max_batch"},
           {R"({"ops": {"ai.onnx": {"Conv": {"attr_range": {"strides": [1]}}}}})", "ops.ai.onnx.Conv.attr_range.strides"},
           {R"({"ops": {"ai.onnx": {"Resize": {"const_inputs": [-1]}}}})", "ops.ai.onnx.Resize.const_inputs"},
           {R"({"ops": {}, "llm": {"matmul_types": "q4_0"}})", "llm.matmul_types"}}) {
    auto p = Profile::FromJson(nlohmann::json::parse(text), "t.json");
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), StatusCode::kCorrupt);
    EXPECT_NE(p.status().message().find(field), std::string::npos) << p.status().message();
  }
}
