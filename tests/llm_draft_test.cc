// Speculative decoding with a draft model (`run --draft MODEL`, `run --draft-quant TYPE`): the output is
// plain decoding's, token for token, for f16 and q8_0 KV at 1 and 2 threads; the draft model's cache
// follows the accepted history (a model drafting for itself has every draft accepted); a draft of another
// `plan` counts the draft, and `run` refuses a draft that does not fit (bad drafts: llm_draft_errors_test).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "cli_util.h"
#include "llm/draft_model.h"

namespace edgedecode::test {
namespace {

const std::string kF32 = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";
const std::string kStory = "Lily went to the park with her mom. She saw a big red ball and a little dog.";

// The q4_0 and q8_0 copies of stories260K, made once by `edgedecode quantize` in the test's temp dir.
class Draft : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir();
    q4_ = dir_ + "/draft_stories260K.q4_0.gguf";
    q8_ = dir_ + "/draft_stories260K.q8_0.gguf";
    for (const auto& [out, type] : {std::pair{q4_, "q4_0"}, std::pair{q8_, "q8_0"}}) {
      CommandResult r = RunEdgedecode("quantize -q " + kF32 + " " + out + " " + type);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static nlohmann::json RunJson(const std::string& model, const std::string& args) {
    CommandResult r = RunEdgedecode("run -m " + model + " " + args + " --json");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    if (r.exit_code != 0) return nlohmann::json::object();
    return nlohmann::json::parse(r.out);
  }
  static inline std::string dir_, q4_, q8_;
};

// Greedy: the same tokens as plain decoding with a q4_0 copy as the draft of the f32 and the q8_0 target,
// and with the target re-encoded to q4_0 at load, for f16 and q8_0 KV at 1 and 2 threads; drafting never
// paused (--lookup-fixed), so every step is a verify pass, and the draft is mostly right.
TEST_F(Draft, GreedyEqualsPlainForKvTypesAndThreads) {
  for (const std::string kv : {"f16", "q8_0"}) {
    for (const std::string t : {"1", "2"}) {
      for (const std::string& target : {kF32, q8_}) {
        const std::string base = "-p '" + kStory + "' --temp 0 -n 80 --ignore-eos -t " + t + " --kv-type " + kv;
        const nlohmann::json plain = RunJson(target, base);
        ASSERT_TRUE(plain.contains("tokens"));
        for (const std::string& draft : {"--draft " + q4_, std::string("--draft-quant q4_0")}) {
          const nlohmann::json spec = RunJson(target, base + " " + draft + " --draft-max 4 --lookup-fixed");
          ASSERT_TRUE(spec.contains("speculative")) << base << " " << draft;
          EXPECT_EQ(spec["tokens"], plain["tokens"]) << base << " " << draft << " on " << target;
          EXPECT_EQ(spec["text"], plain["text"]) << base << " " << draft;
          const nlohmann::json& s = spec["speculative"];
          EXPECT_EQ(s["method"], "draft");
          EXPECT_GT(s["accepted"].get<int64_t>(), s["drafted"].get<int64_t>() / 2) << base << " " << draft;
          EXPECT_GT(s["draft_s"].get<double>(), 0.0);
          EXPECT_GT(s["verify_s"].get<double>(), 0.0);
        }
      }
    }
  }
}

// The model drafting for itself: every drafted token is the target's own greedy choice (the forward pass
// gives a row the same bits whatever the batch), so a drafter whose cache fell out of step with the
// accepted history (a position not rolled back, a token evaluated twice or not at all) shows as a rejection.
TEST_F(Draft, SelfDraftHasEveryDraftAccepted) {
  for (const std::string kv : {"f16", "q8_0"}) {
    const std::string base = "-p '" + kStory + "' --temp 0 -n 100 --ignore-eos -t 2 --kv-type " + kv;
    const nlohmann::json plain = RunJson(kF32, base);
    const nlohmann::json spec = RunJson(kF32, base + " --draft " + kF32 + " --draft-max 5 --lookup-fixed");
    EXPECT_EQ(spec["tokens"], plain["tokens"]) << kv;
    const nlohmann::json& s = spec["speculative"];
    EXPECT_GT(s["drafted"].get<int64_t>(), 50) << kv;
    EXPECT_EQ(s["accepted"], s["drafted"]) << kv;
    EXPECT_EQ(s["draft_model"]["rolled_back"], 0) << kv;
  }
}

// The drafter's cache against the history it is given: after every step (the target keeping 0 to 4 of the
// draft's tokens, then one of its own, often not the draft's), its proposal equals that of a fresh drafter
// shown the same history at once. A position not rolled back, or a token evaluated twice or not at all,
// changes the draft model's logits and so, over 40 steps, its proposals.
TEST(DraftModelDrafter, CacheFollowsTheHistory) {
  auto model = llm::Model::Load(kF32);
  ASSERT_TRUE(model.ok()) << model.status().message();
  llm::ContextParams cp;
  cp.n_ctx = 512;
  cp.n_threads = 1;
  auto ctx = llm::Context::Create(**model, cp);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  const int n_vocab = (*ctx)->n_vocab();
  llm::DraftModelDrafter synced(**ctx, n_vocab);
  std::vector<int32_t> history = (*model)->tokenizer().Encode("Once upon a time", true);
  ASSERT_EQ(history.size(), 5u);
  for (int step = 0; step < 40; ++step) {
    const std::vector<int32_t> draft = synced(history, 4);
    ASSERT_EQ(draft.size(), 4u) << step;
    auto fresh_ctx = llm::Context::Create(**model, cp);
    ASSERT_TRUE(fresh_ctx.ok());
    llm::DraftModelDrafter fresh(**fresh_ctx, n_vocab);
    EXPECT_EQ(draft, fresh(history, 4)) << "step " << step;
    const size_t keep = static_cast<size_t>(step % 5);
    history.insert(history.end(), draft.begin(), draft.begin() + static_cast<long>(keep));
    history.push_back(static_cast<int32_t>((step * 37 + 11) % n_vocab));
  }
  EXPECT_GT(synced.stats().rolled_back, 0);
  // Caught up: the prompt and the target's 40 own tokens at least; the kept draft tokens it had evaluated
  // itself are not evaluated again.
  EXPECT_GE(synced.stats().caught_up, 5 + 40);
  EXPECT_LT(synced.stats().caught_up, static_cast<int64_t>(history.size()) - 40) << "kept draft tokens evaluated again";
}

// Several drafters drafting together (serve's slots: DraftMany's shared passes): over 30 steps of histories
// that grow, keep part of each draft and diverge (another prompt each, one drafter asked for nothing at
// times, one for more than a batch of catch-up at first), every draft equals that of a drafter of its own
// asked alone in step. A row that took another's logits or positions, or a catch-up chunk lost, changes them.
TEST(DraftModelDrafter, DraftManyEqualsEachAlone) {
  auto model = llm::Model::Load(kF32);
  ASSERT_TRUE(model.ok()) << model.status().message();
  llm::ContextParams cp;
  cp.n_ctx = 512;
  cp.n_threads = 1;
  cp.n_batch = 8;  // the long prompt's catch-up takes several shared passes
  const int kN = 3;
  std::vector<std::unique_ptr<llm::Context>> many_ctx, alone_ctx;
  std::vector<std::unique_ptr<llm::DraftModelDrafter>> many, alone;
  for (int i = 0; i < 2 * kN; ++i) {
    auto c = llm::Context::Create(**model, cp);
    ASSERT_TRUE(c.ok()) << c.status().message();
    auto& ctxs = i < kN ? many_ctx : alone_ctx;
    ctxs.push_back(std::move(*c));
    (i < kN ? many : alone).push_back(std::make_unique<llm::DraftModelDrafter>(*ctxs.back(), ctxs.back()->n_vocab()));
  }
  const tok::Tokenizer& tk = (*model)->tokenizer();
  std::vector<std::vector<int32_t>> histories = {tk.Encode("Once upon a time", true), tk.Encode(kStory, true),
                                                 tk.Encode("The cat", true)};
  const int n_vocab = many_ctx[0]->n_vocab();
  for (int step = 0; step < 30; ++step) {
    std::vector<llm::DraftModelDrafter::Request> requests;
    for (int i = 0; i < kN; ++i) requests.push_back({many[i].get(), &histories[i], i == 2 && step % 3 == 0 ? 0 : 2 + (step + i) % 4, {}});
    llm::DraftModelDrafter::DraftMany(requests);
    for (int i = 0; i < kN; ++i) {
      const std::vector<int32_t> want = (*alone[i])(histories[i], requests[i].n_draft);
      EXPECT_EQ(requests[i].draft, want) << "step " << step << ", drafter " << i;
      const size_t keep = std::min(requests[i].draft.size(), static_cast<size_t>((step + i) % 3));
      histories[i].insert(histories[i].end(), requests[i].draft.begin(), requests[i].draft.begin() + static_cast<long>(keep));
      histories[i].push_back(static_cast<int32_t>((step * 37 + 11 * i + 5) % n_vocab));
    }
  }
  for (int i = 0; i < kN; ++i) {
    EXPECT_GT(many[i]->stats().rolled_back, 0) << i;
    EXPECT_EQ(many[i]->stats().caught_up, alone[i]->stats().caught_up) << i;
    EXPECT_EQ(many[i]->stats().rolled_back, alone[i]->stats().rolled_back) << i;
  }
}

// The draft with --lookup (n-gram first, then the draft model), sampling, -n, the context end and the
// context shift (the draft context slides its own window): plain decoding's tokens and stop.
TEST_F(Draft, LookupChainSamplingContextShiftAsPlain) {
  const std::string copy = "Lily saw a big dog. The dog was happy. Lily saw a big dog. The dog was happy. Lily";
  for (const std::string& extra : {"-p '" + copy + "' --temp 0 -n 120", "-p '" + copy + "' --temp 0.8 --seed 5 -n 100",
                                  "-p '" + kStory + "' --temp 0 -n 7", "-c 64 -p '" + kStory + "' --temp 0 -n 150 --ignore-eos",
                                  "-c 64 -p '" + kStory + "' --temp 0 -n 150 --ignore-eos --context-shift"}) {
    const nlohmann::json plain = RunJson(kF32, extra);
    const nlohmann::json spec = RunJson(kF32, extra + " --lookup 4 --draft " + q4_ + " --lookup-fixed");
    EXPECT_EQ(spec["tokens"], plain["tokens"]) << extra;
    EXPECT_EQ(spec["stop"], plain["stop"]) << extra;
    EXPECT_EQ(spec["context_shifts"], plain["context_shifts"]) << extra;
    if (spec.contains("speculative")) {
      EXPECT_EQ(spec["speculative"]["method"], "lookup+draft") << extra;
    }
    const nlohmann::json spec_adaptive = RunJson(kF32, extra + " --draft-quant q8_0");
    EXPECT_EQ(spec_adaptive["tokens"], plain["tokens"]) << extra;
  }
}

// Trees from a draft model (--tree-nodes with --draft / --draft-quant): the chain plus the draft's second
// choices, verified in one pass; plain decoding's tokens, fixed and adaptive, greedy and sampled, 1 and 2
// threads; branching trees were verified, and a tree holding the chain keeps at least its tokens per pass.
TEST_F(Draft, TreesGreedyAndSampledAsPlain) {
  for (const std::string t : {"1", "2"}) {
    for (const std::string& extra : {"-p '" + kStory + "' --temp 0 -n 120 --ignore-eos -t " + t,
                                     "-p '" + kStory + "' --temp 0.8 --seed 3 -n 100 --ignore-eos -t " + t}) {
      const nlohmann::json plain = RunJson(kF32, extra);
      const nlohmann::json chain = RunJson(kF32, extra + " --draft " + q4_ + " --draft-max 4 --lookup-fixed");
      const nlohmann::json tree = RunJson(kF32, extra + " --draft " + q4_ + " --draft-max 4 --tree-nodes 7 --lookup-fixed");
      const nlohmann::json adaptive = RunJson(kF32, extra + " --draft-quant q4_0 --draft-max 4 --tree-nodes 7");
      EXPECT_EQ(tree["tokens"], plain["tokens"]) << extra;
      EXPECT_EQ(adaptive["tokens"], plain["tokens"]) << extra;
      ASSERT_TRUE(tree.contains("speculative")) << extra;
      EXPECT_GT(tree["speculative"]["tree_passes"].get<int64_t>(), 0) << extra;
      EXPECT_GE(tree["speculative"]["tokens_per_pass"].get<double>(), chain["speculative"]["tokens_per_pass"].get<double>())
          << extra;
    }
  }
}

// The tree's shape from the draft's steps: the chain first, as deep as the budget, then the second choices by
// their path's probability, each beside the chain's node at its depth.
TEST(DraftTree, ChainThenSecondChoicesByPathProbability) {
  const std::vector<llm::DraftStep> steps = {{10, 11, 0.9, 0.05}, {20, 21, 0.5, 0.4}, {30, -1, 1.0, 0.0}, {40, 41, 0.6, 0.3}};
  llm::DraftTree t = llm::TreeFromSteps(steps, 7);
  // Second choices: depth 0: 0.05; depth 1: 0.9 * 0.4 = 0.36; depth 3: 0.9 * 0.5 * 1.0 * 0.3 = 0.135.
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{10, 20, 30, 40, 21, 41, 11}));
  EXPECT_EQ(t.parents, (std::vector<int>{-1, 0, 1, 2, 0, 2, -1}));
  t = llm::TreeFromSteps(steps, 5);  // the budget keeps the chain and the likeliest second choice
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{10, 20, 30, 40, 21}));
  t = llm::TreeFromSteps(steps, 3);  // a budget below the depth: a chain
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{10, 20, 30}));
  EXPECT_TRUE(t.IsChain());
  EXPECT_TRUE(llm::TreeFromSteps({}, 4).empty());
}

uint64_t PlanTotal(const std::string& args) {
  CommandResult r = RunEdgedecode("plan " + args + " --json -");
  EXPECT_EQ(r.exit_code == 0 || r.exit_code == 1, true) << args << "\n" << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (!j.is_object() || !j.contains("total_bytes")) {
    ADD_FAILURE() << args << "\n" << r.out;
    return 0;
  }
  return j["total_bytes"].get<uint64_t>();
}

// plan counts the draft's weights, KV cache and scratch; run refuses a draft that does not fit the memory
// the plan is checked against (EDGEDECODE_AVAILABLE_MEMORY stands in for a small device).
TEST_F(Draft, PlanCountsTheDraftAndRunRefusesWhatDoesNotFit) {
  const std::string model = "-m " + kF32 + " -c 128";
  const uint64_t alone = PlanTotal(model);
  const uint64_t with_copy = PlanTotal(model + " --draft " + q4_);
  const uint64_t with_quant = PlanTotal(model + " --draft-quant q4_0");
  ASSERT_GT(alone, 0u);
  // The draft's weights (the q4_0 copy's file) and its KV cache at least.
  const uint64_t q4_file = ReadFile(q4_).size();
  EXPECT_GT(with_copy, alone + q4_file) << "the draft's weights and KV cache are counted";
  // --draft-quant sizes the same re-encoding before it exists: within 5% of the copy's plan.
  EXPECT_NEAR(static_cast<double>(with_quant), static_cast<double>(with_copy), 0.05 * static_cast<double>(with_copy - alone));
  CommandResult r = RunEdgedecode("plan " + model + " --draft-quant q4_0");
  EXPECT_NE(r.out.find("draft weights"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("draft KV cache"), std::string::npos) << r.out;

  // Between the model's plan and the plan with its draft: plain run fits, the draft does not.
  const std::string env = "EDGEDECODE_AVAILABLE_MEMORY=" + std::to_string((alone + with_copy) / 2);
  const std::string run = "run " + model + " -p 'Once' --temp 0 -n 4";
  r = RunEdgedecode(run, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& draft : {"--draft " + q4_, std::string("--draft-quant q4_0")}) {
    r = RunEdgedecode(run + " " + draft, env);
    EXPECT_EQ(r.exit_code, 1) << draft << "\n" << r.err;
    EXPECT_NE(r.err.find("the model and its draft need"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("draft weights"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace edgedecode::test
