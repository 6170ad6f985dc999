#include "tooling/hf_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/child_limit.h"

namespace edgedecode::tooling {
namespace {

using nlohmann::json;

const char kQwen2Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// A tiny byte-level BPE tokenizer.json in the Qwen2 layout.
json ByteLevelJson() {
  json vocab = json::object();
  int id = 0;
  for (const char* t : {"a", "b", "c", "\xC4\xA0", "ab", "\xC4\xA0" "a"}) vocab[t] = id++;
  return {
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}}},
      {"post_processor", nullptr},
      {"model", {{"type", "BPE"}, {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", vocab},
                 {"merges", json::array({json::array({"a", "b"}), json::array({"\xC4\xA0", "a"}), json::array({"a b", "c"})})}}},
      {"added_tokens", json::array({{{"id", 8}, {"content", "<|endoftext|>"}, {"special", true}},
                                    {{"id", 9}, {"content", "<think>"}, {"special", false}}})},
  };
}

TEST(HfTokenizer, ByteLevelQwen2) {
  json cfg = {{"eos_token", "<|endoftext|>"}, {"pad_token", "<|endoftext|>"}, {"add_bos_token", false}, {"bos_token", nullptr}};
  auto v = HfVocabFromJson(ByteLevelJson().dump(), "t.json", cfg.dump(), "c.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  const auto& s = v->spec;
  EXPECT_EQ(s.model, "gpt2");
  EXPECT_EQ(s.pre, "qwen2");
  ASSERT_EQ(s.tokens.size(), 10u);
  EXPECT_EQ(s.tokens[6], "[PAD6]");
  EXPECT_EQ(s.token_types[6], 5);
  EXPECT_EQ(s.token_types[8], 3);  // special
  EXPECT_EQ(s.token_types[9], 4);  // added, not special: user-defined
  EXPECT_EQ(s.token_types[0], 1);
  ASSERT_EQ(s.merges.size(), 3u);
  EXPECT_EQ(s.merges[0], "a b");
  EXPECT_EQ(s.merges[2], "a\xC4\xA0" "b c");  // a space inside a part becomes U+0120
  EXPECT_EQ(s.eos, 8);
  EXPECT_EQ(s.pad, 8);
  EXPECT_EQ(s.bos, tok::VocabSpec::kUnset);
  EXPECT_EQ(s.add_bos, 0);
  EXPECT_EQ(v->n_padding, 2);  // ids 6 and 7
  auto padded = HfVocabFromJson(ByteLevelJson().dump(), "t.json", "", "", 16);
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ(padded->spec.tokens.size(), 16u);
  EXPECT_FALSE(HfVocabFromJson(ByteLevelJson().dump(), "t.json", "", "", 5).ok());  // below the largest id
}

TEST(HfTokenizer, Llama3RegexNeedsIgnoreMerges) {
  json j = ByteLevelJson();
  std::string r = kQwen2Regex;
  r.replace(r.find("\\p{N}|"), 6, "\\p{N}{1,3}|");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r;
  j["normalizer"] = nullptr;
  j["model"]["ignore_merges"] = true;
  auto v = HfVocabFromJson(j.dump(), "t.json", "", "");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->spec.pre, "llama-bpe");
  j["model"]["ignore_merges"] = false;
  EXPECT_EQ(HfVocabFromJson(j.dump(), "t.json", "", "")->spec.pre, "dbrx");
}

TEST(HfTokenizer, UnsupportedPartsAreNamed) {
  auto expect = [](const json& j, const std::string& part) {
    auto v = HfVocabFromJson(j.dump(), "t.json", "", "");
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.status().code(), StatusCode::kUnsupported) << v.status().message();
    EXPECT_NE(v.status().message().find(part), std::string::npos) << v.status().message();
    EXPECT_NE(v.status().message().find("t.json"), std::string::npos);
  };
  json j = ByteLevelJson();
  j["normalizer"] = {{"type", "Lowercase"}};
  expect(j, "normalizer type 'Lowercase'");
  j = ByteLevelJson();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect(j, "pre_tokenizer type 'Whitespace'");
  j = ByteLevelJson();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  expect(j, "regex");
  j = ByteLevelJson();
  j["model"]["type"] = "WordPiece";
  expect(j, "model type 'WordPiece'");
}

TEST(HfTokenizer, CorruptInputs) {
  for (const std::string& text : {std::string("{"), std::string("[]"), std::string("{\"model\": 3}"),
                                  std::string(100000, '['),
                                  ByteLevelJson().dump().replace(ByteLevelJson().dump().find("\"a\":0"), 5, "\"a\":-1")}) {
    auto v = HfVocabFromJson(text, "t.json", "", "");
    EXPECT_FALSE(v.ok());
    if (!v.ok()) EXPECT_EQ(v.status().code(), StatusCode::kCorrupt) << v.status().message();
  }
  json j = ByteLevelJson();
  j["added_tokens"][0]["id"] = int64_t{1} << 40;  // an id that would size a huge table
  auto v = HfVocabFromJson(j.dump(), "t.json", "", "");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("added_tokens[0]"), std::string::npos);
}

// Inputs that would size big tables are refused before anything is allocated for them: an id far above the
// others (in a child under a 1 GiB address-space limit) and a file over the size limit (sparse, never read).
TEST(HfTokenizer, SizesAreBoundedBeforeAllocating) {
  json j = ByteLevelJson();
  j["added_tokens"][0]["id"] = static_cast<int64_t>(tok::kMaxVocab) - 1;
  const std::string text = j.dump();
  auto r = testing_util::RunInChild([&](std::string* out) {
    auto v = HfVocabFromJson(text, "t.json", "", "", 0);
    *out = v.ok() ? "ok" : v.status().message();
    return v.ok() ? 1 : 0;
  });
  testing_util::MemoryLimitApplies();
  EXPECT_TRUE(r.ok()) << r.how() << " " << r.out;
  EXPECT_NE(r.out.find("ids unused"), std::string::npos) << r.out;

  char dir[] = "/tmp/hf_tokenizer_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string big = std::string(dir) + "/tokenizer.json", out = std::string(dir) + "/v.gguf";
  { std::ofstream(big) << "{"; }
  ASSERT_EQ(truncate(big.c_str(), static_cast<off_t>(kMaxHfTokenizerBytes) + 1), 0);
  auto v = ConvertHfTokenizer(big, "", out);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(v.status().message().find("limit"), std::string::npos) << v.status().message();
  EXPECT_NE(access(out.c_str(), F_OK), 0) << "no output for a refused input";
  std::remove(big.c_str());
  rmdir(dir);
}

// SentencePiece-style BPE (Gemma): llama model, byte tokens, scores that follow the merge order.
TEST(HfTokenizer, ByteFallbackBpe) {
  const std::string sp = "\xE2\x96\x81";
  json vocab = json::object();
  int id = 0;
  for (const std::string& t : {std::string("<pad>"), std::string("<eos>"), std::string("<bos>"), std::string("<unk>"),
                               std::string("<0x41>"), sp, std::string("a"), std::string("b"), sp + "a", std::string("ab")})
    vocab[t] = id++;
  json j = {
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", sp}}},
      {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}}},
      {"post_processor", {{"type", "TemplateProcessing"},
                          {"single", json::array({{{"SpecialToken", {{"id", "<bos>"}}}}, {{"Sequence", {{"id", "A"}}}}})}}},
      {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"}, {"vocab", vocab},
                 {"merges", json::array({json::array({"a", "b"}), json::array({sp, "a"})})}}},
      {"added_tokens", json::array({{{"id", 0}, {"content", "<pad>"}, {"special", true}},
                                    {{"id", 1}, {"content", "<eos>"}, {"special", true}},
                                    {{"id", 2}, {"content", "<bos>"}, {"special", true}},
                                    {{"id", 3}, {"content", "<unk>"}, {"special", true}},
                                    {{"id", 10}, {"content", sp + sp}, {"special", false}}})},
  };
  json cfg = {{"bos_token", "<bos>"}, {"eos_token", "<eos>"}, {"add_bos_token", true}};
  auto v = HfVocabFromJson(j.dump(), "t.json", cfg.dump(), "c.json");
  ASSERT_TRUE(v.ok()) << v.status().message();
  const auto& s = v->spec;
  EXPECT_EQ(s.model, "llama");
  EXPECT_EQ(s.add_space_prefix, 0);
  EXPECT_EQ(s.token_types[4], 6);  // <0x41>
  EXPECT_EQ(s.token_types[3], 3);  // <unk> is an added special token: control, as the converter types it
  EXPECT_EQ(s.token_types[10], 4);
  EXPECT_EQ(s.tokens[10], "  ");  // user-defined spaces pre-normalized
  EXPECT_GT(s.scores[9], s.scores[8]);  // "ab" is merged before "▁a"
  EXPECT_EQ(s.bos, 2);
  EXPECT_EQ(s.add_bos, 1);
  auto t = tok::Tokenizer::FromSpec(s);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->Encode("ab A", false), (std::vector<int32_t>{9, 5, 4}));
}

}  // namespace
}  // namespace edgedecode::tooling
