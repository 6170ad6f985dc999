#include <functional>
// Findings the scan must get right, on models built here: Constant / ConstantOfShape weights count against
// memory, unused optional outputs and attributes without effect do not force a fallback, the vendor limits
// in the profiles (scales, broadcasting, input values, per-axis dims, cases) apply, and a per-op vendor limit
// takes precedence over a blanket max_dim estimate.
#include <gtest/gtest.h>

#include <ostream>

#include "scan/onnx_model.h"
#include "scan/scan_test_util.h"
#include "scan/scanner.h"

using namespace edgedecode;
using namespace edgedecode::scan;
using scantest::ModelBuilder;

namespace edgedecode::scan {
void PrintTo(FallbackReason r, std::ostream* os) { *os << FallbackReasonCode(r); }
}  // namespace edgedecode::scan

namespace {

const std::string kTargets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets";
const std::string kDir = scantest::TestDir("ed_scan_constraints");

Profile P(const std::string& name) {
  auto p = Profile::Load(kTargets + "/" + name + ".json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.value();
}

std::unique_ptr<OnnxModel> Load(ModelBuilder& b, const std::string& name) {
  auto m = OnnxModel::Load(b.Write(kDir + "/" + name + ".onnx"));
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m.value()) : nullptr;
}

const NodeResult& NodeOf(const ScanReport& r, const std::string& op) {
  for (const auto& n : r.nodes) if (n.op_type == op) return n;
  static NodeResult none;
  ADD_FAILURE() << "no " << op << " node";
  return none;
}

}  // namespace

TEST(ScanWeights, ConstantAndConstantOfShapeCountAsWeights) {
  ModelBuilder b;
  b.Input("x", {10, 100});
  auto* c = b.Node("Constant", {}, {"w"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(10);
  a->mutable_t()->add_dims(100);
  a->mutable_t()->set_raw_data(std::string(4000, '\0'));
  b.InitInt64("shape", {10, 100});
  b.Node("ConstantOfShape", {"shape"}, {"z"});
  b.Node("Add", {"x", "w"}, {"t"});
  b.Node("Add", {"t", "z"}, {"y"});
  b.Output("y");
  auto m = Load(b, "constants");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->initializer_bytes(), 16);           // the shape vector
  EXPECT_EQ(m->weight_bytes(), 16 + 4000 + 4000);  // + the Constant and the 10x100 float ConstantOfShape
  Profile small = P("rk3588-npu");
  small.memory_bytes = 6000;
  ScanReport r = Scan(*m, small);
  EXPECT_EQ(r.weight_bytes, 8016);
  EXPECT_EQ(r.verdict, "BAD");
  bool warned = false;
  for (const auto& s : r.suggestions) warned |= s.find("exceed the device memory") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(ScanOutputs, UnusedOptionalOutputDoesNotForceFallback) {
  // Dropout's bool mask: mobile-gpu-tflite takes only float tensors; the mask nobody reads must not matter.
  for (bool mask_is_output : {false, true}) {
    ModelBuilder b;
    b.Input("x", {1, 8});
    b.Node("Dropout", {"x"}, {"y", "mask"});
    b.Output("y");
    if (mask_is_output) b.Output("mask");
    auto m = Load(b, "dropout");
    ASSERT_TRUE(m);
    const NodeResult& d = NodeOf(Scan(*m, P("mobile-gpu-tflite")), "Dropout");
    if (mask_is_output) EXPECT_EQ(d.reason, FallbackReason::kDtypeNotSupported) << d.detail;  // read: it matters
    else EXPECT_EQ(d.placement, Placement::kAccel) << d.ReasonCode() << " " << d.detail;
  }
}

namespace {

// One pooling / pad node on x float[1,4,8,8] scanned on rk3588-npu.
NodeResult ScanPool(const std::string& op, const std::function<void(ModelBuilder&, onnx::NodeProto*)>& set,
                    std::initializer_list<int64_t> shape = {1, 4, 8, 8}) {
  ModelBuilder b;
  b.Input("x", shape);
  auto* n = b.Node(op, {"x"}, {"y"});
  set(b, n);
  b.Output("y");
  auto m = Load(b, op);
  if (!m) return {};
  return NodeOf(Scan(*m, P("rk3588-npu")), op);
}

}  // namespace

TEST(ScanAttributes, AttributesWithoutEffectAreIgnored) {
  // rk3588 lists AveragePool with count_include_pad [1] (default 0): without padding it cannot matter.
  auto k2 = [](ModelBuilder&, onnx::NodeProto* n) { ModelBuilder::Ints(n, "kernel_shape", {2, 2}); ModelBuilder::Ints(n, "strides", {2, 2}); };
  EXPECT_EQ(ScanPool("AveragePool", k2).placement, Placement::kAccel);
  NodeResult padded = ScanPool("AveragePool", [&](ModelBuilder& b, onnx::NodeProto* n) { k2(b, n); ModelBuilder::Ints(n, "pads", {1, 1, 1, 1}); });
  EXPECT_EQ(padded.reason, FallbackReason::kAttributeNotSupported);
  EXPECT_NE(padded.detail.find("count_include_pad"), std::string::npos) << padded.detail;
  // auto_pad VALID pads nothing: the same as NOTSET.
  EXPECT_EQ(ScanPool("AveragePool", [&](ModelBuilder& b, onnx::NodeProto* n) { k2(b, n); ModelBuilder::Str(n, "auto_pad", "VALID"); }).placement,
            Placement::kAccel);
  // ceil_mode=1 (rk3588: [0]) changes nothing when every window fits: 8 = 2*4; on 9 it does.
  auto ceil = [&](ModelBuilder& b, onnx::NodeProto* n) { k2(b, n); ModelBuilder::Int(n, "ceil_mode", 1); };
  EXPECT_EQ(ScanPool("MaxPool", ceil).placement, Placement::kAccel);
  EXPECT_EQ(ScanPool("MaxPool", ceil, {1, 4, 9, 9}).reason, FallbackReason::kAttributeNotSupported);
  // dilations (rk3588 MaxPool: [1]) on an axis whose kernel is 1 have no effect.
  auto dil = [](std::initializer_list<int64_t> k) {
    return [k](ModelBuilder&, onnx::NodeProto* n) { ModelBuilder::Ints(n, "kernel_shape", k); ModelBuilder::Ints(n, "dilations", {2, 2}); };
  };
  EXPECT_EQ(ScanPool("MaxPool", dil({1, 1})).placement, Placement::kAccel);
  EXPECT_EQ(ScanPool("MaxPool", dil({2, 2})).reason, FallbackReason::kAttributeNotSupported);
  // Pad mode (rk3588: constant) does nothing when every pad is 0.
  auto pad = [](std::vector<int64_t> pads) {
    return [pads](ModelBuilder& b, onnx::NodeProto* n) {
      b.InitInt64("pads", pads);
      n->add_input("pads");
      ModelBuilder::Str(n, "mode", "reflect");
    };
  };
  EXPECT_EQ(ScanPool("Pad", pad({0, 0, 0, 0, 0, 0, 0, 0})).placement, Placement::kAccel);
  EXPECT_EQ(ScanPool("Pad", pad({0, 0, 1, 1, 0, 0, 1, 1})).reason, FallbackReason::kAttributeNotSupported);
}

namespace {

NodeResult ScanResize(const std::string& profile, std::vector<float> scales, int64_t opset = 13, const std::string& mode = "nearest",
                      const std::string& ctm = "asymmetric") {
  ModelBuilder b(opset);
  b.Input("x", {1, 4, 8, 8});
  b.Init("roi", {0}, {});
  b.Init("scales", {4}, scales);
  auto* n = b.Node("Resize", {"x", "roi", "scales"}, {"y"});
  ModelBuilder::Str(n, "mode", mode);
  ModelBuilder::Str(n, "coordinate_transformation_mode", ctm);
  b.Output("y");
  auto m = Load(b, "resize");
  if (!m) return {};
  return NodeOf(Scan(*m, P(profile)), "Resize");
}

}  // namespace

TEST(ScanVendorLimits, ResizeScales) {
  // rk3588: scales [1, 8].
  EXPECT_EQ(ScanResize("rk3588-npu", {1, 1, 2, 2}).placement, Placement::kAccel);
  EXPECT_EQ(ScanResize("rk3588-npu", {1, 1, 16, 16}).reason, FallbackReason::kScaleNotSupported);
  EXPECT_EQ(ScanResize("rk3588-npu", {1, 1, 0.5, 0.5}).reason, FallbackReason::kScaleNotSupported);
  // ethos-u55 (quantized): equal W/H scale 2, 4 or 8; half_pixel 2 only.
  auto eu = [](std::vector<float> s, const std::string& ctm) {
    ModelBuilder b;
    b.Input("x", {1, 4, 8, 8}, onnx::TensorProto::INT8);
    b.Init("roi", {0}, {});
    b.Init("scales", {4}, s);
    auto* n = b.Node("Resize", {"x", "roi", "scales"}, {"y"});
    ModelBuilder::Str(n, "coordinate_transformation_mode", ctm);
    b.Output("y");
    auto m = Load(b, "resize_eu");
    return m ? NodeOf(Scan(*m, P("ethos-u55")), "Resize") : NodeResult{};
  };
  EXPECT_EQ(eu({1, 1, 4, 4}, "asymmetric").placement, Placement::kAccel);
  EXPECT_EQ(eu({1, 1, 4, 4}, "half_pixel").reason, FallbackReason::kScaleNotSupported);
  EXPECT_EQ(eu({1, 1, 2, 2}, "half_pixel").placement, Placement::kAccel);
  EXPECT_EQ(eu({1, 1, 2, 4}, "asymmetric").reason, FallbackReason::kScaleNotSupported);  // unequal
  EXPECT_EQ(eu({1, 1, 3, 3}, "asymmetric").reason, FallbackReason::kScaleNotSupported);
}

TEST(ScanVendorLimits, HexagonResizeCases) {
  // nearest + asymmetric needs nearest_mode=floor (default round_prefer_floor); linear does not care.
  EXPECT_EQ(ScanResize("hexagon-htp", {1, 1, 2, 2}).reason, FallbackReason::kAttributeNotSupported);
  EXPECT_EQ(ScanResize("hexagon-htp", {1, 1, 2, 2}, 13, "linear").placement, Placement::kAccel);
  EXPECT_EQ(ScanResize("hexagon-htp", {1, 1, 2, 2}, 13, "nearest", "half_pixel").placement, Placement::kAccel);
}

namespace {

NodeResult ScanBinary(const std::string& op, std::initializer_list<int64_t> b_dims, size_t b_count) {
  ModelBuilder b;
  b.Input("x", {1, 4, 8, 8});
  b.Init("b", b_dims, std::vector<float>(b_count, 2.0f));
  b.Node(op, {"x", "b"}, {"y"});
  b.Output("y");
  auto m = Load(b, "binary");
  return m ? NodeOf(Scan(*m, P("rk3588-npu")), op) : NodeResult{};
}

}  // namespace

TEST(ScanVendorLimits, Broadcasting) {
  // rk3588: Div per-element/other only; Mul per-layer/channel/element.
  EXPECT_EQ(ScanBinary("Div", {1}, 1).reason, FallbackReason::kBroadcastNotSupported);
  EXPECT_EQ(ScanBinary("Div", {1, 4, 8, 8}, 256).placement, Placement::kAccel);
  EXPECT_EQ(ScanBinary("Mul", {1, 4, 1, 1}, 4).placement, Placement::kAccel);
  EXPECT_EQ(ScanBinary("Mul", {8}, 8).reason, FallbackReason::kBroadcastNotSupported);  // along the width: "other"
  EXPECT_EQ(ScanBinary("Add", {8}, 8).placement, Placement::kAccel);                    // Add has no limit
}

TEST(ScanVendorLimits, InputValues) {
  // Slice steps must be 1 (rk3588, ethos-u55).
  auto slice = [](int64_t step) {
    ModelBuilder b;
    b.Input("x", {1, 4, 8, 8});
    b.InitInt64("starts", {0});
    b.InitInt64("ends", {8});
    b.InitInt64("axes", {3});
    b.InitInt64("steps", {step});
    b.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    b.Output("y");
    auto m = Load(b, "slice");
    return m ? NodeOf(Scan(*m, P("rk3588-npu")), "Slice") : NodeResult{};
  };
  EXPECT_EQ(slice(1).placement, Placement::kAccel);
  NodeResult s2 = slice(2);
  EXPECT_EQ(s2.reason, FallbackReason::kInputValueNotSupported);
  EXPECT_NE(s2.detail.find("input 4"), std::string::npos) << s2.detail;
  // Clip on ethos-u55: RELU6 / RELU_N1_TO_1 / RELU bounds only.
  auto clip = [](std::vector<float> bounds) {
    ModelBuilder b;
    b.Input("x", {1, 4, 8, 8}, onnx::TensorProto::INT8);
    b.Init("lo", {}, {bounds[0]});
    std::vector<std::string> in = {"x", "lo"};
    if (bounds.size() > 1) b.Init("hi", {}, {bounds[1]});
    auto* n = b.Node("Clip", {"x", "lo"}, {"y"});
    if (bounds.size() > 1) n->add_input("hi");
    b.Output("y");
    auto m = Load(b, "clip");
    return m ? NodeOf(Scan(*m, P("ethos-u55")), "Clip") : NodeResult{};
  };
  EXPECT_EQ(clip({0, 6}).placement, Placement::kAccel);
  EXPECT_EQ(clip({-1, 1}).placement, Placement::kAccel);
  EXPECT_EQ(clip({0}).placement, Placement::kAccel);
  EXPECT_EQ(clip({0, 5}).reason, FallbackReason::kInputValueNotSupported);
  EXPECT_EQ(clip({-1, 6}).reason, FallbackReason::kInputValueNotSupported);
}

TEST(ScanVendorLimits, PerOpVendorLimitBeatsBlanketMaxDim) {
  // A Gemm with K = 25088 (VGG's first fully connected layer): the RKNN list gives Gemm no dimension limit.
  auto gemm = [](const Profile& p) {
    ModelBuilder b;
    b.Input("x", {1, 25088});
    b.Init("w", {25088, 2}, std::vector<float>(50176, 0.5f));
    b.Node("Gemm", {"x", "w"}, {"y"});
    b.Output("y");
    auto m = Load(b, "gemm");
    return m ? NodeOf(Scan(*m, p), "Gemm") : NodeResult{};
  };
  EXPECT_EQ(gemm(P("rk3588-npu")).placement, Placement::kAccel);
  // Precedence: a blanket max_dim in defaults applies unless the op has the vendor's dim_limits.
  nlohmann::json j = P("rk3588-npu").raw;
  j["defaults"]["max_dim"] = 8192;
  auto blanket = Profile::FromJson(j, "blanket.json");
  ASSERT_TRUE(blanket.ok()) << blanket.status().message();
  EXPECT_EQ(gemm(blanket.value()).reason, FallbackReason::kDimLimit);
  j["ops"]["ai.onnx"]["Gemm"] = {{"dim_limits", {{"channel", {1, 65536}}}}};
  auto vendor = Profile::FromJson(j, "vendor.json");
  ASSERT_TRUE(vendor.ok()) << vendor.status().message();
  EXPECT_EQ(gemm(vendor.value()).placement, Placement::kAccel);
  j["ops"]["ai.onnx"]["Gemm"] = {{"dim_limits", {{"channel", {1, 16384}}}}};
  EXPECT_EQ(gemm(Profile::FromJson(j, "vendor2.json").value()).reason, FallbackReason::kDimLimit);
}

TEST(ScanVendorLimits, PerAxisDimLimitsAndBatchAxis) {
  // rk3588 Softmax: channel [1, 8192]; LSTM batch 1 (dim 1 of X in the default layout).
  ModelBuilder b;
  b.Input("x", {1, 9000});
  auto* s = b.Node("Softmax", {"x"}, {"y"});
  ModelBuilder::Int(s, "axis", 1);
  b.Output("y");
  auto m = Load(b, "softmax");
  ASSERT_TRUE(m);
  EXPECT_EQ(NodeOf(Scan(*m, P("rk3588-npu")), "Softmax").reason, FallbackReason::kDimLimit);
  for (int64_t batch : {1, 2}) {
    ModelBuilder l;
    l.Input("x", {5, batch, 3});
    l.Init("W", {1, 8, 3}, std::vector<float>(24, 0.1f));
    l.Init("R", {1, 8, 2}, std::vector<float>(16, 0.1f));
    auto* n = l.Node("LSTM", {"x", "W", "R"}, {"y"});
    ModelBuilder::Int(n, "hidden_size", 2);
    l.Output("y");
    auto lm = Load(l, "lstm");
    ASSERT_TRUE(lm);
    NodeResult r = NodeOf(Scan(*lm, P("rk3588-npu")), "LSTM");
    if (batch == 1) EXPECT_EQ(r.placement, Placement::kAccel) << r.detail;
    else EXPECT_EQ(r.reason, FallbackReason::kBatchLimit) << r.detail;
  }
}

TEST(ScanVendorLimits, EthosGlobalAveragePoolSpatialSize) {
  // Vela: MEAN over H and W with H*W <= 65536.
  for (int64_t side : {200, 300}) {
    ModelBuilder b;
    b.Input("x", {1, 4, side, side}, onnx::TensorProto::INT8);
    b.Node("GlobalAveragePool", {"x"}, {"y"});
    b.Output("y");
    auto m = Load(b, "gap");
    ASSERT_TRUE(m);
    NodeResult r = NodeOf(Scan(*m, P("ethos-u55")), "GlobalAveragePool");
    if (side == 200) EXPECT_EQ(r.placement, Placement::kAccel) << r.detail;
    else EXPECT_EQ(r.reason, FallbackReason::kDimLimit) << r.detail;
  }
}

TEST(ScanVendorLimits, EthosPadAxesAndReduceMeanAxes) {
  // Vela pads width and height only; MEAN over height and width only (ReduceMean's default is every axis).
  auto pad = [](std::vector<int64_t> pads) {
    ModelBuilder b;
    b.Input("x", {1, 4, 8, 8}, onnx::TensorProto::INT8);
    b.InitInt64("pads", pads);
    b.Node("Pad", {"x", "pads"}, {"y"});
    b.Output("y");
    auto m = Load(b, "pad_eu");
    return m ? NodeOf(Scan(*m, P("ethos-u55")), "Pad") : NodeResult{};
  };
  EXPECT_EQ(pad({0, 0, 1, 1, 0, 0, 1, 1}).placement, Placement::kAccel);
  EXPECT_EQ(pad({0, 1, 1, 1, 0, 0, 1, 1}).reason, FallbackReason::kInputValueNotSupported);
  auto mean = [](std::vector<int64_t> axes) {
    ModelBuilder b;
    b.Input("x", {1, 4, 8, 8}, onnx::TensorProto::INT8);
    auto* n = b.Node("ReduceMean", {"x"}, {"y"});
    if (!axes.empty()) {
      auto* a = n->add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : axes) a->add_ints(x);
    }
    b.Output("y");
    auto m = Load(b, "mean_eu");
    return m ? NodeOf(Scan(*m, P("ethos-u55")), "ReduceMean") : NodeResult{};
  };
  EXPECT_EQ(mean({2, 3}).placement, Placement::kAccel);
  EXPECT_EQ(mean({-2, -1}).placement, Placement::kAccel);
  EXPECT_EQ(mean({1}).reason, FallbackReason::kAttributeNotSupported);
  EXPECT_EQ(mean({}).reason, FallbackReason::kAttributeNotSupported);
}
