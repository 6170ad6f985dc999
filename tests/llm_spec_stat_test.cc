// Speculative sampling keeps the target's distribution: over thousands of seeds at temperature 1 (no top-k,
// top-p or min-p), the 2nd and 3rd generated tokens -- sampled from the rows of verify passes, where a drafted
// token is accepted or rejected -- follow the distribution computed exactly from the target itself, by a
// chi-square goodness-of-fit test; and the same test rejects a rule that over-accepts drafted tokens
// (LookupParams::acceptance = kBiasedAcceptDraft), so it can fail. Drafters: the model drafting for itself
// in a second context (its greedy continuation: the most likely tokens, often rejected at temperature 1) and
// self-speculative layer skip (layer 3 of 5) on the target's own context. Under the exact rule both give
// the tokens of plain decoding for a seed; what differs is where drafts are accepted, which the biased rule
// shows. Fixed seeds: the outcome is deterministic.
//
// The exact distributions, on stories260K after the prompt P:
//   token 2: sum over every token t1 of p(t1 | P) p(t2 | P t1) (one evaluation per vocabulary entry);
//   token 3: sum over the pairs (t1, t2) whose probability p(t1 | P) p(t2 | P t1) is at least kPairFloor of
//     p(t1, t2) p(t3 | P t1 t2), plus one bin "(t1, t2) outside that set" of probability 1 - sum of theirs:
//     an exact distribution over its bins, no truncation error.
// Bins: a token per bin while its expected count is >= 5 and its probability >= kMinBinProbability, the rest
// (and the outside-pairs bin) merged so that every bin expects >= 5. The chi-square tail is the Wilson-Hilferty
// approximation
//   P(X > x) ~= Q((cbrt(x / k) - (1 - 2 / (9k))) / sqrt(2 / (9k))),  Q the standard normal tail,
// accurate to a few percent of the p-value in the range tested here (k >= 5, p around 1e-3); for k = 1 the
// exact erfc(sqrt(x / 2)).
// Besides the two marginals, the same test runs on the joint of tokens 1 and 2 (exact: p(t1 | P) p(t2 | P t1))
// and on whether token 2's draft is accepted (two bins: token 2 equals the drafter's first proposal after token
// 1, or not; exact: the sum over t1 of p(t1 | P) p(draft(t1) | P t1), the drafter being deterministic) --
// speculative sampling's acceptance probability itself, and the most sensitive to an over-accepting rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "llm/context.h"
#include "llm/draft_model.h"
#include "llm/model.h"
#include "llm/sampler.h"
#include "llm/self_spec.h"
#include "llm/speculative.h"

namespace edgedecode::test {
namespace {

const std::string kF32 = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";
// A prompt with several likely continuations (about 3 bits of entropy in tokens 2 and 3), so that the
// drafts are often accepted and often rejected.
const char kPrompt[] = "Lily and Tom went to the";
constexpr double kPairFloor = 1e-4;  // pairs (t1, t2) evaluated for token 3's distribution
constexpr double kAlpha = 1e-3;      // the test's significance level
// A token has a bin of its own when it expects at least 5 and is at least this likely: the rest share a bin.
// Few bins (about 15 here) keep the test's power on the likely tokens, which a drafter proposes.
constexpr double kMinBinProbability = 0.005;

constexpr bool Sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// Seeds: 6000 in an optimized build (about 2 s of CPU a run), 1500 in a sanitizer or unoptimized build (about
// 25 times slower). At 6000 every test rejects the biased rule at p < 1e-9; at 1500 the acceptance test does at
// p < 1e-5 and the others need more seeds, so a sanitizer build asserts the acceptance test alone for it.
#if defined(NDEBUG)
constexpr int kSeeds = Sanitized() ? 1500 : 6000;
#else
constexpr int kSeeds = 1500;
#endif

std::vector<double> Softmax(const float* logits, int n) {  // temperature 1, as the sampler computes it
  std::vector<double> p(static_cast<size_t>(n));
  const double mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += p[static_cast<size_t>(i)] = std::exp(logits[i] - mx);
  for (double& x : p) x /= sum;
  return p;
}

// The upper tail of the chi-square distribution with k degrees of freedom (Wilson-Hilferty, see the top).
double ChiSquareTail(double x, int k) {
  if (k == 1) return std::erfc(std::sqrt(x / 2));  // exact: the square of a standard normal
  const double v = 2.0 / (9.0 * k);
  const double z = (std::cbrt(x / k) - (1 - v)) / std::sqrt(v);
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

// The exact distributions of tokens 2 and 3 (token 3's last entry: the pairs outside the evaluated set).
struct Exact {
  std::vector<double> token2, token3;
  std::vector<double> pair;   // [t1 * n_vocab + t2]: p(t1 | P) p(t2 | P t1), the joint of tokens 1 and 2
  std::vector<bool> covered;  // [t1 * n_vocab + t2]: the pair is in token 3's evaluated set
};

Exact ComputeExact(llm::Context& ctx, const std::vector<int32_t>& prompt) {
  const int n = static_cast<int>(prompt.size()), v = ctx.n_vocab();
  Exact e;
  e.token2.assign(static_cast<size_t>(v), 0);
  e.token3.assign(static_cast<size_t>(v) + 1, 0);
  e.covered.assign(static_cast<size_t>(v) * static_cast<size_t>(v), false);
  e.pair.assign(static_cast<size_t>(v) * static_cast<size_t>(v), 0);
  ctx.Reset();
  EXPECT_TRUE(ctx.Eval(prompt.data(), n, false).ok());
  const std::vector<double> p1 = Softmax(ctx.logits(0), v);
  double covered = 0;
  for (int32_t t1 = 0; t1 < v; ++t1) {
    ctx.Truncate(n);
    EXPECT_TRUE(ctx.Eval(&t1, 1, false).ok());
    const std::vector<double> p2 = Softmax(ctx.logits(0), v);
    for (int32_t t2 = 0; t2 < v; ++t2) {
      const double pair = p1[static_cast<size_t>(t1)] * p2[static_cast<size_t>(t2)];
      e.token2[static_cast<size_t>(t2)] += pair;
      e.pair[static_cast<size_t>(t1) * static_cast<size_t>(v) + static_cast<size_t>(t2)] = pair;
      if (pair < kPairFloor) continue;
      covered += pair;
      e.covered[static_cast<size_t>(t1) * static_cast<size_t>(v) + static_cast<size_t>(t2)] = true;
      ctx.Truncate(n + 1);
      EXPECT_TRUE(ctx.Eval(&t2, 1, false).ok());
      const std::vector<double> p3 = Softmax(ctx.logits(0), v);
      for (int t3 = 0; t3 < v; ++t3) e.token3[static_cast<size_t>(t3)] += pair * p3[static_cast<size_t>(t3)];
    }
  }
  e.token3.back() = std::max(0.0, 1.0 - covered);
  return e;
}

struct Fit {
  double chi2 = 0;
  int df = 0;
  double p_value = 1;
};

// Pearson's chi-square of `counts` (outcome i seen counts[i] times) against probabilities `p`, with the
// outcomes binned so that each bin expects at least 5.
Fit ChiSquare(const std::vector<int64_t>& counts, const std::vector<double>& p) {
  const double total = static_cast<double>(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  std::vector<double> expected, observed;
  double rest_e = 0, rest_o = 0;
  for (size_t i : order) {
    if (total * p[i] >= 5 && p[i] >= kMinBinProbability) {
      expected.push_back(total * p[i]);
      observed.push_back(static_cast<double>(counts[i]));
    } else {
      rest_e += total * p[i];
      rest_o += static_cast<double>(counts[i]);
    }
  }
  if (rest_e >= 5 || expected.empty()) {
    expected.push_back(rest_e);
    observed.push_back(rest_o);
  } else {  // too rare for a bin of its own: merged into the least likely bin
    expected.back() += rest_e;
    observed.back() += rest_o;
  }
  Fit f;
  for (size_t i = 0; i < expected.size(); ++i) f.chi2 += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  f.df = static_cast<int>(expected.size()) - 1;
  f.p_value = f.df > 0 ? ChiSquareTail(f.chi2, f.df) : 1.0;
  return f;
}

enum class DrafterKind { kSelfDraft, kLayerSkip };

struct Sampled {
  std::vector<int64_t> token2, token3;  // token 3's last entry: (t1, t2) outside the evaluated set
  std::vector<int64_t> pair;            // [t1 * n_vocab + t2]
  std::vector<int64_t> accepted2{0, 0};  // {token 2 is the drafter's first proposal after token 1, it is not}
  std::vector<double> accepted2_exact;   // ... their exact probabilities, for this drafter
  llm::LookupStats stats;               // summed over the seeds
};

class SpecStat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = llm::Model::Load(kF32);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
    prompt_ = model_->tokenizer().Encode(kPrompt, true);
    auto c = llm::Context::Create(*model_, Params());
    ASSERT_TRUE(c.ok()) << c.status().message();
    exact_ = new Exact(ComputeExact(**c, prompt_));
  }
  static void TearDownTestSuite() {
    delete exact_;
    exact_ = nullptr;
    model_.reset();
  }
  static llm::ContextParams Params() {
    llm::ContextParams p;
    p.n_ctx = 64;
    p.n_threads = 1;
    p.isa = kernels::ResolveIsa("auto").value();
    return p;
  }

  // Tokens 1..3 of kSeeds runs at temperature 1 through LookupDecoder (drafting never paused).
  static Sampled Run(DrafterKind kind, llm::Acceptance acceptance) {
    Sampled s;
    const int v = static_cast<int>(exact_->token2.size());
    s.token2.assign(static_cast<size_t>(v), 0);
    s.token3.assign(static_cast<size_t>(v) + 1, 0);
    s.pair.assign(static_cast<size_t>(v) * static_cast<size_t>(v), 0);
    auto ctx = llm::Context::Create(*model_, Params());
    auto draft_ctx = llm::Context::Create(*model_, Params());
    EXPECT_TRUE(ctx.ok() && draft_ctx.ok());
    if (!ctx.ok() || !draft_ctx.ok()) return s;
    llm::DraftModelDrafter self_draft(**draft_ctx, v);
    llm::SelfSpecDrafter layer_skip(**ctx, {3});  // about 40% of its drafted tokens accepted
    llm::LookupParams lp;
    lp.n_draft = 2;
    lp.adaptive = false;
    lp.acceptance = acceptance;
    lp.drafter = kind == DrafterKind::kSelfDraft ? llm::Drafter(std::ref(self_draft)) : llm::Drafter(std::ref(layer_skip));
    const int n = static_cast<int>(prompt_.size());
    EXPECT_TRUE((*ctx)->Eval(prompt_.data(), n, false).ok());
    // The drafter's first proposal after each token 1 (deterministic: the one the runs below verify token 2
    // against), and so the exact probability that token 2's draft is accepted: sum of p(t1) p(draft(t1) | t1).
    std::vector<int32_t> first_draft(static_cast<size_t>(v), -1);
    double accept_exact = 0;
    for (int32_t t1 = 0; t1 < v; ++t1) {
      std::vector<int32_t> history = prompt_;
      history.push_back(t1);
      const std::vector<int32_t> d = lp.drafter(history, 1);
      if (d.empty()) continue;
      first_draft[static_cast<size_t>(t1)] = d[0];
      accept_exact += exact_->pair[static_cast<size_t>(t1) * static_cast<size_t>(v) + static_cast<size_t>(d[0])];
    }
    s.accepted2_exact = {accept_exact, std::max(0.0, 1.0 - accept_exact)};
    for (int seed = 0; seed < kSeeds; ++seed) {
      // The prompt's last row again (the previous seed's passes moved past it).
      (*ctx)->Truncate(n - 1);
      EXPECT_TRUE((*ctx)->Eval(&prompt_.back(), 1, false).ok());
      llm::SamplerParams sp;
      sp.temperature = 1.0f;
      sp.top_k = 0;
      sp.top_p = 1.0f;
      sp.min_p = 0.0f;
      sp.seed = static_cast<uint64_t>(seed) + 1000;
      llm::Sampler sampler(sp);
      for (int32_t t : prompt_) sampler.Accept(t);
      llm::LookupDecoder dec(**ctx, sampler, lp, prompt_);
      const int32_t t1 = dec.Sample();
      EXPECT_TRUE(dec.Advance(t1, 2).ok());  // drafts for tokens 2 and 3
      const int32_t t2 = dec.Sample();
      EXPECT_TRUE(dec.Advance(t2, 1).ok());  // token 2's draft rejected: a new pass with a draft for token 3
      const int32_t t3 = dec.Sample();
      ++s.token2[static_cast<size_t>(t2)];
      ++s.pair[static_cast<size_t>(t1) * static_cast<size_t>(v) + static_cast<size_t>(t2)];
      ++s.accepted2[t2 == first_draft[static_cast<size_t>(t1)] ? 0 : 1];
      const bool covered = exact_->covered[static_cast<size_t>(t1) * static_cast<size_t>(v) + static_cast<size_t>(t2)];
      ++s.token3[covered ? static_cast<size_t>(t3) : static_cast<size_t>(v)];
      const llm::LookupStats& st = dec.stats();
      s.stats.drafted += st.drafted;
      s.stats.accepted += st.accepted;
      s.stats.verify_passes += st.verify_passes;
      s.stats.rejected += st.rejected;
    }
    return s;
  }

  // The three tests of a run: token 2's and token 3's marginals, and the joint of tokens 1 and 2 (where a
  // drafter's bias shows most: the draft for token 2 depends on token 1).
  struct Fits {
    Fit token2, token3, pair, accepted2;
  };
  static Fits Test(const char* what, const Sampled& s) {
    Fits f{ChiSquare(s.token2, exact_->token2), ChiSquare(s.token3, exact_->token3), ChiSquare(s.pair, exact_->pair),
           ChiSquare(s.accepted2, s.accepted2_exact)};
    std::printf("%s: %d seeds, %lld verify passes, acceptance %.3f | token 2: chi2 %.1f, df %d, p %.3g | token 3: chi2 %.1f, "
                "df %d, p %.3g | tokens 1-2: chi2 %.1f, df %d, p %.3g | token 2's draft accepted: %.3f (exact %.3f), p %.3g\n",
                what, kSeeds, static_cast<long long>(s.stats.verify_passes), s.stats.acceptance(), f.token2.chi2, f.token2.df,
                f.token2.p_value, f.token3.chi2, f.token3.df, f.token3.p_value, f.pair.chi2, f.pair.df, f.pair.p_value,
                static_cast<double>(s.accepted2[0]) / kSeeds, s.accepted2_exact[0], f.accepted2.p_value);
    return f;
  }

  static void ExpectDistributionKept(DrafterKind kind, const char* what) {
    const Sampled s = Run(kind, llm::Acceptance::kExact);
    // Not vacuous: drafted tokens are accepted often and rejected often (a rejection of token 2's draft starts
    // a second pass).
    EXPECT_GT(s.accepted2_exact[0], 0.2) << what;
    EXPECT_LT(s.accepted2_exact[0], 0.9) << what;
    EXPECT_GT(s.stats.verify_passes, kSeeds + kSeeds / 10) << what;
    const Fits f = Test(what, s);
    for (const Fit* fit : {&f.token2, &f.token3, &f.pair}) EXPECT_GE(fit->df, 5) << what << ": too few bins to test anything";
    EXPECT_GE(f.token2.p_value, kAlpha) << what << ": token 2 does not follow the target's distribution";
    EXPECT_GE(f.token3.p_value, kAlpha) << what << ": token 3 does not follow the target's distribution";
    EXPECT_GE(f.pair.p_value, kAlpha) << what << ": tokens 1 and 2 do not follow the target's joint distribution";
    EXPECT_GE(f.accepted2.p_value, kAlpha) << what << ": token 2's draft is not accepted as often as the target says";
  }

  static void ExpectBiasDetected(DrafterKind kind, const char* what) {
    const Fits f = Test(what, Run(kind, llm::Acceptance::kBiasedAcceptDraft));
    EXPECT_LT(f.accepted2.p_value, kAlpha) << what << ": the over-accepting rule went unnoticed in token 2's acceptance";
    if (kSeeds < 6000) return;  // the smaller run of a sanitizer build: the other tests need more seeds to see it
    EXPECT_LT(f.pair.p_value, kAlpha) << what << ": the over-accepting rule went unnoticed in tokens 1 and 2";
    EXPECT_LT(f.token2.p_value, kAlpha) << what << ": the over-accepting rule went unnoticed at token 2";
    EXPECT_LT(f.token3.p_value, kAlpha) << what << ": the over-accepting rule went unnoticed at token 3";
  }

  static inline std::unique_ptr<llm::Model> model_;
  static inline std::vector<int32_t> prompt_;
  static inline Exact* exact_ = nullptr;
};

TEST_F(SpecStat, ExactDistributionsSumToOne) {
  EXPECT_NEAR(std::accumulate(exact_->token2.begin(), exact_->token2.end(), 0.0), 1.0, 1e-9);
  EXPECT_NEAR(std::accumulate(exact_->token3.begin(), exact_->token3.end(), 0.0), 1.0, 1e-9);
}

// The chi-square tail against known quantiles (the 0.999 quantiles of chi-square with 5, 20 and 100 degrees of
// freedom: 20.515, 45.315, 149.449), so that a broken approximation cannot pass everything.
TEST(ChiSquareTail, MatchesKnownQuantiles) {
  EXPECT_NEAR(ChiSquareTail(20.515, 5), 1e-3, 2e-4);
  EXPECT_NEAR(ChiSquareTail(45.315, 20), 1e-3, 1e-4);
  EXPECT_NEAR(ChiSquareTail(149.449, 100), 1e-3, 5e-5);
  EXPECT_NEAR(ChiSquareTail(4.351, 5), 0.5, 0.01);  // the median
}

TEST_F(SpecStat, SelfDraftKeepsTheTargetDistribution) { ExpectDistributionKept(DrafterKind::kSelfDraft, "self draft"); }
TEST_F(SpecStat, LayerSkipKeepsTheTargetDistribution) { ExpectDistributionKept(DrafterKind::kLayerSkip, "layer skip"); }
TEST_F(SpecStat, OverAcceptingRuleIsRejectedSelfDraft) { ExpectBiasDetected(DrafterKind::kSelfDraft, "self draft, biased"); }
TEST_F(SpecStat, OverAcceptingRuleIsRejectedLayerSkip) { ExpectBiasDetected(DrafterKind::kLayerSkip, "layer skip, biased"); }

}  // namespace
}  // namespace edgedecode::test
