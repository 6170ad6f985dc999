// quantize: types, fallbacks for rows that do not fit, values close to the input.
#include "tooling/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tooling/synth.h"

namespace edgedecode::tooling {
namespace {

const std::string kGguf = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/";
std::string Tmp(const std::string& n) { return ::testing::TempDir() + "/tooling_q_" + n; }

std::vector<float> Deq(const gguf::TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const size_t rb = RowBytes(t.ggml_type(), t.dims[0]);
  for (int64_t r = 0; r < t.rows(); ++r) quant::DequantizeRow(t.ggml_type(), t.data + r * rb, v.data() + r * t.dims[0], t.dims[0]);
  return v;
}

TEST(Quantize, Q8_0WithFallbackMatchesInput) {
  QuantizeOptions o;
  ASSERT_TRUE(ParseQuantizeType("q8_0", &o).ok());
  std::vector<std::string> logged;
  o.log = [&](const std::string& s) { logged.push_back(s); };
  QuantizeStats st;
  Status s = QuantizeModel(kGguf + "stories260K.f32.gguf", Tmp("q8.gguf"), o, &st);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(st.fallbacks, 5);  // ffn_down rows are 172 long: not a multiple of 32
  ASSERT_EQ(logged.size(), 5u);
  EXPECT_NE(logged[0].find("ffn_down"), std::string::npos);
  auto in = gguf::File::Open(kGguf + "stories260K.f32.gguf");
  auto out = gguf::File::Open(Tmp("q8.gguf"));
  ASSERT_TRUE(in.ok() && out.ok());
  EXPECT_EQ((*out)->GetIntOr("general.file_type", -1), 7);
  EXPECT_EQ((*out)->GetIntOr("general.quantization_version", -1), 2);
  for (const auto& t : (*in)->tensors()) {
    const gguf::TensorInfo* q = (*out)->FindTensor(t.name);
    ASSERT_NE(q, nullptr) << t.name;
    if (t.dims.size() == 1) EXPECT_EQ(q->ggml_type(), GgmlType::kF32) << t.name;
    else if (t.name.find("ffn_down") != std::string::npos) EXPECT_EQ(q->ggml_type(), GgmlType::kF16) << t.name;
    else EXPECT_EQ(q->ggml_type(), GgmlType::kQ8_0) << t.name;
    auto a = Deq(t), b = Deq(*q);
    double err = 0, ref = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      err += (a[i] - b[i]) * (a[i] - b[i]);
      ref += a[i] * a[i];
    }
    EXPECT_LT(std::sqrt(err / ref), 0.01) << t.name;
  }
}

// lfm2's short-convolution kernels stay f32 (rows of 3: f16 would be the fallback), the matrices around them
// take the type.
TEST(Quantize, Lfm2ConvKernelStaysF32) {
  SynthConfig sc;
  sc.shape = Preset("lfm2-tiny").value();
  sc.type = GgmlType::kF32;
  ASSERT_TRUE(SynthesizeModel(sc, Tmp("lfm2.f32.gguf")).ok());
  QuantizeOptions o;
  ASSERT_TRUE(ParseQuantizeType("q4_k", &o).ok());
  QuantizeStats st;
  Status s = QuantizeModel(Tmp("lfm2.f32.gguf"), Tmp("lfm2.q4_k.gguf"), o, &st);
  ASSERT_TRUE(s.ok()) << s.message();
  auto out = gguf::File::Open(Tmp("lfm2.q4_k.gguf"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)->FindTensor("blk.0.shortconv.conv.weight")->ggml_type(), GgmlType::kF32);
  EXPECT_EQ((*out)->FindTensor("blk.0.shortconv.in_proj.weight")->ggml_type(), GgmlType::kQ4_K);
  EXPECT_EQ((*out)->FindTensor("blk.1.attn_q.weight")->ggml_type(), GgmlType::kQ4_K);
}

TEST(Quantize, OverrideAndBadArgs) {
  QuantizeOptions o;
  ASSERT_TRUE(ParseQuantizeType("q4_0", &o).ok());
  o.overrides.emplace_back(R"(blk\.\d+\.ffn_down\.weight)", GgmlType::kQ8_0);  // q8_0 does not fit 172 either -> f16
  o.overrides.emplace_back("attn_q", GgmlType::kF16);             // anchored: matches no tensor name
  o.overrides.emplace_back(R"(blk\.0\.attn_k\.weight)", GgmlType::kF16);
  QuantizeStats st;
  ASSERT_TRUE(QuantizeModel(kGguf + "stories260K.f32.gguf", Tmp("q4.gguf"), o, &st).ok());
  auto out = gguf::File::Open(Tmp("q4.gguf"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)->FindTensor("blk.0.attn_q.weight")->ggml_type(), GgmlType::kQ4_0);
  EXPECT_EQ((*out)->FindTensor("blk.0.attn_k.weight")->ggml_type(), GgmlType::kF16);
  EXPECT_EQ((*out)->FindTensor("blk.1.attn_k.weight")->ggml_type(), GgmlType::kQ4_0);
  EXPECT_EQ((*out)->FindTensor("blk.0.ffn_down.weight")->ggml_type(), GgmlType::kF16);
  // Every tensor whose type changed is reported, with why.
  bool saw_override = false;
  for (const TypeChange& c : st.changes) {
    EXPECT_NE(c.from, c.to) << c.tensor;
    if (c.tensor == "blk.0.attn_k.weight") {
      saw_override = true;
      EXPECT_EQ(c.why, R"(override blk\.0\.attn_k\.weight)");
    }
  }
  EXPECT_TRUE(saw_override);
  QuantizeOptions bad;
  EXPECT_FALSE(ParseQuantizeType("q9_9", &bad).ok());
  EXPECT_FALSE(ParseQuantizeType("iq2_xs", &bad).ok());
  Status s = QuantizeModel(Tmp("does-not-exist.gguf"), Tmp("x.gguf"), o);
  EXPECT_FALSE(s.ok());
  o.overrides = {{"(", GgmlType::kF16}};
  EXPECT_EQ(QuantizeModel(kGguf + "stories260K.f32.gguf", Tmp("x.gguf"), o).code(), StatusCode::kInvalidArgument);
}

TEST(Quantize, RequantizingNeedsToBeAskedFor) {
  QuantizeOptions o;
  ASSERT_TRUE(ParseQuantizeType("q4_0", &o).ok());
  Status s = QuantizeModel(kGguf + "stories260K.q8_0-ffn_down_f16.gguf", Tmp("rq.gguf"), o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_NE(s.message().find("--allow-requantize"), std::string::npos) << s.message();
  o.allow_requantize = true;
  s = QuantizeModel(kGguf + "stories260K.q8_0-ffn_down_f16.gguf", Tmp("rq.gguf"), o);
  EXPECT_TRUE(s.ok()) << s.message();
}

}  // namespace
}  // namespace edgedecode::tooling
