// Bad drafts for speculative decoding (`run --draft`, `--draft-quant`, `--self-spec`; `serve --self-spec`): a draft of another
// vocabulary (the first differing token id and its pieces named), a draft larger than the target, an unknown
// --draft-quant type, a missing draft file, a bad skip set, a saved skip set of another model or not one at
// all; each refused with a clear error and the exit code of docs/cli.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "llm/draft_model.h"
#include "llm/self_spec.h"

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

// --self-spec LAYERS that is not a skip set of this model (5 layers): exit 2 naming the problem; with a draft
// model: exit 2.
TEST(SelfSpecErrors, BadLayersAreUsageErrors) {
  const std::string run = "run -m " + kF32 + " -p 'Once' --temp 0 -n 4 --self-spec ";
  for (const auto& [layers, why] : std::vector<std::pair<std::string, std::string>>{
           {"5", "layer 5 is out of range: the model has 5 layers (0..4)"},
           {"2,7-9", "layer 9 is out of range"},
           {"1,0-2", "layer 1 is given twice"},
           {"0-4", "every layer (5) is skipped"},
           {"4-2", "the range '4-2' runs backwards"},
           {"two", "'two' in 'two' is not a layer number or a range of them"}}) {
    CommandResult r = RunEdgedecode(run + "'" + layers + "'");
    EXPECT_EQ(r.exit_code, 2) << layers << "\n" << r.err;
    EXPECT_NE(r.err.find("--self-spec " + layers), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << layers << ": " << r.err;
  }
  // A model of one layer has nothing to skip, by hand or by the search.
  const std::string cfg = ::testing::TempDir() + "/self_spec_one_layer.json";
  std::ofstream(cfg) << R"({"dim": 32, "n_layers": 1, "n_heads": 2, "n_kv_heads": 2, "ffn": 64, "vocab": 300, "context": 128})";
  const std::string one = ::testing::TempDir() + "/self_spec_one_layer.gguf";
  CommandResult r = RunEdgedecode("synth --config " + cfg + " --type f32 -o " + one + " --no-progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunEdgedecode("run -m " + one + " -p 'Once' -n 4 --self-spec 0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("every layer (1) is skipped"), std::string::npos) << r.err;
  r = RunEdgedecode("run -m " + one + " -p 'Once' -n 4 --self-spec auto");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--self-spec auto: the model has one layer"), std::string::npos) << r.err;

  r = RunEdgedecode(run + "1 --draft-quant q8_0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunEdgedecode(run + "1 --draft " + kF32);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // The search's time budget: positive, and only with --self-spec.
  r = RunEdgedecode("run -m " + kF32 + " -p 'Once' -n 4 --self-spec-budget 10");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--self-spec-budget requires --self-spec"), std::string::npos) << r.err;
  r = RunEdgedecode(run + "auto --self-spec-budget 0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--self-spec-budget"), std::string::npos) << r.err;
}

// The message of a failed command: the text after "edgedecode CMD: " on its last line that mentions `what`.
std::string ErrorAbout(const std::string& err, const std::string& what) {
  std::string found;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    const std::string line = err.substr(start, end - start);
    const size_t colon = line.find(": ");
    if (line.find(what) != std::string::npos && colon != std::string::npos) found = line.substr(colon + 2);
    start = end + 1;
  }
  return found;
}

// serve takes --self-spec as run does: a skip set that is not one of this model's is exit 2 with run's message
// (after the socket is bound and the model loaded, before any slot serves); with a draft model, the budget
// alone: exit 2; --draft-max goes with --self-spec too.
TEST(SelfSpecErrors, ServeRefusesBadLayersAsRunDoes) {
  const std::string serve = "serve -m " + kF32 + " --port 0 -t 1 ";
  const std::string timeout = "timeout --foreground 60";
  for (const std::string layers : {"5", "2,7-9", "0-4", "two"}) {
    const CommandResult run = RunEdgedecode("run -m " + kF32 + " -p 'Once' --temp 0 -n 4 --self-spec '" + layers + "'");
    const CommandResult r = RunEdgedecode(serve + "--self-spec '" + layers + "'", timeout);
    EXPECT_EQ(r.exit_code, 2) << layers << "\n" << r.err;
    const std::string msg = ErrorAbout(r.err, "--self-spec " + layers);
    EXPECT_FALSE(msg.empty()) << r.err;
    EXPECT_EQ(msg, ErrorAbout(run.err, "--self-spec " + layers)) << run.err;
  }
  CommandResult r = RunEdgedecode(serve + "--self-spec 5", timeout);
  EXPECT_NE(r.err.find("layer 5 is out of range: the model has 5 layers (0..4)"), std::string::npos) << r.err;
  for (const std::string& extra : std::vector<std::string>{"--self-spec 1 --draft-quant q8_0", "--self-spec 1 --draft " + kF32, "--self-spec-budget 10"}) {
    r = RunEdgedecode(serve + extra, timeout);
    EXPECT_EQ(r.exit_code, 2) << extra << "\n" << r.err;
  }
  r = RunEdgedecode(serve + "--draft-max 4", timeout);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--draft-max needs --draft, --draft-quant or --self-spec"), std::string::npos) << r.err;
}

// --self-spec auto beside a file that is not a saved skip set of this model: exit 3 naming the file and what
// is wrong (for another model: both identities), never a silent use; the file is left as it was.
TEST(SelfSpecErrors, BadSavedFilesAreInputErrors) {
  const std::string dir = ::testing::TempDir() + "/self_spec_errors";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model = dir + "/m.gguf";
  std::filesystem::copy_file(kF32, model);
  const std::string saved = model + ".self-spec.json";
  const std::string run = "run -m " + model + " -p 'Once' --temp 0 -n 4 --self-spec auto";
  // A good file first: the search's own.
  CommandResult r = RunEdgedecode(run);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string good = ReadFile(saved);
  ASSERT_NE(good.find("\"header_hash\""), std::string::npos) << good;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) t.replace(at, from.size(), to);
    return t;
  };
  const size_t h = good.find("\"header_hash\": \"") + 16;
  const std::string hash = good.substr(h, 16);
  const std::string other_hash = std::string(hash.rbegin(), hash.rend()) == hash ? "0123456789abcdef" : std::string(hash.rbegin(), hash.rend());
  const size_t sk = good.find("\"skip\": [");
  const std::string skip_field = good.substr(sk, good.find(']', sk) + 1 - sk);
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {with(hash, other_hash), "was saved for another model: header hash " + other_hash},
           {with("\"file_size\": ", "\"file_size\": 1"), "was saved for another model"},
           {good.substr(0, good.size() / 2), "not valid JSON"},
           {"[1, 2]", "not a saved self-speculative skip set"},
           {with("\"version\": 1", "\"version\": 7"), "unknown \"version\""},
           {with(skip_field, "\"skip\": [9]"), "skip[0] is not a layer of this model (0..4)"},
           {with(skip_field, "\"skip\": [0, 1, 2, 3, 4]"), "every layer (5) is skipped"},
           {with(skip_field, "\"skip\": [1, 1]"), "layer 1 is given twice"},
           {with(skip_field, "\"skip\": \"1\""), "\"skip\" must be an array"},
           {with("\"acceptance\": ", "\"acceptance\": 2"), "\"acceptance\" must be a number"},
           {std::string(100000, ' '), "more than a saved skip set can be"},
           {std::string(5000, '[') , "nest"}}) {
    { std::ofstream(saved, std::ios::binary | std::ios::trunc) << text; }
    r = RunEdgedecode(run);
    EXPECT_EQ(r.exit_code, 3) << why << "\n" << r.err;
    EXPECT_NE(r.err.find(saved), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << why << ": " << r.err;
    EXPECT_EQ(ReadFile(saved), text) << "the saved file was changed";
  }
  // A hash mismatch names both identities.
  { std::ofstream(saved, std::ios::binary | std::ios::trunc) << with(hash, other_hash); }
  r = RunEdgedecode(run);
  EXPECT_NE(r.err.find("this model's header hash is " + hash), std::string::npos) << r.err;
  // serve reads the same file the same way: exit 3, the same message, the file untouched.
  const CommandResult served = RunEdgedecode("serve -m " + model + " --port 0 -t 1 --self-spec auto", "timeout --foreground 60");
  EXPECT_EQ(served.exit_code, 3) << served.err;
  EXPECT_FALSE(ErrorAbout(served.err, saved).empty()) << served.err;
  EXPECT_EQ(ErrorAbout(served.err, saved), ErrorAbout(r.err, saved)) << served.err;
  EXPECT_EQ(ReadFile(saved), with(hash, other_hash));
}

// The file cannot be written (its directory is missing): the library says where and why.
TEST(SelfSpecErrors, UnwritableFileIsAnIoError) {
  llm::SelfSpecChoice c;
  c.skip = {1};
  const Status st = llm::WriteSelfSpecFile(::testing::TempDir() + "/no/such/dir/m.gguf.self-spec.json", c, {"0123456789abcdef", 1}, 5);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("no/such/dir/m.gguf.self-spec.json"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace edgedecode::test
