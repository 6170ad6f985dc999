// Sliding-window layers (gemma3) keep only a ring of window + batch - 1 KV rows. A context whose rings wrap
// every window must give the logits of one whose rings hold every position (a batch as large as the
// context): the same arithmetic on the same values but for the rounding of attention's running sums where
// a window spans the ring's end (two chunks); a ring one row short is off by more than 1. Also the
// roll backs the ring allows (a batch) and the one it cannot serve (further back: everything dropped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli_util.h"
#include "test_models.h"
#include "llm/context.h"
#include "llm/model.h"
#include "llm/prefix_reuse.h"

namespace edgedecode::test {
namespace {

constexpr int kCtx = 256;

class SwaRing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { models_->AddSynth("swa-gemma3-tiny", "gemma3-tiny", "f16"); }
  static void TearDownTestSuite() { models_->Clear(); }
  static const llm::Model& model() { return (*models_)[0]; }
  static std::unique_ptr<llm::Context> Make(int n_batch, GgmlType kv) {
    llm::ContextParams p;
    p.n_ctx = kCtx;
    p.n_batch = n_batch;
    p.n_threads = 1;
    p.isa = kernels::ResolveIsa("auto").value();
    p.type_k = p.type_v = kv;
    auto c = llm::Context::Create(model(), p);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }
  // Largest |difference| of the last Eval's logits (infinity when the row counts differ).
  static double MaxDiff(const llm::Context& a, const llm::Context& b) {
    if (a.n_logit_rows() != b.n_logit_rows()) return INFINITY;
    double d = 0;
    for (int r = 0; r < a.n_logit_rows(); ++r)
      for (int i = 0; i < a.n_vocab(); ++i) d = std::max(d, std::fabs(double{a.logits(r)[i]} - b.logits(r)[i]));
    return d;
  }
  // Where a window spans the ring's end attention reads it as two chunks, so the softmax sums round
  // differently: float rounding, against logits of std ~4 (a wrong or stale row moves them by whole units).
  static bool SameLogits(const llm::Context& a, const llm::Context& b) {
    const double d = MaxDiff(a, b);
    worst_ = std::max(worst_, d);
    return d <= 5e-2;
  }
  static inline double worst_ = 0;
  static int Argmax(const llm::Context& c, int row) {
    const float* l = c.logits(row);
    return static_cast<int>(std::max_element(l, l + c.n_vocab()) - l);
  }
  static TestModels* models_;
};
TestModels* SwaRing::models_ = new TestModels;

TEST_F(SwaRing, ModelHasSlidingLayersWithSmallRings) {
  const llm::ModelConfig& c = model().config();
  ASSERT_EQ(c.n_swa, 16);
  EXPECT_TRUE(c.swa_layer(0) && c.swa_layer(1) && !c.swa_layer(2) && c.swa_layer(3));
  EXPECT_EQ(llm::LayerKvRows(c, 0, kCtx, 1), 16);
  EXPECT_EQ(llm::LayerKvRows(c, 0, kCtx, 8), 23);
  EXPECT_EQ(llm::LayerKvRows(c, 2, kCtx, 1), kCtx);
  EXPECT_EQ(llm::LayerKvRows(c, 0, kCtx, kCtx), kCtx);  // a batch of the whole context: no ring
  // Three rings of 16 rows and one global layer of kCtx, against four layers of kCtx.
  const size_t full = llm::KvCacheBytes(c, kCtx, GgmlType::kF16, GgmlType::kF16, kCtx);
  EXPECT_EQ(llm::KvCacheBytes(c, kCtx, GgmlType::kF16, GgmlType::kF16, 1), full / (4 * kCtx) * (kCtx + 3 * 16));
}

// Greedy decoding one token per call for 200 positions (12 windows): the ring of 16 rows against a full cache.
TEST_F(SwaRing, RingEqualsFullCacheFarPastTheWindow) {
  for (GgmlType kv : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0}) {
    auto ring = Make(1, kv), full = Make(kCtx, kv);
    int32_t tok = 1;
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(ring->Eval(&tok, 1, false).ok());
      ASSERT_TRUE(full->Eval(&tok, 1, false).ok());
      ASSERT_TRUE(SameLogits(*ring, *full)) << MaxDiff(*ring, *full) << " position " << i << " kv " << TypeName(static_cast<uint32_t>(kv));
      tok = Argmax(*ring, 0);
      if (i % 7 == 3) tok = (tok + 11 * i) % ring->n_vocab();  // steer off greedy loops
    }
  }
  std::printf("largest logit difference, ring against full cache: %.3g\n", worst_);
}

// Batches of 8 (all logits; the ring's tightest case), 3 rows of each rolled back (a speculative verify's
// rejection), through 250 positions with a ring of 16 + 8 - 1 rows: the logits of a full cache fed the same calls.
TEST_F(SwaRing, BatchesAndRollBackWithinTheRing) {
  auto ring = Make(8, GgmlType::kF16), full = Make(kCtx, GgmlType::kF16);
  std::vector<int32_t> t(8);
  int step = 0;
  while (ring->n_past() + 8 <= 250) {
    for (int j = 0; j < 8; ++j) t[static_cast<size_t>(j)] = (37 * step + 101 * j + 5) % ring->n_vocab();
    ASSERT_TRUE(ring->Eval(t.data(), 8, true).ok());
    ASSERT_TRUE(full->Eval(t.data(), 8, true).ok());
    ASSERT_TRUE(SameLogits(*ring, *full)) << MaxDiff(*ring, *full) << " at position " << ring->n_past();
    ASSERT_LE(ring->min_truncate(), ring->n_past() - 3);
    ring->Truncate(ring->n_past() - 3);
    full->Truncate(full->n_past() - 3);
    ASSERT_EQ(ring->n_past(), full->n_past());
    ++step;
  }
  EXPECT_GT(ring->n_past(), 5 * 23);
  std::printf("largest logit difference, ring against full cache: %.3g\n", worst_);
}

// Further back than the ring holds: Truncate drops everything, and prefix reuse evaluates the prompt again.
TEST_F(SwaRing, RollBackPastTheRingStartsOver) {
  auto ring = Make(8, GgmlType::kF16), fresh = Make(8, GgmlType::kF16);
  std::vector<int32_t> prompt(100);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((13 * i + 7) % 2000);
  std::vector<int32_t> cached;
  int reused = -1;
  ASSERT_TRUE(llm::EvalReusingPrefix(*ring, cached, prompt, 8, &reused).ok());
  EXPECT_EQ(ring->min_truncate(), 100 - 8);
  // A prompt sharing 50 tokens: position 50 is past the rings' reach, so nothing is reused.
  std::vector<int32_t> second(prompt.begin(), prompt.begin() + 50);
  for (int i = 0; i < 20; ++i) second.push_back(1000 + i);
  ASSERT_TRUE(llm::EvalReusingPrefix(*ring, cached, second, 8, &reused).ok());
  EXPECT_EQ(reused, 0);
  std::vector<int32_t> none;
  ASSERT_TRUE(llm::EvalReusingPrefix(*fresh, none, second, 8, &reused).ok());
  EXPECT_TRUE(SameLogits(*ring, *fresh));
  // Sharing all but the last 4 tokens: within the last batch, reused.
  std::vector<int32_t> third(second.begin(), second.end() - 4);
  for (int i = 0; i < 4; ++i) third.push_back(1500 + i);
  ASSERT_TRUE(llm::EvalReusingPrefix(*ring, cached, third, 8, &reused).ok());
  EXPECT_EQ(reused, 66);
  ring->Truncate(3);
  EXPECT_EQ(ring->n_past(), 0);
}

}  // namespace
}  // namespace edgedecode::test
