// lfm2: short-convolution layers (a per-sequence state of the last conv_l - 1 inputs, no KV cache) between
// attention layers. The state must follow the positions exactly: a prompt evaluated in batches of any size
// gives the logits of one evaluated token by token; a new sequence (Reset, a roll back, which for these
// models drops everything) starts from a zero state; sequences sharing passes (EvalMulti) keep their own
// states. Loading: the per-layer KV head counts, the conv layers' tensors named in errors with the shape the
// architecture needs, and token trees refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "cli_util.h"
#include "test_models.h"
#include "llm/context.h"
#include "llm/memory_plan.h"
#include "llm/model.h"
#include "llm/prefix_reuse.h"
#include "llm/speculative.h"

namespace edgedecode::test {
namespace {

constexpr int kCtx = 128;

class Lfm2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { models_->AddSynth("lfm2-tiny", "lfm2-tiny", "f16"); }
  static void TearDownTestSuite() { models_->Clear(); }
  static const llm::Model& model() { return (*models_)[0]; }
  static const std::string& path() { return models_->path(0); }
  static std::unique_ptr<llm::Context> Make(int n_batch, const char* isa = "auto", int threads = 1) {
    llm::ContextParams p;
    p.n_ctx = kCtx;
    p.n_batch = n_batch;
    p.n_threads = threads;
    p.isa = kernels::ResolveIsa(isa).value();
    p.type_k = p.type_v = GgmlType::kF32;
    auto c = llm::Context::Create(model(), p);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(c).value();
  }
  static std::vector<int32_t> Tokens(int n, int salt = 0) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back((37 * i + 11 + salt * 101) % model().config().n_vocab);
    return t;
  }
  static double MaxDiff(const float* a, const float* b, int n) {
    double d = 0;
    for (int i = 0; i < n; ++i) d = std::max(d, std::fabs(double{a[i]} - b[i]));
    return d;
  }
  // The file's bytes with `from` replaced by `to` (same length) at its first occurrence, written to a new file.
  static std::string Patched(const std::string& name, const std::string& from, const std::string& to) {
    std::ifstream in(path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = bytes.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) bytes.replace(at, from.size(), to);
    const std::string out = TempPath(name);
    std::ofstream(out, std::ios::binary) << bytes;
    return out;
  }
  static TestModels* models_;
};
TestModels* Lfm2::models_ = new TestModels;

TEST_F(Lfm2, LayersAndCacheSizes) {
  const llm::ModelConfig& c = model().config();
  EXPECT_EQ(c.arch, "lfm2");
  ASSERT_EQ(c.n_layers, 5);
  const std::vector<bool> conv = {true, false, true, false, true};  // the preset: attention in layers 1 and 3
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(c.conv_layer(l), conv[static_cast<size_t>(l)]) << l;
    EXPECT_EQ(llm::LayerKvRows(c, l, kCtx, 16), conv[static_cast<size_t>(l)] ? 0 : kCtx) << l;
    EXPECT_EQ(model().layers()[static_cast<size_t>(l)].conv.size(), conv[static_cast<size_t>(l)] ? 3u * c.dim : 0u);
  }
  EXPECT_EQ(c.conv_l, 3);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_TRUE(c.tied_embeddings);
  // Two attention layers' K and V rows; three conv layers' state of 2 rows of dim floats.
  EXPECT_EQ(llm::KvCacheBytes(c, kCtx, GgmlType::kF32, GgmlType::kF32, 16), 2u * 2 * kCtx * c.kv_dim() * 4);
  EXPECT_EQ(llm::ConvStateBytes(c), 3u * 2 * c.dim * 4);
}

// A prompt in batches of 1 (decode steps), 5 and the whole prompt: each token's logits alike. Every row's
// arithmetic is the same in any batch (the matmul kernels compute rows alone; the conv reads the same state).
TEST_F(Lfm2, BatchedPrefillEqualsDecode) {
  const std::vector<int32_t> toks = Tokens(40);
  const int n = static_cast<int>(toks.size()), nv = model().config().n_vocab;
  auto whole = Make(64);
  ASSERT_TRUE(whole->Eval(toks.data(), n, true).ok());
  for (int batch : {1, 5}) {
    auto c = Make(batch);
    for (int i = 0; i < n; i += batch) {
      const int m = std::min(batch, n - i);
      ASSERT_TRUE(c->Eval(toks.data() + i, m, true).ok());
      for (int r = 0; r < m; ++r)
        EXPECT_LE(MaxDiff(c->logits(r), whole->logits(i + r), nv), 1e-4) << "batch " << batch << " token " << i + r;
    }
  }
}

// The scalar reference kernels and 2 threads give the same function. A pass of 100 rows is large enough
// (100 x 256 x 3 multiply-adds) for the conv to split its channels between the threads.
TEST_F(Lfm2, ReferenceKernelsAndThreadsAgree) {
  const std::vector<int32_t> toks = Tokens(100, 1);
  const int n = static_cast<int>(toks.size()), nv = model().config().n_vocab;
  auto a = Make(128);
  auto ref = Make(128, "ref");
  auto two = Make(128, "auto", 2);
  ASSERT_TRUE(a->Eval(toks.data(), n, false).ok());
  ASSERT_TRUE(ref->Eval(toks.data(), n, false).ok());
  ASSERT_TRUE(two->Eval(toks.data(), n, false).ok());
  EXPECT_LE(MaxDiff(a->logits(0), two->logits(0), nv), 1e-4);
  EXPECT_LE(MaxDiff(a->logits(0), ref->logits(0), nv), 5e-2);  // f16 weights: the same values, other sum orders
}

// A roll back cannot keep a conv state's prefix: min_truncate() is n_past(), and Truncate drops everything; a
// new sequence (Reset, or the drop) starts from a zero state, so it gives a fresh context's logits.
TEST_F(Lfm2, RollBackDropsEverythingAndStartsClean) {
  const std::vector<int32_t> a = Tokens(20, 2), b = Tokens(24, 3);
  const int nv = model().config().n_vocab;
  auto fresh = Make(8);
  ASSERT_TRUE(fresh->Eval(b.data(), static_cast<int>(b.size()), false).ok());
  auto c = Make(8);
  ASSERT_TRUE(c->Eval(a.data(), static_cast<int>(a.size()), false).ok());
  EXPECT_EQ(c->min_truncate(), c->n_past());
  c->Truncate(10);
  EXPECT_EQ(c->n_past(), 0);
  ASSERT_TRUE(c->Eval(b.data(), static_cast<int>(b.size()), false).ok());
  EXPECT_EQ(MaxDiff(c->logits(0), fresh->logits(0), nv), 0.0);
  c->Reset();
  ASSERT_TRUE(c->Eval(b.data(), static_cast<int>(b.size()), false).ok());
  EXPECT_EQ(MaxDiff(c->logits(0), fresh->logits(0), nv), 0.0);
}

// chat / serve: a next prompt that extends the cached one keeps it; one that shares only a prefix is
// evaluated again from the start (the state cannot go back), giving a fresh context's logits either way.
TEST_F(Lfm2, PrefixReuseKeepsOnlyWholeHistories) {
  const int nv = model().config().n_vocab;
  const std::vector<int32_t> first = Tokens(16, 4);
  std::vector<int32_t> extended = first;
  for (int32_t t : Tokens(9, 5)) extended.push_back(t);
  std::vector<int32_t> branched(first.begin(), first.begin() + 10);
  for (int32_t t : Tokens(7, 6)) branched.push_back(t);
  auto c = Make(8);
  std::vector<int32_t> cached;
  int reused = -1;
  ASSERT_TRUE(llm::EvalReusingPrefix(*c, cached, first, 8, &reused).ok());
  ASSERT_TRUE(llm::EvalReusingPrefix(*c, cached, extended, 8, &reused).ok());
  EXPECT_EQ(reused, 16);
  auto fresh = Make(8);
  ASSERT_TRUE(fresh->Eval(extended.data(), static_cast<int>(extended.size()), false).ok());
  EXPECT_LE(MaxDiff(c->logits(0), fresh->logits(0), nv), 1e-4);
  ASSERT_TRUE(llm::EvalReusingPrefix(*c, cached, branched, 8, &reused).ok());
  EXPECT_EQ(reused, 0);
  fresh->Reset();
  ASSERT_TRUE(fresh->Eval(branched.data(), static_cast<int>(branched.size()), false).ok());
  EXPECT_LE(MaxDiff(c->logits(0), fresh->logits(0), nv), 1e-4);
}

// serve's continuous batching: two sequences' rows in shared passes, each with its own conv state.
TEST_F(Lfm2, EvalMultiKeepsEachSequencesState) {
  const int nv = model().config().n_vocab;
  const std::vector<int32_t> a = Tokens(12, 7), b = Tokens(9, 8);
  auto alone_a = Make(16), alone_b = Make(16);
  ASSERT_TRUE(alone_a->Eval(a.data(), 12, false).ok());
  ASSERT_TRUE(alone_b->Eval(b.data(), 9, false).ok());
  auto ca = Make(16), cb = Make(16);
  ASSERT_TRUE(llm::Context::EvalMulti(std::vector<llm::SeqTokens>{{ca.get(), a.data(), 5}, {cb.get(), b.data(), 4}}).ok());
  ASSERT_TRUE(llm::Context::EvalMulti(std::vector<llm::SeqTokens>{{cb.get(), b.data() + 4, 5}, {ca.get(), a.data() + 5, 7}}).ok());
  EXPECT_LE(MaxDiff(ca->logits(0), alone_a->logits(0), nv), 1e-4);
  EXPECT_LE(MaxDiff(cb->logits(0), alone_b->logits(0), nv), 1e-4);
}

TEST_F(Lfm2, TreesAndSpeculationRefused) {
  auto c = Make(8);
  const std::vector<int32_t> toks = Tokens(3);
  const int parents[] = {-1, 0, 0};
  const Status st = c->EvalTree(toks.data(), parents, 3);
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("lfm2"), std::string::npos) << st.message();
  const Status spec = llm::SpeculativeSupported(model().config());
  EXPECT_EQ(spec.code(), StatusCode::kUnsupported);
  EXPECT_NE(spec.message().find("lfm2"), std::string::npos) << spec.message();
}

// The commands refuse drafting at start (exit 3, the architecture named) rather than decode wrong tokens;
// a plain greedy run works.
TEST_F(Lfm2, CommandsRefuseDraftingAtStart) {
  const CommandResult run = RunEdgedecode("run -m " + path() + " -p Once -n 4 --temp 0 --lookup 4");
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_NE(run.err.find("speculative decoding is not supported for lfm2"), std::string::npos) << run.err;
  const CommandResult serve = RunEdgedecode("serve -m " + path() + " --port 0 --lookup 4", "timeout --foreground 60");
  EXPECT_EQ(serve.exit_code, 3) << serve.err;
  EXPECT_NE(serve.err.find("speculative decoding is not supported for lfm2"), std::string::npos) << serve.err;
  const CommandResult quant = RunEdgedecode("serve -m " + path() + " --port 0 --draft-quant q8_0", "timeout --foreground 60");
  EXPECT_EQ(quant.exit_code, 3) << quant.err;
  EXPECT_NE(quant.err.find("speculative decoding is not supported for lfm2"), std::string::npos) << quant.err;
  const CommandResult plain = RunEdgedecode("run -m " + path() + " -p Once -n 4 --temp 0");
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
}

TEST_F(Lfm2, PlanCountsAttentionLayersAndConvState) {
  llm::PlanParams pp;
  pp.n_ctx = kCtx;
  pp.n_batch = 16;
  pp.type_k = pp.type_v = GgmlType::kF16;
  const llm::MemoryPlan plan = llm::PlanMemory(model(), pp);
  bool kv = false, state = false;
  for (const llm::MemoryItem& it : plan.items) {
    if (it.component == "KV cache") {
      kv = true;
      EXPECT_EQ(it.bytes, llm::KvCacheBytes(model().config(), kCtx, GgmlType::kF16, GgmlType::kF16, 16));
      EXPECT_NE(it.detail.find("2 attention layers"), std::string::npos) << it.detail;
    }
    if (it.component == "conv state") {
      state = true;
      EXPECT_EQ(it.bytes, llm::ConvStateBytes(model().config()));
    }
  }
  EXPECT_TRUE(kv);
  EXPECT_TRUE(state);
}

TEST_F(Lfm2, LoadErrorsNameTheTensorAndShape) {
  // A conv layer's in_proj renamed away: missing, with the shape it needs.
  const std::string missing = Patched("lfm2-missing.gguf", "blk.0.shortconv.in_proj", "blk.0.shortconv.in_prox");
  auto m = llm::Model::Load(missing, false);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.0.shortconv.in_proj.weight"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("256x768"), std::string::npos) << m.status().message();
  std::remove(missing.c_str());
  // shortconv.l_cache (a u32 after its key: type 4, value 3) made 4: every conv kernel of 3 taps is misshaped.
  using namespace std::string_literals;
  const std::string key = "lfm2.shortconv.l_cache"s + "\x04\x00\x00\x00"s;
  const std::string taps4 = Patched("lfm2-taps4.gguf", key + "\x03"s, key + "\x04"s);
  m = llm::Model::Load(taps4, false);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.0.shortconv.conv.weight"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("has shape 3x256, the architecture needs 4x256"), std::string::npos)
      << m.status().message();
  std::remove(taps4.c_str());
  // A missing l_cache is named.
  const std::string no_l = Patched("lfm2-no-lcache.gguf", "lfm2.shortconv.l_cache", "lfm2.shortconv.l_cachf");
  m = llm::Model::Load(no_l, false);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("lfm2.shortconv.l_cache"), std::string::npos) << m.status().message();
  std::remove(no_l.c_str());
  // An unknown architecture lists lfm2 among the supported ones.
  const std::string other = Patched("lfm2-other.gguf", "lfm2", "lfm3");
  m = llm::Model::Load(other, false);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("lfm2"), std::string::npos) << m.status().message();
  std::remove(other.c_str());
}

}  // namespace
}  // namespace edgedecode::test
