// Context::EvalTree (speculative decoding's token tree in one pass): each tree row must get exactly the
// logits of its path (root .. row) evaluated as a plain chain -- same RoPE position, same cache positions in
// the same order and chunks -- for every KV type, thread count and attention path, across a sliding-window
// ring; and KeepTreePath must leave the cache as if the kept path had been evaluated as a chain.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cli_util.h"
#include "test_models.h"
#include "llm/context.h"
#include "llm/fusion.h"
#include "llm/model.h"

namespace edgedecode::test {
namespace {

constexpr int kCtx = 160;
// Rows 0 (root) .. 10; every row's parent an earlier row, several branches at several depths.
const std::vector<int> kParents = {-1, 0, 0, 1, 1, 2, 3, 3, 5, 8, 6};

class Tree : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // stories260K f32 (head_dim 8: position-major rows for quantized KV); llama-tiny q4_0 (head-major rows);
    // gemma3-tiny (sliding-window layers of window 16: rings).
    models_->AddFile(std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf");
    models_->AddSynth("tree-llama", "llama-tiny", "q4_0");
    models_->AddSynth("tree-gemma", "gemma3-tiny", "f16");
  }
  static void TearDownTestSuite() { models_->Clear(); }

  struct Setting {
    GgmlType kv;
    int threads;
    bool fused;
    bool attn_f16;
  };
  static std::unique_ptr<llm::Context> Make(const llm::Model& m, const Setting& s, int n_batch = 16) {
    llm::ContextParams p;
    p.n_ctx = kCtx;
    p.n_batch = n_batch;
    p.n_threads = s.threads;
    p.isa = kernels::ResolveIsa("auto").value();
    p.type_k = p.type_v = s.kv;
    p.attn_f16 = s.attn_f16;
    if (!s.fused) {
      for (int f = 0; f < static_cast<int>(llm::Fusion::kCount); ++f) p.fusions.Disable(static_cast<llm::Fusion>(f));
    }
    auto c = llm::Context::Create(m, p);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }
  static std::vector<int32_t> Tokens(int n, int seed, int n_vocab) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(1 + (seed * 131 + i * 37) % (n_vocab - 1));
    return t;
  }
  // Row i's path, root first.
  static std::vector<int> PathOf(int i) {
    std::vector<int> p;
    for (; i >= 0; i = kParents[static_cast<size_t>(i)]) p.insert(p.begin(), i);
    return p;
  }
  static std::vector<Setting> Settings() {
    std::vector<Setting> s;
    for (GgmlType kv : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0})
      for (int t : {1, 2}) s.push_back({kv, t, true, false});
    s.push_back({GgmlType::kF16, 2, false, false});  // unfused: full score rows (AttentionFullScores)
    s.push_back({GgmlType::kQ8_0, 1, false, false});
    s.push_back({GgmlType::kF16, 2, true, true});    // llama.cpp's f16 accumulation (AttendF16)
    return s;
  }
  static std::string Name(size_t model, const Setting& s) {
    return "model " + std::to_string(model) + " kv " + TypeName(static_cast<uint32_t>(s.kv)) + " threads " +
           std::to_string(s.threads) + (s.fused ? "" : " unfused") + (s.attn_f16 ? " attn_f16" : "");
  }
  static TestModels* models_;
};
TestModels* Tree::models_ = new TestModels;

// Every tree row's logits bit for bit those of its path evaluated as a chain (prompt 40 > gemma's window 16:
// the tree's rows read the ring).
TEST_F(Tree, EachRowEqualsItsPathAsAChain) {
  const int n = static_cast<int>(kParents.size());
  for (size_t mi = 0; mi < models_->size(); ++mi) {
    const llm::Model& model = (*models_)[mi];
    for (const Setting& s : Settings()) {
      if (s.kv != GgmlType::kF32 && s.kv != GgmlType::kF16 && s.kv != GgmlType::kBF16 && model.config().kv_dim() % 32 != 0) continue;
      const std::string what = Name(mi, s);
      const std::vector<int32_t> prompt = Tokens(40, 1, model.config().n_vocab);
      const std::vector<int32_t> tree = Tokens(n, 7, model.config().n_vocab);
      auto a = Make(model, s);
      auto b = Make(model, s);
      ASSERT_TRUE(a->Eval(prompt.data(), static_cast<int>(prompt.size()), false).ok()) << what;
      ASSERT_TRUE(b->Eval(prompt.data(), static_cast<int>(prompt.size()), false).ok()) << what;
      ASSERT_TRUE(a->EvalTree(tree.data(), kParents.data(), n).ok()) << what;
      EXPECT_EQ(a->n_past(), 40 + n);
      ASSERT_EQ(a->n_logit_rows(), n);
      for (int i = 0; i < n; ++i) {
        std::vector<int32_t> chain;
        for (int r : PathOf(i)) chain.push_back(tree[static_cast<size_t>(r)]);
        ASSERT_TRUE(b->Eval(chain.data(), static_cast<int>(chain.size()), false).ok()) << what;
        const size_t bytes = sizeof(float) * static_cast<size_t>(model.config().n_vocab);
        EXPECT_EQ(std::memcmp(a->logits(i), b->logits(0), bytes), 0) << what << ", tree row " << i;
        b->Truncate(40);
      }
    }
  }
}

// After KeepTreePath the cache holds the kept path at positions base.. : the next token's logits equal a
// context that evaluated that path as a chain, with every other tree row gone.
TEST_F(Tree, KeptPathIsTheChainsCache) {
  const int n = static_cast<int>(kParents.size());
  for (size_t mi = 0; mi < models_->size(); ++mi) {
    const llm::Model& model = (*models_)[mi];
    for (const Setting& s : {Setting{GgmlType::kF16, 2, true, false}, Setting{GgmlType::kQ8_0, 1, true, false},
                             Setting{GgmlType::kQ4_0, 2, true, false}, Setting{GgmlType::kF32, 1, true, false}}) {
      if (s.kv != GgmlType::kF32 && s.kv != GgmlType::kF16 && s.kv != GgmlType::kBF16 && model.config().kv_dim() % 32 != 0) continue;
      const std::string what = Name(mi, s);
      const std::vector<int32_t> prompt = Tokens(40, 2, model.config().n_vocab);
      const std::vector<int32_t> tree = Tokens(n, 9, model.config().n_vocab);
      for (int leaf : {0, 2, 5, 9, 10}) {
        const std::vector<int> path = PathOf(leaf);
        auto a = Make(model, s);
        auto b = Make(model, s);
        ASSERT_TRUE(a->Eval(prompt.data(), 40, false).ok());
        ASSERT_TRUE(a->EvalTree(tree.data(), kParents.data(), n).ok());
        a->KeepTreePath(path.data(), static_cast<int>(path.size()));
        EXPECT_EQ(a->n_past(), 40 + static_cast<int>(path.size())) << what;
        std::vector<int32_t> chain = prompt;
        for (int r : path) chain.push_back(tree[static_cast<size_t>(r)]);
        ASSERT_TRUE(b->Eval(chain.data(), static_cast<int>(chain.size()), false).ok());
        // Two more tokens, the second over the first's row too.
        for (int32_t next : {5, 11}) {
          ASSERT_TRUE(a->Eval(&next, 1, false).ok());
          ASSERT_TRUE(b->Eval(&next, 1, false).ok());
          EXPECT_EQ(std::memcmp(a->logits(0), b->logits(0), sizeof(float) * static_cast<size_t>(model.config().n_vocab)), 0)
              << what << ", path to row " << leaf;
        }
      }
    }
  }
}

// Malformed trees are refused with the cache unchanged.
TEST_F(Tree, MalformedTreesAreRefused) {
  const llm::Model& model = (*models_)[0];
  auto c = Make(model, {GgmlType::kF16, 1, true, false}, 8);
  const std::vector<int32_t> prompt = Tokens(10, 3, model.config().n_vocab);
  ASSERT_TRUE(c->Eval(prompt.data(), 10, false).ok());
  const std::vector<int32_t> t = Tokens(12, 4, model.config().n_vocab);
  struct Bad {
    std::vector<int> parents;
    const char* says;
  };
  for (const Bad& b : {Bad{{0, 0, 1}, "root"}, Bad{{-1, 1}, "parent 1"}, Bad{{-1, 0, 3}, "parent 3"}, Bad{{-1, -1}, "parent -1"},
                       Bad{std::vector<int>(12, 0), "larger than the batch"}}) {
    std::vector<int> p = b.parents;
    const Status st = c->EvalTree(t.data(), p.data(), static_cast<int>(p.size()));
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
    EXPECT_EQ(c->n_past(), 10);
  }
  const int32_t bad_token[2] = {1, -5};
  const int parents[2] = {-1, 0};
  EXPECT_FALSE(c->EvalTree(bad_token, parents, 2).ok());
  EXPECT_EQ(c->n_past(), 10);
}

}  // namespace
}  // namespace edgedecode::test
