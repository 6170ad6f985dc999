// convert llama2c against llama.cpp's own conversion of the same files (stories260K.f32.gguf).
#include "tooling/llama2c.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace edgedecode::tooling {
namespace {

const std::string kData = EDGEDECODE_TESTDATA;
const std::string kLlm = kData + "/llm/";

std::string Tmp(const std::string& name) { return ::testing::TempDir() + "/tooling_l2c_" + name; }

std::vector<char> ReadAll(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void WriteAll(const std::string& p, const std::vector<char>& d) {
  std::ofstream f(p, std::ios::binary);
  f.write(d.data(), static_cast<std::streamsize>(d.size()));
}

void ExpectSameAsLlamaCpp(const std::string& ours_path) {
  auto ref = gguf::File::Open(kLlm + "gguf/stories260K.f32.gguf");
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  auto ours = gguf::File::Open(ours_path);
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  ASSERT_EQ((*ours)->tensors().size(), (*ref)->tensors().size());
  for (size_t i = 0; i < (*ref)->tensors().size(); ++i) {
    const auto& r = (*ref)->tensors()[i];
    const auto& o = (*ours)->tensors()[i];
    EXPECT_EQ(o.name, r.name);
    EXPECT_EQ(o.dims, r.dims) << r.name;
    EXPECT_EQ(o.type, r.type) << r.name;
    ASSERT_EQ(o.nbytes, r.nbytes) << r.name;
    EXPECT_EQ(std::memcmp(o.data, r.data, r.nbytes), 0) << r.name << " differs from llama.cpp's";
  }
  for (const char* key : {"tokenizer.ggml.tokens"}) {
    auto a = (*ref)->GetStringArray(key), b = (*ours)->GetStringArray(key);
    ASSERT_TRUE(a.ok() && b.ok()) << key;
    EXPECT_EQ(a.value(), b.value()) << key;
  }
  for (const char* key : {"tokenizer.ggml.scores"}) {
    auto a = (*ref)->GetFloatArray(key), b = (*ours)->GetFloatArray(key);
    ASSERT_TRUE(a.ok() && b.ok()) << key;
    EXPECT_EQ(a.value(), b.value()) << key;
  }
  {
    auto a = (*ref)->GetIntArray("tokenizer.ggml.token_type"), b = (*ours)->GetIntArray("tokenizer.ggml.token_type");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a.value(), b.value());
  }
  // Every metadata key llama.cpp wrote is there with the same value, except the context length
  // (llama.cpp writes its converter default 128, we write the checkpoint's seq_len 512).
  for (const auto& [key, v] : (*ref)->metadata()) {
    const gguf::Value* o = (*ours)->Find(key);
    ASSERT_NE(o, nullptr) << key;
    EXPECT_EQ(o->type, v.type) << key;
    if (key == "llama.context_length") {
      EXPECT_EQ(o->as_int(), 512);
    } else if (v.type != gguf::ValueType::kArray) {
      EXPECT_EQ(o->str, v.str) << key;
      EXPECT_EQ(o->as_double(), v.as_double()) << key;
    }
  }
}

TEST(Llama2c, LegacyMatchesLlamaCpp) {
  Llama2cInfo info;
  Status s = ConvertLlama2c(kLlm + "stories260K.bin", kLlm + "tok512.bin", Tmp("legacy.gguf"), &info);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(info.version, 0);
  EXPECT_EQ(info.dim, 64);
  EXPECT_TRUE(info.shared_classifier);
  ExpectSameAsLlamaCpp(Tmp("legacy.gguf"));
}

TEST(Llama2c, Version1MatchesLlamaCpp) {
  Llama2cInfo info;
  Status s = ConvertLlama2c(kLlm + "stories260K.v1-ak42.bin", kLlm + "tok512.bin", Tmp("v1.gguf"), &info);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(info.version, 1);
  ExpectSameAsLlamaCpp(Tmp("v1.gguf"));
}

void ExpectError(const std::string& model, const std::string& tok, StatusCode code, const std::string& needle) {
  Status s = ConvertLlama2c(model, tok, Tmp("bad.gguf"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  std::FILE* f = std::fopen(Tmp("bad.gguf").c_str(), "rb");
  EXPECT_EQ(f, nullptr) << "no output file on failure";
  if (f) std::fclose(f);
}

TEST(Llama2c, BadInputs) {
  const auto model = ReadAll(kLlm + "stories260K.bin");
  const auto tok = ReadAll(kLlm + "tok512.bin");
  ASSERT_GT(model.size(), 1000u);
  const std::string good_tok = kLlm + "tok512.bin", good_model = kLlm + "stories260K.bin";

  ExpectError(Tmp("missing.bin"), good_tok, StatusCode::kNotFound, "cannot open");
  WriteAll(Tmp("short.bin"), std::vector<char>(model.begin(), model.begin() + 20));
  ExpectError(Tmp("short.bin"), good_tok, StatusCode::kCorrupt, "too short");
  WriteAll(Tmp("trunc.bin"), std::vector<char>(model.begin(), model.end() - 100));
  ExpectError(Tmp("trunc.bin"), good_tok, StatusCode::kCorrupt, "truncated");
  auto extra = model;
  extra.resize(extra.size() + 8);
  WriteAll(Tmp("extra.bin"), extra);
  ExpectError(Tmp("extra.bin"), good_tok, StatusCode::kCorrupt, "trailing");
  auto badhdr = model;
  int32_t huge = 1 << 30;
  std::memcpy(badhdr.data(), &huge, 4);  // dim
  WriteAll(Tmp("badhdr.bin"), badhdr);
  ExpectError(Tmp("badhdr.bin"), good_tok, StatusCode::kCorrupt, "dim");
  // Legacy: a negative vocab_size means an unshared classifier; INT32_MIN has no positive counterpart.
  for (int32_t v : {INT32_MIN, -(1 << 23), 1 << 23, 0}) {
    auto vocab = model;
    std::memcpy(vocab.data() + 20, &v, 4);
    WriteAll(Tmp("vocab.bin"), vocab);
    ExpectError(Tmp("vocab.bin"), good_tok, StatusCode::kCorrupt, "offset 20: vocab_size");
  }
  // Every field at its largest accepted value: the implied size is computed without overflow and refused.
  auto big = model;
  for (int i = 0; i < 7; ++i) {
    const int32_t kMax[] = {1 << 16, 1 << 18, 1 << 10, 1 << 10, 1 << 10, 1 << 22, 1 << 22};
    std::memcpy(big.data() + 4 * i, &kMax[i], 4);
  }
  WriteAll(Tmp("big.bin"), big);
  ExpectError(Tmp("big.bin"), good_tok, StatusCode::kCorrupt, "truncated?");
  auto heads = model;
  int32_t three = 3;
  std::memcpy(heads.data() + 16, &three, 4);  // n_kv_heads 3 does not divide 8
  WriteAll(Tmp("heads.bin"), heads);
  ExpectError(Tmp("heads.bin"), good_tok, StatusCode::kCorrupt, "n_kv_heads");
  auto v1 = ReadAll(kLlm + "stories260K.v1-ak42.bin");
  int32_t two = 2;
  std::memcpy(v1.data() + 4, &two, 4);
  WriteAll(Tmp("v2.bin"), v1);
  ExpectError(Tmp("v2.bin"), good_tok, StatusCode::kUnsupported, "version 2");
  // The transposed-weights file has a valid header and size: not detectable here (it converts).
  // Tokenizers that do not match the model's vocab_size.
  WriteAll(Tmp("tok_short.bin"), std::vector<char>(tok.begin(), tok.end() - 50));
  ExpectError(good_model, Tmp("tok_short.bin"), StatusCode::kCorrupt, "token");
  auto tok_long = tok;
  const char more[] = {0, 0, 0, 0, 1, 0, 0, 0, 'x'};
  tok_long.insert(tok_long.end(), more, more + sizeof(more));
  WriteAll(Tmp("tok_long.bin"), tok_long);
  ExpectError(good_model, Tmp("tok_long.bin"), StatusCode::kCorrupt, "bytes left");
  auto tok_len = tok;
  int32_t neg = -5;
  std::memcpy(tok_len.data() + 8, &neg, 4);  // length of token 0
  WriteAll(Tmp("tok_len.bin"), tok_len);
  ExpectError(good_model, Tmp("tok_len.bin"), StatusCode::kCorrupt, "length");
}

}  // namespace
}  // namespace edgedecode::tooling
