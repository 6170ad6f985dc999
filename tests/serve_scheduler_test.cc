// The serve scheduler's cost-aware speculative decoding (src/cli/serve_scheduler.h), driven in-process on
// stories260K with the drafting costs fixed by the test (SpecOptions::fixed_costs), so that no decision
// depends on this machine's timing: a draft model whose proposals never match (random weights over the same
// vocabulary) is paused after a bounded number of steps; a perfect draft (the model drafting for itself)
// keeps drafting while its tokens are cheap, and is turned off when each drafted token costs more than a
// whole step. Every answer equals plain decoding's, token for token. Self-speculative drafting (each slot's
// own context with layers skipped, SpecOptions::self_spec) gives plain decoding's answers too, one slot or
// several drafting in shared passes, on a model with sliding-window layers too, with the lookup before it or
// not, and pauses where it cannot pay.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/serve_scheduler.h"
#include "cli_util.h"
#include "llm/model.h"
#include "llm/self_spec.h"

namespace edgedecode::test {
namespace {

const std::string kF32 = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";
const std::string kStory = "Lily went to the park with her mom. She saw a big red ball and a little dog.";
constexpr int kTokens = 160;

struct Served {
  std::vector<std::string> texts;
  cli::serve::SchedulerStats stats;
};

class SchedulerSpec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto t = llm::Model::Load(kF32);
    ASSERT_TRUE(t.ok()) << t.status().message();
    target_ = std::move(t).value().release();
    // Random weights with stories260K's vocabulary: its greedy drafts are (almost) never the target's.
    const std::string cfg = ::testing::TempDir() + "/random_draft.json";
    std::ofstream(cfg) << R"({"dim": 32, "n_layers": 1, "n_heads": 2, "n_kv_heads": 2, "ffn": 64, "vocab": 512, "context": 512})";
    const std::string path = ::testing::TempDir() + "/random_draft.gguf";
    CommandResult r = RunEdgedecode("synth --config " + cfg + " --vocab " + kF32 + " --type f32 --seed 7 -o " + path + " --no-progress");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto d = llm::Model::Load(path);
    ASSERT_TRUE(d.ok()) << d.status().message();
    random_ = std::move(d).value().release();
    // Sliding-window layers (4 layers, window 16: 0, 1 and 3 sliding), whose rings a roll back must keep.
    // Untied: its random output matrix makes varied text (tied, the model repeats the prompt's last token).
    const std::string gcfg = ::testing::TempDir() + "/serve_gemma3.json";
    std::ofstream(gcfg) << R"({"preset": "gemma3-tiny", "tied": false, "dim": 64, "ffn": 128, "vocab": 512})";
    const std::string gemma = ::testing::TempDir() + "/serve_gemma3.gguf";
    r = RunEdgedecode("synth --config " + gcfg + " --type f32 -o " + gemma + " --no-progress");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto g = llm::Model::Load(gemma);
    ASSERT_TRUE(g.ok()) << g.status().message();
    gemma_ = std::move(g).value().release();
  }
  static void TearDownTestSuite() {
    delete target_;
    delete random_;
    delete gemma_;
    for (const char* name : {"random_draft.json", "random_draft.gguf", "serve_gemma3.json", "serve_gemma3.gguf"})
      std::remove((::testing::TempDir() + "/" + name).c_str());
  }

  // Greedy answers of kTokens to `prompts` (one slot each, at once) from a scheduler with `draft` drafting
  // (null: none) under `spec`, and its counters after them.
  // target: the model served (null: stories260K); n_batch: the slots' batch (the scheduler's too).
  static Served Serve(const llm::Model* draft, const cli::serve::SpecOptions& spec, const std::vector<std::string>& prompts,
                      const llm::Model* target = nullptr, int n_batch = 64) {
    if (target == nullptr) target = target_;
    llm::ContextParams cp;
    cp.n_ctx = 512;
    cp.n_batch = n_batch;
    cp.n_threads = 1;
    std::vector<std::unique_ptr<llm::Context>> ctxs, drafts;
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto c = llm::Context::Create(*target, cp);
      EXPECT_TRUE(c.ok());
      ctxs.push_back(std::move(c).value());
      if (draft == nullptr) continue;
      auto dc = llm::Context::Create(*draft, cp);
      EXPECT_TRUE(dc.ok());
      drafts.push_back(std::move(dc).value());
    }
    const tok::Tokenizer& tk = target->tokenizer();
    cli::serve::Scheduler sched(std::move(ctxs), tk, n_batch, 4, spec, std::move(drafts));
    std::vector<std::shared_ptr<cli::serve::Job>> jobs;
    for (const std::string& p : prompts) {
      auto job = std::make_shared<cli::serve::Job>();
      job->prompt = tk.Encode(p, true);
      job->max_tokens = kTokens;
      job->sampling.temperature = 0;
      job->ignore_eos = true;
      EXPECT_TRUE(sched.Submit(job).ok());
      jobs.push_back(job);
    }
    Served out;
    for (auto& job : jobs) {
      std::vector<std::string> pieces;
      while (!job->WaitPieces(&pieces, 1000)) {}
      job->WaitPieces(&pieces, 0);
      std::string text;
      for (const std::string& s : pieces) text += s;
      EXPECT_EQ(job->completion_tokens, kTokens);
      out.texts.push_back(text);
    }
    out.stats = sched.Stats();
    return out;
  }

  static cli::serve::SpecOptions Costs(double draft_token_s) {
    cli::serve::SpecOptions spec;
    spec.draft_max = 4;
    spec.fixed_costs = {1e-3, 1e-5, draft_token_s};
    return spec;
  }

  static inline llm::Model* target_ = nullptr;
  static inline llm::Model* random_ = nullptr;
  static inline llm::Model* gemma_ = nullptr;
};

// The drafting counters of a run, on the test's output (what the pauses did).
void PrintDraftStats(const char* what, const cli::serve::SchedulerStats& st) {
  std::printf("note: %s: %llu passes drafted %llu tokens, %llu accepted; %llu steps paused\n", what,
              static_cast<unsigned long long>(st.draft_passes), static_cast<unsigned long long>(st.draft_tokens),
              static_cast<unsigned long long>(st.draft_accepted), static_cast<unsigned long long>(st.draft_paused_steps));
}

const std::vector<std::string> kPrompts = {kStory, "Once upon a time, there was a little girl named"};

// Cheap drafts from a model that is never right: every pass is rejected at its first token, so the slot
// pauses (4 steps, doubling to 128) and only its probes draft.
TEST_F(SchedulerSpec, DraftThatNeverMatchesIsPaused) {
  const Served plain = Serve(nullptr, {}, kPrompts);
  const Served spec = Serve(random_, Costs(1e-5), kPrompts);
  EXPECT_EQ(spec.texts, plain.texts);
  const auto& st = spec.stats;
  PrintDraftStats("never-matching draft", st);
  EXPECT_EQ(plain.stats.draft_passes, 0u);
  EXPECT_GT(st.draft_passes, 0u);  // it was tried
  // Two slots of kTokens steps each (a rejected pass gives one token): without the pause every step would
  // draft; with it, a handful of passes as the pauses double (4, 8, 16, ... steps).
  EXPECT_LE(st.draft_passes, 2u * 14);
  EXPECT_GE(st.draft_paused_steps, 2u * (kTokens - 40));
  EXPECT_LE(st.draft_accepted * 10, st.draft_tokens);
}

// The model drafting for itself with cheap draft tokens: every draft is right, so every step drafts.
TEST_F(SchedulerSpec, PerfectCheapDraftKeepsDrafting) {
  const Served plain = Serve(nullptr, {}, kPrompts);
  const Served spec = Serve(target_, Costs(1e-5), kPrompts);
  EXPECT_EQ(spec.texts, plain.texts);
  const auto& st = spec.stats;
  EXPECT_EQ(st.draft_paused_steps, 0u);
  EXPECT_EQ(st.draft_accepted, st.draft_tokens);
  // Most tokens came from drafts: at most 4 a pass, and a pass gives one more.
  EXPECT_GE(st.draft_accepted * 10, st.completion_tokens * 6) << st.draft_accepted << " of " << st.completion_tokens;
}

// The same perfect draft when each drafted token costs two plain steps: drafting cannot pay, so the slots
// pause and probe now and then (less often each time they lose), whatever the acceptance.
TEST_F(SchedulerSpec, PerfectCostlyDraftIsPaused) {
  const Served plain = Serve(nullptr, {}, kPrompts);
  const Served spec = Serve(target_, Costs(2e-3), kPrompts);
  EXPECT_EQ(spec.texts, plain.texts);
  const auto& st = spec.stats;
  PrintDraftStats("costly perfect draft", st);
  EXPECT_EQ(st.draft_accepted, st.draft_tokens);
  EXPECT_LE(st.draft_passes, 2u * 12);
  EXPECT_GE(st.draft_paused_steps, 2u * (kTokens - 60));
}

cli::serve::SpecOptions SelfSpec(std::vector<int> skip, double draft_token_s, int lookup = 0) {
  cli::serve::SpecOptions spec;
  spec.draft_max = 4;
  spec.lookup = lookup;
  spec.self_spec = std::move(skip);
  spec.fixed_costs = {1e-3, 1e-5, draft_token_s};
  return spec;
}

const std::vector<std::string> kFourPrompts = {kStory, "Once upon a time, there was a little girl named", "The cat",
                                               "Tom had a big box of toys. One day"};

// Cheap self-speculative drafts (stories260K has 5 layers): the greedy answers are plain decoding's, with one
// slot and with several drafting at once (their drafts in shared passes, then rolled back in each slot's
// cache: every layer, the kept ones the draft wrote included), and drafts were verified and accepted.
TEST_F(SchedulerSpec, SelfSpecGreedyEqualsPlain) {
  for (const auto& prompts : {std::vector<std::string>{kStory}, kPrompts, kFourPrompts}) {
    const Served plain = Serve(nullptr, {}, prompts);
    for (const std::vector<int>& skip : {std::vector<int>{3}, std::vector<int>{1, 2}}) {
      const Served spec = Serve(nullptr, SelfSpec(skip, 1e-5), prompts);
      EXPECT_EQ(spec.texts, plain.texts) << prompts.size() << " slot(s), skip " << llm::FormatSkipLayers(skip);
      const auto& st = spec.stats;
      PrintDraftStats(("self-spec, skip " + llm::FormatSkipLayers(skip)).c_str(), st);
      EXPECT_GT(st.draft_passes, 0u);
      EXPECT_GT(st.draft_accepted, 0u);
      EXPECT_LE(st.draft_accepted, st.draft_tokens);
    }
  }
}

// A model with sliding-window layers and a small batch (8: drafts of at most 7 within the rings' slack),
// several slots: the drafts of the kept layers (sliding ones among them) are rolled back without losing the
// window, and the answers are plain decoding's.
TEST_F(SchedulerSpec, SelfSpecOnSlidingWindowEqualsPlain) {
  const Served plain = Serve(nullptr, {}, kFourPrompts, gemma_, 8);
  for (const std::vector<int>& skip : {std::vector<int>{1}, std::vector<int>{2, 3}}) {
    cli::serve::SpecOptions spec = SelfSpec(skip, 1e-5);
    spec.draft_max = 7;
    const Served self = Serve(nullptr, spec, kFourPrompts, gemma_, 8);
    EXPECT_EQ(self.texts, plain.texts) << "skip " << llm::FormatSkipLayers(skip);
    PrintDraftStats(("gemma3 self-spec, skip " + llm::FormatSkipLayers(skip)).c_str(), self.stats);
    EXPECT_GT(self.stats.draft_accepted, 0u);
  }
}

// With --lookup too, the n-gram lookup is asked first and the skipped layers only where it finds nothing:
// still plain decoding's answers.
TEST_F(SchedulerSpec, LookupThenSelfSpecEqualsPlain) {
  const Served plain = Serve(nullptr, {}, kFourPrompts);
  const Served spec = Serve(nullptr, SelfSpec({3}, 1e-5, 3), kFourPrompts);
  EXPECT_EQ(spec.texts, plain.texts);
  EXPECT_GT(spec.stats.draft_accepted, 0u);
}

// Self-speculative tokens that cost two plain steps each cannot pay whatever they accept: the slots pause
// and only probe now and then, as for a draft model.
TEST_F(SchedulerSpec, CostlySelfSpecIsPaused) {
  const Served plain = Serve(nullptr, {}, kPrompts);
  const Served spec = Serve(nullptr, SelfSpec({3}, 2e-3), kPrompts);
  EXPECT_EQ(spec.texts, plain.texts);
  const auto& st = spec.stats;
  PrintDraftStats("costly self-spec", st);
  EXPECT_GT(st.draft_passes, 0u);  // it was tried
  EXPECT_LE(st.draft_passes, 2u * 12);
  EXPECT_GE(st.draft_paused_steps, 2u * (kTokens - 60));
}

}  // namespace
}  // namespace edgedecode::test
