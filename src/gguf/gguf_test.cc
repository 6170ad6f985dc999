// GGUF reader/writer tests: real llama.cpp files, round trips, and crafted bad files (every
// truncation of a valid file, bit flips, each validation rule). Runs under ASan/UBSan too.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "base/child_limit.h"
#include "gguf/gguf.h"

namespace edgedecode::gguf {
namespace {

const std::string kData = EDGEDECODE_TESTDATA;

std::string TmpPath(const std::string& name) {
  return ::testing::TempDir() + "/gguf_test_" + std::to_string(::getpid()) + "_" + name;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(Gguf, ReadsLlamaCppStories260K) {
  auto f = File::Open(kData + "/llm/gguf/stories260K.f32.gguf");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->GetString("general.architecture").value(), "llama");
  EXPECT_EQ((*f)->GetInt("llama.embedding_length").value(), 64);
  EXPECT_EQ((*f)->GetInt("llama.block_count").value(), 5);
  auto tokens = (*f)->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), 512u);
  const TensorInfo* emb = (*f)->FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->ggml_type(), GgmlType::kF32);
  EXPECT_EQ(emb->nbytes, 64u * 512 * 4);
  // Missing keys are named.
  auto missing = (*f)->GetInt("llama.no_such_key");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("llama.no_such_key"), std::string::npos);
}

TEST(Gguf, ReadsQuantizedFiles) {
  for (const char* name : {"q8_0-ffn_down_f16", "q4_0-ffn_down_f16", "f16"}) {
    auto f = File::Open(kData + "/llm/gguf/stories260K." + std::string(name) + ".gguf");
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().message();
    const TensorInfo* down = (*f)->FindTensor("blk.0.ffn_down.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->ggml_type(), GgmlType::kF16) << name;
  }
}

TEST(Gguf, ReadsVersion1) {
  auto f = File::Open(kData + "/vocab/historical/ggml-vocab-llama.2023-08.gguf");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->version(), 1u);
  auto tokens = (*f)->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_EQ(tokens->size(), 32000u);
}

// A small file with every metadata type, nested arrays and two tensors.
std::string WriteSample(const std::string& name) {
  Writer w;
  w.Set("general.architecture", Value::Str("llama"));
  Value u8; u8.type = ValueType::kUint8; u8.u = 200; w.Set("t.u8", u8);
  Value i8; i8.type = ValueType::kInt8; i8.i = -100; w.Set("t.i8", i8);
  Value u16; u16.type = ValueType::kUint16; u16.u = 60000; w.Set("t.u16", u16);
  Value i16; i16.type = ValueType::kInt16; i16.i = -30000; w.Set("t.i16", i16);
  w.Set("t.u32", Value::U32(4000000000u));
  w.Set("t.i32", Value::I32(-2000000000));
  w.Set("t.u64", Value::U64(1ull << 40));
  Value i64; i64.type = ValueType::kInt64; i64.i = -(1ll << 40); w.Set("t.i64", i64);
  w.Set("t.f32", Value::F32(1.5f));
  Value f64; f64.type = ValueType::kFloat64; f64.f = 2.25; w.Set("t.f64", f64);
  w.Set("t.bool", Value::Bool(true));
  w.Set("t.strs", Value::StrArray({"a", "", "ünï"}));
  Value nested; nested.type = ValueType::kArray; nested.array_type = ValueType::kArray;
  nested.array = {Value::I32Array({1, 2}), Value::I32Array({3})};
  w.Set("t.nested", nested);
  std::vector<float> a(64), b(32 * 3);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = -static_cast<float>(i);
  w.AddTensor("a", {64}, GgmlType::kF32, a.data(), a.size() * 4);
  w.AddTensor("b", {32, 3}, GgmlType::kF32, b.data(), b.size() * 4);
  std::string path = TmpPath(name);
  EXPECT_TRUE(w.Write(path).ok());
  return path;
}

TEST(Gguf, RoundTripsEveryValueType) {
  std::string path = WriteSample("roundtrip.gguf");
  auto f = File::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->Find("t.u8")->u, 200u);
  EXPECT_EQ((*f)->Find("t.i8")->i, -100);
  EXPECT_EQ((*f)->Find("t.u16")->u, 60000u);
  EXPECT_EQ((*f)->Find("t.i16")->i, -30000);
  EXPECT_EQ((*f)->GetInt("t.u32").value(), 4000000000ll);
  EXPECT_EQ((*f)->GetInt("t.i32").value(), -2000000000ll);
  EXPECT_EQ((*f)->GetInt("t.u64").value(), 1ll << 40);
  EXPECT_EQ((*f)->GetInt("t.i64").value(), -(1ll << 40));
  EXPECT_EQ((*f)->GetFloat("t.f32").value(), 1.5);
  EXPECT_EQ((*f)->GetFloat("t.f64").value(), 2.25);
  EXPECT_TRUE((*f)->GetBool("t.bool").value());
  EXPECT_EQ((*f)->GetStringArray("t.strs").value(), (std::vector<std::string>{"a", "", "ünï"}));
  const Value* n = (*f)->Find("t.nested");
  ASSERT_EQ(n->array.size(), 2u);
  EXPECT_EQ(n->array[0].element(1).as_int(), 2);
  EXPECT_EQ(n->array[1].element(0).as_int(), 3);
  const TensorInfo* b = (*f)->FindTensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->rows(), 3);
  EXPECT_EQ(reinterpret_cast<const float*>(b->data)[95], -95.0f);
  EXPECT_EQ(b->offset % 32, 0u);
  // Wrong type is an error naming the key.
  auto s = (*f)->GetString("t.u32");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("t.u32"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Gguf, RewritesRealFileIdentically) {
  auto f = File::Open(kData + "/llm/gguf/stories260K.q4_0-ffn_down_f16.gguf");
  ASSERT_TRUE(f.ok());
  Writer w;
  w.CopyMetadataFrom(**f);
  for (const TensorInfo& t : (*f)->tensors()) w.AddTensorRef(t.name, t.dims, t.ggml_type(), t.data, t.nbytes);
  std::string path = TmpPath("rewrite.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto g = File::Open(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ((*g)->tensors().size(), (*f)->tensors().size());
  for (const TensorInfo& t : (*f)->tensors()) {
    const TensorInfo* u = (*g)->FindTensor(t.name);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->dims, t.dims);
    EXPECT_EQ(0, std::memcmp(u->data, t.data, t.nbytes)) << t.name;
  }
  EXPECT_EQ((*g)->metadata().size(), (*f)->metadata().size());
  // Same bytes as llama.cpp's own file: the writer reproduces its layout exactly.
  EXPECT_EQ(ReadAll(path), ReadAll(kData + "/llm/gguf/stories260K.q4_0-ffn_down_f16.gguf"));
  std::remove(path.c_str());
}

std::string OpenError(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::string path = TmpPath(name);
  WriteAll(path, bytes);
  auto f = File::Open(path);
  std::remove(path.c_str());
  return f.ok() ? "" : f.status().message();
}

// Every truncation of a valid file must fail cleanly (the fuzz corpus, part 1).
TEST(GgufBad, EveryTruncationFails) {
  std::vector<uint8_t> good = ReadAll(WriteSample("trunc_src.gguf"));
  for (size_t n = 0; n < good.size(); n += (n < 700 ? 1 : 37)) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_NE(OpenError(cut, "trunc.gguf"), "") << "truncated to " << n << " bytes was accepted";
  }
}

// Random byte flips must never crash; most must be reported (the fuzz corpus, part 2).
TEST(GgufBad, RandomCorruptionNeverCrashes) {
  std::vector<uint8_t> good = ReadAll(WriteSample("flip_src.gguf"));
  std::mt19937 rng(1234);
  int rejected = 0;
  const int kCases = 3000;
  for (int c = 0; c < kCases; ++c) {
    std::vector<uint8_t> bad = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % 700;  // the header region
      bad[at] = static_cast<uint8_t>(rng());
    }
    rejected += OpenError(bad, "flip.gguf").empty() ? 0 : 1;
  }
  // Flips inside string bytes or float values are legitimately accepted; structural ones are not.
  EXPECT_GT(rejected, kCases / 10);
}

void Put64(std::vector<uint8_t>* b, size_t at, uint64_t v) { std::memcpy(b->data() + at, &v, 8); }
void Put32(std::vector<uint8_t>* b, size_t at, uint32_t v) { std::memcpy(b->data() + at, &v, 4); }

TEST(GgufBad, EachRuleHasAClearMessage) {
  std::vector<uint8_t> good = ReadAll(WriteSample("rules_src.gguf"));
  auto expect = [&](std::vector<uint8_t> bad, const std::string& needle) {
    std::string err = OpenError(bad, "rule.gguf");
    EXPECT_NE(err.find(needle), std::string::npos) << "wanted '" << needle << "', got '" << err << "'";
  };
  std::vector<uint8_t> b = good;
  b[0] = 'X';
  expect(b, "not a GGUF file");
  b = good; Put32(&b, 4, 99);
  expect(b, "unsupported GGUF version 99");
  b = good; Put64(&b, 16, 1ull << 60);  // kv count
  expect(b, "metadata count");
  b = good; Put64(&b, 8, 1ull << 60);  // tensor count
  expect(b, "tensor count");
  b = good; Put64(&b, 24, 1ull << 62);  // length of the first key
  expect(b, "runs past the end");
  expect(std::vector<uint8_t>{'G', 'G', 'U', 'F'}, "too short");
  expect(std::vector<uint8_t>{'l', 'm', 'g', 'g', 1, 0, 0, 0, 0, 0}, "legacy ggml");
}

// Crafted tensor tables: out of bounds, overlapping, unknown type, bad row length.
TEST(GgufBad, TensorTableRules) {
  auto craft = [](uint32_t type, uint64_t dim0, uint64_t off_b, uint64_t data_bytes) {
    std::vector<uint8_t> b;
    auto p32 = [&](uint32_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); };
    auto p64 = [&](uint64_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); };
    auto str = [&](const std::string& s) { p64(s.size()); b.insert(b.end(), s.begin(), s.end()); };
    p32(0x46554747u); p32(3); p64(2); p64(0);
    str("x"); p32(1); p64(32); p32(0); p64(0);
    str("y"); p32(1); p64(dim0); p32(type); p64(off_b);
    while (b.size() % 32) b.push_back(0);
    b.resize(b.size() + data_bytes, 0);
    return b;
  };
  EXPECT_EQ(OpenError(craft(0, 32, 128, 256), "ok.gguf"), "");
  EXPECT_NE(OpenError(craft(0, 32, 128, 200), "oob.gguf").find("outside the file"), std::string::npos);
  EXPECT_NE(OpenError(craft(0, 32, 64, 256), "overlap.gguf").find("overlap"), std::string::npos);
  EXPECT_NE(OpenError(craft(77, 32, 128, 256), "type.gguf").find("unknown type 77"), std::string::npos);
  EXPECT_NE(OpenError(craft(2, 33, 128, 256), "row.gguf").find("not a multiple"), std::string::npos);
  EXPECT_NE(OpenError(craft(0, 32, 129, 256), "align.gguf").find("alignment"), std::string::npos);
}

TEST(GgufBad, RealMangledVocabIsRejected) {
  // Every non-UTF-8 byte became EF BF BD, so string lengths no longer match their bytes.
  auto f = File::Open(kData + "/llm/corrupt/ggml-vocab-llama-spm.utf8-mangled.gguf");
  if (f.ok()) {
    // If the structure survived, the damage must still be visible to the tokenizer layer;
    // the reader itself then has nothing to reject. Record what we saw.
    GTEST_FAIL() << "mangled file parsed as valid GGUF";
  }
  EXPECT_FALSE(f.status().message().empty());
}

// Hand-written GGUF bytes (version 3 unless said), for files the Writer would not produce.
struct Bytes {
  std::vector<uint8_t> b;
  void u32(uint32_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); }
  void u64(uint64_t v) { b.insert(b.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 8); }
  void str(const std::string& s) { u64(s.size()); b.insert(b.end(), s.begin(), s.end()); }
  void header(uint64_t n_tensors, uint64_t n_kv) { u32(0x46554747u); u32(3); u64(n_tensors); u64(n_kv); }
  void pad() { while (b.size() % 32) b.push_back(0); }
};

// An array of 3 x 10^7 u8 (a 30 MB file) cost ~96 bytes an element when every element was a Value: ~2.9 GB.
// Packed, it costs its file size; under a 1 GiB address-space limit it opens.
TEST(GgufBad, LongArraysCostAboutTheirFileSize) {
  const uint64_t n = 30'000'000;
  Bytes x;
  x.header(0, 1);
  x.str("t.bytes");
  x.u32(static_cast<uint32_t>(ValueType::kArray));
  x.u32(static_cast<uint32_t>(ValueType::kUint8));
  x.u64(n);
  x.b.resize(x.b.size() + n, 7);
  const std::string path = TmpPath("long_array.gguf");
  WriteAll(path, x.b);
  const int rc = testing_util::RunWithMemoryLimit([&] {
    auto f = File::Open(path);
    if (!f.ok()) return 10;
    const Value* v = (*f)->Find("t.bytes");
    return v != nullptr && v->array_size() == n && v->element(n - 1).u == 7 ? 0 : 11;
  });
  std::remove(path.c_str());
  EXPECT_EQ(rc, 0) << "10: open failed, 11: wrong contents, >128: killed by a signal (unbounded memory)";
}

// Nested arrays still take a Value per element (~12 bytes in the file each): 2 x 10^6 of them would take
// several times the file size, so the memory budget refuses them with a clear error, in bounded memory.
TEST(GgufBad, MetadataBeyondTheMemoryBudgetIsRefused) {
  const uint64_t n = 2'000'000;
  Bytes x;
  x.header(0, 1);
  x.str("t.nested");
  x.u32(static_cast<uint32_t>(ValueType::kArray));
  x.u32(static_cast<uint32_t>(ValueType::kArray));
  x.u64(n);
  for (uint64_t i = 0; i < n; ++i) {
    x.u32(static_cast<uint32_t>(ValueType::kUint8));
    x.u64(0);
  }
  const std::string path = TmpPath("nested.gguf");
  WriteAll(path, x.b);
  const int rc = testing_util::RunWithMemoryLimit([&] {
    auto f = File::Open(path);
    if (f.ok()) return 10;
    return f.status().message().find("would bring the parsed metadata past") != std::string::npos &&
                   f.status().message().find("t.nested") != std::string::npos
               ? 0
               : 11;
  });
  EXPECT_EQ(rc, 0) << "10: accepted, 11: another message, >128: killed by a signal";
  auto f = File::Open(path);  // the message itself, in this process
  std::remove(path.c_str());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("4 x the file size + 16 MiB"), std::string::npos) << f.status().message();
}

// Tensor dims whose product overflows, and offsets near 2^64: refused naming the tensor, no overflow (UBSan).
TEST(GgufBad, OverflowingTensorInfoNamesTheTensor) {
  auto craft = [](const std::vector<uint64_t>& dims, uint64_t offset) {
    Bytes x;
    x.header(1, 0);
    x.str("big.weight");
    x.u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) x.u64(d);
    x.u32(0);  // f32
    x.u64(offset);
    x.pad();
    x.b.resize(x.b.size() + 256, 0);
    return x.b;
  };
  std::string err = OpenError(craft({1u << 20, 1u << 20, 1u << 20, 1u << 20}, 0), "dims.gguf");
  EXPECT_NE(err.find("tensor 'big.weight' has an absurd dimension"), std::string::npos) << err;
  err = OpenError(craft({uint64_t{1} << 63, 2}, 0), "dim63.gguf");
  EXPECT_NE(err.find("tensor 'big.weight' has an absurd dimension"), std::string::npos) << err;
  err = OpenError(craft({32}, ~uint64_t{31}), "offset.gguf");
  EXPECT_NE(err.find("tensor 'big.weight' data"), std::string::npos) << err;
  EXPECT_NE(err.find("lies outside the file"), std::string::npos) << err;
  err = OpenError(craft({uint64_t{1} << 40, uint64_t{1} << 10}, 0), "size.gguf");
  EXPECT_NE(err.find("big.weight"), std::string::npos) << err;
}

// 64-bit counts and lengths are never cut to 32 bits: a string length of 2^32 + 1 is not read as 1.
TEST(GgufBad, SixtyFourBitLengthsAreNotTruncated) {
  Bytes x;
  x.header(0, 1);
  x.u64((uint64_t{1} << 32) + 1);  // key length
  x.b.push_back('k');
  x.u32(static_cast<uint32_t>(ValueType::kUint8));
  x.b.push_back(1);
  std::string err = OpenError(x.b, "len.gguf");
  EXPECT_NE(err.find("string length 4294967297"), std::string::npos) << err;
  Bytes y;
  y.header(0, 1);
  y.str("k");
  y.u32(static_cast<uint32_t>(ValueType::kArray));
  y.u32(static_cast<uint32_t>(ValueType::kUint8));
  y.u64((uint64_t{1} << 32) + 2);
  y.b.resize(y.b.size() + 16, 0);
  err = OpenError(y.b, "count.gguf");
  EXPECT_NE(err.find("claims 4294967298 elements"), std::string::npos) << err;
}

TEST(Gguf, IntAndFloatGettersOnOddValues) {
  Writer w;
  Value huge;
  huge.type = ValueType::kFloat64;
  huge.f = 1e300;
  w.Set("t.huge", huge);
  w.Set("t.floats", Value::F32Array({1.5f, std::nanf("")}));
  w.Set("t.ints", Value::I32Array({-1, 7}));
  const std::string path = TmpPath("odd.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto f = File::Open(path);
  std::remove(path.c_str());
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->Find("t.huge")->as_int(), INT64_MAX);  // saturated, not undefined
  auto ints = (*f)->GetIntArray("t.floats");
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().message().find("has type array of f32, expected array of integers"), std::string::npos)
      << ints.status().message();
  EXPECT_EQ((*f)->GetIntArray("t.ints").value(), (std::vector<int64_t>{-1, 7}));
  EXPECT_EQ((*f)->GetFloatArray("t.floats").value()[0], 1.5);
}

}  // namespace
}  // namespace edgedecode::gguf
