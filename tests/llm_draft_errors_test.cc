// Bad drafts for speculative decoding (`run --draft`, `--draft-quant`): a draft of another vocabulary (the
// first differing token id and its pieces named), a draft larger than the target, an unknown --draft-quant
// type, a missing draft file; each refused with a clear error and the exit code of docs/cli.md.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_util.h"
#include "llm/draft_model.h"

namespace edgedecode::test {
namespace {

const std::string kF32 = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";

// Vocabularies: the same token ids with the same pieces pass; a differing piece is named with its id; extra
// trailing special tokens (control, user-defined, unused) pass; an extra normal token does not.
TEST(DraftVocabulary, FirstDifferenceIsNamed) {
  auto make = [](std::vector<std::string> tokens, std::vector<int64_t> types) {
    tok::VocabSpec s;
    s.model = "llama";
    s.tokens = std::move(tokens);
    s.token_types = std::move(types);
    s.bos = 1;
    s.eos = 2;
    auto t = tok::Tokenizer::FromSpec(s);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(*t);
  };
  const std::vector<std::string> base = {"<unk>", "<s>", "</s>", "\xe2\x96\x81the", "a", "b"};
  const std::vector<int64_t> types = {2, 3, 3, 1, 1, 1};
  auto target = make(base, types);
  EXPECT_TRUE(llm::CheckSameVocabulary(*target, types, *make(base, types), types).ok());
  std::vector<std::string> other = base;
  other[4] = "x";
  Status st = llm::CheckSameVocabulary(*target, types, *make(other, types), types);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("at token id 4: target 'a', draft 'x'"), std::string::npos) << st.message();
  std::vector<std::string> more = base;
  std::vector<int64_t> more_types = types;
  more.push_back("<|pad|>");
  more_types.push_back(3);
  EXPECT_TRUE(llm::CheckSameVocabulary(*target, types, *make(more, more_types), more_types).ok());
  EXPECT_TRUE(llm::CheckSameVocabulary(*make(more, more_types), more_types, *target, types).ok());
  more.push_back("zz");
  more_types.push_back(1);
  st = llm::CheckSameVocabulary(*target, types, *make(more, more_types), more_types);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("at token id 7: draft 'zz', target has no such token"), std::string::npos) << st.message();
}

// Bad drafts: another vocabulary (a synth model with its synthetic tokenizer), a draft larger than the
// target, an unknown --draft-quant type, a re-encoding larger than the target, a missing file.
TEST(DraftErrors, BadDraftsAreRefusedWithTheirExitCode) {
  const std::string dir_ = ::testing::TempDir();
  const std::string q4_ = dir_ + "/draft_errors_stories260K.q4_0.gguf";
  CommandResult r = RunEdgedecode("quantize -q " + kF32 + " " + q4_ + " q4_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string cfg = dir_ + "/draft_synth.json";
  std::ofstream(cfg) << R"({"dim": 32, "n_layers": 1, "n_heads": 2, "n_kv_heads": 2, "ffn": 64, "vocab": 600, "context": 128})";
  const std::string synth = dir_ + "/draft_synth.gguf";
  r = RunEdgedecode("synth --config " + cfg + " --type f32 -o " + synth + " --no-progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = "run -p 'Once' --temp 0 -n 4 ";
  r = RunEdgedecode(run + "-m " + kF32 + " --draft " + synth);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("vocabulary differs from the target's at token id"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--draft " + synth), std::string::npos) << r.err;

  r = RunEdgedecode(run + "-m " + q4_ + " --draft " + kF32);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("more than the target's"), std::string::npos) << r.err;

  r = RunEdgedecode(run + "-m " + kF32 + " --draft-quant q9_9");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--draft-quant: unknown or unwritable type 'q9_9'"), std::string::npos) << r.err;

  r = RunEdgedecode(run + "-m " + q4_ + " --draft-quant q8_0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--draft-quant q8_0 (the model re-encoded) has"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than the target's"), std::string::npos) << r.err;

  r = RunEdgedecode(run + "-m " + kF32 + " --draft " + dir_ + "/no_such_draft.gguf");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("no_such_draft.gguf"), std::string::npos) << r.err;

  r = RunEdgedecode(run + "-m " + kF32 + " --draft " + q4_ + " --draft-quant q4_0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunEdgedecode(run + "-m " + kF32 + " --draft-max 4");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--draft-max needs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace edgedecode::test
