// Bad inputs to the runtime's commands: each gives a clear message and its exit code, never a crash.
// Labelled asan: `make test` reruns it with the AddressSanitizer/UBSan build of the binary.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_util.h"

namespace edgedecode::test {
namespace {

const std::string kLlm = std::string(EDGEDECODE_TESTDATA) + "/llm";

TEST(RunErrors, BadModelsGiveClearErrors) {
  CommandResult r = RunEdgedecode("run -m /nonexistent.gguf -p hi");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent.gguf"), std::string::npos) << r.err;
  // A legacy-ggml container ("lmgg", as whisper.cpp writes) is not GGUF.
  const std::string legacy = TempPath("legacy.bin");
  { std::ofstream(legacy) << "lmgg" << std::string(60, '\0'); }
  r = RunEdgedecode("run -m " + legacy + " -p hi");
  std::remove(legacy.c_str());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("legacy ggml"), std::string::npos) << r.err;
  // A vocab-only GGUF of another architecture: named, with the supported list.
  r = RunEdgedecode("run -m " + std::string(EDGEDECODE_TESTDATA) + "/vocab/ggml-vocab-gpt-2.gguf -p hi");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("architecture 'gpt2' is not supported (supported: llama, qwen2)"), std::string::npos) << r.err;
  // A llama vocab-only file has the architecture but no weights: the missing tensor is named.
  r = RunEdgedecode("run -m " + std::string(EDGEDECODE_TESTDATA) + "/vocab/ggml-vocab-llama-spm.gguf -p hi");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("required tensor 'token_embd.weight' is missing"), std::string::npos) << r.err;
}

TEST(RunErrors, PromptLongerThanContext) {
  CommandResult r = RunEdgedecode("run -m " + kLlm + "/gguf/stories260K.f32.gguf -c 8 -p 'Once upon a time there was a big dog'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not fit in the context"), std::string::npos) << r.err;
}

TEST(RunErrors, StopsAtContextEndAndSaysSo) {
  CommandResult r = RunEdgedecode("run -m " + kLlm + "/gguf/stories260K.f32.gguf -c 16 --temp 0 -n 100 --ignore-eos -p 'Once upon a time' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"stop\":\"context\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("context full"), std::string::npos) << r.err;
}

TEST(RunErrors, BadOptionsAndIds) {
  const std::string m = kLlm + "/gguf/stories260K.f32.gguf";
  CommandResult r = RunEdgedecode("logits -m " + m + " --ids 1,99999 --json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("outside the vocabulary"), std::string::npos) << r.err;
  r = RunEdgedecode("logits -m " + m + " --ids 1,abc");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a token id"), std::string::npos) << r.err;
  r = RunEdgedecode("run -m " + m + " -p hi --kv-type q3_x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown K cache type"), std::string::npos) << r.err;
  r = RunEdgedecode("run -m " + m + " -p hi --kernels neon");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunEdgedecode("plan -m " + m + " --target /nonexistent.json");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  // Every truncation point class of a real model file: header, metadata, tensor table, data.
  const std::string good = ReadFile(m);
  for (size_t n : {size_t{3}, size_t{20}, size_t{500}, size_t{5000}, good.size() / 2, good.size() - 1}) {
    const std::string cut = TempPath("cut.gguf");
    { std::ofstream(cut, std::ios::binary) << good.substr(0, n); }
    r = RunEdgedecode("run -m " + cut + " -p hi -n 2");
    std::remove(cut.c_str());
    EXPECT_EQ(r.exit_code, 3) << "truncated to " << n << ": " << r.err;
    EXPECT_NE(r.err.find("truncated"), std::string::npos) << n << ": " << r.err;
  }
}

}  // namespace
}  // namespace edgedecode::test
