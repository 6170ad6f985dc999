// Context::EvalMulti (serve's continuous batching): the rows of several sequences in one forward pass. Each
// sequence must get the logits its own Eval gives -- at its own depth, over its own cache, sliding window
// and ring -- whatever the other rows of the pass: the kernels compute every row as alone, so the check is
// exact (a row at another row's position, or reading another sequence's cache, is off by whole units).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cli_util.h"
#include "test_models.h"
#include "llm/context.h"
#include "llm/fusion.h"
#include "llm/model.h"

namespace edgedecode::test {
namespace {

constexpr int kCtx = 192;

class EvalMulti : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // llama-tiny q4_0: the q4_0 matmul kernels of 2..16 rows; gemma3-tiny: sliding-window layers (window 16).
    models_->AddSynth("batch-llama", "llama-tiny", "q4_0");
    models_->AddSynth("batch-gemma", "gemma3-tiny", "f16");
  }
  static void TearDownTestSuite() { models_->Clear(); }
  static const llm::Model& llama() { return (*models_)[0]; }
  static const llm::Model& gemma() { return (*models_)[1]; }

  static std::unique_ptr<llm::Context> Make(const llm::Model& m, GgmlType kv, int n_batch) {
    llm::ContextParams p;
    p.n_ctx = kCtx;
    p.n_batch = n_batch;
    p.n_threads = 2;
    p.isa = kernels::ResolveIsa("auto").value();
    p.type_k = p.type_v = kv;
    p.attn_f16 = attn_f16_;
    if (!fused_) {
      for (int f = 0; f < static_cast<int>(llm::Fusion::kCount); ++f) p.fusions.Disable(static_cast<llm::Fusion>(f));
    }
    auto c = llm::Context::Create(m, p);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }
  static double MaxDiff(const float* a, const float* b, int n) {
    double d = 0;
    for (int i = 0; i < n; ++i) d = std::max(d, std::fabs(double{a[i]} - b[i]));
    return d;
  }
  static int32_t Argmax(const llm::Context& c) {
    const float* l = c.logits(0);
    return static_cast<int32_t>(std::max_element(l, l + c.n_vocab()) - l);
  }
  // A deterministic prompt of n tokens (ids spread over the vocabulary, not 0).
  static std::vector<int32_t> Prompt(int n, int seed, int n_vocab) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(1 + (seed * 131 + i * 37) % (n_vocab - 1));
    return t;
  }

  // Sequences whose prompts have these lengths decode `steps` tokens: each alone (reference contexts, Eval of
  // one token) and all together (EvalMulti of one token each, in the order given); every step, each
  // sequence's logits must match its reference's. With chunk > 0 the last sequence instead receives its
  // prompt's last `chunk` tokens in the first pass, alongside the others' decode rows (a prefill chunk
  // interleaved with decoding). Returns the largest difference seen.
  static double Compare(const llm::Model& m, GgmlType kv, int n_batch, const std::vector<int>& lengths, int steps,
                        int chunk = 0) {
    const int n = static_cast<int>(lengths.size()), nv = m.config().n_vocab;
    std::vector<std::unique_ptr<llm::Context>> ref, bat;
    std::vector<std::vector<int32_t>> prompts;
    for (int s = 0; s < n; ++s) {
      prompts.push_back(Prompt(lengths[static_cast<size_t>(s)], s + 1, nv));
      ref.push_back(Make(m, kv, n_batch));
      bat.push_back(Make(m, kv, n_batch));
      const std::vector<int32_t>& p = prompts.back();
      const int head = s == n - 1 ? static_cast<int>(p.size()) - chunk : static_cast<int>(p.size());
      EXPECT_TRUE(ref.back()->Eval(p.data(), static_cast<int>(p.size()), false).ok());
      if (head > 0) {
        EXPECT_TRUE(bat.back()->Eval(p.data(), head, false).ok());
      }
    }
    double worst = 0;
    std::vector<int32_t> next(static_cast<size_t>(n));
    for (int step = 0; step < steps; ++step) {
      std::vector<llm::SeqTokens> rows;
      for (int s = 0; s < n; ++s) {
        llm::Context& b = *bat[static_cast<size_t>(s)];
        if (step == 0 && s == n - 1 && chunk > 0) {
          rows.push_back({&b, prompts[static_cast<size_t>(s)].data() + lengths[static_cast<size_t>(s)] - chunk, chunk});
          continue;
        }
        if (step == 0) {  // the logits of the prompt's last token (both contexts evaluated it alone)
          EXPECT_EQ(MaxDiff(b.logits(0), ref[static_cast<size_t>(s)]->logits(0), nv), 0.0) << "sequence " << s;
        }
        next[static_cast<size_t>(s)] = Argmax(*ref[static_cast<size_t>(s)]);
        EXPECT_TRUE(ref[static_cast<size_t>(s)]->Eval(&next[static_cast<size_t>(s)], 1, false).ok());
        rows.push_back({&b, &next[static_cast<size_t>(s)], 1});
      }
      const Status st = llm::Context::EvalMulti(rows);
      EXPECT_TRUE(st.ok()) << st.message();
      for (int s = 0; s < n; ++s) {
        const llm::Context& r = *ref[static_cast<size_t>(s)];
        const llm::Context& b = *bat[static_cast<size_t>(s)];
        EXPECT_EQ(b.n_past(), r.n_past()) << "sequence " << s << " step " << step;
        EXPECT_EQ(b.n_logit_rows(), 1);
        const double d = MaxDiff(b.logits(0), r.logits(0), nv);
        EXPECT_LE(d, 1e-5) << "sequence " << s << " at depth " << r.n_past() << ", step " << step;
        worst = std::max(worst, d);
      }
    }
    return worst;
  }
  static TestModels* models_;
  // The other paths of the pass, for the contexts Make creates: llama.cpp's f16 attention arithmetic, and
  // every fusion off (attention with full score rows, RoPE and the KV write as separate passes).
  static inline bool attn_f16_ = false, fused_ = true;
  void TearDown() override {
    attn_f16_ = false;
    fused_ = true;
  }
};
TestModels* EvalMulti::models_ = new TestModels;

TEST_F(EvalMulti, OneSequenceEqualsEval) {
  EXPECT_LE(Compare(llama(), GgmlType::kF16, 32, {9}, 4), 1e-5);
}

TEST_F(EvalMulti, SequencesAtDifferentDepthsEqualTheirOwnEval) {
  EXPECT_LE(Compare(llama(), GgmlType::kF16, 32, {3, 40, 17}, 6), 1e-5);
  EXPECT_LE(Compare(llama(), GgmlType::kF16, 32, {25, 1, 60, 8}, 5), 1e-5);
}

TEST_F(EvalMulti, Q8KvCache) {
  EXPECT_LE(Compare(llama(), GgmlType::kQ8_0, 32, {12, 50, 5, 31}, 5), 1e-5);
  EXPECT_LE(Compare(gemma(), GgmlType::kQ8_0, 8, {12, 50, 5}, 5), 1e-5);
}

TEST_F(EvalMulti, SlidingWindowSequencesPastTheirWindow) {
  // Window 16, rings of 16 + 8 - 1 rows: the 40- and 70-token sequences read wrapped rings, the 6-token one not.
  ASSERT_EQ(gemma().config().n_swa, 16);
  EXPECT_LE(Compare(gemma(), GgmlType::kF16, 8, {40, 6, 70, 15}, 12), 1e-5);
}

TEST_F(EvalMulti, F16AttentionArithmetic) {
  attn_f16_ = true;
  EXPECT_LE(Compare(gemma(), GgmlType::kF16, 8, {40, 6, 25}, 5, /*chunk=*/4), 1e-5);
}

TEST_F(EvalMulti, EveryFusionOff) {
  fused_ = false;
  EXPECT_LE(Compare(llama(), GgmlType::kQ8_0, 32, {14, 3, 45}, 4, /*chunk=*/9), 1e-5);
  EXPECT_LE(Compare(gemma(), GgmlType::kF16, 8, {40, 6, 25}, 4), 1e-5);
}

TEST_F(EvalMulti, PrefillChunkInterleavedWithDecodeRows) {
  EXPECT_LE(Compare(llama(), GgmlType::kF16, 32, {20, 7, 30}, 4, /*chunk=*/11), 1e-5);
  EXPECT_LE(Compare(gemma(), GgmlType::kF16, 8, {33, 50, 21}, 4, /*chunk=*/8), 1e-5);
}

TEST_F(EvalMulti, RowsPackedIntoSeveralPasses) {
  // A lead batch of 3 rows: 4 decode rows and a chunk of 3 take three passes, a chunk cut between two.
  EXPECT_LE(Compare(llama(), GgmlType::kF16, 3, {10, 22, 4, 15, 9}, 3, /*chunk=*/3), 1e-5);
}

TEST_F(EvalMulti, AllLogitsRowsEqualEvalOfEveryRow) {
  // serve's speculative verify: some sequences keep the logits of every row (a draft after the next token),
  // the lead (last) one included, whose rows move down within its own scratch.
  for (const llm::Model* m : {&llama(), &gemma()}) {
    const int nv = m->config().n_vocab;
    const std::vector<int> lengths = {30, 12, 45};
    const std::vector<int> rows_of = {4, 1, 3};
    const std::vector<bool> all = {true, false, true};
    std::vector<std::unique_ptr<llm::Context>> ref, bat;
    std::vector<std::vector<int32_t>> prompts, draft;
    std::vector<llm::SeqTokens> rows;
    for (size_t s = 0; s < lengths.size(); ++s) {
      prompts.push_back(Prompt(lengths[s], static_cast<int>(s) + 3, nv));
      draft.push_back(Prompt(rows_of[s], static_cast<int>(s) + 7, nv));
      ref.push_back(Make(*m, GgmlType::kF16, 16));
      bat.push_back(Make(*m, GgmlType::kF16, 16));
      ASSERT_TRUE(ref[s]->Eval(prompts[s].data(), lengths[s], false).ok());
      ASSERT_TRUE(bat[s]->Eval(prompts[s].data(), lengths[s], false).ok());
      ASSERT_TRUE(ref[s]->Eval(draft[s].data(), rows_of[s], all[s]).ok());
    }
    for (size_t s = 0; s < lengths.size(); ++s) rows.push_back({bat[s].get(), draft[s].data(), rows_of[s], all[s]});
    const Status st = llm::Context::EvalMulti(rows);
    ASSERT_TRUE(st.ok()) << st.message();
    for (size_t s = 0; s < lengths.size(); ++s) {
      ASSERT_EQ(bat[s]->n_logit_rows(), all[s] ? rows_of[s] : 1) << "sequence " << s;
      EXPECT_EQ(bat[s]->n_past(), ref[s]->n_past());
      for (int r = 0; r < bat[s]->n_logit_rows(); ++r)
        EXPECT_LE(MaxDiff(bat[s]->logits(r), ref[s]->logits(r), nv), 1e-5) << "sequence " << s << " row " << r;
    }
    // Rows beyond one pass cannot all keep their logits: refused, no cache changed.
    std::vector<int32_t> many = Prompt(16, 9, nv);
    const int before0 = bat[0]->n_past(), before2 = bat[2]->n_past();
    const Status big = llm::Context::EvalMulti(std::vector<llm::SeqTokens>{{bat[0].get(), many.data(), 8, true},
                                                                          {bat[2].get(), many.data(), 9}});
    EXPECT_EQ(big.code(), StatusCode::kInvalidArgument) << big.message();
    EXPECT_NE(big.message().find("one pass"), std::string::npos) << big.message();
    EXPECT_EQ(bat[0]->n_past(), before0);
    EXPECT_EQ(bat[2]->n_past(), before2);
  }
}

TEST_F(EvalMulti, TheComparisonSeesAWrongPosition) {
  // What the checks above would catch: the same token after the same prompt at depth 21 against depth 20
  // (a row given another row's position), and another sequence's history at the same depth (another cache).
  const int nv = llama().config().n_vocab;
  const std::vector<int32_t> p = Prompt(21, 1, nv), q = Prompt(21, 2, nv);
  auto a = Make(llama(), GgmlType::kF16, 32), b = Make(llama(), GgmlType::kF16, 32), c = Make(llama(), GgmlType::kF16, 32);
  ASSERT_TRUE(a->Eval(p.data(), 20, false).ok());
  ASSERT_TRUE(b->Eval(p.data(), 21, false).ok());
  ASSERT_TRUE(c->Eval(q.data(), 20, false).ok());
  const int32_t t = 5;
  ASSERT_TRUE(a->Eval(&t, 1, false).ok());
  ASSERT_TRUE(b->Eval(&t, 1, false).ok());
  ASSERT_TRUE(c->Eval(&t, 1, false).ok());
  EXPECT_GT(MaxDiff(a->logits(0), b->logits(0), nv), 1e-3);
  EXPECT_GT(MaxDiff(a->logits(0), c->logits(0), nv), 1e-3);
}

TEST_F(EvalMulti, BadInputIsRefusedWithoutChangingAnyCache) {
  auto a = Make(llama(), GgmlType::kF16, 4), b = Make(llama(), GgmlType::kF16, 4);
  const int32_t t[5] = {1, 2, 3, 4, 5};
  ASSERT_TRUE(a->Eval(t, 3, false).ok());
  auto refused = [&](std::vector<llm::SeqTokens> rows, StatusCode code, const char* what) {
    const Status st = llm::Context::EvalMulti(rows);
    EXPECT_EQ(st.code(), code) << st.message();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
    EXPECT_EQ(a->n_past(), 3);
    EXPECT_EQ(b->n_past(), 0);
  };
  refused({}, StatusCode::kInvalidArgument, "nothing");
  refused({{a.get(), t, 1}, {a.get(), t + 1, 1}}, StatusCode::kInvalidArgument, "sequence 1: the same context as sequence 0");
  refused({{a.get(), t, 1}, {b.get(), t, 5}}, StatusCode::kInvalidArgument, "sequence 1: 5 tokens");
  const int32_t bad = llama().config().n_vocab;
  refused({{a.get(), t, 1}, {b.get(), &bad, 1}}, StatusCode::kInvalidArgument, "outside the vocabulary");
  auto q8 = Make(llama(), GgmlType::kQ8_0, 4);
  refused({{a.get(), t, 1}, {q8.get(), t, 1}}, StatusCode::kInvalidArgument, "KV cache type");
  auto g = Make(gemma(), GgmlType::kF16, 4);
  refused({{a.get(), t, 1}, {g.get(), t, 1}}, StatusCode::kInvalidArgument, "another model");
  llm::ContextParams small;
  small.n_ctx = 3;
  small.n_threads = 2;
  small.isa = a->isa();
  auto full = llm::Context::Create(llama(), small);
  ASSERT_TRUE(full.ok());
  ASSERT_TRUE((*full)->Eval(t, 3, false).ok());
  const Status st = llm::Context::EvalMulti(std::vector<llm::SeqTokens>{{a.get(), t, 1}, {full->get(), t, 1}});
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.message();
  EXPECT_EQ(a->n_past(), 3);
  EXPECT_EQ((*full)->n_past(), 3);
}

}  // namespace
}  // namespace edgedecode::test
