// Bad inputs to the runtime's commands: each gives a clear message and its exit code, never a crash.
// Labelled asan: `make test` reruns it with the AddressSanitizer/UBSan build of the binary.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/child_limit.h"
#include "cli_util.h"
#include "gguf/gguf.h"

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
  EXPECT_NE(r.err.find("architecture 'gpt2' is not supported (supported: llama, qwen2, qwen3, smollm3, phi3, gemma3, gemma2, lfm2)"), std::string::npos) << r.err;
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

TEST(RunErrors, Smollm3MissingOrMisshapedTensors) {
  const std::string sm = TempPath("sm3.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset smollm3-tiny --type f16 -o " + sm).exit_code, 0);
  // A renamed tensor: the one the architecture needs is named, with its shape.
  const std::string renamed = Patched(sm, "blk.1.ffn_up.weight", "blk.1.ffn_uX.weight", TempPath("sm3up.gguf"));
  CommandResult r = RunEdgedecode("run -m " + renamed + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("required tensor 'blk.1.ffn_up.weight' is missing (the architecture needs 256x768)"),
            std::string::npos) << r.err;
  // blk.0's q and k swapped: attn_q has the k shape (2 kv heads of 32).
  std::string swapped = Patched(sm, "blk.0.attn_q.weight", "blk.0.attn_X.weight", TempPath("sm3qk.gguf"));
  swapped = Patched(swapped, "blk.0.attn_k.weight", "blk.0.attn_q.weight", swapped);
  swapped = Patched(swapped, "blk.0.attn_X.weight", "blk.0.attn_k.weight", swapped);
  r = RunEdgedecode("run -m " + swapped + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_q.weight' has shape 256x64, the architecture needs 256x256"), std::string::npos)
      << r.err;
  for (const std::string& f : {sm, renamed, swapped}) std::remove(f.c_str());
}

TEST(RunErrors, Phi3MissingOrMisshapedTensors) {
  const std::string phi = TempPath("phi.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset phi4-tiny --type f16 -o " + phi).exit_code, 0);
  // No fused QKV (and no separate q): the fused one is named with its shape, q (256) + k and v (2 heads of 32).
  const std::string noqkv = Patched(phi, "blk.2.attn_qkv.weight", "blk.2.attn_qkX.weight", TempPath("phiqkv.gguf"));
  CommandResult r = RunEdgedecode("run -m " + noqkv + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("required tensor 'blk.2.attn_qkv.weight' is missing (the architecture needs 256x384)"),
            std::string::npos) << r.err;
  // ffn_up missing: it must hold gate and up (2 x 768 rows).
  const std::string noup = Patched(phi, "blk.1.ffn_up.weight", "blk.1.ffn_uX.weight", TempPath("phiup.gguf"));
  r = RunEdgedecode("run -m " + noup + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("required tensor 'blk.1.ffn_up.weight' is missing (the architecture needs 256x1536)"),
            std::string::npos) << r.err;
  // No head_count_kv: 8 kv heads, so attn_qkv should have 256 + 2 x 256 rows.
  const std::string nokv = Patched(phi, "phi3.attention.head_count_kv", "phi3.attention.head_count_kX", TempPath("phikv.gguf"));
  r = RunEdgedecode("run -m " + nokv + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_qkv.weight' has shape 256x384, the architecture needs 256x768"),
            std::string::npos) << r.err;
  // LongRoPE factors of the wrong length (rope.dimension_count 24 gives 12 per table).
  const std::string badrope = Patched(phi, "phi3.rope.dimension_count", "phi3.rope.dimension_counX", TempPath("phirope.gguf"));
  r = RunEdgedecode("run -m " + badrope + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'rope_factors_long.weight' has 12 elements, the architecture needs 16"), std::string::npos)
      << r.err;
  for (const std::string& f : {phi, noqkv, noup, nokv, badrope}) std::remove(f.c_str());
}

TEST(RunErrors, Gemma3MissingOrMisshapedTensors) {
  const std::string g = TempPath("g3.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset gemma3-tiny --type f16 -o " + g).exit_code, 0);
  ASSERT_EQ(RunEdgedecode("run -m " + g + " -p hi -n 1").exit_code, 0);
  CommandResult info = RunEdgedecode("info " + g);
  EXPECT_NE(info.out.find("supported by this build: yes"), std::string::npos) << info.out << info.err;
  // gemma3 norms each block's FFN output: a file without post_ffw_norm is refused, the tensor named.
  const std::string nopost = Patched(g, "post_ffw_norm", "post_ffw_morm", TempPath("g3nopost.gguf"));
  CommandResult r = RunEdgedecode("run -m " + nopost + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("required tensor 'blk.0.post_ffw_norm.weight' is missing (the architecture needs 256 elements)"),
            std::string::npos) << r.err;
  // Without attention.key_length head_dim falls back to dim / n_heads = 64: the q matrix (4 heads of 128) does not fit.
  std::string nokey = Patched(g, "attention.key_length", "attention.key_lengtX", TempPath("g3nokey.gguf"));
  nokey = Patched(nokey, "attention.value_length", "attention.value_lengtX", nokey);
  nokey = Patched(nokey, "rope.dimension_count", "rope.dimension_counX", nokey);
  r = RunEdgedecode("run -m " + nokey + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_q.weight' has shape 256x512, the architecture needs 256x256"), std::string::npos)
      << r.err;
  // gemma2 has the same post-norms (and no q/k norm): the missing one is named.
  const std::string g2 = TempPath("g2.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset gemma2-tiny --type f16 -o " + g2).exit_code, 0);
  ASSERT_EQ(RunEdgedecode("run -m " + g2 + " -p hi -n 1").exit_code, 0);
  const std::string g2nopost = Patched(g2, "post_attention_norm", "post_attention_morm", TempPath("g2nopost.gguf"));
  r = RunEdgedecode("run -m " + g2nopost + " -p hi -n 1");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("required tensor 'blk.0.post_attention_norm.weight' is missing (the architecture needs 256 elements)"),
            std::string::npos) << r.err;
  for (const std::string& f : {g, nopost, nokey, g2, g2nopost}) std::remove(f.c_str());
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

// A synthetic model file of the given preset and type, written once per test.
std::string Synth(const std::string& preset, const std::string& type, const std::string& name) {
  const std::string path = TempPath(name);
  CommandResult r = RunEdgedecode("synth --preset " + preset + " --type " + type + " --no-progress -o " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

// The absolute file offset of a tensor's data.
uint64_t TensorOffset(const std::string& path, const std::string& tensor) {
  auto f = gguf::File::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().message();
  if (!f.ok()) return 0;
  const gguf::TensorInfo* t = (*f)->FindTensor(tensor);
  EXPECT_NE(t, nullptr) << tensor;
  return t ? (*f)->data_offset() + t->offset : 0;
}

void PatchBytes(const std::string& path, uint64_t at, const void* bytes, size_t n) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(n));
}

// The u32 value of a metadata key (the writer's layout: key, u32 type, value) set to v.
void PatchU32Key(const std::string& path, const std::string& key, uint32_t v) {
  const std::string b = ReadFile(path);
  const size_t at = b.find(key);
  ASSERT_NE(at, std::string::npos) << key;
  uint32_t type;
  std::memcpy(&type, b.data() + at + key.size(), 4);
  ASSERT_EQ(type, 4u) << key << " is not a u32";
  PatchBytes(path, at + key.size() + 4, &v, 4);
}

// A NaN or Inf scale in a quantized block: refused at load naming the tensor, the block and its offset.
TEST(RunErrors, NonFiniteScalesAreFoundAtLoad) {
  struct Case { const char* type; const char* tensor; int block; uint16_t bits; size_t block_bytes; size_t scale_at; };
  for (const Case& c : {Case{"q8_0", "blk.1.attn_k.weight", 3, 0x7E00, 34, 0},
                        Case{"q4_0", "blk.0.ffn_up.weight", 7, 0x7C00, 18, 0},
                        Case{"q4_k", "blk.3.ffn_gate.weight", 2, 0xFE00, 144, 2}}) {  // q4_K: dmin
    const std::string m = Synth("llama-tiny", c.type, std::string("nan_") + c.type + ".gguf");
    const uint64_t at = TensorOffset(m, c.tensor) + c.block * c.block_bytes + c.scale_at;
    PatchBytes(m, at, &c.bits, 2);
    CommandResult r = RunEdgedecode("run -m " + m + " -p hi -n 2 --temp 0");
    EXPECT_EQ(r.exit_code, 3) << c.type << ": " << r.err;
    const std::string want = std::string("tensor '") + c.tensor + "' (" + c.type + ") block " + std::to_string(c.block);
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("at file offset " + std::to_string(at - c.scale_at) + " has a NaN or Inf scale"), std::string::npos)
        << r.err;
    std::remove(m.c_str());
  }
}

// A NaN in an f16 matrix (not scanned at load): the first logits are NaN, and the error names the weight.
// A NaN in a 1-D f32 tensor is found at load.
TEST(RunErrors, NonFiniteWeightsStopGeneration) {
  const std::string m = Synth("llama-tiny", "f16", "nan_f16.gguf");
  const uint16_t nan = 0x7E00;
  PatchBytes(m, TensorOffset(m, "blk.2.ffn_down.weight") + 2 * 1000, &nan, 2);
  for (const std::string& cmd : {"run -m " + m + " -p hi -n 4 --temp 0", "logits -m " + m + " -p hi --top 3",
                                  "run -m " + m + " -p hi -n 4 --temp 0 --kernels ref"}) {
    CommandResult r = RunEdgedecode(cmd);
    EXPECT_EQ(r.exit_code, 3) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("the logits at position"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("are NaN or Inf: tensor 'blk.2.ffn_down.weight' (f16) element 1000 at file offset"),
              std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  }
  std::remove(m.c_str());
  const std::string f32 = TempPath("nan_norm.gguf");
  { std::ofstream(f32, std::ios::binary) << ReadFile(kLlm + "/gguf/stories260K.f32.gguf"); }
  const float fnan = std::nanf("");
  PatchBytes(f32, TensorOffset(f32, "blk.0.attn_norm.weight") + 4 * 5, &fnan, 4);
  CommandResult r = RunEdgedecode("run -m " + f32 + " -p hi -n 2");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("tensor 'blk.0.attn_norm.weight' element 5 is nan"), std::string::npos) << r.err;
  std::remove(f32.c_str());
}

// Hyper-parameters out of range or beyond what the tensors hold: refused before anything is sized by them,
// under a 1 GiB address-space limit (a block_count of 2^24 used to size ~10 GB of layer tables first).
TEST(RunErrors, AbsurdHyperParametersAreRefusedInBoundedMemory) {
  const std::string limit = std::string("timeout --foreground 120 ") + testing_util::ShellMemoryLimit();
  if (!testing_util::MemoryLimitApplies()) std::printf("[memory limit] not applied under AddressSanitizer\n");
  const std::string base = Synth("llama-tiny", "q8_0", "hp.gguf");
  struct Case { const char* key; uint32_t value; const char* want; };
  for (const Case& c : {Case{"llama.block_count", 1u << 24, "metadata 'llama.block_count' is 16777216 but the file has 39 tensors"},
                        Case{"llama.context_length", 0, "metadata 'llama.context_length' has an invalid value 0"},
                        Case{"llama.embedding_length", 0xFFFFFFFFu, "metadata 'llama.embedding_length' has an invalid value 4294967295"},
                        Case{"llama.attention.head_count_kv", 1u << 30, "head_count_kv' has an invalid value 1073741824"}}) {
    const std::string m = TempPath("hp_bad.gguf");
    { std::ofstream(m, std::ios::binary) << ReadFile(base); }
    PatchU32Key(m, c.key, c.value);
    for (const std::string& cmd : {"run -m " + m + " -p hi -n 1", "plan -m " + m + " --target " + std::string(EDGEDECODE_SOURCE_DIR) + "/targets/rk3588-npu.json"}) {
      CommandResult r = RunEdgedecode(cmd, limit);
      EXPECT_EQ(r.exit_code, 3) << cmd << ": " << r.err;
      EXPECT_NE(r.err.find(c.want), std::string::npos) << r.err;
    }
    CommandResult r = RunEdgedecode("info " + m, limit);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.out.find(c.want), std::string::npos) << r.out;
    std::remove(m.c_str());
  }
  // qwen3 keeps head_dim apart from dim: 2^24 heads of 128 would overflow an int product (q_dim).
  const std::string q3 = Synth("qwen3-tiny", "q8_0", "hp_q3.gguf");
  PatchU32Key(q3, "qwen3.attention.head_count", 1u << 24);
  CommandResult r = RunEdgedecode("run -m " + q3 + " -p hi -n 1", limit);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("head_count 16777216 x head dimension 128 exceeds 16777216"), std::string::npos) << r.err;
  for (const std::string& f : {base, q3}) std::remove(f.c_str());
}

// A real model with one tensor replaced: each message names the tensor, its shape and the shape needed.
TEST(RunErrors, MisshapedTensorsNameTheShapeNeeded) {
  const std::string src = kLlm + "/gguf/stories260K.f32.gguf";
  auto f = gguf::File::Open(src);
  ASSERT_TRUE(f.ok()) << f.status().message();
  struct Case { const char* tensor; std::vector<int64_t> dims; const char* want; };
  const std::vector<Case> cases = {
      {"blk.0.attn_k.weight", {64 * 32}, "tensor 'blk.0.attn_k.weight' has shape 2048, the architecture needs 64x32"},
      {"blk.1.ffn_up.weight", {64, 86, 2}, "tensor 'blk.1.ffn_up.weight' has shape 64x86x2, the architecture needs 64x172"},
      {"output_norm.weight", {32, 2}, ""},  // 64 elements in another shape: accepted (a 1-D vector by count)
      {"blk.4.ffn_norm.weight", {32}, "tensor 'blk.4.ffn_norm.weight' has 32 elements, the architecture needs 64"},
      {"blk.2.attn_v.weight", {}, "required tensor 'blk.2.attn_v.weight' is missing (the architecture needs 64x32)"}};
  for (const Case& c : cases) {
    gguf::Writer w;
    w.CopyMetadataFrom(**f);
    for (const gguf::TensorInfo& t : (*f)->tensors()) {
      if (t.name != c.tensor) {
        w.AddTensorRef(t.name, t.dims, t.ggml_type(), t.data, t.nbytes);
      } else if (!c.dims.empty()) {
        int64_t n = 1;
        for (int64_t d : c.dims) n *= d;
        std::vector<float> zeros(static_cast<size_t>(n), 0.5f);
        w.AddTensor(t.name, c.dims, GgmlType::kF32, zeros.data(), zeros.size() * 4);
      }
    }
    const std::string m = TempPath("shape.gguf");
    ASSERT_TRUE(w.Write(m).ok());
    CommandResult r = RunEdgedecode("run -m " + m + " -p hi -n 1");
    if (std::string(c.want).empty()) {
      EXPECT_EQ(r.exit_code, 0) << c.tensor << ": " << r.err;
    } else {
      EXPECT_EQ(r.exit_code, 3) << c.tensor << ": " << r.err;
      EXPECT_NE(r.err.find(c.want), std::string::npos) << r.err;
    }
    std::remove(m.c_str());
  }
}

// The file is named once, not once per layer of context.
TEST(RunErrors, FileNamedOnce) {
  const std::string m = Synth("llama-tiny", "q8_0", "noarch.gguf");
  Patched(m, "general.architecture", "general.architecturX", m);
  CommandResult r = RunEdgedecode("run -m " + m + " -p hi");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err, "edgedecode run: " + m + ": required metadata key 'general.architecture' is missing\n");
  std::remove(m.c_str());
}

// Names that are not UTF-8 (an architecture, a tensor): JSON stays valid (U+FFFD), text errors escape them.
TEST(RunErrors, NonUtf8NamesInJsonAndErrors) {
  const std::string m = Synth("llama-tiny", "q8_0", "utf8.gguf");
  Patched(m, "llama", "ll\xFF\x1B" "a", m);  // the architecture and its keys: invalid UTF-8 and an ESC
  Patched(m, "token_embd", "token_emb\xC3", m);
  CommandResult r = RunEdgedecode("run -m " + m + " -p hi");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("architecture 'll\\xFF\\x1Ba' is not supported"), std::string::npos) << r.err;
  r = RunEdgedecode("info " + m + " --json -");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
  EXPECT_EQ(j["architecture"], "ll\xEF\xBF\xBD\x1B" "a");
  EXPECT_EQ(j["tensors"][0]["name"], "token_emb\xEF\xBF\xBD.weight");
  EXPECT_EQ(r.err.find('\x1B'), std::string::npos) << "the text report escapes controls";
  std::remove(m.c_str());
}

// --kld-base: a file whose values are not log-probabilities, or whose size does not match its header.
TEST(RunErrors, KldBaseIsValidated) {
  const std::string m = kLlm + "/gguf/stories260K.f32.gguf";
  const std::string text = TempPath("kld.txt"), base = TempPath("kld.bin");
  { std::ofstream(text) << ReadFile(kLlm + "/stories260K.expected_t0_n200.txt"); }
  const std::string cmd = "perplexity -m " + m + " -f " + text + " -c 32 --chunks 1 --no-progress";
  ASSERT_EQ(RunEdgedecode(cmd + " --save-logits " + base).exit_code, 0);
  const std::string good = ReadFile(base);
  const float nan = std::nanf(""), zero = 0.0f;
  const uint64_t at = 32 + 4 * (512 * 2 + 17);  // position 2, token 17
  PatchBytes(base, at, &nan, 4);
  CommandResult r = RunEdgedecode(cmd + " --kld-base " + base);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("offset " + std::to_string(at) + " (position 2, token 17): nan is not a log-probability"),
            std::string::npos) << r.err;
  { std::ofstream(base, std::ios::binary) << good; }
  for (uint64_t v = 0; v < 512; ++v) PatchBytes(base, 32 + 4 * v, &zero, 4);  // position 0: all probabilities 1
  r = RunEdgedecode(cmd + " --kld-base " + base);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("offset 32 (position 0): the row's probabilities sum to 512"), std::string::npos) << r.err;
  { std::ofstream(base, std::ios::binary) << good.substr(0, good.size() - 4); }
  r = RunEdgedecode(cmd + " --kld-base " + base);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("(truncated)"), std::string::npos) << r.err;
  for (const std::string& f : {text, base}) std::remove(f.c_str());
}

// Absurd plan inputs: usage errors naming the flag or variable.
TEST(RunErrors, AbsurdPlanInputs) {
  const std::string m = " -m " + kLlm + "/gguf/stories260K.f32.gguf";
  CommandResult r = RunEdgedecode("plan" + m + " -c 1099511627776");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = RunEdgedecode("plan" + m + " -c 2097152");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-c 2097152 is more than the largest context, 1048576 tokens"), std::string::npos) << r.err;
  r = RunEdgedecode("plan" + m + " --seqs 100000");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--seqs must be from 1 to 4096"), std::string::npos) << r.err;
  for (const char* bad : {"-1G", "-1", "1G", "0", "99999999999999999999"}) {
    r = RunEdgedecode("plan" + m, std::string("EDGEDECODE_AVAILABLE_MEMORY=") + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("EDGEDECODE_AVAILABLE_MEMORY='" + std::string(bad) + "' is not a number of bytes"),
              std::string::npos) << r.err;
  }
  r = RunEdgedecode("run" + m + " -p hi -n 1", "EDGEDECODE_AVAILABLE_MEMORY=-1G");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const std::string profile = TempPath("huge.json");
  { std::ofstream(profile) << "{\"name\": \"x\", \"memory_bytes\": 18446744073709551615}"; }
  r = RunEdgedecode("plan" + m + " --target " + profile);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("memory_bytes must be a positive integer of at most"), std::string::npos) << r.err;
  std::remove(profile.c_str());
}

}  // namespace
}  // namespace edgedecode::test
