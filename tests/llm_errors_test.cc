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
  EXPECT_NE(r.err.find("architecture 'gpt2' is not supported (supported: llama, qwen2, qwen3)"), std::string::npos) << r.err;
  // A llama vocab-only file has the architecture but no weights: the missing tensor is named.
  r = RunEdgedecode("run -m " + std::string(EDGEDECODE_TESTDATA) + "/vocab/ggml-vocab-llama-spm.gguf -p hi");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("required tensor 'token_embd.weight' is missing"), std::string::npos) << r.err;
}

// Rewrites every occurrence of `from` in a file's bytes with `to` (same length, so offsets hold).
std::string Patched(const std::string& path, const std::string& from, const std::string& to, const std::string& out) {
  std::string b = ReadFile(path);
  for (size_t p = b.find(from); p != std::string::npos; p = b.find(from, p + to.size())) b.replace(p, from.size(), to);
  std::ofstream(out, std::ios::binary) << b;
  return out;
}

TEST(RunErrors, Qwen3MissingOrMisshapedTensors) {
  // A qwen2 file relabelled qwen3 (arch and keys): no attn_q_norm, which qwen3 needs per layer.
  const std::string q2 = TempPath("q2.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset qwen2-tiny --type f16 -o " + q2).exit_code, 0);
  const std::string relabelled = Patched(q2, "qwen2", "qwen3", TempPath("q2as3.gguf"));
  CommandResult r = RunEdgedecode("run -m " + relabelled + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("required tensor 'blk.0.attn_q_norm.weight' is missing (the architecture needs 32 elements)"),
            std::string::npos) << r.err;
  // qwen3-tiny without its attention.key_length, value_length and rope.dimension_count: head_dim falls back to dim / n_heads = 64, which the
  // q matrix (512 rows of 128-dim heads) does not fit.
  const std::string q3 = TempPath("q3.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset qwen3-tiny --type f16 -o " + q3).exit_code, 0);
  std::string nokey = Patched(q3, "attention.key_length", "attention.key_lengtX", TempPath("q3nokey.gguf"));
  nokey = Patched(nokey, "attention.value_length", "attention.value_lengtX", nokey);
  nokey = Patched(nokey, "rope.dimension_count", "rope.dimension_counX", nokey);
  r = RunEdgedecode("run -m " + nokey + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_q.weight' has shape 256x512, the architecture needs 256x256"), std::string::npos)
      << r.err;
  for (const std::string& f : {q2, relabelled, q3, nokey}) std::remove(f.c_str());
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
