// Parity of every kernel on every ISA this CPU has against the scalar reference quant::RefDotRow, per
// weight type, over random and awkward shapes (rows not a multiple of any tile, k a multiple of the
// block but not of 256 or 512 where the type allows, k not a multiple of the vector width for float
// types, m = 1..16 columns), plus bit-identical results for any split of the rows.
//
// Tolerances (why they are what they are):
//  * Integer paths quantize each activation block of 32 to int8 with scale d = amax/127. The kernel
//    then computes sum_i w_i * xhat_i (xhat = d * q) with exact int32 block sums, converted to float and
//    accumulated by FMA. So (1) "tight": vs RefDotRow on xhat, the only error is float rounding of about
//    k/32 + 16 accumulations: |err| <= 1e-5 * sum|w_i * xhat_i| (f32 eps 6e-8 x ~100 terms, with margin).
//    (2) "end to end": vs RefDotRow on the float x, rounding x to the q8 grid moves each x_i by at most
//    d_b/2, so |err| <= sum_b (d_b/2) * sum_{i in b} |w_i| (a strict bound, plus the 1e-5 slack). The
//    typical relative error this gives is ~1e-3..1e-2 (printed per type).
//  * Float paths (f32/f16/bf16 weights, float activations): only accumulation order differs from the
//    double accumulation of the reference: |err| <= 1e-5 * sum|w_i * x_i|. f16/bf16 weights take
//    activations rounded to f16/bf16 first (llama.cpp's vec_dot_type), which moves each x_i by at most
//    half an ulp: end to end adds 2^-11 (f16) or 2^-8 (bf16) of sum|w_i * x_i|.
//  * Arm: the sdot build and the plain NEON build (its lanes emulated exactly) must agree bit for bit;
//    on a CPU with dotprod both are run here, without it the plain one is (under qemu-user for the
//    cross build: tools/cross_arm_test.sh runs this test on -cpu max and on cortex-a53).
#include "kernels/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/internal.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace edgedecode::kernels {
namespace {

const GgmlType kTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,
                           GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
                           GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                           GgmlType::kQ6_K};

std::vector<Isa> PresentIsas() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (IsaAvailable(isa)) v.push_back(isa);
  return v;
}

bool IsFloat(GgmlType t) { return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16; }

// k values for a type: awkward but valid.
std::vector<int64_t> Ks(GgmlType t) {
  if (IsFloat(t)) return {1, 7, 33, 100, 257, 1024};
  if (quant::CanDequantize(t) && TypeTraits(t).block_size == 256) return {256, 768, 1280};
  return {32, 96, 160, 544};
}

struct Problem {
  GgmlType t;
  int64_t rows, k, m;
  std::vector<uint8_t> w;    // rows x RowBytes(t, k)
  std::vector<float> wf;     // rows x k, dequantized weights
  std::vector<float> x;      // m x k
};

Problem Make(GgmlType t, int64_t rows, int64_t k, int64_t m, uint32_t seed) {
  Problem p{t, rows, k, m, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t rb = RowBytes(t, k);
  p.w.resize(rb * rows);
  p.wf.resize(static_cast<size_t>(rows * k));
  std::vector<float> tmp(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& f : tmp) f = nd(rng) * 0.05f;
    if (r % 3 == 1) tmp[static_cast<size_t>(rng() % k)] = 0.9f;  // an outlier, as real weights have
    quant::QuantizeRow(t, tmp.data(), p.w.data() + r * rb, k);
    quant::DequantizeRow(t, p.w.data() + r * rb, p.wf.data() + r * k, k);
  }
  p.x.resize(static_cast<size_t>(m * k));
  for (float& f : p.x) f = nd(rng);
  for (int64_t j = 0; j < m; ++j) p.x[static_cast<size_t>(j * k + rng() % k)] = 12.0f;  // outliers
  return p;
}

// The activations as the integer kernels see them (d * q), or the float ones.
std::vector<float> SeenX(const Activations& a, int64_t j) {
  const int64_t k = a.k();
  std::vector<float> v(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) v[i] = a.quantized() ? a.d(j)[i / 32] * a.qs(j)[i] : a.xf(j)[i];
  return v;
}

void CheckOne(Isa isa, const Problem& p, double* max_rel) {
  Activations a;
  a.Prepare(isa, p.t, p.x.data(), p.m, p.k);
  const int64_t ldy = p.rows + 3;
  std::vector<float> Y(static_cast<size_t>(p.m * ldy), -777.0f);
  MatMul(isa, p.t, p.w.data(), p.k, 0, p.rows, a, Y.data(), ldy);
  const size_t rb = RowBytes(p.t, p.k);
  for (int64_t j = 0; j < p.m; ++j) {
    const std::vector<float> xs = SeenX(a, j);
    const float* x = p.x.data() + j * p.k;
    for (int64_t r = 0; r < p.rows; ++r) {
      const uint8_t* row = p.w.data() + r * rb;
      const float* wf = p.wf.data() + r * p.k;
      const float got = Y[j * ldy + r];
      double abs_wxs = 0, abs_wx = 0, grid = 0;
      for (int64_t i = 0; i < p.k; ++i) {
        abs_wxs += std::fabs(wf[i] * xs[i]);
        abs_wx += std::fabs(wf[i] * x[i]);
      }
      // 16-bit weights take 16-bit activations (as llama.cpp's vec_dot_type): x moves by half an ulp.
      if (p.t == GgmlType::kF16) grid += abs_wx * 0x1p-11;
      if (p.t == GgmlType::kBF16) grid += abs_wx * 0x1p-8;
      // Integer types quantize activations on every path (ref included, to compute the same function).
      if (TypeTraits(p.t).block_size > 1) {
        for (int64_t b = 0; b < p.k / 32; ++b) {
          double sw = 0;
          for (int i = 0; i < 32; ++i) sw += std::fabs(wf[b * 32 + i]);
          grid += std::fabs(a.d(j)[b]) * 0.5 * sw;
        }
      }
      const float want_tight = quant::RefDotRow(p.t, row, xs.data(), p.k);
      const float want = quant::RefDotRow(p.t, row, x, p.k);
      ASSERT_TRUE(std::isfinite(got));
      ASSERT_LE(std::fabs(got - want_tight), 1e-5 * abs_wxs + 1e-6)
          << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(p.t)) << " rows=" << p.rows
          << " k=" << p.k << " m=" << p.m << " row " << r << " col " << j << " got " << got
          << " want(q8 x) " << want_tight;
      ASSERT_LE(std::fabs(got - want), grid + 1e-5 * abs_wx + 1e-6)
          << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(p.t)) << " k=" << p.k << " m=" << p.m
          << " row " << r << " col " << j << " got " << got << " want " << want;
      if (abs_wx > 0) *max_rel = std::max(*max_rel, std::fabs(got - want) / abs_wx);
    }
    for (int64_t r = p.rows; r < ldy; ++r) ASSERT_EQ(Y[j * ldy + r], -777.0f) << "wrote past row range";
  }
}

TEST(KernelsParity, EveryTypeEveryIsaEveryShape) {
  const int64_t kRows[] = {1, 5, 17};
  const int64_t kMs[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16};
  uint32_t seed = 1;
  for (GgmlType t : kTypes) {
    for (Isa isa : PresentIsas()) {
      double max_rel = 0;  // |err| / sum|w x|, for the record
      for (int64_t k : Ks(t))
        for (int64_t rows : kRows)
          for (int64_t m : kMs) {
            if (rows * k * m > 17 * 1280 * 5 && m > 5 && rows > 5) continue;  // keep it fast
            Problem p = Make(t, rows, k, m, seed++);
            CheckOne(isa, p, &max_rel);
            if (HasFatalFailure()) return;
          }
      std::printf("%-6s %-5s %-45s max |err|/sum|wx| = %.2e\n", IsaName(isa),
                  TypeName(static_cast<uint32_t>(t)).c_str(), KernelName(isa, t).c_str(), max_rel);
    }
  }
}

// Threads split by rows: any split must give bit-identical outputs.
TEST(KernelsParity, RowSplitsAreBitIdentical) {
  std::mt19937 rng(7);
  for (GgmlType t : kTypes) {
    const int64_t k = IsFloat(t) ? 300 : (TypeTraits(t).block_size == 256 ? 768 : 352);
    const int64_t rows = 37;
    for (int64_t m : {1, 3, 16}) {
      Problem p = Make(t, rows, k, m, 100 + static_cast<uint32_t>(m));
      for (Isa isa : PresentIsas()) {
        Activations a;
        a.Prepare(isa, t, p.x.data(), m, k);
        std::vector<float> whole(static_cast<size_t>(m * rows)), split(whole.size(), 0.0f);
        MatMul(isa, t, p.w.data(), k, 0, rows, a, whole.data(), rows);
        for (int trial = 0; trial < 4; ++trial) {
          std::fill(split.begin(), split.end(), 0.0f);
          int64_t r0 = 0;
          while (r0 < rows) {
            const int64_t r1 = std::min<int64_t>(rows, r0 + 1 + static_cast<int64_t>(rng() % 9));
            MatMul(isa, t, p.w.data(), k, r0, r1, a, split.data(), rows);
            r0 = r1;
          }
          ASSERT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)))
              << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " m=" << m;
        }
      }
    }
  }
}

// Prefill-sized m: the kernels walk the columns in cache blocks (a few dozen columns at k = 4096). All
// outputs within the tolerances above, and bit-identical to computing the columns 8 at a time (no
// blocking) and to computing each column alone (decode), for the plain kernels, the f16 prefill tiles
// and the repacked q4_0 / q8_0 / q4_K / q6_K ones.
TEST(KernelsParity, ColumnBlocksMatchUnblocked) {
  struct Shape { int64_t k, rows, m; };
  // 77 columns: several blocks and a ragged last one; the float types also with an awkward k (a tail of
  // 8 + 5 elements past the 32-element steps) and rows that leave a partial row tile.
  const Shape shapes[] = {{4096, 16, 77}, {1037, 7, 13}};
  uint32_t seed = 5000;
  for (const Shape& sh : shapes)
  for (GgmlType t : kTypes) {
    const int64_t k = sh.k, rows = sh.rows, m = sh.m;
    if (k % TypeTraits(t).block_size != 0) continue;
    Problem p = Make(t, rows, k, m, seed++);
    for (Isa isa : PresentIsas()) {
      double max_rel = 0;
      CheckOne(isa, p, &max_rel);
      if (HasFatalFailure()) return;
      Activations a;
      a.Prepare(isa, t, p.x.data(), m, k);
      const bool packed = CanPack(isa, t, rows, k);
      std::vector<uint8_t> P(packed ? PackedBytes(t, rows, k) : 0);
      if (packed) Pack(t, p.w.data(), rows, k, P.data());
      auto mm = [&](const Activations& x, float* y) {
        if (packed) MatMulPacked(isa, t, P.data(), rows, k, 0, rows, x, y, rows);
        else MatMul(isa, t, p.w.data(), k, 0, rows, x, y, rows);
      };
      std::vector<float> whole(static_cast<size_t>(m * rows), -1.0f), parts(whole.size(), -2.0f);
      mm(a, whole.data());
      for (int64_t j0 = 0; j0 < m; j0 += 8) {
        const int64_t n = std::min<int64_t>(8, m - j0);
        Activations b;
        b.Prepare(isa, t, p.x.data() + j0 * k, n, k);
        mm(b, parts.data() + j0 * rows);
      }
      ASSERT_EQ(0, std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)))
          << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << (packed ? " packed" : "");
      // And to each column alone (m = 1, the decode path): prefill tiles and pairs change no output.
      std::vector<float> one(static_cast<size_t>(rows));
      for (int64_t j = 0; j < m; ++j) {
        Activations b;
        b.Prepare(isa, t, p.x.data() + j * k, 1, k);
        mm(b, one.data());
        ASSERT_EQ(0, std::memcmp(one.data(), whole.data() + j * rows, one.size() * sizeof(float)))
            << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " column " << j << " alone";
      }
    }
  }
}

// Re-preparing with other shapes reuses the buffers and still gives the right answers.
TEST(KernelsParity, ActivationsReuseAcrossShapes) {
  for (Isa isa : PresentIsas()) {
    Activations a;
    for (int64_t m : {16, 1, 4}) {
      Problem p = Make(GgmlType::kQ4_0, 9, 256, m, 55 + static_cast<uint32_t>(m));
      a.Prepare(isa, p.t, p.x.data(), m, p.k);
      std::vector<float> Y(static_cast<size_t>(m * 9));
      MatMul(isa, p.t, p.w.data(), p.k, 0, 9, a, Y.data(), 9);
      for (int64_t j = 0; j < m; ++j) {
        const std::vector<float> xs = SeenX(a, j);
        for (int64_t r = 0; r < 9; ++r) {
          const float want = quant::RefDotRow(p.t, p.w.data() + r * RowBytes(p.t, p.k), xs.data(), p.k);
          EXPECT_NEAR(Y[j * 9 + r], want, 1e-4 * (1 + std::fabs(want)));
        }
      }
    }
  }
}

// Activations for 16-bit weights: each ISA rounds them to f16 / bf16 bit for bit as quant::FloatToHalf /
// FloatToBHalf do, the values stored beside them too: random values over many magnitudes, both signs of
// zero, infinities, quiet and signalling NaNs with payloads, f16 overflow and subnormal boundaries, exact
// rounding ties for both formats, float subnormals; k leaves a scalar tail after the vectors.
TEST(KernelsParity, HalfActivationsAreExact) {
  const int64_t k = 8 * 40 + 5, m = 3;
  std::vector<float> x(static_cast<size_t>(m * k));
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-30, 30);
  for (float& v : x) v = std::ldexp(nd(rng), ex(rng));
  const uint32_t special_bits[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                   0x7F800001u, 0x7FA5A5A5u, 0xFF812345u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu,
                                   0x3F801000u /* 1 + 2^-11: f16 tie */, 0x3F803000u, 0x3F808000u /* bf16 tie */,
                                   0x3F818000u, 0x477FE000u /* 65504 */, 0x477FEFFFu, 0x477FF000u /* 65520 */,
                                   0x38800000u /* 2^-14 */, 0x33800000u /* 2^-24 */, 0x33000000u /* 2^-25 */,
                                   0x33400000u, 0xB3C00000u /* -3 * 2^-25 */, 0x387FE000u, 0x387FF000u};
  size_t at = 0;
  for (uint32_t b : special_bits) x[at++ * 7 % x.size()] = quant::BitsFloat(b);
  for (GgmlType t : {GgmlType::kF16, GgmlType::kBF16}) {
    for (Isa isa : PresentIsas()) {
      Activations a;
      a.Prepare(isa, t, x.data(), m, k);
      for (int64_t j = 0; j < m; ++j) {
        for (int64_t i = 0; i < k; ++i) {
          const float v = x[static_cast<size_t>(j * k + i)];
          const uint16_t want = t == GgmlType::kF16 ? quant::FloatToHalf(v) : quant::FloatToBHalf(v);
          const float want_f = t == GgmlType::kF16 ? quant::HalfToFloat(want) : quant::BHalfToFloat(want);
          ASSERT_EQ(a.xh(j)[i], want) << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " x bits "
                                      << std::hex << quant::FloatBits(v);
          ASSERT_EQ(quant::FloatBits(a.xf(j)[i]), quant::FloatBits(want_f)) << IsaName(isa) << " value of " << std::hex
                                                                            << quant::FloatBits(v);
        }
      }
    }
  }
}

// The activation quantizer of each ISA gives the reference's q8 blocks bit for bit (qs, d, d*sum and the
// 16-element sums), over random blocks and awkward ones: all zero, a single value, exact rounding ties
// (x * 127/amax = n + 0.5), negative maxima, tiny (subnormal scale) and huge magnitudes.
TEST(KernelsParity, ActivationQuantizationIsExact) {
  const int64_t k = 32 * 21;  // more than 16 blocks: the AVX-512 quantizer's groups of 16 and a partial one
  std::vector<float> x(static_cast<size_t>(k));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(i)] = nd(rng);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(32 + i)] = 0.0f;                    // block 1: zeros
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(64 + i)] = i == 5 ? -3.0f : 0.0f;    // block 2: one value
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(96 + i)] = (i - 16) * 0.5f;          // block 3: ties
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(128 + i)] = -127.0f + 2.0f * i + 0.5f; // block 4: ties, -max
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(160 + i)] *= 1e-38f;                 // block 5: tiny
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(192 + i)] *= 1e30f;                  // block 6: huge
  x[224] = 254.0f, x[225] = 1.0f, x[226] = -1.0f, x[227] = 3.0f;                             // block 7: 0.5 ties
  int tested = 0;
  for (Isa isa : PresentIsas()) {
    if (isa == Isa::kRef) continue;
    for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ5_1}) {
      Activations ref, got;
      ref.Prepare(Isa::kRef, t, x.data(), 1, k);
      got.Prepare(isa, t, x.data(), 1, k);
      ASSERT_TRUE(got.quantized()) << IsaName(isa);
      ASSERT_EQ(std::memcmp(ref.qs(0), got.qs(0), static_cast<size_t>(k)), 0) << IsaName(isa) << " qs";
      for (int64_t b = 0; b < k / 32; ++b) {
        EXPECT_EQ(quant::FloatBits(ref.d(0)[b]), quant::FloatBits(got.d(0)[b])) << IsaName(isa) << " block " << b;
        EXPECT_EQ(quant::FloatBits(ref.ds(0)[b]), quant::FloatBits(got.ds(0)[b])) << IsaName(isa) << " block " << b;
        EXPECT_EQ(ref.bsum16(0)[2 * b], got.bsum16(0)[2 * b]);
        EXPECT_EQ(ref.bsum16(0)[2 * b + 1], got.bsum16(0)[2 * b + 1]);
        if (t == GgmlType::kQ4_0) {
          EXPECT_EQ(ref.neg8sum(0)[b], got.neg8sum(0)[b]);
        }
      }
      ++tested;
    }
  }
  // The k-quants: one scale per 256 from the first element of largest magnitude, sign included.
  const int64_t kk = 256 * 4;
  std::vector<float> xk(static_cast<size_t>(kk));
  for (int64_t i = 0; i < kk; ++i) xk[static_cast<size_t>(i)] = nd(rng);
  for (int i = 0; i < 256; ++i) xk[static_cast<size_t>(256 + i)] = 0.0f;                    // sb 1: zeros
  for (int i = 0; i < 256; ++i) xk[static_cast<size_t>(512 + i)] = (i % 9 - 4) * 0.75f;     // sb 2: ties
  xk[512 + 7] = -3.0f, xk[512 + 200] = 3.0f;  // the first of equal magnitudes decides the sign
  xk[768 + 3] = 5.0f, xk[768 + 250] = -5.0f;  // sb 3: the same, positive first
  for (Isa isa : PresentIsas()) {
    if (isa == Isa::kRef) continue;
    for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kQ6_K}) {
      Activations ref, got;
      ref.Prepare(Isa::kRef, t, xk.data(), 1, kk);
      got.Prepare(isa, t, xk.data(), 1, kk);
      ASSERT_TRUE(got.quantized()) << IsaName(isa);
      ASSERT_EQ(std::memcmp(ref.qs(0), got.qs(0), static_cast<size_t>(kk)), 0) << IsaName(isa) << " k-quant qs";
      for (int64_t b = 0; b < kk / 32; ++b) {
        EXPECT_EQ(quant::FloatBits(ref.d(0)[b]), quant::FloatBits(got.d(0)[b])) << IsaName(isa) << " block " << b;
        EXPECT_EQ(quant::FloatBits(ref.ds(0)[b]), quant::FloatBits(got.ds(0)[b])) << IsaName(isa) << " block " << b;
        EXPECT_EQ(ref.bsum16(0)[2 * b], got.bsum16(0)[2 * b]);
        EXPECT_EQ(ref.bsum16(0)[2 * b + 1], got.bsum16(0)[2 * b + 1]);
      }
      // The data reaches both signs: scale = max / -127, so sb 2 (max -3) > 0 and sb 3 (max +5) < 0.
      EXPECT_GT(ref.d(0)[8 * 2], 0.0f);
      EXPECT_LT(ref.d(0)[8 * 3], 0.0f);
      ++tested;
    }
  }
  if (tested == 0) GTEST_SKIP() << "no SIMD ISA on this CPU";
}

// The packed matmul run 8 rows at a time, and as rows [0, 8) then [8, rows) (every later range starting
// in the middle of a 16-row pair), gives Y (the whole range at once) bit for bit.
bool RowSplitsMatch(Isa isa, GgmlType t, const std::vector<uint8_t>& packed, int64_t k, int64_t rows,
                    const Activations& a, const std::vector<float>& Y, int64_t ldy) {
  std::vector<float> S(Y.size(), -777.0f), T(Y.size(), -777.0f);
  for (int64_t r0 = 0; r0 < rows; r0 += 8) MatMulPacked(isa, t, packed.data(), rows, k, r0, r0 + 8, a, S.data(), ldy);
  MatMulPacked(isa, t, packed.data(), rows, k, 0, 8, a, T.data(), ldy);
  MatMulPacked(isa, t, packed.data(), rows, k, 8, rows, a, T.data(), ldy);
  return std::memcmp(S.data(), Y.data(), Y.size() * sizeof(float)) == 0 &&
         std::memcmp(T.data(), Y.data(), Y.size() * sizeof(float)) == 0;
}

// On x86 with AVX2 the packed tests must have run something.
void ExpectSomeTestedOnX86(int tested) {
#if defined(__x86_64__)
  if (IsaAvailable(Isa::kAvx2)) {
    EXPECT_GT(tested, 0);
  }
#endif
  (void)tested;
}

// q4_0 repacked by 8 rows: bit-identical to a scalar model of the order it promises (per row, block by
// block: acc = fma(float(exact int block sum), d_w * d_x, acc), llama.cpp's repacked order), within the
// tight bound of the unpacked kernel, and bit-identical for any split of the rows at multiples of 8.
TEST(KernelsParity, PackedQ4_0x8) {
  int tested = 0;
  uint32_t seed = 900;
  for (Isa isa : PresentIsas()) {
    for (int64_t rows : {8, 24, 32, 40}) {  // a lone group; pairs of groups with and without a lone last group
      for (int64_t k : {32, 96, 544}) {
        for (int64_t m : {1, 2, 3, 4, 5, 8, 13, 16}) {
          if (!CanPack(isa, GgmlType::kQ4_0, rows, k)) continue;
          Problem p = Make(GgmlType::kQ4_0, rows, k, m, seed++);
          std::vector<uint8_t> packed(PackedBytes(GgmlType::kQ4_0, rows, k));
          Pack(GgmlType::kQ4_0, p.w.data(), rows, k, packed.data());
          Activations a;
          a.Prepare(isa, p.t, p.x.data(), m, k);
          const int64_t ldy = rows + 8;
          std::vector<float> Y(static_cast<size_t>(m * ldy), -777.0f), U(Y.size(), -777.0f);
          MatMulPacked(isa, GgmlType::kQ4_0, packed.data(), rows, k, 0, rows, a, Y.data(), ldy);
          MatMul(isa, p.t, p.w.data(), k, 0, rows, a, U.data(), ldy);
          const auto* blk = reinterpret_cast<const quant::BlockQ4_0*>(p.w.data());
          for (int64_t j = 0; j < m; ++j) {
            for (int64_t r = 0; r < rows; ++r) {
              float acc = 0.0f;
              double abs_wx = 0;
              for (int64_t b = 0; b < k / 32; ++b) {
                const quant::BlockQ4_0& B = blk[r * (k / 32) + b];
                int32_t sumi = 0;
                for (int i = 0; i < 32; ++i) {
                  const int w = (i < 16 ? (B.qs[i] & 0x0F) : (B.qs[i - 16] >> 4)) - 8;
                  sumi += w * a.qs(j)[b * 32 + i];
                  abs_wx += std::fabs(w * quant::HalfToFloat(B.d) * a.d(j)[b] * a.qs(j)[b * 32 + i]);
                }
                acc = std::fma(static_cast<float>(sumi), quant::HalfToFloat(B.d) * a.d(j)[b], acc);
              }
              const float got = Y[j * ldy + r];
              ASSERT_EQ(got, acc) << IsaName(isa) << " rows=" << rows << " k=" << k << " m=" << m << " row " << r
                                  << " col " << j;
              ASSERT_LE(std::fabs(got - U[j * ldy + r]), 1e-5 * abs_wx + 1e-6) << IsaName(isa) << " vs unpacked";
            }
            for (int64_t r = rows; r < ldy; ++r) ASSERT_EQ(Y[j * ldy + r], -777.0f) << "wrote past row range";
          }
          ASSERT_TRUE(RowSplitsMatch(isa, GgmlType::kQ4_0, packed, k, rows, a, Y, ldy)) << IsaName(isa) << " row split";
          ++tested;
        }
      }
    }
  }
  ExpectSomeTestedOnX86(tested);
  std::printf("packed q4_0x8: %d problems bit-exact against the scalar model of the order\n", tested);
}

// q8_0, q4_K and q6_K repacked by 8 rows: bit-identical to the unpacked SIMD kernel of the same ISA (q8_0:
// the same 8-lane dots and FMAs per row; q4_K / q6_K: both sum each row's super-block exactly in
// integers, then the same FMAs), within the reference's tolerance, and bit-identical for any split of the
// rows at multiples of 8 (8-row and 16-row passes mixed).
TEST(KernelsParity, PackedKQuantsx8) {
  int tested = 0;
  uint32_t seed = 1900;
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K})
  for (Isa isa : PresentIsas()) {
    for (int64_t rows : {8, 16, 40}) {
      for (int64_t k : {256, 768}) {
        for (int64_t m : {1, 2, 3, 5, 8, 9, 16}) {
          if (!CanPack(isa, t, rows, k)) continue;
          Problem p = Make(t, rows, k, m, seed++);
          std::vector<uint8_t> packed(PackedBytes(t, rows, k));
          Pack(t, p.w.data(), rows, k, packed.data());
          Activations a;
          a.Prepare(isa, t, p.x.data(), m, k);
          const int64_t ldy = rows + 8;
          std::vector<float> Y(static_cast<size_t>(m * ldy), -777.0f), U(Y.size(), -777.0f);
          MatMulPacked(isa, t, packed.data(), rows, k, 0, rows, a, Y.data(), ldy);
          MatMul(isa, t, p.w.data(), k, 0, rows, a, U.data(), ldy);
          ASSERT_EQ(0, std::memcmp(Y.data(), U.data(), Y.size() * sizeof(float)))
              << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " rows=" << rows << " k=" << k << " m=" << m << " vs unpacked";
          for (int64_t j = 0; j < m; ++j) {
            const std::vector<float> xs = SeenX(a, j);
            for (int64_t r = 0; r < rows; ++r) {
              const float want = quant::RefDotRow(t, p.w.data() + r * RowBytes(t, k), xs.data(), k);
              ASSERT_NEAR(Y[j * ldy + r], want, 1e-4 * (1 + std::fabs(want))) << IsaName(isa) << " row " << r;
            }
          }
          ASSERT_TRUE(RowSplitsMatch(isa, t, packed, k, rows, a, Y, ldy)) << IsaName(isa) << " row split";
          ++tested;
        }
      }
    }
  }
  ExpectSomeTestedOnX86(tested);
  std::printf("packed q8_0x8 / q4_Kx8 / q6_Kx8: %d problems bit-exact against the unpacked kernels\n", tested);
}

// The KV-cache row conversions give exactly quant::DequantizeRow's values on every ISA.
TEST(KernelsParity, KvRowConversionsAreExact) {
  std::mt19937 rng(31);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (int64_t n : {32, 64, 96, 256, 1024}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& f : x) f = nd(rng);
    x[3] = 0.0f, x[5] = -1e-6f, x[7] = 70000.0f;  // zero, an f16 subnormal, an f16 overflow (inf)
    for (GgmlType t : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      std::vector<uint8_t> row(RowBytes(t, n));
      quant::QuantizeRow(t, x.data(), row.data(), n);
      std::vector<float> want(static_cast<size_t>(n)), got(want.size());
      quant::DequantizeRow(t, row.data(), want.data(), n);
      for (Isa isa : PresentIsas()) {
        std::fill(got.begin(), got.end(), -1.0f);
        if (t == GgmlType::kF16) {
          HalfToFloatRow(isa, reinterpret_cast<const uint16_t*>(row.data()), got.data(), n);
        } else {
          DequantizeRow(isa, t, row.data(), got.data(), n);
        }
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
            << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " n=" << n;
      }
    }
  }
}

// n random cache rows of 3 heads of hd elements of type t (K, RowBytes(t, 3 * hd) apart); returns the
// middle head's values as the cache holds them (n x hd floats), which the scores tests read at a stride.
std::vector<float> KeysOfThreeHeadRows(GgmlType t, int64_t hd, int64_t n, std::mt19937& rng, std::vector<uint8_t>* K) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const size_t row_bytes = RowBytes(t, 3 * hd);
  K->assign(row_bytes * n, 0);
  std::vector<float> xr(static_cast<size_t>(3 * hd)), kf(static_cast<size_t>(n * hd));
  for (int64_t i = 0; i < n; ++i) {
    for (float& f : xr) f = nd(rng);
    quant::QuantizeRow(t, xr.data(), K->data() + i * row_bytes, 3 * hd);
    quant::DequantizeRow(t, K->data() + i * row_bytes, xr.data(), 3 * hd);
    std::memcpy(kf.data() + i * hd, xr.data() + hd, sizeof(float) * hd);
  }
  return kf;
}

// Attention's P.V sum: every ISA gives exactly the reference's values (the same element values, the
// same fma per term in the same position order), for each stored V type, any number of heads m (the
// SIMD paths block heads by 8), head dims with and without a vector tail, rows at a cache stride wider
// than the head (a head's slice of a KV row), and a non-zero starting accumulator (online softmax).
TEST(KernelsParity, AccumulateRowsIsExact) {
  std::mt19937 rng(41);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int tested = 0;
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t hd : {4, 12, 64, 80, 128}) {
      if (!IsFloat(t) && hd % 32 != 0) continue;
      const int64_t heads = 3;  // rows hold 3 heads; the middle one is read
      const size_t row_bytes = RowBytes(t, hd * heads);
      for (int64_t n : {1, 7, 33, 128}) {
        std::vector<uint8_t> V(row_bytes * n);
        std::vector<float> xr(static_cast<size_t>(hd * heads));
        for (int64_t i = 0; i < n; ++i) {
          for (float& f : xr) f = nd(rng);
          quant::QuantizeRow(t, xr.data(), V.data() + i * row_bytes, hd * heads);
        }
        const uint8_t* head = V.data() + RowBytes(t, hd);  // head 1's slice
        for (int64_t m : {1, 2, 5, 8, 9, 16}) {
          const int64_t ldw = n + 3, ldacc = hd + 5;
          std::vector<float> w(static_cast<size_t>(m * ldw)), acc0(static_cast<size_t>(m * ldacc));
          for (float& f : w) f = std::fabs(nd(rng));
          for (float& f : acc0) f = nd(rng);
          std::vector<float> want = acc0;
          AccumulateRows(Isa::kRef, t, head, row_bytes, hd, n, w.data(), ldw, m, want.data(), ldacc);
          for (Isa isa : PresentIsas()) {
            std::vector<float> got = acc0;
            AccumulateRows(isa, t, head, row_bytes, hd, n, w.data(), ldw, m, got.data(), ldacc);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " hd=" << hd << " n=" << n
                << " m=" << m;
            ++tested;
          }
        }
      }
    }
  }
  // bf16 rows: the weights rounded to bf16, every product exact; the vdpbf16ps path adds two positions'
  // products per step, so every ISA (and the reference) is within float rounding of the double sum.
  for (int64_t hd : {4, 12, 64, 80, 128}) {
    const GgmlType t = GgmlType::kBF16;
    const size_t row_bytes = RowBytes(t, 3 * hd);
    for (int64_t n : {1, 7, 33, 128}) {
      std::vector<uint8_t> V;
      const std::vector<float> vf = KeysOfThreeHeadRows(t, hd, n, rng, &V);
      for (int64_t m : {1, 2, 5, 8, 9, 16}) {
        const int64_t ldw = n + 3, ldacc = hd + 5;
        std::vector<float> w(static_cast<size_t>(m * ldw)), acc0(static_cast<size_t>(m * ldacc));
        for (float& f : w) f = std::fabs(nd(rng));
        for (float& f : acc0) f = nd(rng);
        std::vector<Isa> isas = PresentIsas();
        isas.push_back(Isa::kRef);
        for (Isa isa : isas) {
          std::vector<float> got = acc0;
          AccumulateRows(isa, t, V.data() + RowBytes(t, hd), row_bytes, hd, n, w.data(), ldw, m, got.data(), ldacc);
          for (int64_t j = 0; j < m; ++j)
            for (int64_t d = 0; d < hd; ++d) {
              double want = acc0[j * ldacc + d], mag = std::fabs(want);
              for (int64_t i = 0; i < n; ++i) {
                const double p = double(quant::BHalfToFloat(quant::FloatToBHalf(w[j * ldw + i]))) * vf[i * hd + d];
                want += p, mag += std::fabs(p);
              }
              ASSERT_NEAR(got[j * ldacc + d], want, 1e-5 * mag + 1e-30)
                  << IsaName(isa) << " bf16 hd=" << hd << " n=" << n << " m=" << m << " head " << j << " d=" << d;
            }
          for (int64_t j = 0; j < m; ++j)  // nothing written past the head's dims
            for (int64_t d = hd; d < ldacc && j * ldacc + d < static_cast<int64_t>(got.size()); ++d)
              ASSERT_EQ(got[j * ldacc + d], acc0[j * ldacc + d]) << IsaName(isa) << " bf16 wrote past hd";
          ++tested;
        }
      }
    }
  }
  // The reference itself against a double-precision sum of the dequantized values (it can be wrong too).
  {
    const int64_t hd = 64, n = 50;
    std::vector<float> x(static_cast<size_t>(hd * n)), w(static_cast<size_t>(n));
    for (float& f : x) f = nd(rng);
    for (float& f : w) f = std::fabs(nd(rng));
    std::vector<uint8_t> V(RowBytes(GgmlType::kQ8_0, hd) * n);
    for (int64_t i = 0; i < n; ++i)
      quant::QuantizeRow(GgmlType::kQ8_0, x.data() + i * hd, V.data() + i * RowBytes(GgmlType::kQ8_0, hd), hd);
    std::vector<float> acc(static_cast<size_t>(hd), 0.0f), deq(static_cast<size_t>(hd));
    AccumulateRows(Isa::kRef, GgmlType::kQ8_0, V.data(), RowBytes(GgmlType::kQ8_0, hd), hd, n, w.data(), n, 1,
                   acc.data(), hd);
    std::vector<double> sum(static_cast<size_t>(hd), 0.0), mag(static_cast<size_t>(hd), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      quant::DequantizeRow(GgmlType::kQ8_0, V.data() + i * RowBytes(GgmlType::kQ8_0, hd), deq.data(), hd);
      for (int64_t d = 0; d < hd; ++d) sum[d] += double(w[i]) * deq[d], mag[d] += std::fabs(double(w[i]) * deq[d]);
    }
    for (int64_t d = 0; d < hd; ++d) EXPECT_NEAR(acc[d], sum[d], 1e-5 * mag[d] + 1e-30) << "d=" << d;
  }
  std::printf("accumulate_rows: %d problems bit-exact against the reference (bf16: within float rounding)\n", tested);
}

// Attention's Q.K scores over float keys (bf16 keys: with the queries rounded to bf16, each product exact):
// every ISA within float rounding of the reference's double sums
// (|err| <= 1e-5 * sum|q_d k_d|, the float-path tolerance above), for positions not a multiple of the
// lane count, odd head counts (the AVX-512 build pairs heads, and puts groups of 4 to 8 heads in lanes:
// 5, 8, and 12 = 8 + 4), head dims with and without a vector tail, and keys at a cache stride.
TEST(KernelsParity, AttentionScoresMatchReference) {
  std::mt19937 rng(47);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int tested = 0;
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (int64_t hd : {4, 12, 64, 80, 128}) {
      const size_t row_bytes = RowBytes(t, 3 * hd);  // rows of 3 heads, the middle one read
      for (int64_t n : {1, 7, 8, 33, 128}) {
        std::vector<uint8_t> K;
        const std::vector<float> kf = KeysOfThreeHeadRows(t, hd, n, rng, &K);
        const uint8_t* head = K.data() + RowBytes(t, hd);
        for (int64_t m : {1, 2, 3, 5, 8, 12}) {
          const int64_t ldq = hd + 1, lds = n + 2;
          std::vector<float> q(static_cast<size_t>(m * ldq));
          for (float& f : q) f = nd(rng);
          for (Isa isa : PresentIsas()) {
            std::vector<float> s(static_cast<size_t>(m * lds), -777.0f);
            AttentionScores(isa, t, head, row_bytes, hd, n, q.data(), ldq, m, s.data(), lds);
            for (int64_t j = 0; j < m; ++j) {
              for (int64_t i = 0; i < n; ++i) {
                double want = 0, mag = 0;
                for (int64_t d = 0; d < hd; ++d) {  // bf16 keys: the queries rounded to bf16 (kernels.h)
                  const double qd = t == GgmlType::kBF16 ? quant::BHalfToFloat(quant::FloatToBHalf(q[j * ldq + d])) : q[j * ldq + d];
                  want += qd * kf[i * hd + d];
                  mag += std::fabs(qd * kf[i * hd + d]);
                }
                ASSERT_NEAR(s[j * lds + i], want, 1e-5 * mag + 1e-30)
                    << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " hd=" << hd << " n=" << n
                    << " m=" << m << " head " << j << " position " << i;
              }
              for (int64_t i = n; i < lds; ++i) ASSERT_EQ(s[j * lds + i], -777.0f) << "wrote past n";
            }
            ++tested;
          }
        }
      }
    }
  }
  std::printf("attention_scores: %d problems within float rounding of the reference\n", tested);
}

// The scores over q8_0 / q4_0 keys: every ISA within float rounding of the integer block sums of the
// quantized queries (the "tight" criterion above), the q4_0 ones bit-identical to the reference matmul
// (the same block-by-block function), for position counts below, at and past the 8-lane blocks and odd
// head counts, keys at a cache stride.
TEST(KernelsParity, AttentionScoresQMatchReference) {
  std::mt19937 rng(53);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int tested = 0;
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t hd : {32, 64, 128}) {
      const size_t row_bytes = RowBytes(t, 3 * hd);
      for (int64_t n : {1, 7, 8, 33, 128}) {
        std::vector<uint8_t> K;
        const std::vector<float> kf = KeysOfThreeHeadRows(t, hd, n, rng, &K);
        const uint8_t* head = K.data() + RowBytes(t, hd);
        for (int64_t m : {1, 2, 3, 7, 8, 9, 16}) {  // <= 8: heads in lanes (AVX-512); more: positions in lanes
          std::vector<float> q(static_cast<size_t>(m * hd));
          for (float& f : q) f = nd(rng);
          const int64_t lds = n + 2;
          std::vector<float> ref(static_cast<size_t>(m * lds), -777.0f);
          {
            Activations a;
            a.Prepare(Isa::kRef, t, q.data(), m, hd);
            AttentionScoresQ(Isa::kRef, t, head, row_bytes, hd, n, a, ref.data(), lds);
          }
          for (Isa isa : PresentIsas()) {
            Activations a;
            a.Prepare(isa, t, q.data(), m, hd);
            std::vector<float> s(static_cast<size_t>(m * lds), -777.0f);
            AttentionScoresQ(isa, t, head, row_bytes, hd, n, a, s.data(), lds);
            for (int64_t j = 0; j < m; ++j) {
              const std::vector<float> qs = SeenX(a, j);
              for (int64_t i = 0; i < n; ++i) {
                double want = 0, mag = 0;
                for (int64_t d = 0; d < hd; ++d) {
                  want += double(qs[d]) * kf[i * hd + d];
                  mag += std::fabs(double(qs[d]) * kf[i * hd + d]);
                }
                ASSERT_NEAR(s[j * lds + i], want, 1e-5 * mag + 1e-30)
                    << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " hd=" << hd << " n=" << n
                    << " m=" << m << " head " << j << " position " << i;
              }
              for (int64_t i = n; i < lds; ++i) ASSERT_EQ(s[j * lds + i], -777.0f) << "wrote past n";
            }
            // x86's kernel sums q4_0 blocks in the reference's order (NEON runs its matmul kernel).
            if (t == GgmlType::kQ4_0 && (isa == Isa::kAvx2 || isa == Isa::kAvx512)) {
              ASSERT_EQ(0, std::memcmp(s.data(), ref.data(), s.size() * sizeof(float)))
                  << IsaName(isa) << " q4_0 hd=" << hd << " n=" << n << " m=" << m;
            }
            ++tested;
          }
        }
      }
    }
  }
  std::printf("attention_scores_q: %d problems within float rounding of the integer block sums\n", tested);
}

// The softmax weights: within 1e-6 relative (about 8 ulp; the polynomial is within 2) of std::exp on every ISA, 0 where the exponent
// is under e^-87.3 or -inf (a masked score), the sum within float rounding of the weights' sum, and
// every tail length.
// Scaled scores and their maximum: every element scaled exactly as the scalar product, the max (with
// the running value) exact, every tail length, -inf scores and a running max above all of them.
TEST(KernelsParity, ScaleMaxIsExact) {
  std::mt19937 rng(44);
  std::normal_distribution<float> nd(0.0f, 30.0f);
  for (int64_t n : {1, 5, 8, 13, 64, 131}) {
    std::vector<float> s(static_cast<size_t>(n));
    for (float& f : s) f = nd(rng);
    if (n > 3) s[3] = -INFINITY;
    for (float init : {-INFINITY, 0.0f, 1e6f}) {
      for (Isa isa : PresentIsas()) {
        std::vector<float> got = s;
        const float m = ScaleMax(isa, got.data(), n, 0.125f, init);
        float want = init;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[static_cast<size_t>(i)], s[static_cast<size_t>(i)] * 0.125f) << IsaName(isa) << " n=" << n << " i=" << i;
          want = std::max(want, s[static_cast<size_t>(i)] * 0.125f);
        }
        EXPECT_EQ(m, want) << IsaName(isa) << " n=" << n << " init=" << init;
      }
    }
  }
}

TEST(KernelsParity, ExpSubSumMatchesStdExp) {
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> ud(-90.0f, 0.0f);
  for (int64_t n : {1, 3, 8, 13, 64, 1000}) {
    std::vector<float> s(static_cast<size_t>(n));
    for (float& f : s) f = ud(rng) + 5.0f;
    s[0] = 5.0f;                                  // the max itself: weight exactly 1
    if (n > 2) s[2] = -INFINITY;                  // masked
    if (n > 5) s[5] = 5.0f - 88.0f;               // under FLT_MIN after the shift
    if (n > 6) s[6] = 5.0f - 1e-7f;               // just below the max
    for (Isa isa : PresentIsas()) {
      std::vector<float> w(static_cast<size_t>(n) + 1, -1.0f);
      const float sum = ExpSubSum(isa, s.data(), 5.0f, w.data(), n);
      EXPECT_EQ(w[static_cast<size_t>(n)], -1.0f) << IsaName(isa) << ": wrote past n";
      double ws = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const double want = std::exp(double(s[i] - 5.0f));  // the float shift, as the kernels do
        if (want < 1.2e-38) {
          EXPECT_LE(w[i], 1.2e-38f) << IsaName(isa) << " i=" << i;
          EXPECT_GE(w[i], 0.0f) << IsaName(isa) << " i=" << i;
        } else {
          EXPECT_NEAR(w[i], want, 1e-6 * want) << IsaName(isa) << " n=" << n << " i=" << i << " s=" << s[i];
        }
        ws += w[i];
      }
      EXPECT_EQ(w[0], 1.0f) << IsaName(isa);
      if (n > 2) {
        EXPECT_EQ(w[2], 0.0f) << IsaName(isa);
      }
      EXPECT_NEAR(sum, ws, 1e-6 * ws) << IsaName(isa) << " n=" << n;
    }
  }
}

// RmsNorm on every ISA: the reference's bits (the same 8 partial double sums in the same order), the
// reference within 2e-7 relative of the norm computed in double with one sum, and in place (out == x) the
// same values.
TEST(KernelsParity, RmsNormMatchesReference) {
  std::mt19937 rng(53);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int64_t n : {1, 7, 8, 13, 64, 2048, 2051, 5632}) {
    std::vector<float> x(static_cast<size_t>(n)), w(x.size());
    for (int64_t i = 0; i < n; ++i) x[i] = nd(rng) * (i % 97 == 5 ? 1e3f : 1.0f), w[i] = nd(rng);
    const float eps = 1e-5f;
    std::vector<float> want(x.size());
    RmsNorm(Isa::kRef, x.data(), w.data(), n, eps, want.data());
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double d = x[i] * scale * w[i];
      ASSERT_NEAR(want[i], d, 2e-7 * std::fabs(d) + 1e-30) << "ref n=" << n << " i=" << i;
    }
    for (Isa isa : PresentIsas()) {
      std::vector<float> out(x.size() + 1, -7.0f);
      RmsNorm(isa, x.data(), w.data(), n, eps, out.data());
      EXPECT_EQ(out[static_cast<size_t>(n)], -7.0f) << IsaName(isa) << ": wrote past n";
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], want[i]) << IsaName(isa) << " n=" << n << " i=" << i;
      std::vector<float> in_place = x;
      RmsNorm(isa, in_place.data(), w.data(), n, eps, in_place.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(in_place[i], want[i]) << IsaName(isa) << " in place, n=" << n;
    }
  }
}

// SiluMul on every ISA: within 4e-7 relative of silu(g) * u in double; the same float as the scalar
// expression with std::exp (all but rare near-ties of exp: at most 1 element in 1000, 1 ulp); the edges
// (0, +-95: exp(-g) under FLT_MIN / over FLT_MAX) exactly; and element-wise: any sub-range (a thread's rows)
// gives the bits of the whole call.
TEST(KernelsParity, SiluMulMatchesDouble) {
  std::mt19937 rng(47);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int64_t n : {1, 7, 8, 13, 100, 5632}) {
    std::vector<float> g0(static_cast<size_t>(n)), u(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) g0[i] = nd(rng), u[i] = nd(rng);
    g0[0] = 0.0f;                      // silu(0) = 0
    if (n > 3) g0[3] = 95.0f;          // exp(-g) under FLT_MIN: silu(g) = g
    if (n > 4) g0[4] = -95.0f;         // exp(-g) over FLT_MAX: -0 times u
    if (n > 5) g0[5] = -20.0f;
    for (Isa isa : PresentIsas()) {
      std::vector<float> g = g0;
      g.push_back(-1.0f);
      SiluMul(isa, g.data(), u.data(), n);
      EXPECT_EQ(g[static_cast<size_t>(n)], -1.0f) << IsaName(isa) << ": wrote past n";
      int64_t differ = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double x = g0[i], want = x / (1.0 + std::exp(-x)) * u[i];
        const float scalar = g0[i] / (1.0f + std::exp(-g0[i])) * u[i];
        EXPECT_NEAR(g[i], want, 4e-7 * std::fabs(want) + 1e-37) << IsaName(isa) << " n=" << n << " i=" << i << " g=" << x;
        if (g[i] != scalar) {
          ++differ;
          EXPECT_LE(std::fabs(g[i] - scalar), std::fabs(std::nextafter(scalar, 0.0f) - scalar) * 1.01f)
              << IsaName(isa) << " i=" << i << " g=" << x;
        }
      }
      EXPECT_LE(differ, n / 1000) << IsaName(isa) << " n=" << n;
      EXPECT_EQ(g[0], 0.0f) << IsaName(isa);
      if (n > 4) {
        EXPECT_EQ(g[3], 95.0f * u[3]) << IsaName(isa);
        EXPECT_EQ(g[4], 0.0f) << IsaName(isa);
      }
      // Any split into ranges gives the same bits as the whole call.
      for (int64_t a : {int64_t{1}, int64_t{3}, n / 2}) {
        if (a <= 0 || a >= n) continue;
        std::vector<float> h = g0;
        SiluMul(isa, h.data(), u.data(), a);
        SiluMul(isa, h.data() + a, u.data() + a, n - a);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h[i], g[i]) << IsaName(isa) << " split " << a << " i=" << i;
      }
    }
  }
}

// MatMulStrided over rows at a stride wider than k (a head's keys inside KV-cache rows) gives what MatMul
// gives over the same rows packed densely, bit for bit, on every ISA and for the KV-cache types.
TEST(KernelsParity, MatMulStridedMatchesDense) {
  uint32_t seed = 4000;
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t k : {64, 128}) {
      const int64_t rows = 37, stride_k = 3 * k;
      Problem p = Make(t, rows, k, 4, seed++);
      const size_t rb = RowBytes(t, k), srb = RowBytes(t, stride_k);
      // Strided layout: row r's middle third is dense row r.
      std::vector<uint8_t> strided(srb * rows, 0xCD), dense(rb * rows);
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(strided.data() + r * srb + rb, p.w.data() + r * rb, rb);
        std::memcpy(dense.data() + r * rb, p.w.data() + r * rb, rb);
      }
      for (Isa isa : PresentIsas()) {
        Activations a;
        a.Prepare(isa, t, p.x.data(), 4, k);
        std::vector<float> y0(static_cast<size_t>(4 * rows), -1.0f), y1(y0.size(), -2.0f);
        MatMul(isa, t, dense.data(), k, 0, rows, a, y0.data(), rows);
        MatMulStrided(isa, t, strided.data() + rb, srb, k, 0, rows, a, y1.data(), rows);
        ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), y0.size() * sizeof(float)))
            << IsaName(isa) << " " << TypeName(static_cast<uint32_t>(t)) << " k=" << k;
      }
    }
  }
}

#if defined(__aarch64__)
// The plain and sdot builds on the same problems: outputs bit-identical (and so within the tolerances
// above whenever one of them is). Needs a CPU with dotprod to call the sdot build at all. On a CPU with
// i8mm also the i8mm build for the types it does not run by smmla (those have their own order, checked
// against the reference by the tests above, where NeonFor picks the i8mm build).
TEST(KernelsParity, NeonBuildsAreBitIdentical) {
  if (!detail::NeonHasDotprod()) GTEST_SKIP() << "no dotprod here: the plain NEON build alone is checked";
  uint32_t seed = 3000;
  for (GgmlType t : kTypes) {
    const detail::MatMulFn plain = detail::neon::Kernels().matmul(t);
    const detail::MatMulFn dot = detail::NeonHasI8mm() && !detail::NeonI8mmType(t)
                                     ? detail::neon_i8mm::Kernels().matmul(t)
                                     : detail::neon_dotprod::Kernels().matmul(t);
    ASSERT_TRUE(plain != nullptr && dot != nullptr) << TypeName(static_cast<uint32_t>(t));
    for (int64_t k : Ks(t)) {
      for (int64_t m : {1, 3, 8, 11}) {
        Problem p = Make(t, 13, k, m, seed++);
        Activations a;
        a.Prepare(Isa::kNeon, t, p.x.data(), m, k);
        const size_t rb = RowBytes(t, k);
        std::vector<float> y0(static_cast<size_t>(m * 13), -1.0f), y1(y0.size(), -2.0f);
        plain(p.w.data(), rb, k, 0, 13, a, y0.data(), 13);
        dot(p.w.data(), rb, k, 0, 13, a, y1.data(), 13);
        ASSERT_EQ(0, std::memcmp(y0.data(), y1.data(), y0.size() * sizeof(float)))
            << TypeName(static_cast<uint32_t>(t)) << " k=" << k << " m=" << m;
      }
    }
  }
}
#endif

TEST(KernelsIsa, Resolve) {
  Result<Isa> a = ResolveIsa("auto");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(IsaAvailable(*a));
  Result<Isa> r = ResolveIsa("ref");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, Isa::kRef);
  Result<Isa> bad = ResolveIsa("sse9");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    Result<Isa> x = ResolveIsa(IsaName(isa));
    EXPECT_EQ(x.ok(), IsaAvailable(isa)) << IsaName(isa);
    if (!x.ok()) {
      EXPECT_EQ(x.status().code(), StatusCode::kInvalidArgument);
    }
  }
#if defined(__x86_64__)
  EXPECT_FALSE(IsaAvailable(Isa::kNeon));
#endif
#if defined(__aarch64__)
  EXPECT_TRUE(IsaAvailable(Isa::kNeon));
  EXPECT_FALSE(IsaAvailable(Isa::kAvx2));
  EXPECT_EQ(*a, Isa::kNeon);
  EXPECT_FALSE(CanPack(Isa::kNeon, GgmlType::kQ4_0, 64, 256));  // the packed layout has x86 kernels only
  // -v says which Arm build the integer types get (HWCAP2 i8mm for the basic formats, HWCAP asimddp),
  // float types none of them.
  const std::string q8 = KernelName(Isa::kNeon, GgmlType::kQ8_0), q6k = KernelName(Isa::kNeon, GgmlType::kQ6_K);
  const char* sdot = detail::NeonHasDotprod() ? "neon-dotprod " : "neon-smull ";
  EXPECT_EQ(q8.rfind(detail::NeonHasI8mm() ? "neon-i8mm " : sdot, 0), 0u) << q8;
  EXPECT_EQ(q6k.rfind(sdot, 0), 0u) << q6k;
  EXPECT_EQ(KernelName(Isa::kNeon, GgmlType::kF16).rfind("neon f16", 0), 0u);
#endif
  for (Isa isa : PresentIsas()) {
    for (GgmlType t : kTypes) {
      EXPECT_NE(KernelName(isa, t).find(TypeName(static_cast<uint32_t>(t))), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace edgedecode::kernels
