// The CLI conventions end to end, one table row per command: usage errors exit 2 naming the flag, `--json -`
// parses, an option that takes a FILE does not swallow a following flag, an output that is the input is
// refused (the input unchanged), conflicting options are errors, SIGINT gives partial results.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>

#include "cli_util.h"

namespace edgedecode::test {
namespace {

const std::string kData = EDGEDECODE_TESTDATA;
const std::string kModel = kData + "/llm/gguf/stories260K.f32.gguf";
const std::string kOnnx = kData + "/models/onnx/mnist-8.onnx";
const std::string kTargets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets/";

// A copy of the model in a temporary folder, so that commands may try to write over it.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempPath("cli");
    ::mkdir(dir_.c_str(), 0755);
    model_ = dir_ + "/model.gguf";
    std::ofstream(model_, std::ios::binary) << ReadFile(kModel);
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_, model_;
};

struct UsageCase {
  std::string args, flag;  // the flag the message must name
};

TEST_F(CliTest, UsageErrorsExit2NamingTheFlag) {
  const std::string m = " -m " + model_;
  const std::vector<UsageCase> cases = {
      {"run" + m + " --bogus", "--bogus"},
      {"run" + m + " -n abc", "-n"},
      {"run" + m + " --top-p 2", "--top-p"},
      {"run" + m + " --temp -1", "--temp"},
      {"run" + m + " --min-p 1.5", "--min-p"},
      {"run" + m + " --repeat-penalty 0", "--repeat-penalty"},
      {"run" + m + " -ngl 99", "-ngl"},
      {"run" + m + " -cnv", "-cnv"},
      {"run" + m + " -fa", "-fa"},
      {"logits" + m + " --top 0", "--top"},
      {"logits" + m + " --bogus", "--bogus"},
      {"bench" + m + " -t 0", "-t"},
      {"bench" + m + " -r 0", "-r"},
      {"bench" + m + " --kv-type q3_x", "--kv-type"},
      {"perplexity" + m + " -f x.txt -c 4", "-c"},
      {"perplexity" + m, "--file"},
      {"plan" + m + " --seqs 0", "--seqs"},
      {"plan" + m + " --headroom 2", "--headroom"},
      {"plan" + m + " --target no-such-device", "no-such-device"},
      {"tokenize" + m + " --bogus", "--bogus"},
      {"tokenize" + m, "-p"},
      {"synth --preset llama-tiny", "--output"},
      {"synth --preset nope -o x.gguf", "nope"},
      {"quantize " + model_ + " out.gguf q9_9", "q9_9"},
      {"quantize " + model_ + " out.gguf q4_0 --tensor-type nope", "--tensor-type"},
      {"convert nope", "nope"},
      {"convert llama2c x.bin -o y.gguf", "--tokenizer"},
      {"convert tokenizer x.json", "--output"},
      {"convert tokenizer x.json -o y.gguf --vocab-size nope", "--vocab-size"},
      {"tokenize" + m + " --strings s.json -p x", "--strings"},
      {"scan " + kOnnx + " -t cpu", "--target"},
      {"scan " + kOnnx, "--target"},
      {"scan " + kOnnx + " --target no-such-device", "no-such-device"},
      {"rewrite " + kOnnx + " --target cpu", "-o"},
      {"rewrite " + kOnnx + " -o x.onnx -t cpu", "--target"},
      {"doctor nope", "nope"},
      {"doctor data", "DIR"},
      {"doctor env --bogus", "--bogus"},
  };
  for (const UsageCase& c : cases) {
    CommandResult r = RunEdgedecode(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << c.args << ": the message does not name " << c.flag << ":\n" << r.err;
  }
}

TEST_F(CliTest, ConflictingOptionsAreErrors) {
  const std::string m = " -m " + model_;
  for (const std::string& args : {"run" + m + " --kv-type q8_0 --ctk f16", "run" + m + " --kv-type q8_0 --ctv q4_0",
                                  "run" + m + " -p hi -f x.txt", "logits" + m + " -p hi --ids 1,2",
                                  "perplexity" + m + " -f x.txt --save-logits a --kld-base b",
                                  "tokenize" + m + " -p hi -f x.txt"}) {
    CommandResult r = RunEdgedecode(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("excludes"), std::string::npos) << args << "\n" << r.err;
  }
}

TEST_F(CliTest, JsonOnStdoutParsesAndTextGoesToStderr) {
  const std::string text = dir_ + "/story.txt";
  { std::ofstream(text) << std::string(400, ' ') + ReadFile(kData + "/llm/stories260K.expected_t0_n200.txt"); }
  const std::string m = " -m " + model_;
  const std::vector<std::string> cases = {
      "run" + m + " -p hi -n 4 --temp 0 --json -",
      "run" + m + " -p hi -n 4 --json",
      "logits" + m + " -p hi --top 3 --json -",
      "bench" + m + " -p 8 -n 4 -r 1 -t 1 --json -",
      "perplexity" + m + " -f " + text + " -c 32 --chunks 2 --json -",
      "plan" + m + " --target " + kTargets + "rk3588-npu.json --json -",
      "tokenize" + m + " -p 'Hello world' --json -",
      "info " + model_ + " --json -",
      "synth --preset llama-tiny --type q8_0 -o " + dir_ + "/s.gguf --json -",
      "quantize " + model_ + " " + dir_ + "/q.gguf q8_0 --json -",
      "scan " + kOnnx + " --target rk3588-npu --json -",
      "doctor env --no-bandwidth --json",
      "doctor data " + kData + "/images/pngsuite --json -",
  };
  for (const std::string& args : cases) {
    CommandResult r = RunEdgedecode(args);
    EXPECT_LE(r.exit_code, 1) << args << "\n" << r.err;
    // bench prints JSON Lines; every other command one document.
    if (args.rfind("bench", 0) != 0) {
      auto j = nlohmann::json::parse(r.out, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << args << ": stdout is not one JSON document:\n" << r.out;
      EXPECT_EQ(j.value("schema_version", 0), 1) << args;
      continue;
    }
    size_t start = 0;
    int docs = 0;
    while (start < r.out.size()) {
      size_t end = r.out.find('\n', start);
      if (end == std::string::npos) end = r.out.size();
      const std::string line = r.out.substr(start, end - start);
      start = end + 1;
      if (line.empty()) continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << args << ": stdout is not JSON:\n" << r.out;
      EXPECT_EQ(j.value("schema_version", 0), 1) << args;
      ++docs;
    }
    EXPECT_GE(docs, 2) << args << ": a line per test expected";
  }
}

// bench -p with -d: the prefill after `depth` tokens of history (a follow-up turn), named ppN@dD.
TEST_F(CliTest, BenchPrefillAtDepth) {
  CommandResult r = RunEdgedecode("bench -m " + model_ + " -p 8 -n 0 -d 20 -r 1 -t 1 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j.value("test", ""), "pp8@d20") << r.out;
  EXPECT_GT(j.value("tps_median", 0.0), 0.0) << r.out;
}

TEST_F(CliTest, AFileOptionDoesNotSwallowAFlag) {
  const std::string m = " -m " + model_;
  for (const std::string& args : {"run" + m + " -p hi --trace --profile", "scan " + kOnnx + " --csv --all --target cpu",
                                  "perplexity" + m + " -f x.txt --save-logits --json",
                                  "rewrite " + kOnnx + " -o --dry-run --target cpu", "doctor data " + dir_ + " --out --fix"}) {
    CommandResult r = RunEdgedecode(args, "cd " + dir_ + " &&");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("needs a value"), std::string::npos) << args << "\n" << r.err;
  }
  std::system(("ls -a " + dir_ + " > " + dir_ + "/../cli_ls.txt").c_str());
  const std::string listing = ReadFile(dir_ + "/../cli_ls.txt");
  EXPECT_EQ(listing.find("--"), std::string::npos) << "a file named after a flag was created:\n" << listing;
}

std::string Sha256(const std::string& path) {
  const std::string data = ReadFile(path);
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return std::string(reinterpret_cast<char*>(md), sizeof md);
}

TEST_F(CliTest, AnOutputThatIsTheInputIsRefused) {
  const std::string link = dir_ + "/link.gguf", hard = dir_ + "/hard.gguf";
  ASSERT_EQ(::symlink(model_.c_str(), link.c_str()), 0);
  ASSERT_EQ(::link(model_.c_str(), hard.c_str()), 0);
  const std::string before = Sha256(model_);
  const std::string m = " -m " + model_;
  const std::string text = dir_ + "/t.txt";
  { std::ofstream(text) << "Once upon a time there was a little girl named Lily. She liked to play outside.\n"; }
  for (const std::string& out : {model_, link, hard}) {
    for (const std::string& args : {"quantize " + model_ + " " + out + " q8_0", "run" + m + " -p hi -n 2 --json " + out,
                                    "run" + m + " -p hi -n 2 --trace " + out, "logits" + m + " -p hi --json " + out,
                                    "plan" + m + " --json " + out, "tokenize" + m + " -p hi --json " + out,
                                    "perplexity" + m + " -f " + text + " -c 16 --save-logits " + out,
                                    "synth --preset llama-tiny --vocab " + model_ + " -o " + out,
                                    "scan " + model_ + " --target cpu --csv " + out}) {
      CommandResult r = RunEdgedecode(args);
      EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
      EXPECT_NE(r.err.find("is the input"), std::string::npos) << args << "\n" << r.err;
      ASSERT_EQ(Sha256(model_), before) << args << " changed the input";
    }
  }
  const std::string onnx = dir_ + "/m.onnx";
  { std::ofstream(onnx, std::ios::binary) << ReadFile(kOnnx); }
  CommandResult r = RunEdgedecode("rewrite " + onnx + " -o " + onnx + " --target cpu");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ReadFile(onnx), ReadFile(kOnnx));
  const std::string bin = dir_ + "/s.bin";
  { std::ofstream(bin, std::ios::binary) << ReadFile(kData + "/llm/stories260K.bin"); }
  r = RunEdgedecode("convert llama2c " + bin + " --tokenizer " + kData + "/llm/tok512.bin -o " + bin);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ReadFile(bin), ReadFile(kData + "/llm/stories260K.bin"));
}

// convert tokenizer: a small byte-level BPE tokenizer.json to a vocab GGUF that tokenize reads; an unsupported
// part is exit 3 naming it; the output may not be the input.
TEST_F(CliTest, ConvertTokenizerJson) {
  const std::string tj = dir_ + "/tokenizer.json", cfg = dir_ + "/tokenizer_config.json", out = dir_ + "/v.gguf";
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (const char* t : {"a", "b", "\xC4\xA0", "ab", "\xC4\xA0" "ab"}) vocab[t] = id++;
  nlohmann::json j = {
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b", "\xC4\xA0 ab"}}}},
      {"added_tokens", {{{"id", 5}, {"content", "<|end|>"}, {"special", true}}}}};
  { std::ofstream(tj) << j.dump(); }
  { std::ofstream(cfg) << R"({"eos_token": "<|end|>", "add_bos_token": false})"; }
  CommandResult r = RunEdgedecode("convert tokenizer " + tj + " --config " + cfg + " -o " + out + " --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["pre"], "gpt-2");
  EXPECT_EQ(s["tokens"], 6);
  EXPECT_EQ(s["eos"], 5);
  r = RunEdgedecode("tokenize -m " + out + " -p 'ab ab<|end|>'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "3 4 5\n");
  const std::string strings = dir_ + "/s.json";
  { std::ofstream(strings) << R"(["ab", " ab", "b\na"])"; }
  r = RunEdgedecode("tokenize -m " + out + " --strings " + strings);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[3]\n[4]\n[1,0]\n") << "the newline has no token: dropped, as llama.cpp does";
  j["normalizer"] = {{"type", "Lowercase"}};
  { std::ofstream(tj) << j.dump(); }
  r = RunEdgedecode("convert tokenizer " + tj + " -o " + dir_ + "/w.gguf");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("normalizer type 'Lowercase'"), std::string::npos) << r.err;
  const std::string before = ReadFile(tj);
  r = RunEdgedecode("convert tokenizer " + tj + " -o " + tj);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(ReadFile(tj), before);
}

TEST_F(CliTest, QuantizeRefusesToRequantizeAndListsChanges) {
  const std::string q8 = dir_ + "/q8.gguf", q4 = dir_ + "/q4.gguf";
  CommandResult r = RunEdgedecode("quantize " + model_ + " " + q8 + " q8_0 --tensor-type 'output\\.weight=f16' --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool output_f16 = false;
  for (const auto& c : j["changes"]) {
    if (c["tensor"] == "output.weight") output_f16 = c["to"] == "f16";
    if (c["tensor"] == "blk.0.attn_output.weight") {
      EXPECT_EQ(c["to"], "q8_0") << "the pattern is anchored";
    }
  }
  EXPECT_TRUE(output_f16) << r.out;
  r = RunEdgedecode("quantize " + q8 + " " + q4 + " q4_0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--allow-requantize"), std::string::npos) << r.err;
  r = RunEdgedecode("quantize " + q8 + " " + q4 + " q4_0 --allow-requantize");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(CliTest, SeedIsRandomAndPrintedSoARunCanBeRepeated) {
  const std::string base = "run -m " + model_ + " -p 'Once upon a time' -n 24 --temp 1 --json -";
  CommandResult a = RunEdgedecode(base), b = RunEdgedecode(base);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_NE(ja["seed"], jb["seed"]);
  CommandResult again = RunEdgedecode(base + " --seed " + std::to_string(ja["seed"].get<uint64_t>()));
  EXPECT_EQ(nlohmann::json::parse(again.out)["tokens"], ja["tokens"]);
  EXPECT_NE(a.err.find("seed " + std::to_string(ja["seed"].get<uint64_t>())), std::string::npos) << a.err;
}

TEST_F(CliTest, SigintMidRunGivesPartialTextTimingsAndJson) {
  // A generation far longer than the 1 s before the signal (context shifts keep it going).
  const std::string args = "run -m " + model_ + " -p 'Once upon a time' -n 1000000 --ignore-eos --context-shift --temp 0";
  // --foreground: timeout would otherwise signal its whole process group too, a second signal (which ends
  // the process at once, by design).
  CommandResult r = RunEdgedecode(args + " --json -", "timeout --foreground --preserve-status -s INT 2");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_TRUE(j["interrupted"].get<bool>());
  EXPECT_EQ(j["stop"], "interrupted");
  EXPECT_TRUE(j["timings"].is_object());
  r = RunEdgedecode(args, "timeout --foreground --preserve-status -s TERM 2");
  EXPECT_EQ(r.exit_code, 143) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');  // the line is finished
  EXPECT_NE(r.err.find("stop: interrupted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tok/s"), std::string::npos) << r.err;
}

TEST_F(CliTest, StopStringsAndPromptFromStdin) {
  CommandResult full = RunEdgedecode("run -m " + model_ + " -p 'Once upon a time' -n 40 --temp 0 --json -");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const std::string text = nlohmann::json::parse(full.out)["text"];
  ASSERT_GT(text.size(), 20u);
  const std::string stop = text.substr(10, 4);  // spans token boundaries in general
  CommandResult r = RunEdgedecode("run -m " + model_ + " -p - -n 40 --temp 0 --json - --stop '" + stop + "'",
                                  "echo -n 'Once upon a time' |");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stop"], "stop_string");
  EXPECT_EQ(j["text"].get<std::string>(), text.substr(0, text.find(stop)));
}

TEST_F(CliTest, WrongClassesOfInput) {
  CommandResult r = RunEdgedecode("perplexity -m " + model_ + " -f " + dir_);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("folder"), std::string::npos) << r.err;
  r = RunEdgedecode("doctor env --no-bandwidth --model " + dir_ + "/missing.gguf");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = RunEdgedecode("tokenize -m " + kData + "/vocab/ggml-vocab-bert-bge.gguf -p hi");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = RunEdgedecode("run -m " + model_ + " -p hi -n 2 -c 4096");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("beyond the model's trained context"), std::string::npos) << r.err;
}

TEST_F(CliTest, InfoSaysWhatAFileHoldsAndWhetherItRuns) {
  CommandResult r = RunEdgedecode("info " + model_ + " --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["supported"].get<bool>());
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_TRUE(j["chat_template"].is_null());
  uint64_t sum = 0, embd = 0;
  for (const auto& t : j["tensors"]) {
    sum += t["bytes"].get<uint64_t>();
    if (t["name"] == "token_embd.weight") embd = t["bytes"];
  }
  EXPECT_EQ(j["tensors"].size(), j["type_mix"]["f32"]["tensors"].get<size_t>());
  // With a separate output matrix, decode reads one row of the embedding, not all of it.
  EXPECT_LT(j["bytes_per_token"].get<uint64_t>(), sum);
  EXPECT_GT(j["bytes_per_token"].get<uint64_t>(), sum - embd);
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"]["count"], 512);
  // A vocabulary-only file: readable, not runnable, and the reason says what is missing.
  r = RunEdgedecode("info " + kData + "/vocab/ggml-vocab-llama-spm.gguf --json -");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["supported"].get<bool>());
  EXPECT_FALSE(j["unsupported_reasons"]["model"].get<std::string>().empty());
  r = RunEdgedecode("info " + kData + "/vocab/ggml-vocab-bert-bge.gguf");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("tokenizer: "), std::string::npos) << r.out;
  const std::string cut = dir_ + "/cut.gguf";
  { std::ofstream(cut, std::ios::binary) << ReadFile(model_).substr(0, 1000); }
  r = RunEdgedecode("info " + cut);
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

// ChatML, as Qwen and SmolLM write it (stories260K has no template of its own).
const char* kChatml =
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

TEST_F(CliTest, ChatScriptedThroughStdinMatchesRunChat) {
  const std::string tmpl = dir_ + "/chatml.jinja";
  { std::ofstream(tmpl) << kChatml; }
  const std::string common = " -m " + model_ + " --chat-template " + tmpl + " --temp 0 -n 12";
  CommandResult one = RunEdgedecode("run" + common + " --chat -p 'Tell me a story' --json -");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string first = nlohmann::json::parse(one.out)["text"];
  CommandResult chat = RunEdgedecode("chat" + common, "printf 'Tell me a story\\n/stats\\nAnd then?\\n/stats\\n' |");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(chat.out.substr(0, first.size() + 1), first + "\n") << chat.out;
  // The second turn reuses the first turn's tokens in the KV cache.
  const size_t second = chat.err.rfind("last turn: prompt ");
  ASSERT_NE(second, std::string::npos) << chat.err;
  int prompt = 0, reused = 0;
  ASSERT_EQ(std::sscanf(chat.err.c_str() + second, "last turn: prompt %d tokens (%d reused", &prompt, &reused), 2) << chat.err;
  EXPECT_GT(reused, 10) << chat.err;
  EXPECT_LT(reused, prompt);
  // A model without a template: the error names the flag.
  CommandResult none = RunEdgedecode("run -m " + model_ + " --chat -p hi");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("--chat-template"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace edgedecode::test
