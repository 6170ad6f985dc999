// Speculative decoding by prompt lookup (`run --lookup N`): the output is plain decoding's, token for
// token, for every KV type and thread count; drafts are accepted where the text repeats; stop strings,
// EOG and -n cut where they cut without it. Plus the n-gram drafter itself.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "cli_util.h"
#include "llm/speculative.h"

namespace edgedecode::test {
namespace {

const std::string kModel = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";
const std::string kStory = "Lily went to the park with her mom. She saw a big red ball and a little dog. The dog wanted to play.";
// Copy-heavy: a paragraph twice, then its first word again, so that the continuation repeats it (drafts
// are accepted with every KV type; the longer kStory twice is not copied with q4_0 KV by this tiny model).
const std::string kCopy = "Lily saw a big dog. The dog was happy. Lily saw a big dog. The dog was happy. Lily";

nlohmann::json RunJson(const std::string& args) {
  CommandResult r = RunEdgedecode("run -m " + kModel + " " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

TEST(LookupDraft, MostRecentLongestMatch) {
  using llm::LookupDraft;
  // ... 1 2 3 [7 8] ... 1 2 3 [9 5] ... 2 3 : the most recent "2 3" is followed by 9 5.
  const std::vector<int32_t> h = {1, 2, 3, 7, 8, 4, 1, 2, 3, 9, 5, 6, 2, 3};
  EXPECT_EQ(LookupDraft(h, 2, 3, 1), (std::vector<int32_t>{9, 5}));
  EXPECT_EQ(LookupDraft(h, 8, 3, 1), (std::vector<int32_t>{9, 5, 6, 2, 3}));  // up to the end of history
  // The 3-gram "1 2 3" wins over the more recent 1-gram "3".
  const std::vector<int32_t> g = {1, 2, 3, 4, 4, 3, 5, 1, 2, 3};
  EXPECT_EQ(LookupDraft(g, 2, 3, 1), (std::vector<int32_t>{4, 4}));
  EXPECT_EQ(LookupDraft(g, 2, 1, 1), (std::vector<int32_t>{5, 1}));
  EXPECT_TRUE(LookupDraft({1, 2, 3}, 4, 3, 1).empty());  // no earlier occurrence
  EXPECT_TRUE(LookupDraft({5}, 4, 3, 1).empty());
  EXPECT_TRUE(LookupDraft({}, 4, 3, 1).empty());
  EXPECT_TRUE(LookupDraft(h, 0, 3, 1).empty());
}

// Greedy: identical tokens with --lookup 4 and 8, for each KV type and thread count, on a normal and a
// copy-heavy prompt; on the copy-heavy one drafts are accepted (asserted where drafting never pauses).
TEST(Lookup, GreedyEqualsPlainForEveryKvTypeAndThreadCount) {
  for (const std::string kv : {"f16", "bf16", "q8_0", "q4_0"}) {
    for (const std::string t : {"1", "2"}) {
      for (const std::string& prompt : {std::string("Once upon a time"), kCopy}) {
        const std::string base = "-p '" + prompt + "' --temp 0 -n 120 -t " + t + " --kv-type " + kv;
        const nlohmann::json plain = RunJson(base);
        ASSERT_TRUE(plain.contains("tokens"));
        EXPECT_FALSE(plain.contains("speculative"));
        // --lookup 4 adaptive (whose pauses depend on timing), --lookup 8 drafting at every match.
        for (const std::string n : {"4", "8 --lookup-fixed"}) {
          const nlohmann::json spec = RunJson(base + " --lookup " + n);
          ASSERT_TRUE(spec.contains("speculative")) << base;
          EXPECT_EQ(spec["tokens"], plain["tokens"]) << base << " --lookup " << n;
          EXPECT_EQ(spec["text"], plain["text"]) << base << " --lookup " << n;
          EXPECT_EQ(spec["stop"], plain["stop"]) << base << " --lookup " << n;
          const nlohmann::json& s = spec["speculative"];
          EXPECT_LE(s["accepted"].get<int64_t>(), s["drafted"].get<int64_t>());
          if (prompt == kCopy && n != "4") {
            EXPECT_GT(s["accepted"].get<int64_t>(), 0) << base << " --lookup " << n;
          }
        }
      }
    }
  }
}

// 200 tokens past EOG (and past the model's 128-token context, with shifts), fixed drafting (never
// paused), against plain decoding: a wrongly accepted draft token (or a wrong rollback of the cache)
// changes the tokens from there on.
TEST(Lookup, NoWrongTokenAcceptedOver200Tokens) {
  for (const std::string kv : {"f16", "q4_0"}) {
    const std::string base = "-p '" + kCopy + "' --temp 0 -n 200 --ignore-eos --context-shift -t 2 --kv-type " + kv;
    const nlohmann::json plain = RunJson(base);
    const nlohmann::json spec = RunJson(base + " --lookup 8 --lookup-fixed");
    ASSERT_EQ(plain["tokens"].size(), 200u);
    EXPECT_EQ(spec["tokens"], plain["tokens"]) << kv;
    const nlohmann::json& s = spec["speculative"];
    EXPECT_GT(s["accepted"].get<int64_t>(), 0);
    EXPECT_LT(s["accepted"].get<int64_t>(), s["drafted"].get<int64_t>()) << "some drafts must be rejected";
    EXPECT_LT(s["verify_passes"].get<int64_t>() + s["plain_passes"].get<int64_t>(), 199) << "fewer passes than tokens";
  }
}

// A stop string and EOG inside an accepted draft cut exactly where plain decoding cuts; -n too.
TEST(Lookup, StopStringsEogAndNPredictCutAtTheSamePlace) {
  // The copy-heavy prompt's greedy continuation repeats its own sentences ("I want to play with ...",
  // "said Lily."); the later stops fall where drafts are being accepted.
  for (const std::string extra : {"-n 150 --stop 'I will help'", "-n 150 --stop 'were happy' --stop 'Max'",
                                  "-n 150 --stop 'with the dog.'",
                                  "-n 7", "-n 1", "-n 0", "-n 150"}) {
    const std::string base = "-p '" + kCopy + "' --temp 0 " + extra;
    const nlohmann::json plain = RunJson(base);
    if (extra.find("--stop") != std::string::npos) {
      EXPECT_EQ(plain["stop"], "stop_string") << extra;
    }
    const nlohmann::json spec = RunJson(base + " --lookup 8 --lookup-fixed");
    EXPECT_EQ(spec["tokens"], plain["tokens"]) << extra;
    EXPECT_EQ(spec["text"], plain["text"]) << extra;
    EXPECT_EQ(spec["stop"], plain["stop"]) << extra;
  }
}

// The context end, with and without --context-shift.
TEST(Lookup, ContextEndAndShiftAsPlain) {
  for (const std::string extra : {"", " --context-shift"}) {
    const std::string base = "-c 64 -p '" + kStory + "' --temp 0 -n 150 --ignore-eos" + extra;
    const nlohmann::json plain = RunJson(base);
    const nlohmann::json spec = RunJson(base + " --lookup 6 --lookup-fixed");
    EXPECT_EQ(spec["tokens"], plain["tokens"]) << extra;
    EXPECT_EQ(spec["stop"], plain["stop"]) << extra;
    EXPECT_EQ(spec["context_shifts"], plain["context_shifts"]) << extra;
  }
}

// Sampling: the sampler draws once per emitted token from the same rows, so a seed gives the same text.
TEST(Lookup, SamplingSameSeedSameTokens) {
  const std::string base = "-p '" + kCopy + "' --temp 0.8 --seed 11 -n 120 -t 2";
  const nlohmann::json plain = RunJson(base);
  const nlohmann::json spec = RunJson(base + " --lookup 4 --lookup-fixed");
  EXPECT_EQ(spec["tokens"], plain["tokens"]);
}

// The replay drafter (`--draft-replay`, a measuring tool): proposes a greedy run's own continuation, each
// token right with probability --replay-accept. The output stays plain decoding's at every rate; at 1 every
// draft is accepted, at 0 none is; between, some are.
TEST(Replay, GreedyEqualsPlainAtEveryAcceptRate) {
  const std::string dir = ::testing::TempDir();
  const std::string rec = dir + "/replay_rec.json";
  for (const std::string kv : {"f32", "q8_0"}) {
    const std::string base = "-p '" + kStory + "' --temp 0 -n 100 --ignore-eos --kv-type " + kv;
    CommandResult r = RunEdgedecode("run -m " + kModel + " " + base + " --json " + rec);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json plain = RunJson(base);
    for (const std::string a : {"1", "0.6", "0"}) {
      const nlohmann::json spec = RunJson(base + " --draft-replay " + rec + " --replay-accept " + a + " --lookup-fixed");
      EXPECT_EQ(spec["tokens"], plain["tokens"]) << kv << " accept " << a;
      const nlohmann::json& s = spec["speculative"];
      ASSERT_EQ(s["method"], "replay");
      const int64_t drafted = s["drafted"].get<int64_t>(), accepted = s["accepted"].get<int64_t>();
      EXPECT_GT(drafted, 0) << kv << " accept " << a;
      if (a == "1") {
        EXPECT_EQ(accepted, drafted) << kv;
      } else if (a == "0") {
        EXPECT_EQ(accepted, 0) << kv;
      } else {
        EXPECT_TRUE(accepted > 0 && accepted < drafted) << kv << ": " << accepted << " of " << drafted;
      }
    }
  }
}

TEST(Replay, WrongRecordingsAreRefused) {
  const std::string dir = ::testing::TempDir();
  const std::string rec = dir + "/replay_other.json";
  ASSERT_EQ(RunEdgedecode("run -m " + kModel + " -p 'Tom had a cat.' --temp 0 -n 8 --json " + rec).exit_code, 0);
  CommandResult r = RunEdgedecode("run -m " + kModel + " -p '" + kStory + "' --temp 0 -n 8 --draft-replay " + rec);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("recorded for another prompt"), std::string::npos) << r.err;
  const std::string bad = dir + "/replay_bad.json";
  std::ofstream(bad) << R"({"prompt_tokens": [1], "tokens": [99999999]})";
  r = RunEdgedecode("run -m " + kModel + " -p '' --temp 0 -n 8 --draft-replay " + bad);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tokens[0] is not a token id"), std::string::npos) << r.err;
  std::ofstream(bad) << "[1, 2";
  r = RunEdgedecode("run -m " + kModel + " -p '' --temp 0 -n 8 --draft-replay " + bad);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("not the JSON of"), std::string::npos) << r.err;
}

// Token trees (--tree-nodes): several candidates verified in one pass, the longest accepted path kept. Greedy
// output is plain decoding's token for token for f32 and q8_0 targets and a synthesized q4_0 one, every KV
// type and 1 and 2 threads: with the n-gram lookup's matches and with a two-candidate replay (whose trees
// branch at every position, so that tree passes run and their second candidates are accepted).
TEST(TreeSpec, GreedyEqualsPlainWithTrees) {
  const std::string dir = ::testing::TempDir();
  const std::string synth = dir + "/tree_spec_llama.gguf";
  ASSERT_EQ(RunEdgedecode("synth --preset llama-tiny --type q4_0 -o " + synth).exit_code, 0);
  const std::string gguf = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/";
  const std::string rec = dir + "/tree_rec.json";
  for (const std::string& model : {gguf + "stories260K.f32.gguf", gguf + "stories260K.q8_0-ffn_down_f16.gguf", synth}) {
    for (const std::string kv : {"f16", "q8_0", "q4_0"}) {
      for (const std::string t : {"1", "2"}) {
        const std::string what = model + " kv " + kv + " threads " + t;
        const std::string base = "run -m " + model + " -p '" + kCopy + "' --temp 0 -n 80 --ignore-eos -t " + t + " --kv-type " + kv;
        CommandResult r = RunEdgedecode(base + " --json " + rec);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::ifstream in(rec);
        const nlohmann::json plain = nlohmann::json::parse(in);
        for (const std::string& spec_args : {std::string(" --lookup 6 --tree-nodes 12 --tree-width 3 --lookup-fixed"),
                                            " --draft-replay " + rec + " --replay-accept 0.6 --replay-accept2 0.9 --tree-nodes 16 --lookup-fixed",
                                            // adaptive: tree sizes chosen by timing (never the tokens)
                                            " --draft-replay " + rec + " --replay-accept 0.6 --replay-accept2 0.9 --tree-nodes 16"}) {
          r = RunEdgedecode(base + spec_args + " --json");
          ASSERT_EQ(r.exit_code, 0) << what << spec_args << "\n" << r.err;
          const nlohmann::json spec = nlohmann::json::parse(r.out);
          EXPECT_EQ(spec["tokens"], plain["tokens"]) << what << spec_args;
          const nlohmann::json& s = spec["speculative"];
          EXPECT_EQ(s["tree_nodes"].get<int>(), spec_args.find("replay") != std::string::npos ? 16 : 12);
          if (spec_args.find("replay") != std::string::npos && spec_args.find("fixed") != std::string::npos) {
            EXPECT_GT(s["tree_passes"].get<int64_t>(), 0) << what;
            EXPECT_GT(s["accepted"].get<int64_t>(), 0) << what;
          }
        }
      }
    }
  }
  std::remove(synth.c_str());
}

// 200 tokens through context shifts (-c 64) with n-gram trees never paused, small batches (-b 8: trees cut
// to 7 nodes): a wrongly kept tree row or a missed move of the accepted path changes the tokens from there on.
TEST(TreeSpec, ContextShiftsAndSmallBatches) {
  const std::string base = "-p '" + kCopy + "' --temp 0 -n 200 --ignore-eos -c 64 --context-shift -t 2";
  const nlohmann::json plain = RunJson(base);
  const nlohmann::json spec = RunJson(base + " -b 8 --lookup 6 --tree-nodes 12 --tree-width 3 --lookup-fixed");
  ASSERT_EQ(plain["tokens"].size(), 200u);
  EXPECT_EQ(spec["tokens"], plain["tokens"]);
  EXPECT_GT(plain["context_shifts"].get<int>(), 0);
  EXPECT_GT(spec["speculative"]["tree_passes"].get<int64_t>(), 0);
}

// Sampling with trees: the sampler draws once per emitted token from plain decoding's rows.
TEST(TreeSpec, SamplingSameSeedSameTokens) {
  const std::string base = "-p '" + kCopy + "' --temp 0.8 --seed 11 -n 120 -t 2";
  const nlohmann::json plain = RunJson(base);
  const nlohmann::json spec = RunJson(base + " --lookup 6 --tree-nodes 10 --tree-width 3 --lookup-fixed");
  EXPECT_EQ(spec["tokens"], plain["tokens"]);
}

TEST(TreeSpec, BadFlagsExitTwo) {
  const std::string dir = ::testing::TempDir();
  const std::string rec = dir + "/tree_flags_rec.json";
  ASSERT_EQ(RunEdgedecode("run -m " + kModel + " -p 'Tom' --temp 0 -n 4 --json " + rec).exit_code, 0);
  const std::string base = "run -m " + kModel + " -p 'Tom' --temp 0 -n 4";
  for (auto [args, says] : {std::pair<std::string, std::string>{" --tree-nodes 8", "--tree-nodes needs --lookup, --draft, --draft-quant or --draft-replay"},
                            {" --lookup 4 --tree-nodes -1", "--tree-nodes"},
                            {" --lookup 4 --tree-nodes 300", "--tree-nodes"},
                            {" --lookup 4 --tree-nodes 8 --tree-width 0", "--tree-width"},
                            {" --lookup 4 --tree-width 2", "--tree-width"},
                            {" --self-spec 1 --tree-nodes 8", "--tree-nodes"},
                            {" --draft-replay " + rec + " --replay-accept 0.6 --replay-accept2 0.9", "--replay-accept2 needs --tree-nodes"},
                            {" --draft-replay " + rec + " --tree-nodes 8 --replay-accept 0.6 --replay-accept2 0.5", "below --replay-accept"},
                            {" --draft-replay " + rec + " --tree-nodes 8 --replay-accept2 1.5", "--replay-accept2"}}) {
    const CommandResult r = RunEdgedecode(base + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << "\n" << r.err;
  }
}

TEST(LookupTree, MatchesBecomeBranches) {
  using llm::LookupTree;
  // "2 3" occurs twice before the tail: followed by 9 5 (most recent) and 7 8.
  const std::vector<int32_t> h = {1, 2, 3, 7, 8, 4, 1, 2, 3, 9, 5, 6, 2, 3};
  llm::DraftTree t = LookupTree(h, 16, 2, 2, 3, 1);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{9, 5, 7, 8}));
  EXPECT_EQ(t.parents, (std::vector<int>{-1, 0, -1, 2}));
  EXPECT_FALSE(t.IsChain());
  // Width 1: LookupDraft's chain.
  t = LookupTree(h, 16, 2, 1, 3, 1);
  EXPECT_EQ(t.tokens, llm::LookupDraft(h, 2, 3, 1));
  EXPECT_TRUE(t.IsChain());
  // The node budget cuts the second continuation.
  t = LookupTree(h, 3, 2, 2, 3, 1);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{9, 5, 7}));
  // Shared prefixes merge: "1" is followed by 2 3 7 and 2 3 9.
  const std::vector<int32_t> g = {1, 2, 3, 7, 1, 2, 3, 9, 1};
  t = LookupTree(g, 16, 3, 2, 1, 1);
  EXPECT_EQ(t.tokens, (std::vector<int32_t>{2, 3, 9, 7}));
  EXPECT_EQ(t.parents, (std::vector<int>{-1, 0, 1, 1}));
  EXPECT_TRUE(LookupTree({1, 2, 3}, 8, 4, 2, 3, 1).empty());
}

TEST(ReplayTree, BestFirstShapeAndRates) {
  // A recording of 200 tokens; trees of 6 nodes at accept 0.6 / 0.9: the 6 most probable paths
  // (.6 first, .36 first-first, .3 second, .216, .18 first-second, .18 second-first).
  std::vector<int32_t> cont(200);
  for (int i = 0; i < 200; ++i) cont[static_cast<size_t>(i)] = 10 + i % 50;
  llm::ReplayDrafter d({1, 2}, cont, 0.6, 5, 100, 0.9);
  const llm::DraftTree t = d.Tree({1, 2}, 6, 4);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t.parents, (std::vector<int>{-1, 0, -1, 1, 0, 2}));
  // Over many positions: the first candidate right ~60%, one of the two ~90%.
  int first = 0, either = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> h = {1, 2};
    h.insert(h.end(), cont.begin(), cont.begin() + i % 150);
    const llm::DraftTree u = d.Tree(h, 2, 1);
    ASSERT_EQ(u.size(), 2u);
    const int32_t right = cont[static_cast<size_t>(i % 150)];
    first += u.tokens[0] == right;
    either += u.tokens[0] == right || u.tokens[1] == right;
  }
  EXPECT_NEAR(first / double(n), 0.6, 0.05);
  EXPECT_NEAR(either / double(n), 0.9, 0.04);
  EXPECT_TRUE(d.Tree({1, 2, 99}, 6, 4).empty());  // off the recording
}

TEST(DraftLength, ExpectedTokensCountTheBonusToken) {
  EXPECT_DOUBLE_EQ(llm::ExpectedPassTokens(0, 0.6), 1.0);
  EXPECT_DOUBLE_EQ(llm::ExpectedPassTokens(3, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(llm::ExpectedPassTokens(8, 1.0), 9.0);
  for (int k = 1; k <= 8; ++k)  // 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a)
    EXPECT_NEAR(llm::ExpectedPassTokens(k, 0.6), (1 - std::pow(0.6, k + 1)) / 0.4, 1e-12) << k;
}

TEST(DraftLength, MostTokensPerSecondOverMeasuredPassTimes) {
  using llm::BestDraftLength;
  // Pass times in ms by draft length (index 0: a plain step), shaped like TinyLlama-1.1B q4_0's on an idle
  // machine: at 1 thread the 4-row tile makes drafts of 2..5 cost about the same, longer ones step up; at
  // 2 threads the cost grows about linearly (0.1 step per drafted token).
  const std::vector<double> one = {26.2, 30.3, 32.2, 33.2, 32.0, 33.6, 40.0, 37.2, 44.1};
  std::vector<double> two(9);  // filled below
  for (size_t k = 0; k < two.size(); ++k) two[k] = 11.9 * (1 + 0.1 * static_cast<double>(k));
  for (const std::vector<double>* cost : {&one, static_cast<const std::vector<double>*>(&two)}) {
    const int mid = BestDraftLength(0.6, *cost);
    EXPECT_GE(mid, 2);
    EXPECT_LE(mid, 4);
    EXPECT_EQ(BestDraftLength(0.0, *cost), 0);  // nothing accepted: plain steps
    EXPECT_EQ(BestDraftLength(0.0, *cost, 1), 1);  // a draft asked for: the cheapest
    EXPECT_GE(BestDraftLength(0.95, *cost), 5);
    EXPECT_GT(BestDraftLength(0.95, *cost), BestDraftLength(0.8, *cost) - 1);
  }
  // Free drafted tokens (a model bound by its weight reads): the longest draft at any acceptance above 0.
  EXPECT_EQ(BestDraftLength(0.3, std::vector<double>(9, 10.0)), 8);
  // Unusable (unmeasured, <= 0) entries are skipped; none usable: k_min.
  EXPECT_EQ(BestDraftLength(0.6, {10.0, 0.0, 0.0, 11.0}), 3);
  EXPECT_EQ(BestDraftLength(0.6, {0.0, 0.0}, 1), 1);
}

}  // namespace
}  // namespace edgedecode::test
