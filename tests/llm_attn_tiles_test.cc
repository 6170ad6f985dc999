// The attn_tiles fusion (attention of up to 8 consecutive rows of a sequence per work item, each chunk of the
// KV cache read once for them) must give every row exactly the output of the row alone: the logits of every
// row of a pass are compared bit for bit with attn_tiles off (one row per work item), for every KV type,
// kernel set and thread count, on GQA and non-GQA shapes, with positions that put the causal edge of a
// tile inside a chunk of 128 and on both sides of a chunk boundary, across a sliding-window ring, and in a
// pass that holds the rows of two sequences (tiles never join rows of two sequences).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli_util.h"
#include "test_models.h"
#include "llm/context.h"
#include "llm/fusion.h"
#include "llm/model.h"

namespace edgedecode::test {
namespace {

constexpr int kCtx = 320;

// Under AddressSanitizer (the asan label's run) three settings, not every one: the index arithmetic of the
// tiles is the same for each, and the sanitized build is ten times slower.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct Setting {
  const char* isa;
  GgmlType kv;
  int threads;
};

class AttnTiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // stories260K f32: head_dim 8 (quantized KV rows position-major, dequantized per chunk), 8 heads on 4 KV
    // heads. phi3-tiny: no GQA (8 on 8). smollm3-tiny: 8 heads on 2 (groups of 4: AVX-512's heads-in-lanes
    // scores), NoPE layers. qwen3-tiny: head_dim 128. gemma3-tiny: sliding-window layers of window 16 (rings).
    models_->AddFile(std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf");
    models_->AddSynth("tiles-phi3", "phi3-tiny", "q8_0");
    models_->AddSynth("tiles-smollm3", "smollm3-tiny", "q4_0");
    models_->AddSynth("tiles-qwen3", "qwen3-tiny", "q4_0");
    models_->AddSynth("tiles-gemma", "gemma3-tiny", "f16");
  }
  static void TearDownTestSuite() { models_->Clear(); }

  static std::unique_ptr<llm::Context> Make(const llm::Model& m, const Setting& s, bool tiles, int n_batch) {
    llm::ContextParams p;
    p.n_ctx = kCtx;
    p.n_batch = n_batch;
    p.n_threads = s.threads;
    p.isa = kernels::ResolveIsa(s.isa).value();
    p.type_k = p.type_v = s.kv;
    if (!tiles) p.fusions.Disable(llm::Fusion::kAttnTiles);
    auto c = llm::Context::Create(m, p);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }
  static std::vector<int32_t> Tokens(int n, int seed, int n_vocab) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(1 + (seed * 131 + i * 37) % (n_vocab - 1));
    return t;
  }
  // The best kernels here with each KV type and 1 / 2 threads; where this machine runs them, the AVX2 kernels
  // (below AVX-512) and the scalar reference with two types each.
  static std::vector<Setting> Settings() {
    std::vector<Setting> s;
    if (kSanitized)
      return {{"auto", GgmlType::kF16, 2}, {"auto", GgmlType::kBF16, 2}, {"auto", GgmlType::kQ8_0, 1}, {"ref", GgmlType::kQ4_0, 2}};
    for (GgmlType kv : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0})
      for (int t : {1, 2}) s.push_back({"auto", kv, t});
    if (kernels::ResolveIsa("avx2").ok()) s.insert(s.end(), {{"avx2", GgmlType::kF16, 2}, {"avx2", GgmlType::kQ4_0, 1}});
    s.insert(s.end(), {{"ref", GgmlType::kF32, 1}, {"ref", GgmlType::kQ8_0, 2}, {"ref", GgmlType::kBF16, 1}});
    return s;
  }
  static bool Fits(const llm::Model& m, GgmlType kv) {
    return kv == GgmlType::kF32 || kv == GgmlType::kF16 || kv == GgmlType::kBF16 || m.config().kv_dim() % 32 == 0;
  }
  static std::string Name(size_t model, const Setting& s) {
    return "model " + std::to_string(model) + " kernels " + s.isa + " kv " + TypeName(static_cast<uint32_t>(s.kv)) +
           " threads " + std::to_string(s.threads);
  }
  static TestModels* models_;
};
TestModels* AttnTiles::models_ = new TestModels;

// Every row's logits, tiled and untiled: a prefill of 125 in passes of 64 (a pass from 0: the causal edge in
// every tile), a follow-up of 40 rows at 125..164 (tiles across the chunk boundary at 128; gemma's rows past
// its window of 16 one per tile on its sliding layers), then 130 more (a pass whose rows see three chunks).
TEST_F(AttnTiles, EveryRowEqualsTheUntiledRow) {
  for (size_t mi = 0; mi < models_->size(); ++mi) {
    const llm::Model& model = (*models_)[mi];
    const size_t bytes = sizeof(float) * static_cast<size_t>(model.config().n_vocab);
    for (const Setting& s : Settings()) {
      if (!Fits(model, s.kv)) continue;
      const std::string what = Name(mi, s);
      auto tiled = Make(model, s, true, 64);
      auto alone = Make(model, s, false, 64);
      const std::vector<int32_t> toks = Tokens(295, static_cast<int>(mi) + 1, model.config().n_vocab);
      int at = 0;
      for (int n : {64, 61, 40, 64, 66}) {
        ASSERT_TRUE(tiled->Eval(toks.data() + at, n, true).ok()) << what;
        ASSERT_TRUE(alone->Eval(toks.data() + at, n, true).ok()) << what;
        ASSERT_EQ(tiled->n_logit_rows(), n);
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(std::memcmp(tiled->logits(i), alone->logits(i), bytes), 0) << what << ", position " << at + i;
        at += n;
      }
    }
  }
}

// Two sequences in one pass (EvalMulti): tiles stop where one sequence's rows end and the other's begin; each
// sequence's last logits equal the untiled pass's.
TEST_F(AttnTiles, TwoSequencesInOnePass) {
  for (size_t mi = 0; mi < models_->size(); ++mi) {
    const llm::Model& model = (*models_)[mi];
    const size_t bytes = sizeof(float) * static_cast<size_t>(model.config().n_vocab);
    for (const Setting& s : Settings()) {
      if (!Fits(model, s.kv) || std::string(s.isa) != "auto") continue;
      const std::string what = Name(mi, s);
      const std::vector<int32_t> a = Tokens(150, 3, model.config().n_vocab), b = Tokens(20, 5, model.config().n_vocab);
      std::unique_ptr<llm::Context> ctx[2][2];  // [tiled][sequence]
      for (int t = 0; t < 2; ++t) {
        ctx[t][0] = Make(model, s, t == 1, 64);
        ctx[t][1] = Make(model, s, t == 1, 64);
        ASSERT_TRUE(ctx[t][0]->Eval(a.data(), 64, false).ok()) << what;
        ASSERT_TRUE(ctx[t][0]->Eval(a.data() + 64, 64, false).ok()) << what;
        ASSERT_TRUE(ctx[t][1]->Eval(b.data(), 9, false).ok()) << what;
        // 22 rows of sequence 0 at 128..149, then 11 of sequence 1 at 9..19: 33 rows in one pass.
        const llm::SeqTokens rows[] = {{ctx[t][0].get(), a.data() + 128, 22}, {ctx[t][1].get(), b.data() + 9, 11}};
        ASSERT_TRUE(llm::Context::EvalMulti(rows).ok()) << what;
      }
      EXPECT_EQ(std::memcmp(ctx[1][0]->logits(0), ctx[0][0]->logits(0), bytes), 0) << what << ", sequence 0";
      EXPECT_EQ(std::memcmp(ctx[1][1]->logits(0), ctx[0][1]->logits(0), bytes), 0) << what << ", sequence 1";
    }
  }
}

}  // namespace
}  // namespace edgedecode::test
