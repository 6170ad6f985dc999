// scan on real models and on every upstream ONNX node test model: each parses, each node is placed
// with a reason, totals add up; expected placements for chosen nodes; profiles load.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <ostream>
#include <set>

#include "scan/gguf_scan.h"
#include "scan/onnx_model.h"
#include "scan/scanner.h"

namespace fs = std::filesystem;
using namespace edgedecode::scan;

namespace edgedecode::scan {
// gtest prints a FallbackReason (also inside std::optional) by its code.
void PrintTo(FallbackReason r, std::ostream* os) { *os << FallbackReasonCode(r); }
}  // namespace edgedecode::scan

namespace {

const std::string kData = EDGEDECODE_TESTDATA;
const std::string kTargets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets";
const std::vector<std::string> kProfiles = {"rk3588-npu", "ethos-u55", "hexagon-htp", "mobile-gpu-tflite", "cpu"};

Profile P(const std::string& name) {
  auto p = Profile::Load(kTargets + "/" + name + ".json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.value();
}

void CheckTotals(const ScanReport& r, size_t n_nodes, const std::string& what) {
  ASSERT_EQ(r.nodes.size(), n_nodes) << what;
  EXPECT_EQ(r.n_accel + r.n_cpu + r.n_folded, static_cast<int>(n_nodes)) << what;
  int64_t sum = 0;
  int unknown = 0;
  for (const auto& t : r.transitions) { if (t.bytes < 0) ++unknown; else sum += t.bytes; }
  EXPECT_EQ(sum, r.bytes) << what;
  EXPECT_EQ(unknown, r.unknown_transitions) << what;
  for (const auto& n : r.nodes) {
    switch (n.placement) {
      case Placement::kCpu: EXPECT_TRUE(n.reason && n.reason != FallbackReason::kConstant) << what << ": " << n.name; break;
      case Placement::kAccel: EXPECT_FALSE(n.reason.has_value()) << what << ": " << n.name; break;
      case Placement::kFolded: EXPECT_EQ(n.reason, FallbackReason::kConstant) << what << ": " << n.name; break;
    }
  }
  if (r.n_accel == 0) EXPECT_EQ(r.partitions, 0) << what;
  else EXPECT_GE(r.partitions, 1) << what;
  EXPECT_LE(r.partitions, r.n_accel) << what;
  EXPECT_NE(r.SummaryLine().find("verdict: " + r.verdict), std::string::npos);
}

const NodeResult* NodeNamed(const ScanReport& r, const std::string& name) {
  for (const auto& n : r.nodes) if (n.name == name) return &n;
  return nullptr;
}

std::vector<std::string> RealModels() {
  std::vector<std::string> v;
  for (const auto& e : fs::recursive_directory_iterator(kData + "/models/onnx"))
    if (e.path().extension() == ".onnx") v.push_back(e.path().string());
  for (const auto& e : fs::directory_iterator(kData + "/onnx-upstream-1.23/light"))
    if (e.path().extension() == ".onnx") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST(ScanProfiles, AllShippedProfilesLoadAndNameTheirSource) {
  for (const auto& name : kProfiles) {
    Profile p = P(name);
    EXPECT_EQ(p.name, name);
    EXPECT_FALSE(p.source.empty()) << name;
    EXPECT_GT(p.memory_bytes, 0) << name;
    EXPECT_GT(p.bandwidth, 0) << name;
    EXPECT_TRUE(p.raw.contains("image_decoder")) << name;
  }
  EXPECT_FALSE(Profile::Load(kTargets + "/no-such-device.json").ok());
}

TEST(ScanRealModels, EveryModelParsesAndEveryNodeIsPlacedOnEveryProfile) {
  auto models = RealModels();
  ASSERT_GE(models.size(), 15u);
  for (const auto& path : models) {
    auto m = OnnxModel::Load(path);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_GT(m.value()->nodes().size(), 0u);
    for (const auto& prof : kProfiles) {
      ScanReport r = Scan(*m.value(), P(prof));
      CheckTotals(r, m.value()->nodes().size(), path + " on " + prof);
      if (prof == "cpu") {
        EXPECT_EQ(r.n_cpu, 0) << path;  // the cpu profile runs everything
        EXPECT_TRUE(r.transitions.empty()) << path;
      }
    }
  }
}

TEST(ScanRealModels, Mnist8PlacementsPerProfile) {
  auto m = OnnxModel::Load(kData + "/models/onnx/mnist-8.onnx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ScanReport rk = Scan(*m.value(), P("rk3588-npu"));
  ASSERT_NE(NodeNamed(rk, "Convolution28"), nullptr);
  EXPECT_EQ(NodeNamed(rk, "Convolution28")->placement, Placement::kAccel);
  EXPECT_EQ(NodeNamed(rk, "Pooling66")->placement, Placement::kAccel);
  EXPECT_EQ(NodeNamed(rk, "Times212_reshape1")->placement, Placement::kFolded);  // Reshape of a constant
  EXPECT_EQ(rk.verdict, "GOOD");
  // Ethos-U takes only integer tensors: float32 MNIST falls back, quantized it runs.
  ScanReport eu = Scan(*m.value(), P("ethos-u55"));
  EXPECT_EQ(NodeNamed(eu, "Convolution28")->placement, Placement::kCpu);
  EXPECT_EQ(NodeNamed(eu, "Convolution28")->reason, FallbackReason::kDtypeNotSupported);
  ScanOptions q;
  q.quantized = true;
  ScanReport euq = Scan(*m.value(), P("ethos-u55"), q);
  EXPECT_EQ(NodeNamed(euq, "Convolution28")->placement, Placement::kAccel);
  EXPECT_EQ(NodeNamed(euq, "Times212")->placement, Placement::kAccel);  // constant weights -> FULLY_CONNECTED
}

TEST(ScanRealModels, FastestDetResizeNearestFallsBackOnTfliteGpuOnly) {
  auto m = OnnxModel::Load(kData + "/models/onnx/ortx/ppp_vision__FastestDet.onnx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ScanReport gpu = Scan(*m.value(), P("mobile-gpu-tflite"));
  const NodeResult* rs = NodeNamed(gpu, "/upsample/Resize");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->placement, Placement::kCpu);
  EXPECT_EQ(rs->reason, FallbackReason::kAttributeNotSupported);
  EXPECT_NE(rs->detail.find("mode=nearest"), std::string::npos);
  EXPECT_GT(gpu.transitions.size(), 0u);
  EXPECT_GT(gpu.bytes, 0);
  ScanReport rk = Scan(*m.value(), P("rk3588-npu"));
  EXPECT_EQ(NodeNamed(rk, "/upsample/Resize")->placement, Placement::kAccel);
}

TEST(ScanRealModels, CustomDomainOpsFallBackWithReason) {
  auto m = OnnxModel::Load(kData + "/models/onnx/ortx/custom_op_test.onnx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ScanReport r = Scan(*m.value(), P("hexagon-htp"));
  ASSERT_GT(r.nodes.size(), 0u);
  for (const auto& n : r.nodes) {
    EXPECT_EQ(n.placement, Placement::kCpu);
    EXPECT_EQ(n.reason, FallbackReason::kCustomDomain);
  }
  EXPECT_EQ(r.verdict, "BAD");
}

TEST(ScanRealModels, SileroVadSubgraphsAndDynamicInputs) {
  auto m = OnnxModel::Load(kData + "/models/onnx/silero_vad.livekit-1.9.0.onnx");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_GT(m.value()->graphs().size(), 1u);  // If branches are scanned
  ScanReport r = Scan(*m.value(), P("rk3588-npu"));
  EXPECT_FALSE(r.dynamic_inputs.empty());
  bool lstm = false, in_branch = false, dyn = false;
  for (const auto& n : r.nodes) {
    lstm |= n.op_type == "LSTM";
    in_branch |= !n.graph.empty();
    dyn |= n.reason == FallbackReason::kDynamicShape;
  }
  EXPECT_TRUE(lstm);
  EXPECT_TRUE(in_branch);
  EXPECT_TRUE(dyn);
  ASSERT_FALSE(r.suggestions.empty());
  EXPECT_NE(r.suggestions[0].find("--input-shape"), std::string::npos);
}

TEST(ScanRealModels, InputShapeMakesMagikaStatic) {
  std::string path = kData + "/models/onnx/magika_standard_v3_3/model.onnx";
  auto m0 = OnnxModel::Load(path);
  ASSERT_TRUE(m0.ok()) << m0.status().message();
  ScanReport r0 = Scan(*m0.value(), P("hexagon-htp"));
  ASSERT_FALSE(r0.dynamic_inputs.empty());
  // Fix the symbolic batch dim to 1, keeping the other dims.
  const std::string in = m0.value()->graphs()[0].inputs[0];
  const ValueInfo* v = m0.value()->Find(in);
  ASSERT_NE(v, nullptr);
  std::vector<int64_t> dims;
  for (const auto& d : v->dims) dims.push_back(d.known() ? d.value : 1);
  auto m1 = OnnxModel::Load(path, {{in, dims}});
  ASSERT_TRUE(m1.ok()) << m1.status().message();
  ScanReport r1 = Scan(*m1.value(), P("hexagon-htp"));
  EXPECT_TRUE(r1.dynamic_inputs.empty());
  int dyn0 = 0, dyn1 = 0;
  for (const auto& n : r0.nodes) dyn0 += n.reason == FallbackReason::kDynamicShape;
  for (const auto& n : r1.nodes) dyn1 += n.reason == FallbackReason::kDynamicShape;
  EXPECT_GT(dyn0, 0);
  EXPECT_LT(dyn1, dyn0);
  auto bad = OnnxModel::Load(path, {{"no_such_input", {1}}});
  EXPECT_FALSE(bad.ok());
}

// Every upstream node test model parses and every node is placed (or reported unknown), no crash.
TEST(ScanNodeModels, AllNodeTestModelsParseAndArePlaced) {
  Profile rk = P("rk3588-npu");
  int n_models = 0, unknown = 0, subgraph_nodes = 0;
  for (const auto& e : fs::directory_iterator(kData + "/onnx-upstream-1.23/node")) {
    fs::path f = e.path() / "model.onnx";
    if (!fs::exists(f)) continue;
    ++n_models;
    auto m = OnnxModel::Load(f.string());
    ASSERT_TRUE(m.ok()) << m.status().message();
    ScanReport r = Scan(*m.value(), rk);
    CheckTotals(r, m.value()->nodes().size(), f.string());
    for (const auto& n : r.nodes) {
      unknown += n.reason == FallbackReason::kUnknownOp;
      subgraph_nodes += !n.graph.empty();
    }
  }
  EXPECT_GE(n_models, 1800);
  EXPECT_GT(unknown, 0);         // opset 19+ ops unknown to libonnx 1.12 are reported, not dropped
  EXPECT_GT(subgraph_nodes, 0);  // If/Loop/Scan bodies are scanned
}

TEST(ScanGguf, WeightTypesAgainstProfileMatmulTypes) {
  std::string path = kData + "/llm/gguf/stories260K.q4_0-ffn_down_f16.gguf";
  ASSERT_TRUE(LooksLikeGguf(path));
  auto r = ScanGguf(path, P("rk3588-npu"));  // matmul_types f16, q8_0
  ASSERT_TRUE(r.ok()) << r.status().message();
  const NodeResult* q = NodeNamed(r.value(), "blk.0.attn_q.weight");
  const NodeResult* down = NodeNamed(r.value(), "blk.0.ffn_down.weight");
  ASSERT_NE(q, nullptr);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(q->placement, Placement::kCpu);
  EXPECT_EQ(q->reason, FallbackReason::kDtypeNotSupported);
  EXPECT_EQ(down->placement, Placement::kAccel);  // kept in f16
  CheckTotals(r.value(), r.value().nodes.size(), path);
  EXPECT_GT(r.value().bytes, 0);
  auto cpu = ScanGguf(path, P("cpu"));
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu.value().n_cpu, 0);
  EXPECT_FALSE(ScanGguf(kData + "/llm/corrupt/ggml-vocab-llama-spm.utf8-mangled.gguf", P("cpu")).ok());
  // A block_count the tensors cannot hold is refused before per-layer nodes are made for it (a vocab-only
  // file says 32 blocks and has no tensors).
  auto vocab = ScanGguf(kData + "/vocab/ggml-vocab-llama-spm.gguf", P("cpu"));
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("llama.block_count 32 does not fit the file's 0 tensors"), std::string::npos)
      << vocab.status().message();
}

// The reason codes are a contract (docs/profiles.md): each value has its own non-empty code and text, the
// codes are exactly the strings the reports have always printed, and the doc's table lists every one.
TEST(FallbackReason, EveryValueHasDistinctCodeAndText) {
  std::set<std::string> codes, texts;
  size_t i = 0;
  for (FallbackReason r : AllFallbackReasons()) {
    EXPECT_EQ(static_cast<size_t>(r), i++);
    std::string code = FallbackReasonCode(r), text = FallbackReasonText(r);
    EXPECT_FALSE(code.empty());
    EXPECT_FALSE(text.empty()) << code;
    EXPECT_EQ(code.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string::npos) << code;
    EXPECT_EQ(text.find('\n'), std::string::npos) << code;
    EXPECT_TRUE(codes.insert(code).second) << "duplicate code " << code;
    EXPECT_TRUE(texts.insert(text).second) << "duplicate text for " << code;
  }
  const std::set<std::string> printed = {"op_not_supported", "custom_domain", "unknown_op", "dtype_not_supported",
                                         "dynamic_shape", "rank_limit", "dim_limit", "batch_limit",
                                         "attribute_not_supported", "non_constant_input", "constant",
                                         // added later (codes are only ever added):
                                         "input_value_not_supported", "scale_not_supported", "broadcast_not_supported"};
  EXPECT_EQ(codes, printed);
  NodeResult n;
  EXPECT_EQ(n.ReasonCode(), "");  // on the accelerator the reason column is empty
  n.reason = FallbackReason::kDimLimit;
  EXPECT_EQ(n.ReasonCode(), "dim_limit");

  std::ifstream in(std::string(EDGEDECODE_SOURCE_DIR) + "/docs/profiles.md");
  ASSERT_TRUE(in.good());
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t table = doc.find("## Fallback reasons");
  ASSERT_NE(table, std::string::npos);
  for (const auto& code : codes) EXPECT_NE(doc.find("| `" + code + "` |", table), std::string::npos) << code << " not in the table";
}
