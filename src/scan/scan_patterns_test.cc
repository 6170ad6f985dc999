// Decomposed LayerNorm / GELU and their fused ops: found by structure (not by op names alone), and the
// suggestions: fuse where the device has the fused op, decompose (or approximate GELU) where it has not.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "scan/onnx_model.h"
#include "scan/patterns.h"
#include "scan/scanner.h"

using namespace edgedecode::scan;

namespace {

const std::string kData = EDGEDECODE_TESTDATA;
const std::string kTargets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets";

Profile P(const std::string& name) {
  auto p = Profile::Load(kTargets + "/" + name + ".json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.value();
}

// A small model written node by node: x float[1,8] in, y out.
struct Builder {
  onnx::ModelProto m;
  explicit Builder(int opset, bool ms = false) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    if (ms) {
      auto* o = m.add_opset_import();
      o->set_domain("com.microsoft");
      o->set_version(1);
    }
    auto* g = m.mutable_graph();
    g->set_name("patterns");
    auto* x = g->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (int d : {1, 8}) x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    auto* y = g->add_output();
    y->set_name("y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  void Const(const std::string& name, float v, int64_t n = 0) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    if (n) t->add_dims(n);
    for (int64_t i = 0; i < std::max<int64_t>(n, 1); ++i) t->add_float_data(v);
  }
  void Node(const std::string& op, std::vector<std::string> in, const std::string& out, const std::string& domain = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(out + "_node");
    n->set_domain(domain);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
  }
  std::unique_ptr<OnnxModel> Load() {
    auto r = OnnxModel::FromProto(m, "patterns.onnx");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return std::move(r.value());
  }
};

std::string Suggestion(const ScanReport& r, const std::string& needle) {
  for (const auto& s : r.suggestions) if (s.find(needle) != std::string::npos) return s;
  return "";
}

std::unique_ptr<OnnxModel> Gelu(bool tensorflow_order, float div = std::sqrt(2.f)) {
  Builder b(13);
  b.Const("half", 0.5f);
  b.Const("one", 1.f);
  if (tensorflow_order) {
    b.Const("rsqrt2", 1 / std::sqrt(2.f));
    b.Node("Mul", {"x", "half"}, "h");
    b.Node("Mul", {"x", "rsqrt2"}, "s");
    b.Node("Erf", {"s"}, "e");
    b.Node("Add", {"e", "one"}, "a");
    b.Node("Mul", {"h", "a"}, "y");
  } else {
    b.Const("sqrt2", div);
    b.Node("Div", {"x", "sqrt2"}, "s");
    b.Node("Erf", {"s"}, "e");
    b.Node("Add", {"e", "one"}, "a");
    b.Node("Mul", {"x", "a"}, "m");
    b.Node("Mul", {"m", "half"}, "y");
  }
  return b.Load();
}

}  // namespace

TEST(ScanPatterns, DecomposedLayerNormsInOpenWakeWord) {
  auto m = OnnxModel::Load(kData + "/models/onnx/openwakeword-hello_deepa.onnx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto pats = FindOpPatterns(*m.value());
  ASSERT_EQ(pats.size(), 2u);
  for (const auto& p : pats) {
    EXPECT_EQ(p.kind, "layernorm");
    EXPECT_FALSE(p.fused);
    EXPECT_EQ(p.ops, (std::vector<std::string>{"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}));
  }
  EXPECT_EQ(pats[0].nodes[0], "/layernorm1/ReduceMean");
  // Hexagon has LayerNormalization: fuse (the model is opset 13, so say that it needs opset 17).
  std::string fuse = Suggestion(Scan(*m.value(), P("hexagon-htp")), "decomposed LayerNorm");
  EXPECT_NE(fuse.find("2 decomposed LayerNorm"), std::string::npos) << fuse;
  EXPECT_NE(fuse.find("fuse each into one LayerNormalization"), std::string::npos) << fuse;
  EXPECT_NE(fuse.find("opset 13"), std::string::npos) << fuse;
  // The TFLite GPU delegate has neither it nor ReduceMean/Pow/Sqrt/Div: say which, and the substitutes.
  std::string gpu = Suggestion(Scan(*m.value(), P("mobile-gpu-tflite")), "decomposed LayerNorm");
  EXPECT_NE(gpu.find("lacks LayerNormalization and Div, Pow, ReduceMean, Sqrt"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("MatMul by a constant column of 1/N"), std::string::npos) << gpu;
  // rk3588 runs every op of the decomposition and has no fused op: nothing to say.
  EXPECT_EQ(Suggestion(Scan(*m.value(), P("rk3588-npu")), "LayerNorm"), "");
}

TEST(ScanPatterns, DecomposedGeluInBothExportOrders) {
  for (bool tf : {false, true}) {
    auto m = Gelu(tf);
    auto pats = FindOpPatterns(*m);
    ASSERT_EQ(pats.size(), 1u) << tf;
    EXPECT_EQ(pats[0].kind, "gelu");
    EXPECT_EQ(pats[0].nodes.size(), 5u);
    std::string fuse = Suggestion(Scan(*m, P("hexagon-htp")), "GELU");
    EXPECT_NE(fuse.find("fuse each into one Gelu (com.microsoft Gelu)"), std::string::npos) << fuse;
    std::string rk = Suggestion(Scan(*m, P("rk3588-npu")), "GELU");  // no Erf there
    EXPECT_NE(rk.find("lacks Erf"), std::string::npos) << rk;
    EXPECT_NE(rk.find("tanh"), std::string::npos) << rk;
    EXPECT_NE(rk.find("4.7e-4"), std::string::npos) << rk;
  }
  // Not GELU: divided by 2 instead of sqrt(2).
  EXPECT_TRUE(FindOpPatterns(*Gelu(false, 2.f)).empty());
}

TEST(ScanPatterns, FusedOpsAreDecomposedWhereTheDeviceLacksThem) {
  Builder ln(17);
  ln.Const("gamma", 1.f, 8);
  ln.Const("beta", 0.f, 8);
  ln.Node("LayerNormalization", {"x", "gamma", "beta"}, "y");
  auto m = ln.Load();
  auto pats = FindOpPatterns(*m);
  ASSERT_EQ(pats.size(), 1u);
  EXPECT_TRUE(pats[0].fused);
  std::string rk = Suggestion(Scan(*m, P("rk3588-npu")), "LayerNormalization");
  EXPECT_NE(rk.find("decompose it into ReduceMean-Sub-Mul-ReduceMean-Add-Sqrt-Div-Mul-Add"), std::string::npos) << rk;
  EXPECT_EQ(Suggestion(Scan(*m, P("hexagon-htp")), "LayerNormalization"), "");

  Builder g(13, true);
  g.Node("Gelu", {"x"}, "y", "com.microsoft");
  auto mg = g.Load();
  std::string gs = Suggestion(Scan(*mg, P("rk3588-npu")), "1 Gelu (");
  EXPECT_NE(gs.find("nor Erf"), std::string::npos) << gs;
  EXPECT_NE(gs.find("sigmoid(1.702x)"), std::string::npos) << gs;
  EXPECT_EQ(Suggestion(Scan(*mg, P("hexagon-htp")), "1 Gelu ("), "");
}
