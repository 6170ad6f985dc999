// Tests of the GGUF block formats: layout sizes, exhaustive fp16/bf16 conversion checks, round-trip
// error bounds per type, awkward inputs, and the real oracle: tensors written by llama.cpp
// (../shared/testdata/llm/gguf/stories260K.*.gguf) dequantized and re-quantized here.
#include "quant/quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "quant/blocks.h"

namespace edgedecode::quant {
namespace {

const GgmlType kAllTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0, GgmlType::kQ4_1,
    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kQ2_K, GgmlType::kQ3_K,
    GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K};

std::vector<float> Gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = nd(rng);
  return v;
}

std::vector<float> RoundTrip(GgmlType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(RowBytes(t, n));
  QuantizeRow(t, x.data(), q.data(), n);
  std::vector<float> y(x.size());
  DequantizeRow(t, q.data(), y.data(), n);
  return y;
}

double RelRms(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
    den += static_cast<double>(x[i]) * x[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// ---- layouts ------------------------------------------------------------------------------------

TEST(QuantLayout, BlockSizesMatchTypeTraits) {
  struct { GgmlType t; size_t size; int64_t bs; } cases[] = {
      {GgmlType::kQ4_0, sizeof(BlockQ4_0), 32}, {GgmlType::kQ4_1, sizeof(BlockQ4_1), 32},
      {GgmlType::kQ5_0, sizeof(BlockQ5_0), 32}, {GgmlType::kQ5_1, sizeof(BlockQ5_1), 32},
      {GgmlType::kQ8_0, sizeof(BlockQ8_0), 32}, {GgmlType::kQ2_K, sizeof(BlockQ2_K), 256},
      {GgmlType::kQ3_K, sizeof(BlockQ3_K), 256}, {GgmlType::kQ4_K, sizeof(BlockQ4_K), 256},
      {GgmlType::kQ5_K, sizeof(BlockQ5_K), 256}, {GgmlType::kQ6_K, sizeof(BlockQ6_K), 256},
      {GgmlType::kQ8_K, sizeof(BlockQ8_K), 256},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(TypeTraits(c.t).type_size, c.size) << TypeName(static_cast<uint32_t>(c.t));
    EXPECT_EQ(TypeTraits(c.t).block_size, c.bs) << TypeName(static_cast<uint32_t>(c.t));
  }
  for (GgmlType t : kAllTypes) {
    EXPECT_TRUE(CanDequantize(t));
    EXPECT_TRUE(CanQuantize(t));
  }
  EXPECT_FALSE(CanDequantize(GgmlType::kIQ2_XXS));
  EXPECT_FALSE(CanQuantize(GgmlType::kQ8_1));
}

// ---- fp16 / bf16 --------------------------------------------------------------------------------

// Independent decoding of a half by its definition.
double HalfByDefinition(uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024.0 + m, e - 25);
}

TEST(QuantFp16, ExhaustiveDecodeAndRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    const double ref = HalfByDefinition(static_cast<uint16_t>(h));
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(f)))) << h;
      ASSERT_EQ(Fp32ToFp16(f) & 0x8000, h & 0x8000) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), ref) << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    ASSERT_EQ(Fp32ToFp16(f), h) << h;
  }
}

TEST(QuantFp16, RoundsToNearestEvenAtEveryMidpoint) {
  // For each pair of adjacent non-negative finite halves, the exact midpoint (representable in
  // float) goes to the even one and anything just off it to the nearer one.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double a = HalfByDefinition(static_cast<uint16_t>(h));
    const double b = HalfByDefinition(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((a + b) / 2);
    ASSERT_EQ(static_cast<double>(mid), (a + b) / 2);
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    ASSERT_EQ(Fp32ToFp16(mid), even) << h;
    ASSERT_EQ(Fp32ToFp16(-mid), even | 0x8000) << h;
    ASSERT_EQ(Fp32ToFp16(std::nextafter(mid, 0.0f)), h) << h;
    ASSERT_EQ(Fp32ToFp16(std::nextafter(mid, INFINITY)), h + 1) << h;
  }
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(65519.99f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7C00);  // the midpoint to "65536" rounds to even = inf
  EXPECT_EQ(Fp32ToFp16(1e30f), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(-INFINITY), 0xFC00);
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and the smallest subnormal
  EXPECT_EQ(Fp32ToFp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(Fp32ToFp16(1e-30f), 0x0000);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(Fp16ToFp32(Fp32ToFp16(std::nanf("")))));
}

// The compiler's own half type: GCC 12 has no _Float16 in C++ on AArch64 (the cross build), where
// __fp16 converts by fcvt, round to nearest even, as well.
#if defined(__aarch64__)
using CompilerHalf = __fp16;
#define ED_COMPILER_HALF 1
#elif defined(__FLT16_MAX__)
using CompilerHalf = _Float16;
#define ED_COMPILER_HALF 1
#endif

#if defined(ED_COMPILER_HALF)
TEST(QuantFp16, MatchesCompilerFloat16OnRandomFloats) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    const CompilerHalf h = static_cast<CompilerHalf>(f);
    uint16_t hb;
    std::memcpy(&hb, &h, 2);
    ASSERT_EQ(Fp32ToFp16(f), hb) << f;
  }
}
#endif

TEST(QuantBf16, ExhaustiveDecodeRoundTripAndRounding) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(h));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    ASSERT_EQ(bits, h << 16);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(f)))) << h;
      continue;
    }
    ASSERT_EQ(Fp32ToBf16(f), h) << h;
    // Midpoint to the next bf16 (bits + 0x8000): ties to even; skip the step into inf/NaN.
    if ((h & 0x7FFF) < 0x7F7F) {
      const uint32_t mid_bits = (h << 16) + 0x8000;
      float mid;
      std::memcpy(&mid, &mid_bits, 4);
      const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
      ASSERT_EQ(Fp32ToBf16(mid), even) << h;
      const uint32_t above = mid_bits + 1, below = mid_bits - 1;
      float fa, fb;
      std::memcpy(&fa, &above, 4);
      std::memcpy(&fb, &below, 4);
      ASSERT_EQ(Fp32ToBf16(fa), h + 1) << h;
      ASSERT_EQ(Fp32ToBf16(fb), h) << h;
    }
  }
  EXPECT_EQ(Fp32ToBf16(INFINITY), 0x7F80);
  EXPECT_EQ(Fp32ToBf16(3.4e38f), 0x7F80);  // rounds past the largest bf16
  EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(std::nanf("")))));
  // A NaN whose payload lives only in the low 16 bits must stay NaN, not become inf.
  const uint32_t low_nan = 0x7F800001u;
  float f;
  std::memcpy(&f, &low_nan, 4);
  EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(f))));
}

// ---- round-trip quality -------------------------------------------------------------------------

// Relative RMS error bound on N(0,1) data per type (measured values are printed; the bounds leave
// ~8-15% headroom over them). For reference, llama.cpp's own reference quantizers measure on the
// same kind of data: q4_0 0.0859, q4_1 0.0780, q5_0 0.0427, q5_1 0.0378, q8_0 0.0054 (ours are
// byte-identical), and q2_K 0.296, q3_K 0.151, q4_K 0.0712, q5_K 0.0360, q6_K 0.0178 (ours are
// lower). The K bounds sit below llama.cpp's figures where the headroom allows.
struct ErrBound { GgmlType t; double max_rel_rms; };
const ErrBound kBounds[] = {
    {GgmlType::kF32, 0.0},      {GgmlType::kF16, 3e-4},     {GgmlType::kBF16, 2e-3},
    {GgmlType::kQ8_0, 0.0062},  {GgmlType::kQ8_K, 0.0080},  {GgmlType::kQ6_K, 0.0185},
    {GgmlType::kQ5_0, 0.048},   {GgmlType::kQ5_1, 0.043},   {GgmlType::kQ5_K, 0.038},
    {GgmlType::kQ4_0, 0.097},   {GgmlType::kQ4_1, 0.088},   {GgmlType::kQ4_K, 0.076},
    {GgmlType::kQ3_K, 0.155},   {GgmlType::kQ2_K, 0.28},
};

TEST(QuantRoundTrip, GaussianRelativeRmsWithinBounds) {
  const std::vector<float> x = Gaussian(256 * 64, 1234);
  for (const ErrBound& b : kBounds) {
    const double e = RelRms(x, RoundTrip(b.t, x));
    std::printf("  %-5s rel RMS %.5f (bound %.4f)\n", TypeName(static_cast<uint32_t>(b.t)).c_str(), e,
                b.max_rel_rms);
    EXPECT_LE(e, b.max_rel_rms) << TypeName(static_cast<uint32_t>(b.t));
  }
}

TEST(QuantRoundTrip, ScaleInvariantAcrossMagnitudes) {
  // Same data at 1e-2 and 1e3: the relative error stays within the bound (fp16 scales cover it).
  for (float sigma : {1e-2f, 1e3f}) {
    const std::vector<float> x = Gaussian(256 * 16, 99, sigma);
    for (const ErrBound& b : kBounds) {
      const double e = RelRms(x, RoundTrip(b.t, x));
      EXPECT_LE(e, b.max_rel_rms * 1.1 + 1e-4) << TypeName(static_cast<uint32_t>(b.t)) << " sigma " << sigma;
    }
  }
}

TEST(QuantRoundTrip, AllZerosStayZero) {
  const std::vector<float> x(512, 0.0f);
  for (GgmlType t : kAllTypes) {
    for (float v : RoundTrip(t, x)) ASSERT_EQ(v, 0.0f) << TypeName(static_cast<uint32_t>(t));
  }
}

TEST(QuantRoundTrip, ConstantRows) {
  // A constant row is representable in every format up to the fp16 rounding of its scale
  // (relative 2^-11 per factor), so the error must be tiny, for either sign.
  for (float c : {0.75f, -3.0f, 0.02f, 1e-3f, -250.0f}) {
    const std::vector<float> x(512, c);
    for (GgmlType t : kAllTypes) {
      const std::vector<float> y = RoundTrip(t, x);
      for (float v : y) {
        ASSERT_NEAR(v, c, std::fabs(c) * 2.5e-3) << TypeName(static_cast<uint32_t>(t)) << " c=" << c;
      }
    }
  }
}

TEST(QuantRoundTrip, SingleOutlierIsKeptAndOthersBounded) {
  std::vector<float> x = Gaussian(512, 5, 0.01f);
  x[37] = 50.0f;
  x[300] = -80.0f;
  for (GgmlType t : kAllTypes) {
    const std::vector<float> y = RoundTrip(t, x);
    const std::string name = TypeName(static_cast<uint32_t>(t));
    // The outliers dominate their blocks; they themselves must come back well.
    EXPECT_NEAR(y[37], 50.0f, 50.0f * 0.08) << name;
    EXPECT_NEAR(y[300], -80.0f, 80.0f * 0.08) << name;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << name << " " << i;
      // Everywhere else the error is at most a fraction of the block's outlier.
      ASSERT_LE(std::fabs(y[i] - x[i]), 80.0f * 0.2f) << name << " " << i;
    }
    // Blocks without the outlier (elements 256.. in q*_0 blocks away from 300) keep their detail.
    if (TypeTraits(t).block_size == 32) {
      std::vector<float> xs(x.begin() + 64, x.begin() + 256), ys(y.begin() + 64, y.begin() + 256);
      EXPECT_LE(RelRms(xs, ys), 0.1) << name;
    }
  }
}

TEST(QuantRoundTrip, HugeAndTinyMagnitudesStayFinite) {
  // sigma 5e3 (|x| up to ~2e4, inside fp16's range) and 3e-4: everything must stay finite and close.
  for (float mag : {5e3f, 3e-4f}) {
    const std::vector<float> x = Gaussian(512, 11, mag);
    for (GgmlType t : kAllTypes) {
      const std::vector<float> y = RoundTrip(t, x);
      for (float v : y) ASSERT_TRUE(std::isfinite(v)) << TypeName(static_cast<uint32_t>(t));
      EXPECT_LE(RelRms(x, y), 0.3) << TypeName(static_cast<uint32_t>(t)) << " mag " << mag;
    }
  }
}

TEST(QuantRoundTrip, NanAndInfStayInTheirBlock) {
  // Non-finite input must not crash or poison other blocks: every block after the first (which
  // holds a NaN and an inf) is byte-identical to the clean row's.
  const std::vector<float> clean = Gaussian(768, 8);
  std::vector<float> dirty = clean;
  dirty[5] = NAN;
  dirty[17] = INFINITY;
  dirty[20] = -INFINITY;
  for (GgmlType t : kAllTypes) {
    const size_t bytes = RowBytes(t, 768), first = RowBytes(t, 256);
    std::vector<uint8_t> a(bytes), b(bytes);
    QuantizeRow(t, clean.data(), a.data(), 768);
    QuantizeRow(t, dirty.data(), b.data(), 768);
    EXPECT_TRUE(std::equal(a.begin() + first, a.end(), b.begin() + first)) << TypeName(static_cast<uint32_t>(t));
    std::vector<float> y(768);
    DequantizeRow(t, b.data(), y.data(), 768);  // must not crash either
  }
}

TEST(QuantRoundTrip, Q8_0RequantizationIsIdempotent) {
  // q8_0's largest code is always +-127, so dequantized data re-quantizes to the same scale and
  // codes: bytes are identical.
  const std::vector<float> x = Gaussian(32 * 200, 77, 3.0f);
  std::vector<uint8_t> q1(RowBytes(GgmlType::kQ8_0, 6400)), q2(q1.size());
  QuantizeRow(GgmlType::kQ8_0, x.data(), q1.data(), 6400);
  std::vector<float> y(x.size());
  DequantizeRow(GgmlType::kQ8_0, q1.data(), y.data(), 6400);
  QuantizeRow(GgmlType::kQ8_0, y.data(), q2.data(), 6400);
  EXPECT_EQ(q1, q2);
}

TEST(QuantRoundTrip, RequantizingDequantizedDataDoesNotDrift) {
  // For every quantized type, Q(D(Q(x))) dequantizes to (almost) the same values as Q(x): a second
  // pass adds at most a small fraction of the first pass's error.
  const std::vector<float> x = Gaussian(256 * 8, 3);
  for (const ErrBound& b : kBounds) {
    const std::vector<float> y1 = RoundTrip(b.t, x);
    const std::vector<float> y2 = RoundTrip(b.t, y1);
    EXPECT_LE(RelRms(y1, y2), 0.5 * RelRms(x, y1) + 1e-7) << TypeName(static_cast<uint32_t>(b.t));
  }
}

TEST(QuantDot, RefDotRowMatchesDequantizedDot) {
  const std::vector<float> w = Gaussian(512, 21), x = Gaussian(512, 22);
  for (GgmlType t : kAllTypes) {
    std::vector<uint8_t> q(RowBytes(t, 512));
    QuantizeRow(t, w.data(), q.data(), 512);
    std::vector<float> y(512);
    DequantizeRow(t, q.data(), y.data(), 512);
    double ref = 0, exact = 0;
    for (int i = 0; i < 512; ++i) {
      ref += static_cast<double>(y[i]) * x[i];
      exact += static_cast<double>(w[i]) * x[i];
    }
    const float got = RefDotRow(t, q.data(), x.data(), 512);
    EXPECT_NEAR(got, ref, 1e-4 * (std::fabs(ref) + 1)) << TypeName(static_cast<uint32_t>(t));
    EXPECT_NEAR(got, exact, 8.0) << TypeName(static_cast<uint32_t>(t));  // sanity: same ballpark
  }
}

// Hand-built blocks: one known code at a known position decodes to the documented element.
TEST(QuantLayout, HandBuiltBlocksDecodeToDocumentedPositions) {
  {  // q4_0: element 16+3 is qs[3] >> 4
    BlockQ4_0 b{};
    b.d = Fp32ToFp16(0.5f);
    for (auto& q : b.qs) q = 0x88;  // all codes 8 -> 0
    b.qs[3] = 0xF8;                 // element 19 -> (15-8)*0.5
    float y[32];
    DequantizeRow(GgmlType::kQ4_0, &b, y, 32);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], i == 19 ? 3.5f : 0.0f) << i;
  }
  {  // q5_1: element 20's 5th bit is qh bit 20
    BlockQ5_1 b{};
    b.d = Fp32ToFp16(1.0f);
    b.m = Fp32ToFp16(-1.0f);
    const uint32_t qh = 1u << 20;
    std::memcpy(b.qh, &qh, 4);
    float y[32];
    DequantizeRow(GgmlType::kQ5_1, &b, y, 32);
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], i == 20 ? 15.0f : -1.0f) << i;
  }
  {  // q4_K: sub-block 5 (elements 160..191) uses the packed high scale; element 160 = qs[64] low... no:
     // element 64*2 + 32 + 0 = 160 is qs[64] >> 4 in sub-block 5.
    BlockQ4_K b{};
    b.d = Fp32ToFp16(1.0f);
    b.dmin = Fp32ToFp16(0.0f);
    // scale of sub-block 5 = 37 = 0b100101: low 4 bits in scales[9] low nibble, top 2 in scales[1] >> 6.
    b.scales[9] = 37 & 0xF;
    b.scales[1] = static_cast<uint8_t>((37 >> 4) << 6);
    b.qs[64] = 0x20;  // high nibble 2
    float y[256];
    DequantizeRow(GgmlType::kQ4_K, &b, y, 256);
    for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], i == 160 ? 74.0f : 0.0f) << i;
  }
  {  // q6_K: element 128 + 96 + 5 = 229 is ql[64 + 32 + 5] >> 4 with qh[32 + 5] bits 6..7, scale 14
    BlockQ6_K b{};
    b.d = Fp32ToFp16(1.0f);
    for (auto& v : b.ql) v = 0x00;
    for (auto& v : b.qh) v = 0xAA;  // high bits 2 -> code 32 -> 0 for all
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j + 1);
    b.ql[101] = 0x30;               // element 229 low 4 bits = 3 -> code 35 -> +3
    float y[256];
    DequantizeRow(GgmlType::kQ6_K, &b, y, 256);
    for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], i == 229 ? 3.0f * 15 : 0.0f) << i;
  }
}

// ---- the real oracle: files written by llama.cpp ------------------------------------------------

// Minimal GGUF v3 reader for this test only (the product reader is src/gguf/).
struct MiniTensor {
  std::vector<int64_t> dims;
  uint32_t type = 0;
  const uint8_t* data = nullptr;
  int64_t n() const {
    int64_t k = 1;
    for (int64_t d : dims) k *= d;
    return k;
  }
};
struct MiniGguf {
  std::vector<uint8_t> bytes;
  std::map<std::string, MiniTensor> tensors;
};

bool LoadMiniGguf(const std::string& path, MiniGguf* g) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  g->bytes.assign(std::istreambuf_iterator<char>(f), {});
  const std::vector<uint8_t>& b = g->bytes;
  size_t p = 0;
  bool ok = true;
  auto need = [&](size_t k) { if (p + k > b.size()) ok = false; return ok; };
  auto u32 = [&]() -> uint32_t { uint32_t v = 0; if (need(4)) { std::memcpy(&v, &b[p], 4); p += 4; } return v; };
  auto u64 = [&]() -> uint64_t { uint64_t v = 0; if (need(8)) { std::memcpy(&v, &b[p], 8); p += 8; } return v; };
  auto str = [&]() -> std::string {
    const uint64_t k = u64();
    if (!need(k)) return {};
    std::string s(reinterpret_cast<const char*>(&b[p]), k);
    p += k;
    return s;
  };
  const size_t scalar_size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  uint64_t alignment = 32;
  std::function<void(uint32_t, const std::string&)> skip = [&](uint32_t type, const std::string& key) {
    if (type == 8) { str(); return; }
    if (type == 9) {
      const uint32_t at = u32();
      const uint64_t cnt = u64();
      for (uint64_t i = 0; i < cnt && ok; ++i) skip(at, key);
      return;
    }
    if (type > 12) { ok = false; return; }
    if (key == "general.alignment" && type == 4) { alignment = u32(); return; }
    if (need(scalar_size[type])) p += scalar_size[type];
  };
  if (!need(4) || std::memcmp(&b[0], "GGUF", 4) != 0) return false;
  p = 4;
  if (u32() != 3) return false;
  const uint64_t nt = u64(), nkv = u64();
  for (uint64_t i = 0; i < nkv && ok; ++i) {
    const std::string key = str();
    skip(u32(), key);
  }
  std::vector<std::pair<std::string, uint64_t>> offsets;
  for (uint64_t i = 0; i < nt && ok; ++i) {
    const std::string name = str();
    MiniTensor t;
    const uint32_t nd = u32();
    for (uint32_t d = 0; d < nd && ok; ++d) t.dims.push_back(static_cast<int64_t>(u64()));
    t.type = u32();
    offsets.emplace_back(name, u64());
    g->tensors[name] = t;
  }
  if (!ok) return false;
  const size_t data_start = (p + alignment - 1) / alignment * alignment;
  for (const auto& [name, off] : offsets) {
    MiniTensor& t = g->tensors[name];
    if (!TypeTraits(t.type).known) return false;
    if (data_start + off + RowBytes(static_cast<GgmlType>(t.type), t.n()) > b.size()) return false;
    t.data = &b[data_start + off];
  }
  return true;
}

std::string GgufPath(const std::string& variant) {
  return std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K." + variant + ".gguf";
}

class QuantOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(LoadMiniGguf(GgufPath("f32"), &f32_)) << GgufPath("f32");
  }
  std::vector<float> F32(const std::string& name) {
    const MiniTensor& t = f32_.tensors.at(name);
    EXPECT_EQ(t.type, 0u) << name;
    std::vector<float> v(static_cast<size_t>(t.n()));
    std::memcpy(v.data(), t.data, v.size() * 4);
    return v;
  }
  MiniGguf f32_;
};

// Every tensor of the quantized file dequantizes to the f32 file's tensor within that type's error.
void CheckDequantAgainstF32(QuantOracle* self, const std::string& variant, MiniGguf& f32) {
  MiniGguf g;
  ASSERT_TRUE(LoadMiniGguf(GgufPath(variant), &g)) << variant;
  ASSERT_EQ(g.tensors.size(), f32.tensors.size());
  std::map<uint32_t, int> seen;
  for (const auto& [name, t] : g.tensors) {
    ASSERT_TRUE(f32.tensors.count(name)) << name;
    const MiniTensor& ref = f32.tensors.at(name);
    ASSERT_EQ(t.dims, ref.dims) << name;
    const GgmlType type = static_cast<GgmlType>(t.type);
    ASSERT_TRUE(CanDequantize(type)) << name << " " << TypeName(t.type);
    std::vector<float> y(static_cast<size_t>(t.n())), x(y.size());
    std::memcpy(x.data(), ref.data, x.size() * 4);
    const int64_t row = t.dims[0];
    const size_t rb = RowBytes(type, row);
    for (int64_t r = 0; r < t.n() / row; ++r) DequantizeRow(type, t.data + r * rb, y.data() + r * row, row);
    const double e = RelRms(x, y);
    double bound = 0;
    switch (type) {
      case GgmlType::kF32: bound = 0; break;
      case GgmlType::kF16: bound = 4e-4; break;
      case GgmlType::kQ8_0: bound = 0.008; break;
      case GgmlType::kQ4_0: bound = 0.10; break;
      default: FAIL() << "unexpected type " << TypeName(t.type) << " in " << name;
    }
    EXPECT_LE(e, bound) << variant << " " << name;
    if (type == GgmlType::kF16) {  // f16 must be exactly the rounded f32
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], Fp16ToFp32(Fp32ToFp16(x[i]))) << name << " " << i;
    }
    ++seen[t.type];
  }
  for (const auto& [type, count] : seen) std::printf("  %s: %d tensors of %s\n", variant.c_str(), count, TypeName(type).c_str());
}

TEST_F(QuantOracle, DequantizedTensorsMatchF32File) {
  CheckDequantAgainstF32(this, "f16", f32_);
  CheckDequantAgainstF32(this, "q8_0-ffn_down_f16", f32_);
  CheckDequantAgainstF32(this, "q4_0-ffn_down_f16", f32_);
}

// Re-quantizing the f32 tensors with our q8_0 / q4_0 reproduces llama.cpp's bytes exactly.
void CheckRequantizeBytes(const std::string& variant, MiniGguf& f32) {
  MiniGguf g;
  ASSERT_TRUE(LoadMiniGguf(GgufPath(variant), &g)) << variant;
  size_t total = 0, differ = 0;
  int tensors = 0;
  for (const auto& [name, t] : g.tensors) {
    const GgmlType type = static_cast<GgmlType>(t.type);
    if (type != GgmlType::kQ8_0 && type != GgmlType::kQ4_0) continue;
    const MiniTensor& ref = f32.tensors.at(name);
    const size_t nbytes = RowBytes(type, t.n());
    std::vector<uint8_t> mine(nbytes);
    QuantizeRow(type, reinterpret_cast<const float*>(ref.data), mine.data(), t.n());
    size_t d = 0;
    for (size_t i = 0; i < nbytes; ++i) d += mine[i] != t.data[i];
    if (d) std::printf("  %s %s: %zu of %zu bytes differ\n", variant.c_str(), name.c_str(), d, nbytes);
    total += nbytes;
    differ += d;
    ++tensors;
  }
  std::printf("  %s: %d tensors re-quantized, %zu of %zu bytes differ\n", variant.c_str(), tensors, differ, total);
  EXPECT_GT(tensors, 0);
  EXPECT_EQ(differ, 0u) << variant;
}

TEST_F(QuantOracle, RequantizingF32ReproducesLlamaCppBytes) {
  CheckRequantizeBytes("q8_0-ffn_down_f16", f32_);
  CheckRequantizeBytes("q4_0-ffn_down_f16", f32_);
}

}  // namespace
}  // namespace edgedecode::quant

namespace edgedecode::quant {
namespace {

// FirstNonFinite(scales_only) finds a NaN or Inf written anywhere in block 1 exactly when dequantizing the row
// gives a non-finite value there (the scales are found by their effect, not by their layout).
TEST(QuantNonFinite, ScaleScanAgreesWithDequantization) {
  const GgmlType kTypes[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
                             GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (GgmlType t : kTypes) {
    const GgmlTypeTraits& tr = TypeTraits(t);
    const int64_t n = 3 * tr.block_size;
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    std::vector<uint8_t> q(RowBytes(t, n));
    QuantizeRow(t, x.data(), q.data(), n);
    EXPECT_EQ(FirstNonFinite(t, q.data(), n, true), -1) << tr.name;
    int found = 0;
    for (uint16_t bad : {uint16_t{0x7E00}, uint16_t{0x7C00}, uint16_t{0xFC00}}) {
      for (size_t at = tr.type_size; at + 2 <= 2 * tr.type_size; at += 2) {
        std::vector<uint8_t> b = q;
        std::memcpy(b.data() + at, &bad, 2);
        DequantizeRow(t, b.data(), y.data(), n);
        bool nonfinite = false;
        for (int64_t i = tr.block_size; i < 2 * tr.block_size; ++i) nonfinite |= !std::isfinite(y[static_cast<size_t>(i)]);
        EXPECT_EQ(FirstNonFinite(t, b.data(), n, true), nonfinite ? tr.block_size : -1) << tr.name << " byte " << at;
        found += nonfinite;
      }
    }
    EXPECT_GT(found, 0) << tr.name;
  }
  // Float types: only read without scales_only, and then every element.
  std::vector<float> f(64, 1.0f);
  f[37] = std::nanf("");
  EXPECT_EQ(FirstNonFinite(GgmlType::kF32, f.data(), 64, true), -1);
  EXPECT_EQ(FirstNonFinite(GgmlType::kF32, f.data(), 64, false), 37);
  std::vector<uint16_t> h(64, 0x3C00);
  h[5] = 0x7C00;
  EXPECT_EQ(FirstNonFinite(GgmlType::kF16, h.data(), 64, false), 5);
  std::vector<uint16_t> bf(64, 0x3F80);
  bf[63] = 0x7FC0;
  EXPECT_EQ(FirstNonFinite(GgmlType::kBF16, bf.data(), 64, false), 63);
}

}  // namespace
}  // namespace edgedecode::quant
