// Hostile models and profiles: each gets a clear Status naming what and where, never a crash, a hang or an
// unbounded allocation. Models are built here with the onnx protobuf API; resource limits run in a child.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/utf8.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "scan/onnx_model.h"
#include "scan/scan_test_util.h"
#include "scan/scanner.h"

namespace fs = std::filesystem;
using namespace edgedecode;
using namespace edgedecode::scan;
using scantest::ModelBuilder;

namespace {

const std::string kTargets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets";
const std::string kDir = scantest::TestDir("ed_scan_hostile");

std::string ReadAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status LoadStatus(ModelBuilder& b, const std::string& name) {
  auto m = OnnxModel::Load(b.Write(kDir + "/" + name));
  return m.ok() ? Status::Ok() : m.status();
}

void ExpectCorrupt(const Status& s, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt) << s.message();
  for (const char* p : parts) EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
}

}  // namespace

// libonnx's shape inference divides by strides and block sizes: SIGFPE unless refused first.
TEST(ScanHostile, InvalidConvAndPoolAttributesAreRefusedBeforeInference) {
  struct Case {
    const char* op;
    const char* attr;
    std::initializer_list<int64_t> value;
  };
  const Case cases[] = {
      {"Conv", "strides", {0, 1}},       {"Conv", "kernel_shape", {0, 3}}, {"Conv", "dilations", {-1, 1}},
      {"Conv", "group", {0}},            {"ConvTranspose", "strides", {1, 0}}, {"AveragePool", "strides", {0, 0}},
      {"MaxPool", "kernel_shape", {-2, 2}}, {"LpPool", "strides", {0, 1}}, {"SpaceToDepth", "blocksize", {0}},
      {"DepthToSpace", "blocksize", {-4}}, {"Conv", "pads", {0, 0, INT64_MAX, 0}},
  };
  for (const Case& c : cases) {
    ModelBuilder b;
    b.Input("x", {1, 4, 8, 8});
    std::vector<std::string> in = {"x"};
    onnx::NodeProto* n;
    if (std::string(c.op) == "Conv" || std::string(c.op) == "ConvTranspose") {
      b.Init("w", {4, 4, 3, 3}, std::vector<float>(144, 0.f));
      n = b.Node(c.op, {"x", "w"}, {"y"}, "bad_node");
    } else {
      n = b.Node(c.op, {"x"}, {"y"}, "bad_node");
    }
    bool pool = std::string(c.op).find("Pool") != std::string::npos;
    if (pool && std::string(c.attr) != "kernel_shape") ModelBuilder::Ints(n, "kernel_shape", {2, 2});
    if (c.value.size() == 1 && (std::string(c.attr) == "group" || std::string(c.attr) == "blocksize")) ModelBuilder::Int(n, c.attr, *c.value.begin());
    else ModelBuilder::Ints(n, c.attr, c.value);
    b.Output("y");
    ExpectCorrupt(LoadStatus(b, "attr.onnx"), {"attr.onnx", "bad_node", c.op, c.attr});
  }
}

// A chain of a million Relus listed last to first: sorted without recursion, scanned, in bounded time.
TEST(ScanHostile, MillionNodeGraphListedConsumerFirst) {
  const int kNodes = scantest::UnderAsan() ? 200000 : 1000000;  // ASan's Debug build is ~20x slower
  ModelBuilder b;
  b.Input("v0", {1, 4});
  for (int i = kNodes; i >= 1; --i) b.Node("Relu", {"v" + std::to_string(i - 1)}, {"v" + std::to_string(i)}, "r" + std::to_string(i));
  b.Output("v" + std::to_string(kNodes));
  std::string path = b.Write(kDir + "/million.onnx");
  auto m = OnnxModel::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m.value()->nodes().size(), static_cast<size_t>(kNodes));
  EXPECT_EQ(m.value()->nodes().front().name, "r1");  // dependency order
  EXPECT_EQ(m.value()->nodes().back().name, "r" + std::to_string(kNodes));
  bool warned = false;
  for (const auto& w : m.value()->warnings()) warned |= w.find("topological") != std::string::npos;
  EXPECT_TRUE(warned);
  Profile p = Profile::Load(kTargets + "/rk3588-npu.json").value();
  ScanReport r = Scan(*m.value(), p);
  EXPECT_EQ(r.n_accel, kNodes);
  EXPECT_EQ(r.partitions, 1);  // one chain: union-find without recursion
  // A cycle is refused, naming a node in it.
  ModelBuilder c;
  c.Input("x", {1});
  c.Node("Add", {"x", "b"}, {"a"}, "first");
  c.Node("Relu", {"a"}, {"b"}, "second");
  c.Output("b");
  ExpectCorrupt(LoadStatus(c, "cycle.onnx"), {"cycle.onnx", "cycle"});
}

TEST(ScanHostile, InitializerWithoutDataIsBroken) {
  ModelBuilder b;
  b.Input("x", {4});
  auto* w = b.graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  ExpectCorrupt(LoadStatus(b, "nodata.onnx"), {"nodata.onnx", "'w'", "no data"});
  w->set_raw_data(std::string(12, '\0'));  // 3 floats for 4
  ExpectCorrupt(LoadStatus(b, "shortraw.onnx"), {"'w'", "12 bytes", "16"});
  w->set_raw_data(std::string(16, '\0'));
  EXPECT_TRUE(LoadStatus(b, "okraw.onnx").ok());
  // A Constant's tensor is checked the same way.
  ModelBuilder c;
  c.Input("x", {4});
  auto* k = c.Node("Constant", {}, {"w"}, "konst");
  auto* a = k->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(4);
  c.Node("Add", {"x", "w"}, {"y"});
  c.Output("y");
  ExpectCorrupt(LoadStatus(c, "constnodata.onnx"), {"konst", "no data"});
}

TEST(ScanHostile, OverflowingShapesAreClearErrors) {
  ModelBuilder b;
  b.Input("x", {1});
  auto* w = b.graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 40);
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  ExpectCorrupt(LoadStatus(b, "bigdims.onnx"), {"'w'", "overflows"});
  ModelBuilder v;
  v.Input("x", {int64_t{1} << 62, 16});
  v.Node("Relu", {"x"}, {"y"});
  v.Output("y");
  ExpectCorrupt(LoadStatus(v, "bigvalue.onnx"), {"'x'", "overflows"});
  // Two transitions of 2^62 bytes each: their sum does not fit, so it counts as unknown, not as garbage.
  ModelBuilder t;
  t.Input("x", {int64_t{1} << 30, int64_t{1} << 30});
  t.Node("Relu", {"x"}, {"a"});
  t.Node("Erf", {"a"}, {"b"});  // not on rk3588: CPU
  t.Node("Relu", {"b"}, {"c"});
  t.Node("Erf", {"c"}, {"d"});
  t.Node("Relu", {"d"}, {"y"});
  t.Output("y");
  auto m = OnnxModel::Load(t.Write(kDir + "/huge.onnx"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ScanReport r = Scan(*m.value(), Profile::Load(kTargets + "/rk3588-npu.json").value());
  EXPECT_EQ(r.transitions.size(), 4u);
  EXPECT_GE(r.bytes, 0);
  EXPECT_GE(r.unknown_transitions, 1);
}

TEST(ScanHostile, ExternalDataMustStayInsideTheModelFolder) {
  const std::string dir = kDir + "/ext";
  fs::create_directories(dir);
  scantest::WriteFile(dir + "/w.bin", std::string(16, '\0'));
  fs::remove(dir + "/link.bin");
  fs::create_symlink("/etc/hostname", dir + "/link.bin");
  auto model = [&](const std::string& loc, const std::string& offset, const std::string& length) {
    ModelBuilder b;
    b.Input("x", {4});
    auto* w = b.graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(4);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* kv = w->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    };
    add("location", loc);
    if (!offset.empty()) add("offset", offset);
    if (!length.empty()) add("length", length);
    b.Node("Add", {"x", "w"}, {"y"});
    b.Output("y");
    auto m = OnnxModel::Load(b.Write(dir + "/m.onnx"));
    return m.ok() ? Status::Ok() : m.status();
  };
  EXPECT_TRUE(model("w.bin", "", "").ok());
  EXPECT_TRUE(model("./w.bin", "0", "16").ok());
  ExpectCorrupt(model("../../etc/passwd", "", ""), {"../../etc/passwd", "refused"});
  ExpectCorrupt(model("/etc/passwd", "", ""), {"/etc/passwd", "refused"});
  ExpectCorrupt(model("link.bin", "", ""), {"link.bin", "outside", "refused"});
  ExpectCorrupt(model("w.bin", "abc", ""), {"offset", "abc"});
  ExpectCorrupt(model("w.bin", "-5", ""), {"offset", "-5"});
  ExpectCorrupt(model("w.bin", "", "99999999999999999999"), {"length"});
  ExpectCorrupt(model("w.bin", "", "4611686018427387904"), {"length", "does not match"});
  ExpectCorrupt(model("w.bin", "9223372036854775800", ""), {"needs"});  // offset + length overflows
}

TEST(ScanHostile, NonUtf8NamesKeepReportsValid) {
  ModelBuilder b;
  b.Input("x\xff", {1, 4});
  b.graph()->mutable_node();
  auto* n = b.Node("Re\xc0\xafLu", {"x\xff"}, {"y\x1b[2J"}, "node\xfe\x1b]0;title\x07");
  n->set_domain("com.\xff");
  b.Output("y\x1b[2J");
  std::string path = b.Write(kDir + "/utf8.onnx");
  auto m = OnnxModel::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ScanReport r = Scan(*m.value(), Profile::Load(kTargets + "/rk3588-npu.json").value());
  std::string text = r.ToText(true), csv = r.ToCsv(), json = cli::DumpJson(r.ToJson());
  for (const std::string* s : {&text, &csv, &json}) EXPECT_EQ(ToValidUtf8(*s), *s) << "invalid UTF-8 in a report";
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "a terminal escape reached the text report";
  EXPECT_NE(text.find("\\x1B"), std::string::npos);
  // The command's files too.
  std::string jf = kDir + "/utf8.json", cf = kDir + "/utf8.csv";
  std::vector<std::string> args = {"scan", path, "--target", kTargets + "/rk3588-npu.json", "--json", jf, "--csv", cf};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ASSERT_EQ(cli::ScanMain(static_cast<int>(argv.size()), argv.data()), 0);
  for (const auto& f : {jf, cf}) {
    std::string s = ReadAll(f);
    EXPECT_FALSE(s.empty()) << f;
    EXPECT_EQ(ToValidUtf8(s), s) << f;
  }
}

namespace {

Status LoadProfileText(const std::string& name, const std::string& text) {
  auto p = Profile::Load(scantest::WriteFile(kDir + "/" + name, text));
  return p.ok() ? Status::Ok() : p.status();
}

}  // namespace

TEST(ScanHostileProfile, DeepNestingIsRefusedBeforeParsing) {
  ExpectCorrupt(LoadProfileText("deep.json", std::string(1000000, '[') + std::string(1000000, ']')), {"deep.json", "nested deeper than 256"});
  ExpectCorrupt(LoadProfileText("deepobj.json", "{\"ops\": " + std::string(300, '[') + std::string(300, ']') + "}"), {"deepobj.json:1:"});
}

TEST(ScanHostileProfile, WrongTypesNameTheKeyAndExpectedType) {
  const std::string ops = R"("ops": {"ai.onnx": {"Relu": {}}})";
  struct Case {
    std::string body;
    std::vector<const char*> expect;
  };
  const Case cases[] = {
      {"[]", {"a profile must be a JSON object", "array"}},
      {"null", {"a profile must be a JSON object", "null"}},
      {"\"rk\"", {"JSON object"}},
      {"{}", {"no \"ops\""}},
      {R"({"name": 5, )" + ops + "}", {"name", "a string", "integer"}},
      {R"({"accelerator": ["NPU"], )" + ops + "}", {"accelerator", "a string"}},
      {R"({"estimate": "yes", )" + ops + "}", {"estimate", "true or false"}},
      {R"({"estimates": "all", )" + ops + "}", {"estimates", "array of strings"}},
      {R"({"memory_bytes": "4GiB", )" + ops + "}", {"memory_bytes", "integer", "string"}},
      {R"({"memory_bytes": -1, )" + ops + "}", {"memory_bytes", "-1"}},
      {R"({"memory_bytes": 1.5, )" + ops + "}", {"memory_bytes", "integer"}},
      {R"({"bandwidth_bytes_per_s": "fast", )" + ops + "}", {"bandwidth_bytes_per_s", "a number"}},
      {R"({"bandwidth_bytes_per_s": 0, )" + ops + "}", {"bandwidth_bytes_per_s", "> 0"}},
      {R"({"transition_latency_s": -1, )" + ops + "}", {"transition_latency_s", ">= 0"}},
      {R"({"source": "doc", )" + ops + "}", {"source", "object"}},
      {R"({"source": [{"document": 3}], )" + ops + "}", {"source[0].document", "a string"}},
      {R"({"ops": []})", {"ops", "an object"}},
      {R"({"ops": {"ai.onnx": []}})", {"ops.ai.onnx", "an object"}},
      {R"({"ops": {"ai.onnx": {"Relu": 1}}})", {"ops.ai.onnx.Relu", "constraint object"}},
      {R"({"defaults": {"max_rank": "4"}, )" + ops + "}", {"defaults.max_rank", "an integer", "string"}},
      {R"({"defaults": {"dtypes": "float32"}, )" + ops + "}", {"defaults.dtypes", "array of strings"}},
      {R"({"defaults": {"dtypes": [1]}, )" + ops + "}", {"defaults.dtypes[0]", "a string"}},
      {R"({"defaults": {"static_shapes": 1}, )" + ops + "}", {"static_shapes", "true or false"}},
      {R"({"ops": {"ai.onnx": {"Conv": {"attr_range": {"strides": [1]}}}}})", {"Conv.attr_range.strides", "[min, max]"}},
      {R"({"ops": {"ai.onnx": {"Conv": {"attrs": {"mode": "linear"}}}}})", {"Conv.attrs.mode", "an array"}},
      {R"({"ops": {"ai.onnx": {"Conv": {"const_inputs": ["1"]}}}})", {"Conv.const_inputs[0]", "an integer"}},
      {R"({"ops": {"ai.onnx": {"Conv": {"max_batch": -2}}}})", {"Conv.max_batch", "below 0"}},
      {R"({"ops": {"ai.onnx": {"Conv": {"notes": 3}}}})", {"Conv.notes", "a string"}},
      {R"({"ops": {"ai.onnx": {"Conv": {"max_rnk": 3}}}})", {"unknown constraint key 'max_rnk'"}},
      {R"({"ops": {"ai.onnx": {"Resize": {"scale_range": [8, 1]}}}})", {"Resize.scale_range"}},
      {R"({"ops": {"ai.onnx": {"Mul": {"broadcast": ["row"]}}}})", {"Mul.broadcast", "row"}},
      {R"({"ops": {"ai.onnx": {"Slice": {"input_values": {"4": ["1"]}}}}})", {"Slice.input_values.4[0]", "a number or null"}},
      {R"({"ops": {"ai.onnx": {"Gemm": {"dim_limits": {"rows": [1, 2]}}}}})", {"Gemm.dim_limits", "rows"}},
      {R"({"ops": {"ai.onnx": {"Gemm": {"cases": [{"max_rank": 2}]}}}})", {"Gemm.cases[0]", "when"}},
      {R"({"llm": {"matmul_types": "q8_0"}, )" + ops + "}", {"llm.matmul_types", "array of strings"}},
      {R"({"llm": {"ops": [1]}, )" + ops + "}", {"llm.ops[0]", "a string"}},
      {R"({"llm": [], )" + ops + "}", {"llm", "an object"}},
      {R"({"image_decoder": 3, )" + ops + "}", {"image_decoder", "an object"}},
  };
  for (const Case& c : cases) {
    Status s = LoadProfileText("typed.json", c.body);
    ASSERT_FALSE(s.ok()) << c.body;
    EXPECT_EQ(s.code(), StatusCode::kCorrupt) << c.body;
    EXPECT_NE(s.message().find("typed.json"), std::string::npos) << s.message();
    for (const char* e : c.expect) EXPECT_NE(s.message().find(e), std::string::npos) << "'" << e << "' not in: " << s.message();
  }
  // The shipped profiles pass the same checks; a minimal one loads.
  EXPECT_TRUE(LoadProfileText("min.json", "{" + ops + "}").ok());
}

// Address-space limit: declared shapes that would need terabytes, and a huge external-data length, are
// reported without allocating what they declare.
TEST(ScanHostile, TerabyteDeclarationsUnderAddressSpaceLimit) {
  if (scantest::UnderAsan()) std::printf("under AddressSanitizer: RLIMIT_AS not applied (ASan reserves terabytes), errors still checked\n");
  const rlim_t kLimit = rlim_t{1} << 30;
  // 1) An input of 4e15 bytes flowing through CPU and accelerator nodes: scanned, sizes are numbers.
  ModelBuilder big;
  big.Input("x", {1000000, 1000000, 1000});
  big.Node("Relu", {"x"}, {"a"});
  big.Node("Erf", {"a"}, {"b"});
  big.Node("Relu", {"b"}, {"y"});
  big.Output("y");
  std::string big_path = big.Write(kDir + "/terabytes.onnx");
  // 2) An initializer declaring 4e12 bytes with no data.
  ModelBuilder nodata;
  nodata.Input("x", {1});
  auto* w = nodata.graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1000000);
  w->add_dims(1000000);
  nodata.Node("Add", {"x", "w"}, {"y"});
  nodata.Output("y");
  std::string nodata_path = nodata.Write(kDir + "/terabyte_init.onnx");
  // 3) External data of 2^61 bytes declared by dims and length.
  ModelBuilder ext;
  ext.Input("x", {1});
  auto* e = ext.graph()->add_initializer();
  e->set_name("e");
  e->set_data_type(onnx::TensorProto::UINT8);
  e->add_dims(int64_t{1} << 61);
  e->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = e->add_external_data();
  kv->set_key("location");
  kv->set_value("huge.bin");
  kv = e->add_external_data();
  kv->set_key("length");
  kv->set_value(std::to_string(int64_t{1} << 61));
  ext.Node("Add", {"x", "e"}, {"y"});
  ext.Output("y");
  scantest::WriteFile(kDir + "/huge.bin", std::string(64, '\0'));
  std::string ext_path = ext.Write(kDir + "/huge_external.onnx");

  auto run = [&](const std::string& path, const char* expect) {
    return scantest::RunLimited([&]() -> int {
      auto m = OnnxModel::Load(path);
      if (!m.ok()) return m.status().message().find(expect) != std::string::npos ? 10 : 11;
      auto p = Profile::Load(kTargets + "/rk3588-npu.json");
      if (!p.ok()) return 12;
      ScanReport r = Scan(*m.value(), p.value());
      std::string text = r.ToText(true);
      return r.transitions.size() == 2 && r.bytes == 2 * int64_t{4000000000000000} ? 0 : 13;
    }, kLimit);
  };
  scantest::ChildResult a = run(big_path, "");
  EXPECT_TRUE(a.exited) << "signal " << a.code;
  EXPECT_EQ(a.code, 0);
  scantest::ChildResult b = run(nodata_path, "no data");
  EXPECT_TRUE(b.exited) << "signal " << b.code;
  EXPECT_EQ(b.code, 10);
  scantest::ChildResult c = run(ext_path, "huge.bin");
  EXPECT_TRUE(c.exited) << "signal " << c.code;
  EXPECT_EQ(c.code, 10);
}

// Values libonnx's data propagation reads from constants (Range's delta, Reshape's shape, STFT's frame step,
// Resize's scales): zero or huge ones end in an error or a warning, never a signal.
TEST(ScanHostile, ZeroAndHugeConstantsReachingShapeInference) {
  std::vector<std::pair<std::string, std::function<void(ModelBuilder&)>>> cases = {
      {"range_delta0", [](ModelBuilder& b) {
         b.InitInt64("s", {0});
         b.graph()->mutable_initializer()->rbegin()->clear_dims();
         b.InitInt64("l", {10});
         b.graph()->mutable_initializer()->rbegin()->clear_dims();
         b.InitInt64("d", {0});
         b.graph()->mutable_initializer()->rbegin()->clear_dims();
         b.Node("Range", {"s", "l", "d"}, {"r"});
         b.Node("Shape", {"r"}, {"y"});
       }},
      {"reshape_zero_product", [](ModelBuilder& b) {
         b.InitInt64("shape", {0, -1});
         auto* n = b.Node("Reshape", {"x", "shape"}, {"y"});
         ModelBuilder::Int(n, "allowzero", 1);
       }},
      {"reshape_huge", [](ModelBuilder& b) {
         b.InitInt64("shape", {INT64_MAX, INT64_MAX, -1});
         b.Node("Reshape", {"x", "shape"}, {"y"});
       }},
      {"tile_huge", [](ModelBuilder& b) {
         b.InitInt64("rep", {INT64_MAX, 3, 3, 3});
         b.Node("Tile", {"x", "rep"}, {"y"});
       }},
      {"resize_scale0", [](ModelBuilder& b) {
         b.Init("roi", {0}, {});
         b.Init("sc", {4}, {0, 0, 0, 0});
         b.Node("Resize", {"x", "roi", "sc"}, {"y"});
       }},
      {"expand_huge", [](ModelBuilder& b) {
         b.InitInt64("shape", {INT64_MAX, INT64_MAX, 8, 8});
         b.Node("Expand", {"x", "shape"}, {"y"});
       }},
      {"stft_step0", [](ModelBuilder& b) {
         b.InitInt64("step", {0});
         b.graph()->mutable_initializer()->rbegin()->clear_dims();
         b.InitInt64("len", {4});
         b.graph()->mutable_initializer()->rbegin()->clear_dims();
         b.Init("sig", {1, 16, 1}, std::vector<float>(16, 1.f));
         b.Node("STFT", {"sig", "step", "", "len"}, {"y"});
       }},
  };
  for (auto& [name, build] : cases) {
    ModelBuilder b(17);
    b.Input("x", {1, 4, 8, 8});
    build(b);
    b.Output("y");
    std::string path = b.Write(kDir + "/" + name + ".onnx");
    scantest::ChildResult r = scantest::RunLimited([&]() -> int {
      auto m = OnnxModel::Load(path);
      if (!m.ok()) return m.status().message().find(name) != std::string::npos ? 0 : 3;
      auto p = Profile::Load(kTargets + "/rk3588-npu.json");
      ScanReport rep = Scan(*m.value(), p.value());
      return rep.ToText(true).empty() ? 4 : 0;
    }, rlim_t{4} << 30);
    EXPECT_TRUE(r.exited) << name << ": killed by signal " << r.code;
    EXPECT_EQ(r.code, 0) << name;
  }
}

// libonnx 1.12 crashes propagating Shape's value (opset 15 and later) when its input has no type: a custom
// operator's output, an input declared without one, a name nothing defines, the same inside an If branch.
// Each loads (or is refused by name) in a child, shape values still reach Reshape, and no placeholder type
// is left in the model.
TEST(ScanHostile, ShapeOfValueWithoutTypeAtOpset15) {
  auto custom = [](ModelBuilder& b, const std::string& out) {
    b.Node("VendorOp", {"x"}, {out})->set_domain("com.vendor");
    auto* os = b.model().add_opset_import();
    os->set_domain("com.vendor");
    os->set_version(1);
  };
  auto shape_of = [](ModelBuilder& b, const std::string& in, const std::string& out) {
    auto* n = b.Node("Shape", {in}, {out});
    ModelBuilder::Int(n, "start", -2);
  };
  std::vector<std::pair<std::string, std::function<void(ModelBuilder&)>>> cases = {
      {"custom_op_output", [&](ModelBuilder& b) { custom(b, "c"); shape_of(b, "c", "s"); }},
      {"input_without_type", [&](ModelBuilder& b) { b.graph()->add_input()->set_name("u"); shape_of(b, "u", "s"); }},
      {"undefined_name", [&](ModelBuilder& b) { shape_of(b, "nowhere", "s"); }},
      {"if_branch_reads_outer", [&](ModelBuilder& b) {
         custom(b, "c");
         b.graph()->add_initializer()->CopyFrom([] {
           onnx::TensorProto t;
           t.set_name("cond");
           t.set_data_type(onnx::TensorProto::BOOL);
           t.add_int32_data(1);
           return t;
         }());
         onnx::NodeProto* n = b.Node("If", {"cond"}, {"s"});
         for (const char* branch : {"then_branch", "else_branch"}) {
           auto* a = n->add_attribute();
           a->set_name(branch);
           a->set_type(onnx::AttributeProto::GRAPH);
           onnx::GraphProto* g = a->mutable_g();
           g->set_name(branch);
           auto* sn = g->add_node();
           sn->set_op_type("Shape");
           sn->add_input("c");
           sn->add_output(std::string(branch) + "_s");
           g->add_output()->set_name(std::string(branch) + "_s");
         }
       }},
  };
  for (auto& [name, build] : cases) {
    ModelBuilder b(17);
    b.Input("x", {1, 4, 8, 8});
    build(b);
    b.Node("Shape", {"x"}, {"xs"});
    b.Node("Reshape", {"x", "xs"}, {"y"});  // its dims are known only through Shape's propagated value
    b.Output("y");
    b.Output("s");
    std::string path = b.Write(kDir + "/" + name + ".onnx");
    scantest::ChildResult r = scantest::RunLimited([&]() -> int {
      auto m = OnnxModel::Load(path);
      if (!m.ok()) return name == "undefined_name" && m.status().message().find("'nowhere'") != std::string::npos ? 0 : 3;
      const ValueInfo* y = m.value()->Find("y");
      if (!y || y->dims.size() != 4 || y->dims[3].value != 8) return 4;
      int placeholders = 0;
      for (const auto& vi : m.value()->proto().graph().value_info())
        placeholders += vi.type().value_case() == onnx::TypeProto::VALUE_NOT_SET;
      return placeholders == 0 ? 0 : 5;
    }, rlim_t{4} << 30);
    EXPECT_TRUE(r.exited) << name << ": killed by signal " << r.code;
    EXPECT_EQ(r.code, 0) << name;
  }
}

// libonnx's data propagation for Add, Sub and Mul reads element 0 of a one-element value and element i of
// the other: against an empty value (an empty int64 constant, Shape with start at the rank, an empty Slice of
// a shape) it reads past the end. Valid models do this; they are scanned, and the Add/Sub/Mul that cannot
// meet an empty value still carries shape values into Reshape.
TEST(ScanHostile, MathOnEmptyShapeValueIsScanned) {
  auto empty_int64 = [](ModelBuilder& b, const std::string& name) { b.InitInt64(name, {}); };
  std::vector<std::pair<std::string, std::function<void(ModelBuilder&)>>> cases = {
      {"add_empty_constant", [&](ModelBuilder& b) {
         empty_int64(b, "e");
         b.InitInt64("one", {1});
         b.Node("Add", {"e", "one"}, {"r"});
       }},
      {"sub_empty_shape", [&](ModelBuilder& b) {
         auto* s = b.Node("Shape", {"x"}, {"s"});
         ModelBuilder::Int(s, "start", 4);  // past the last axis: an empty shape value
         b.InitInt64("one", {1});
         b.Node("Sub", {"one", "s"}, {"r"});
       }},
      {"mul_empty_slice_of_shape", [&](ModelBuilder& b) {
         b.Node("Shape", {"x"}, {"s"});
         b.InitInt64("at", {3});
         b.Node("Slice", {"s", "at", "at"}, {"e"});
         b.Node("Cast", {"e"}, {"ec"})->add_attribute()->CopyFrom([] {
           onnx::AttributeProto a;
           a.set_name("to");
           a.set_type(onnx::AttributeProto::INT);
           a.set_i(onnx::TensorProto::INT64);
           return a;
         }());
         b.InitInt64("one", {1});
         b.Node("Mul", {"ec", "one"}, {"r"});
       }},
  };
  for (auto& [name, build] : cases) {
    ModelBuilder b(17);
    b.Input("x", {1, 4, 8, 8});
    build(b);
    b.Node("Shape", {"x"}, {"xs"});
    b.InitInt64("ones", {1, 1, 1, 1});
    b.Node("Mul", {"xs", "ones"}, {"xs1"});  // never empty: its shape value must still reach the Reshape
    b.Node("Reshape", {"x", "xs1"}, {"y"});
    b.Output("y");
    b.Output("r");
    std::string path = b.Write(kDir + "/" + name + ".onnx");
    scantest::ChildResult r = scantest::RunLimited([&]() -> int {
      auto m = OnnxModel::Load(path);
      if (!m.ok()) return 3;
      const ValueInfo* y = m.value()->Find("y");
      if (!y || y->dims.size() != 4 || y->dims[3].value != 8) return 4;
      // The inputs read their own names again, and no stand-in name is left.
      const auto& g = m.value()->proto().graph();
      for (const auto& vi : g.value_info())
        if (vi.name().find("detached") != std::string::npos) return 5;
      for (const auto& n : g.node())
        for (const auto& in : n.input())
          if (in.find("detached") != std::string::npos) return 6;
      return 0;
    }, rlim_t{4} << 30);
    EXPECT_TRUE(r.exited) << name << ": killed by signal " << r.code;
    EXPECT_EQ(r.code, 0) << name;
  }
}

// libonnx reads some required attributes without checking (Scan's num_scan_inputs: a null read); a node
// without one of its schema's required attributes is refused before inference, naming it.
TEST(ScanHostile, RequiredAttributeMissingIsRefusedBeforeInference) {
  ModelBuilder b(13);
  b.Input("x", {1, 4});
  b.Node("Cast", {"x"}, {"y"}, "cast_without_to");
  b.Output("y");
  ExpectCorrupt(LoadStatus(b, "noattr.onnx"), {"noattr.onnx", "cast_without_to", "required attribute 'to' is missing"});
}
