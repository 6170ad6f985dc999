// Self-speculative decoding by layer skip (`run --self-spec LAYERS`, `--self-spec auto`): the output is plain
// decoding's, token for token (f32 and q8_0 targets, f16 and q8_0 KV, 1 and 2 threads, stories260K, a synth
// llama and a sliding-window gemma3); the drafter leaves the cache as it found it, alone or drafting with
// others in shared passes (serve's slots); auto searches a set,
// saves it beside the model and reuses it. Bad input: llm_draft_errors_test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli_util.h"
#include "llm/self_spec.h"

namespace edgedecode::test {
namespace {

const std::string kF32 = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";
const std::string kStory = "Lily went to the park with her mom. She saw a big red ball and a little dog.";

nlohmann::json RunJson(const std::string& model, const std::string& args, std::string* err = nullptr) {
  CommandResult r = RunEdgedecode("run -m " + model + " " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (err != nullptr) *err = r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

TEST(SelfSpecLayers, ParsedFormattedAndRefused) {
  auto s = llm::ParseSkipLayers("4-7,10", 12);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s, (std::vector<int>{4, 5, 6, 7, 10}));
  EXPECT_EQ(llm::FormatSkipLayers(*s), "4-7,10");
  s = llm::ParseSkipLayers(" 3 , 1-2 ", 5);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(llm::FormatSkipLayers(*s), "1-3");
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"5", "layer 5 is out of range: the model has 5 layers (0..4)"},
           {"1,1-2", "layer 1 is given twice"},
           {"0-4", "every layer (5) is skipped"},
           {"3-1", "the range '3-1' runs backwards"},
           {"x", "'x' in 'x' is not a layer number"},
           {"", "is not a layer number"},
           {"1,", "is not a layer number"},
           {"-1", "is not a layer number"},
           {"99999999999", "is not a layer number"}}) {
    auto r = llm::ParseSkipLayers(text, 5);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << text << ": " << r.status().message();
  }
}

// The drafter rolls back what it wrote: after each draft, the full model's next pass gives the logits of a
// context that never drafted, bit for bit (a kept layer's row left at a drafted position, or a position not
// rolled back, changes them), and its drafts are the skipping model's own greedy continuation.
TEST(SelfSpecDrafter, LeavesTheCacheAsItFoundIt) {
  auto model = llm::Model::Load(kF32);
  ASSERT_TRUE(model.ok()) << model.status().message();
  llm::ContextParams cp;
  cp.n_ctx = 256;
  cp.n_threads = 1;
  auto drafting = llm::Context::Create(**model, cp);
  auto plain = llm::Context::Create(**model, cp);
  auto skipping = llm::Context::Create(**model, cp);
  ASSERT_TRUE(drafting.ok() && plain.ok() && skipping.ok());
  const std::vector<int> skip = {2, 3};
  llm::SelfSpecDrafter drafter(**drafting, skip);
  std::vector<bool> flags(5, false);
  flags[2] = flags[3] = true;
  std::vector<int32_t> history = (*model)->tokenizer().Encode("Once upon a time", true);
  ASSERT_TRUE((*drafting)->Eval(history.data(), static_cast<int>(history.size()) - 1, false).ok());
  ASSERT_TRUE((*plain)->Eval(history.data(), static_cast<int>(history.size()) - 1, false).ok());
  const int n_vocab = (*plain)->n_vocab();
  int differs = 0;  // steps whose first drafted token is not the full model's: the skip set is honoured
  for (int step = 0; step < 30; ++step) {
    const int before = (*drafting)->n_past();
    const std::vector<int32_t> draft = drafter(history, 4);
    ASSERT_EQ(draft.size(), 4u) << step;
    EXPECT_EQ((*drafting)->n_past(), before) << step;
    EXPECT_TRUE((*drafting)->skip_layers().empty());
    // The reference: a fresh context that evaluated the history but its last token with the full model,
    // then the skipping model from there, greedily.
    (*skipping)->Reset();
    ASSERT_TRUE((*skipping)->Eval(history.data(), static_cast<int>(history.size()) - 1, false).ok());
    (*skipping)->SetSkipLayers(flags);
    int32_t t = history.back();
    for (size_t i = 0; i < draft.size(); ++i) {
      ASSERT_TRUE((*skipping)->Eval(&t, 1, false).ok());
      const float* row = (*skipping)->logits(0);
      t = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
      EXPECT_EQ(draft[i], t) << "step " << step << " draft token " << i;
    }
    (*skipping)->SetSkipLayers({});
    // The full model's next step on the drafting context equals the one on a context that never drafted.
    const int32_t last = history.back();
    ASSERT_TRUE((*drafting)->Eval(&last, 1, false).ok());
    ASSERT_TRUE((*plain)->Eval(&last, 1, false).ok());
    ASSERT_EQ(0, std::memcmp((*drafting)->logits(0), (*plain)->logits(0), sizeof(float) * n_vocab)) << "step " << step;
    const float* row = (*plain)->logits(0);
    const int32_t full_next = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
    differs += full_next != draft[0];
    // The history goes on with a token that is sometimes the draft's, sometimes not.
    history.push_back(step % 3 == 0 ? static_cast<int32_t>((step * 37 + 11) % n_vocab) : full_next);
  }
  EXPECT_EQ(drafter.stats().evals, 30 * 4);
  EXPECT_GT(differs, 0) << "the drafts are the full model's: no layer was skipped";
}

// Several drafters at once (serve's slots): each draft of the shared passes is the one the drafter gives alone
// (the same tokens: each row's arithmetic is its own), of the lengths asked (0 and past the batch included),
// and every context's cache and skip set are as they were. A shared pass refuses contexts that skip other
// layers (EvalMulti would compute the lead's set for every row).
TEST(SelfSpecDrafter, DraftManyEqualsAlone) {
  auto model = llm::Model::Load(kF32);
  ASSERT_TRUE(model.ok()) << model.status().message();
  llm::ContextParams cp;
  cp.n_ctx = 256;
  cp.n_batch = 8;
  cp.n_threads = 1;
  const tok::Tokenizer& tk = (*model)->tokenizer();
  const std::vector<std::string> prompts = {"Once upon a time", kStory, "The cat sat", "Tom and"};
  const std::vector<int> lengths = {4, 6, 0, 20};  // 20: past the batch, so 7
  std::vector<std::unique_ptr<llm::Context>> many, alone;
  std::vector<std::vector<int32_t>> histories;
  for (const std::string& p : prompts) {
    histories.push_back(tk.Encode(p, true));
    for (auto* list : {&many, &alone}) {
      auto c = llm::Context::Create(**model, cp);
      ASSERT_TRUE(c.ok());
      ASSERT_TRUE((*c)->Eval(histories.back().data(), static_cast<int>(histories.back().size()) - 1, false).ok());
      list->push_back(std::move(*c));
    }
  }
  std::vector<std::unique_ptr<llm::SelfSpecDrafter>> drafters, solo;
  for (size_t i = 0; i < prompts.size(); ++i) {
    drafters.push_back(std::make_unique<llm::SelfSpecDrafter>(*many[i], std::vector<int>{2}));
    solo.push_back(std::make_unique<llm::SelfSpecDrafter>(*alone[i], std::vector<int>{2}));
  }
  for (int round = 0; round < 3; ++round) {
    std::vector<llm::SelfSpecDrafter::Request> requests;
    for (size_t i = 0; i < prompts.size(); ++i) requests.push_back({drafters[i].get(), &histories[i], lengths[i], {}});
    llm::SelfSpecDrafter::DraftMany(requests);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::vector<int32_t> want = (*solo[i])(histories[i], lengths[i]);
      EXPECT_EQ(requests[i].draft, want) << "round " << round << ", drafter " << i;
      EXPECT_EQ(requests[i].draft.size(), static_cast<size_t>(std::min(lengths[i], 7))) << i;
      EXPECT_EQ(many[i]->n_past(), static_cast<int>(histories[i].size()) - 1) << i;
      EXPECT_TRUE(many[i]->skip_layers().empty()) << i;
      // The history goes on by the first drafted token (or a fixed one), on both contexts alike.
      const int32_t next = want.empty() ? 5 : want[0];
      ASSERT_TRUE(many[i]->Eval(&histories[i].back(), 1, false).ok());
      ASSERT_TRUE(alone[i]->Eval(&histories[i].back(), 1, false).ok());
      histories[i].push_back(next);
    }
  }
  EXPECT_EQ(drafters[0]->stats().evals, 3 * 4);
  // Contexts that skip different layers do not share a pass.
  std::vector<bool> a(5, false), b(5, false);
  a[1] = b[2] = true;
  many[0]->SetSkipLayers(a);
  many[1]->SetSkipLayers(b);
  const int32_t t = 7;
  const llm::SeqTokens rows[] = {{many[0].get(), &t, 1, false}, {many[1].get(), &t, 1, false}};
  const Status st = llm::Context::EvalMulti(rows);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("skips other layers"), std::string::npos) << st.message();
}

class SelfSpec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/self_spec_test";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    q8_ = dir_ + "/stories260K.q8_0.gguf";
    CommandResult r = RunEdgedecode("quantize -q " + kF32 + " " + q8_ + " q8_0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string cfg = dir_ + "/synth.json";
    std::ofstream(cfg) << R"({"dim": 64, "n_layers": 4, "n_heads": 4, "n_kv_heads": 2, "ffn": 128, "vocab": 300, "context": 256})";
    synth_ = dir_ + "/synth.gguf";
    r = RunEdgedecode("synth --config " + cfg + " --type f32 -o " + synth_ + " --no-progress");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    gemma_ = dir_ + "/gemma3.gguf";  // 4 layers, window 16: 0, 1 and 3 sliding
    r = RunEdgedecode("synth --preset gemma3-tiny --type f32 -o " + gemma_ + " --no-progress");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static inline std::string dir_, q8_, synth_, gemma_;
};

// Greedy: plain decoding's tokens with every step a verify pass (--lookup-fixed), for the f32 and q8_0
// targets, f16 and q8_0 KV, 1 and 2 threads; the skipping model drafts the target's tokens often.
TEST_F(SelfSpec, GreedyEqualsPlainForKvTypesAndThreads) {
  for (const std::string kv : {"f16", "q8_0"}) {
    for (const std::string t : {"1", "2"}) {
      for (const std::string& target : {kF32, q8_}) {
        const std::string base = "-p '" + kStory + "' --temp 0 -n 80 --ignore-eos -t " + t + " --kv-type " + kv;
        const nlohmann::json plain = RunJson(target, base);
        ASSERT_TRUE(plain.contains("tokens"));
        const nlohmann::json spec = RunJson(target, base + " --self-spec 3 --draft-max 4 --lookup-fixed");
        ASSERT_TRUE(spec.contains("speculative")) << base;
        EXPECT_EQ(spec["tokens"], plain["tokens"]) << base << " on " << target;
        EXPECT_EQ(spec["text"], plain["text"]) << base;
        const nlohmann::json& s = spec["speculative"];
        EXPECT_EQ(s["method"], "self-spec");
        EXPECT_EQ(s["self_spec"]["skip"], nlohmann::json::array({3}));
        EXPECT_EQ(s["self_spec"]["source"], "given");
        EXPECT_GT(s["drafted"].get<int64_t>(), 40) << base;
        EXPECT_GT(s["accepted"].get<int64_t>(), 0) << base;
        EXPECT_GT(s["self_spec"]["evals"].get<int64_t>(), 0);
      }
    }
  }
}

// Other shapes: a synth llama (random weights: drafts mostly wrong, every rejection rolled back) and a gemma3
// whose sliding-window rings (window 16, batch 8) wrap many times; with --lookup first, sampling, the
// context end and the context shift.
TEST_F(SelfSpec, OtherShapesSamplingAndContextShiftAsPlain) {
  const std::string long_gen = "-p '" + kStory + "' --temp 0 -n 150 --ignore-eos";
  const std::string gemma_gen = "-p '" + kStory + "' --temp 0 -n 90 --ignore-eos";  // past the window 5 times
  struct Case {
    std::string model, common, spec;
  };
  for (const Case& c : std::vector<Case>{
           {synth_, long_gen, "--self-spec 1-2"},
           {synth_, long_gen + " -t 2 --kv-type q8_0", "--self-spec 0"},
           {gemma_, gemma_gen + " -b 8", "--self-spec 2-3"},
           {gemma_, gemma_gen + " -b 8 -t 2", "--self-spec 1"},
           {kF32, "-p '" + kStory + "' --temp 0.8 --seed 5 -n 100", "--self-spec 2-3"},
           {kF32, "-c 64 -p '" + kStory + "' --temp 0 -n 150 --ignore-eos", "--self-spec 4"},
           {kF32, "-c 64 -p '" + kStory + "' --temp 0 -n 150 --ignore-eos --context-shift", "--lookup 3 --self-spec 4"}}) {
    const std::string& model = c.model;
    const std::string args = c.common + " " + c.spec;
    const size_t lk = c.spec.find("--lookup");
    const nlohmann::json plain = RunJson(model, c.common);
    const nlohmann::json spec = RunJson(model, args + " --lookup-fixed");
    EXPECT_EQ(spec["tokens"], plain["tokens"]) << model << " " << args;
    EXPECT_EQ(spec["stop"], plain["stop"]) << args;
    EXPECT_EQ(spec["context_shifts"], plain["context_shifts"]) << args;
    ASSERT_TRUE(spec.contains("speculative")) << args;
    EXPECT_EQ(spec["speculative"]["method"], lk != std::string::npos ? "lookup+self-spec" : "self-spec") << args;
    EXPECT_GT(spec["speculative"]["verify_passes"].get<int64_t>(), 0) << args;
    const nlohmann::json adaptive = RunJson(model, args);
    EXPECT_EQ(adaptive["tokens"], plain["tokens"]) << "adaptive " << args;
  }
}

// auto: the first run searches (on the built-in text for a short prompt) and saves the set beside the model;
// the second reuses it; both give plain decoding's tokens.
TEST_F(SelfSpec, AutoSearchesSavesAndReuses) {
  const std::string model = dir_ + "/auto.gguf";
  std::filesystem::copy_file(kF32, model, std::filesystem::copy_options::overwrite_existing);
  const std::string saved = model + ".self-spec.json";
  std::filesystem::remove(saved);
  const std::string base = "-p '" + kStory + "' --temp 0 -n 60 --ignore-eos -t 1";
  const nlohmann::json plain = RunJson(model, base);
  std::string err;
  const nlohmann::json first = RunJson(model, base + " --self-spec auto --lookup-fixed", &err);
  EXPECT_EQ(first["tokens"], plain["tokens"]);
  EXPECT_NE(err.find("searched the layers to skip on"), std::string::npos) << err;
  EXPECT_NE(err.find("built-in text"), std::string::npos) << err;
  const nlohmann::json& s1 = first["speculative"]["self_spec"];
  EXPECT_EQ(s1["source"], "searched");
  EXPECT_EQ(s1["saved"], true);
  EXPECT_EQ(s1["search"]["calibration"], "built-in");
  EXPECT_GT(s1["search"]["calibration_tokens"].get<int>(), 64);
  ASSERT_TRUE(std::filesystem::exists(saved));
  const nlohmann::json file = nlohmann::json::parse(ReadFile(saved));
  EXPECT_EQ(file["skip"], s1["skip"]);
  EXPECT_EQ(file["model"]["file_size"], std::filesystem::file_size(model));
  EXPECT_EQ(file["model"]["header_hash"].get<std::string>().size(), 16u);
  EXPECT_GT(file["acceptance"].get<double>(), 0.0);
  EXPECT_FALSE(std::filesystem::exists(saved + ".tmp-0"));

  const nlohmann::json second = RunJson(model, base + " --self-spec auto --lookup-fixed", &err);
  EXPECT_EQ(second["tokens"], plain["tokens"]);
  EXPECT_EQ(second["speculative"]["self_spec"]["source"], "saved");
  EXPECT_EQ(second["speculative"]["self_spec"]["skip"], s1["skip"]);
  EXPECT_NE(err.find("as saved in " + saved), std::string::npos) << err;

  // A long prompt calibrates on itself.
  std::filesystem::remove(saved);
  std::string long_prompt;
  for (int i = 0; i < 6; ++i) long_prompt += kStory + " ";
  const nlohmann::json on_prompt = RunJson(model, "-c 256 -p '" + long_prompt + "' --temp 0 -n 20 --self-spec auto");
  EXPECT_EQ(on_prompt["speculative"]["self_spec"]["search"]["calibration"], "prompt");
}

// The search on stories260K (5 layers) over the built-in calibration text, on a context of 256.
class SelfSpecSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = llm::Model::Load(kF32);
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m).value();
    llm::ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 1;
    auto c = llm::Context::Create(*model_, cp);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ctx_ = std::move(c).value();
    calib_ = model_->tokenizer().Encode(llm::SelfSpecCalibrationText(), true);
  }
  std::unique_ptr<llm::Model> model_;
  std::unique_ptr<llm::Context> ctx_;
  std::vector<int32_t> calib_;
};

// The search itself: a valid set (not every layer), acceptance and cost in range, the context left reset.
TEST_F(SelfSpecSearch, ChoosesAValidSet) {
  auto c = llm::SearchSkipSet(*ctx_, calib_, llm::SelfSpecSearchParams{});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(llm::CheckSkipSet(c->skip, 5).ok()) << llm::FormatSkipLayers(c->skip);
  EXPECT_GT(c->acceptance, 0.0);
  EXPECT_LE(c->acceptance, 1.0);
  EXPECT_GT(c->draft_cost, 0.0);
  EXPECT_LT(c->draft_cost, 1.0);
  EXPECT_GE(c->draft_len, 1);
  EXPECT_EQ(ctx_->n_past(), 0);
  EXPECT_TRUE(ctx_->skip_layers().empty());
  EXPECT_NEAR(llm::SelfSpecSpeedup(1.0, 3, 0.5, 0.0), 4.0 / 2.5, 1e-12);
  EXPECT_NEAR(llm::SelfSpecSpeedup(0.5, 1, 0.5, 1.0), 1.5 / 2.5, 1e-12);
}

// The search reports every candidate it scores, and stops when told: after 3 candidates of the first step
// it still returns a valid one-layer set, marked incomplete; run whole it scores more and is complete.
TEST_F(SelfSpecSearch, ReportsProgressAndStopsWhenTold) {
  std::vector<llm::SelfSpecProgress> seen;
  llm::SelfSpecSearchParams sp;
  sp.progress = [&](const llm::SelfSpecProgress& p) {
    seen.push_back(p);
    return p.scored < 3;
  };
  auto cut = llm::SearchSkipSet(*ctx_, calib_, sp);
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  EXPECT_FALSE(cut->complete);
  EXPECT_EQ(cut->skip.size(), 1u) << llm::FormatSkipLayers(cut->skip);
  EXPECT_TRUE(llm::CheckSkipSet(cut->skip, 5).ok());
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].step, 1);
    EXPECT_EQ(seen[i].step_candidates, 5);
    EXPECT_EQ(seen[i].step_scored, static_cast<int>(i) + 1);
    EXPECT_EQ(seen[i].scored, static_cast<int>(i) + 1);
  }
  EXPECT_EQ(ctx_->n_past(), 0);
  EXPECT_TRUE(ctx_->skip_layers().empty());

  seen.clear();
  sp.progress = [&](const llm::SelfSpecProgress& p) {
    seen.push_back(p);
    return true;
  };
  auto whole = llm::SearchSkipSet(*ctx_, calib_, sp);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_TRUE(whole->complete);
  ASSERT_GT(seen.size(), 5u);  // past the first step's five candidates
  EXPECT_EQ(seen[5].step, 2);
  EXPECT_EQ(seen[5].step_candidates, 4);
  EXPECT_GT(seen.back().best_speedup, 0.0);
}

}  // namespace
}  // namespace edgedecode::test
