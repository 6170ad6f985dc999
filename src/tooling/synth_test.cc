// synth: determinism, shapes and types, and peaked-but-not-degenerate next-token distributions
// (measured with a small float forward pass written here, independent of src/llm).
#include "tooling/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "gguf/gguf.h"
#include "llm/rope_scaling.h"
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

// The llama3 factors against the formula of llama.cpp's converter (conversion/llama.py,
// generate_extra_tensors), written here in double: Llama-3.2-1B's parameters.
TEST(Synth, Llama3RopeFactorsFollowTheConverter) {
  const int n_rot = 64;
  const double base = 500000, factor = 32, low = 1, high = 4, orig = 8192;
  llm::Llama3RopeScaling s;
  s.factor = 32;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.orig_ctx = 8192;
  const std::vector<float> got = llm::Llama3RopeFactors(n_rot, static_cast<float>(base), s);
  ASSERT_EQ(got.size(), 32u);
  int n_one = 0, n_factor = 0, n_smooth = 0;
  for (int i = 0; i < n_rot / 2; ++i) {
    const double freq = 1.0 / std::pow(base, 2.0 * i / n_rot);
    const double wavelen = 2 * M_PI / freq;
    double want;
    if (wavelen < orig / high) {
      want = 1, ++n_one;
    } else if (wavelen > orig / low) {
      want = factor, ++n_factor;
    } else {
      const double smooth = (orig / wavelen - low) / (high - low);
      want = 1 / ((1 - smooth) / factor + smooth), ++n_smooth;
    }
    EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-5 * want) << "dim pair " << i;
  }
  // Every regime is exercised: short wavelengths kept, long ones divided by 32, a blend between.
  EXPECT_GT(n_one, 0);
  EXPECT_GT(n_factor, 0);
  EXPECT_GT(n_smooth, 0);
}

TEST(Synth, Qwen3AndLlama3Shapes) {
  // Parameter counts of the real models (embeddings included, tied).
  EXPECT_EQ(Preset("qwen3-0.6b")->n_params(), 596049920);
  EXPECT_EQ(Preset("qwen3-1.7b")->n_params(), 1720574976);
  EXPECT_EQ(Preset("llama3.2-1b")->n_params(), 1235814400 + 32);  // + rope_freqs.weight
  SynthConfig c;
  c.shape = Preset("qwen3-tiny").value();
  ASSERT_TRUE(SynthesizeModel(c, Tmp("q3.gguf")).ok());
  auto f = gguf::File::Open(Tmp("q3.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->GetStringOr("general.architecture", ""), "qwen3");
  EXPECT_EQ((*f)->GetIntOr("qwen3.attention.key_length", 0), 128);
  EXPECT_EQ((*f)->GetIntOr("qwen3.attention.value_length", 0), 128);
  EXPECT_EQ((*f)->GetIntOr("qwen3.rope.dimension_count", 0), 128);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.weight")->dims, (std::vector<int64_t>{256, 512}));
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_k.weight")->dims, (std::vector<int64_t>{256, 256}));
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_output.weight")->dims, (std::vector<int64_t>{512, 256}));
  EXPECT_EQ((*f)->FindTensor("blk.3.attn_q_norm.weight")->dims, (std::vector<int64_t>{128}));
  EXPECT_EQ((*f)->FindTensor("blk.3.attn_k_norm.weight")->ggml_type(), GgmlType::kF32);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);  // tied

  c.shape = Preset("llama3-tiny").value();
  ASSERT_TRUE(SynthesizeModel(c, Tmp("l3.gguf")).ok());
  f = gguf::File::Open(Tmp("l3.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  const gguf::TensorInfo* t = (*f)->FindTensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->dims, (std::vector<int64_t>{32}));
  ASSERT_EQ(t->ggml_type(), GgmlType::kF32);
  const std::vector<float> want = RopeFreqFactors(c.shape);
  std::vector<float> stored(32);
  std::memcpy(stored.data(), t->data, sizeof(float) * 32);
  EXPECT_EQ(stored, want);
  EXPECT_EQ(want.front(), 1.0f);
  EXPECT_EQ(want.back(), 32.0f);
  // No rope.scaling.* keys: llama.cpp would read a factor without a type it knows as linear scaling.
  EXPECT_EQ((*f)->GetStringOr("llama.rope.scaling.type", "absent"), "absent");
  EXPECT_EQ((*f)->GetFloatOr("llama.rope.scaling.factor", -1), -1);
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);

  auto j = ShapeFromJson("{\"preset\": \"qwen3-tiny\", \"head_dim\": 64, \"rope_scaling_factor\": 8}", "x.json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->head_dim(), 64);
  EXPECT_TRUE(j->llama3_rope());
  EXPECT_FALSE(ShapeFromJson("{\"preset\": \"llama3-tiny\", \"rope_low_freq_factor\": 5}", "x.json").ok());
}

TEST(Synth, Smollm3Shapes) {
  // SmolLM3-3B: 3.08B parameters, tied (embeddings included).
  EXPECT_EQ(Preset("smollm3-3b")->n_params(), 3075098624);
  SynthConfig c;
  c.shape = Preset("smollm3-tiny").value();
  ASSERT_TRUE(SynthesizeModel(c, Tmp("sm3.gguf")).ok());
  auto f = gguf::File::Open(Tmp("sm3.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->GetStringOr("general.architecture", ""), "smollm3");
  EXPECT_EQ((*f)->GetIntOr("smollm3.block_count", 0), 4);
  EXPECT_EQ((*f)->GetIntOr("smollm3.rope.dimension_count", 0), 32);
  EXPECT_EQ((*f)->FindTensor("blk.3.attn_k.weight")->dims, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);  // tied
  EXPECT_EQ((*f)->FindTensor("rope_freqs.weight"), nullptr);
}

TEST(Synth, Lfm2Shapes) {
  // LFM2-350M and LFM2-1.2B: the parameter counts of LiquidAI's model cards (354,483,968 and 1,170,340,608),
  // which these shapes reproduce only with the converter's FFN widths (4608, 8192), tied embeddings and the
  // six attention layers.
  EXPECT_EQ(Preset("lfm2-350m")->n_params(), 354483968);
  EXPECT_EQ(Preset("lfm2-1.2b")->n_params(), 1170340608);
  SynthConfig c;
  c.shape = Preset("lfm2-tiny").value();
  c.type = GgmlType::kQ8_0;
  ASSERT_TRUE(SynthesizeModel(c, Tmp("lfm2.gguf")).ok());
  auto f = gguf::File::Open(Tmp("lfm2.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->GetStringOr("general.architecture", ""), "lfm2");
  EXPECT_EQ((*f)->GetIntOr("lfm2.shortconv.l_cache", 0), 3);
  auto kv = (*f)->GetIntArray("lfm2.attention.head_count_kv");
  ASSERT_TRUE(kv.ok()) << kv.status().message();
  EXPECT_EQ(*kv, (std::vector<int64_t>{0, 2, 0, 2, 0}));
  EXPECT_EQ((*f)->FindTensor("blk.0.shortconv.conv.weight")->dims, (std::vector<int64_t>{3, 256}));
  EXPECT_EQ((*f)->FindTensor("blk.0.shortconv.conv.weight")->ggml_type(), GgmlType::kF32);  // as the converter keeps it
  EXPECT_EQ((*f)->FindTensor("blk.0.shortconv.in_proj.weight")->dims, (std::vector<int64_t>{256, 768}));
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.weight"), nullptr);
  EXPECT_NE((*f)->FindTensor("blk.1.attn_q_norm.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("blk.1.shortconv.in_proj.weight"), nullptr);
  EXPECT_NE((*f)->FindTensor("token_embd_norm.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("output_norm.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);  // tied
}

TEST(Synth, Phi3Shapes) {
  // Phi-3-mini (3.82B, untied) and Phi-4-mini (3.84B, tied; + 2 x 48 LongRoPE factors).
  EXPECT_EQ(Preset("phi3-mini-4k")->n_params(), 3821079552);
  EXPECT_EQ(Preset("phi4-mini")->n_params(), 3836021760 + 96);
  SynthConfig c;
  c.shape = Preset("phi4-tiny").value();
  ASSERT_TRUE(SynthesizeModel(c, Tmp("phi4.gguf")).ok());
  auto f = gguf::File::Open(Tmp("phi4.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->GetStringOr("general.architecture", ""), "phi3");
  EXPECT_EQ((*f)->GetIntOr("phi3.rope.dimension_count", 0), 24);  // partial rotary: 24 of 32
  EXPECT_EQ((*f)->GetIntOr("phi3.rope.scaling.original_context_length", 0), 32);
  EXPECT_NEAR((*f)->GetFloatOr("phi3.rope.scaling.attn_factor", 0), std::sqrt(1 + std::log(64.0) / std::log(32.0)), 1e-6);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_qkv.weight")->dims, (std::vector<int64_t>{256, 384}));
  EXPECT_EQ((*f)->FindTensor("blk.0.ffn_up.weight")->dims, (std::vector<int64_t>{256, 1536}));
  EXPECT_EQ((*f)->FindTensor("blk.0.ffn_gate.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("blk.0.attn_q.weight"), nullptr);
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);  // tied
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    const gguf::TensorInfo* t = (*f)->FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dims, (std::vector<int64_t>{12}));
    EXPECT_EQ(t->ggml_type(), GgmlType::kF32);
  }
  const std::vector<float> lf = LongRopeFactors(c.shape, true), sf = LongRopeFactors(c.shape, false);
  EXPECT_EQ(lf.front(), 1.0f);
  EXPECT_NEAR(lf.back(), 64.0f, 1e-4);  // 2048 / 32
  EXPECT_NEAR(sf.back(), 2.0f, 1e-6);
  c.shape = Preset("phi3-tiny").value();
  ASSERT_TRUE(SynthesizeModel(c, Tmp("phi3.gguf")).ok());
  f = gguf::File::Open(Tmp("phi3.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->GetIntOr("phi3.attention.sliding_window", 0), 2047);
  EXPECT_NE((*f)->FindTensor("output.weight"), nullptr);
  EXPECT_FALSE(ShapeFromJson("{\"preset\": \"llama-tiny\", \"longrope\": true}", "x.json").ok());
  EXPECT_FALSE(ShapeFromJson("{\"preset\": \"phi4-tiny\", \"rope_dims\": 33}", "x.json").ok());
}

TEST(Synth, BadConfig) {
  EXPECT_FALSE(Preset("nope").ok());
  EXPECT_FALSE(ShapeFromJson("{\"dim\": 100, \"n_heads\": 3}", "x.json").ok());
  EXPECT_FALSE(ShapeFromJson("{\"dimm\": 256}", "x.json").ok());
  EXPECT_FALSE(ShapeFromJson("[1,2", "x.json").ok());
  // n_heads with an explicit head_dim is bounded too (n_heads * head_dim overflowed in ModelTensors).
  auto huge = ShapeFromJson("{\"n_heads\": 4611686018427387904, \"n_kv_heads\": 1, \"head_dim\": 2}", "x.json");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("absurdly large"), std::string::npos) << huge.status().message();
  auto s = ShapeFromJson("{\"preset\": \"qwen2-tiny\", \"n_layers\": 2}", "x.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->n_layers, 2);
  EXPECT_TRUE(s->qkv_bias);
  SynthConfig c;
  c.shape = Preset("llama-tiny").value();
  c.shape.vocab = 100;
  EXPECT_FALSE(SynthesizeModel(c, Tmp("v.gguf")).ok());
}

// Wrong JSON types name the key and the type it needs (no float silently truncated to an integer, no 1e30
// converted with undefined behaviour); text nested a million deep is refused before it is parsed.
TEST(Synth, ConfigTypesAndDepth) {
  auto err = [](const std::string& text) {
    auto s = ShapeFromJson(text, "c.json");
    return s.ok() ? std::string("accepted") : s.status().message();
  };
  EXPECT_EQ(err("{\"dim\": \"256\"}"), "c.json: key 'dim' must be an integer, got a JSON string");
  EXPECT_EQ(err("{\"dim\": 256.5}"), "c.json: key 'dim' must be an integer, got the non-integer number 256.5");
  EXPECT_EQ(err("{\"n_layers\": 1e30}"), "c.json: key 'n_layers' must be an integer, got the non-integer number 1e+30");
  EXPECT_EQ(err("{\"vocab\": 18446744073709551615}"),
            "c.json: key 'vocab' must be an integer, got a JSON number");
  EXPECT_EQ(err("{\"tied\": 1}"), "c.json: key 'tied' must be true or false, got a JSON number");
  EXPECT_EQ(err("{\"rope_base\": [1]}"), "c.json: key 'rope_base' must be a finite number, got a JSON array");
  EXPECT_EQ(err("{\"arch\": null}"), "c.json: key 'arch' must be a string, got a JSON null");
  const std::string deep = "{\"dim\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  EXPECT_EQ(err(deep), "c.json:1:264: JSON nested deeper than 256 levels (refused before parsing)");
  // Brackets inside strings do not count; escaped quotes do not end a string.
  EXPECT_EQ(err("{\"name\": \"[[[\\\"" + std::string(100, '[') + "\"}"), "accepted");
  auto based = ShapeFromJson("{\"n_layers\": 2}", "c.json", "qwen2-tiny");
  ASSERT_TRUE(based.ok()) << based.status().message();
  EXPECT_EQ(based->arch, "qwen2");
}

}  // namespace
}  // namespace edgedecode::tooling
