// Part of kernels_parity_test: gemma's activations on every ISA this CPU has against the scalar reference.
//  * GeluMul: one function on every path (llama.cpp's f16 GELU table at the f16 rounding of x), so bit for
//    bit: every f16 value, the float midpoints between neighbouring f16 values (round-to-nearest-even ties)
//    and their float neighbours, the +-10 bounds, subnormals, infinities and NaN. The reference itself is
//    checked against gelu computed in double.
//  * SoftcapMax / Softcap: the SIMD tanh (in double from an exp polynomial, rounded to float) against tanh in
//    double rounded to float and against std::tanh (glibc's tanhf, within 2 ulp) over a wide range (random
//    bit patterns over all finite floats, a dense [-12, 12], the boundaries of its cases, +-inf, NaN); the
//    largest differences in float ulps are printed and bounded.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/internal.h"
#include "kernels/kernels.h"
#include "quant/blocks.h"

namespace edgedecode::kernels {
namespace {

std::vector<Isa> PresentIsas() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (IsaAvailable(isa)) v.push_back(isa);
  return v;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Distance in float ulps (the number of floats between a and b; +0 and -0 are 0 apart).
int64_t UlpDistance(float a, float b) {
  auto ordered = [](float f) {
    const int64_t i = static_cast<int32_t>(Bits(f));
    return i < 0 ? int64_t{INT32_MIN} - i : i;
  };
  return std::llabs(ordered(a) - ordered(b));
}

// Every f16 value as a float, the midpoint to its upper neighbour (exact in float) and that midpoint's
// two float neighbours, plus the edges of the table's range.
std::vector<float> GeluInputs() {
  std::vector<float> x;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = quant::HalfToFloat(static_cast<uint16_t>(h));
    x.push_back(f);
    if (!std::isfinite(f) || (h & 0x7FFF) == 0x7BFF) continue;  // no finite upper neighbour
    const float mid = 0.5f * (f + quant::HalfToFloat(static_cast<uint16_t>(h + 1)));
    x.insert(x.end(), {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)});
  }
  for (float e : {10.0f, -10.0f}) x.insert(x.end(), {e, std::nextafter(e, 0.0f), std::nextafter(e, 2 * e)});
  x.insert(x.end(), {1e-40f, -1e-40f, 1e-30f, 3e38f, -3e38f, 65520.0f, -65520.0f, INFINITY, -INFINITY,
                     std::numeric_limits<float>::quiet_NaN()});
  return x;
}

TEST(KernelsParity, GeluMulIsTheReferenceBitForBit) {
  const std::vector<float> x = GeluInputs();
  const int64_t n = static_cast<int64_t>(x.size());
  std::mt19937 rng(61);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> u(x.size());
  for (float& f : u) f = nd(rng);
  std::vector<float> want = x;
  GeluMul(Isa::kRef, want.data(), u.data(), n);
  // The reference: gelu of the f16 rounding of x, rounded to f16 (half an f16 ulp plus the float error of
  // ggml's expression), 0 below -10, x from 10 up, times u.
  for (int64_t i = 0; i < n; ++i) {
    const float xi = x[static_cast<size_t>(i)], ui = u[static_cast<size_t>(i)], got = want[static_cast<size_t>(i)];
    if (std::isnan(xi)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    if (xi <= -10.0f || xi >= 10.0f) {
      EXPECT_EQ(Bits(got), Bits((xi <= -10.0f ? 0.0f : xi) * ui)) << "x=" << xi;
      continue;
    }
    const double h = quant::HalfToFloat(quant::FloatToHalf(xi));
    const double g = 0.5 * h * (1.0 + std::tanh(0.7978845608028654 * h * (1.0 + 0.044715 * h * h)));
    // Half an f16 ulp of g (2^-25 in the subnormals), plus what ggml's float expression loses where
    // 1 + tanh cancels (x near -10: about an ulp of 1, times 0.5 |x|).
    const double tol = std::ldexp(1.0, std::ilogb(std::fmax(std::fabs(g), 0x1p-14)) - 11) + 1e-6 * std::fabs(g) +
                       1.2e-7 * std::fabs(h);
    ASSERT_NEAR(got, g * ui, tol * std::fabs(ui) * 1.0001) << "x=" << xi << " u=" << ui;
  }
  for (Isa isa : PresentIsas()) {
    std::vector<float> g = x;
    g.push_back(-3.0f);
    GeluMul(isa, g.data(), u.data(), n);
    EXPECT_EQ(g[static_cast<size_t>(n)], -3.0f) << IsaName(isa) << ": wrote past n";
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      if (std::isnan(want[k])) {
        ASSERT_TRUE(std::isnan(g[k])) << IsaName(isa) << " x=" << x[k];
      } else {
        ASSERT_EQ(Bits(g[k]), Bits(want[k])) << IsaName(isa) << " x=" << x[k] << " u=" << u[k];
      }
    }
    // Element-wise: ranges of any length and start (the vector tails) give the same bits.
    for (int64_t a : {int64_t{1}, int64_t{5}, int64_t{13}, n / 3}) {
      std::vector<float> h = x;
      GeluMul(isa, h.data(), u.data(), a);
      GeluMul(isa, h.data() + a, u.data() + a, n - a);
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(want[static_cast<size_t>(i)])) continue;
        ASSERT_EQ(Bits(h[static_cast<size_t>(i)]), Bits(g[static_cast<size_t>(i)])) << IsaName(isa) << " split " << a;
      }
    }
  }
}

// Inputs for tanh: random bit patterns (every exponent of the finite floats), a dense [-12, 12], and the
// boundaries of the SIMD cases: 2^-12 (below: a itself), 9.01 (tanh rounds to 1 from there), 55 (the exp
// clamp), the largest float, infinities and NaN.
std::vector<float> TanhInputs() {
  std::vector<float> x;
  std::mt19937 rng(62);
  for (int i = 0; i < 200000; ++i) {
    const float f = FromBits(static_cast<uint32_t>(rng()));
    if (std::isfinite(f)) x.push_back(f);
  }
  std::uniform_real_distribution<float> ud(-12.0f, 12.0f);
  for (int i = 0; i < 200000; ++i) x.push_back(ud(rng));
  for (float e : {0x1p-12f, 0.5f, 1.0f, 9.0f, 9.01f, 55.0f, 1e30f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min()}) {
    for (float s : {e, std::nextafter(e, 0.0f), std::nextafter(e, INFINITY)}) x.insert(x.end(), {s, -s});
  }
  x.insert(x.end(), {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN()});
  return x;
}

// With scale = cap = 1 the kernel is tanh itself. The truth is tanh in double rounded to float (glibc's
// tanhf, std::tanh of a float, is within 2 ulp of it, not correctly rounded): the SIMD paths are within 1 ulp
// of the truth (the same float but for near-ties), hence within 3 of std::tanh (measured: 2, printed),
// exactly +-1 where tanh rounds to it, the sign of zero kept, NaN only for NaN, and the returned maximum the
// largest output. The reference is std::tanh itself.
TEST(KernelsParity, SoftcapTanhMatchesStdTanh) {
  const std::vector<float> x = TanhInputs();
  const int64_t n = static_cast<int64_t>(x.size());
  for (Isa isa : PresentIsas()) {
    std::vector<float> t = x;
    t.push_back(-5.0f);
    const float mx = SoftcapMax(isa, t.data(), n, 1.0f, 1.0f, -INFINITY);
    EXPECT_EQ(t[static_cast<size_t>(n)], -5.0f) << IsaName(isa) << ": wrote past n";
    int64_t worst = 0, worst_std = 0, differ = 0, differ_std = 0;
    float worst_x = 0, worst_std_x = 0, want_mx = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      if (std::isnan(x[k])) {
        EXPECT_TRUE(std::isnan(t[k])) << IsaName(isa);
        continue;
      }
      const float truth = static_cast<float>(std::tanh(static_cast<double>(x[k]))), libm = std::tanh(x[k]);
      ASSERT_FALSE(std::isnan(t[k])) << IsaName(isa) << " x=" << x[k];
      ASSERT_EQ(std::signbit(t[k]), std::signbit(x[k])) << IsaName(isa) << " x=" << x[k];
      if (std::fabs(truth) == 1.0f) {
        ASSERT_EQ(t[k], truth) << IsaName(isa) << " x=" << x[k];
      }
      const int64_t d = UlpDistance(t[k], truth), ds = UlpDistance(t[k], libm);
      differ += d != 0, differ_std += ds != 0;
      if (d > worst) worst = d, worst_x = x[k];
      if (ds > worst_std) worst_std = ds, worst_std_x = x[k];
      want_mx = std::max(want_mx, t[k]);
    }
    std::printf("[ tanh %s ] %lld inputs: max %lld ulp from tanh in double rounded (%lld differ), max %lld ulp from "
                "std::tanh (at x=%.9g, %lld differ)\n", IsaName(isa), static_cast<long long>(n),
                static_cast<long long>(worst), static_cast<long long>(differ), static_cast<long long>(worst_std),
                worst_std_x, static_cast<long long>(differ_std));
    if (isa == Isa::kRef) {
      EXPECT_EQ(differ_std, 0);  // the reference is std::tanh
    } else {
      EXPECT_LE(worst, 1) << IsaName(isa) << " at x=" << worst_x;
      EXPECT_LE(differ, n / 10000) << IsaName(isa);
    }
    EXPECT_LE(worst_std, 3) << IsaName(isa) << " at x=" << worst_std_x;
    EXPECT_EQ(mx, want_mx) << IsaName(isa);
  }
}

// gemma2's caps: the attention scores (scale 1/16, cap 50) and the logits (Softcap, cap 30) on every ISA
// within 4 ulp (std::tanh's 2, the SIMD tanh's 1, the product's rounding) of the reference's float expression (tanh((s * scale) * (1 / cap)) * cap), inside
// [-cap, cap], the maximum with init as the reference's, and element-wise (splits give the same bits).
TEST(KernelsParity, SoftcapMaxMatchesReference) {
  std::mt19937 rng(63);
  std::normal_distribution<float> nd(0.0f, 400.0f);
  for (int64_t n : {1, 3, 8, 13, 16, 31, 1000}) {
    std::vector<float> s(static_cast<size_t>(n));
    for (float& f : s) f = nd(rng);
    if (n > 2) s[2] = 1e9f;   // saturates to cap
    if (n > 5) s[5] = -1e-9f;  // tiny: a itself
    for (float init : {-INFINITY, 0.0f, 100.0f}) {
      std::vector<float> want = s;
      const float want_mx = SoftcapMax(Isa::kRef, want.data(), n, 0.0625f, 50.0f, init);
      std::vector<float> logits = s, want_logits = s;
      Softcap(Isa::kRef, want_logits.data(), n, 30.0f);
      for (Isa isa : PresentIsas()) {
        std::vector<float> got = s;
        const float mx = SoftcapMax(isa, got.data(), n, 0.0625f, 50.0f, init);
        float got_mx = init;
        for (int64_t i = 0; i < n; ++i) {
          const size_t k = static_cast<size_t>(i);
          ASSERT_LE(UlpDistance(got[k], want[k]), 4) << IsaName(isa) << " n=" << n << " s=" << s[k];
          ASSERT_LE(std::fabs(got[k]), 50.0f) << IsaName(isa);
          got_mx = std::max(got_mx, got[k]);
        }
        EXPECT_EQ(mx, got_mx) << IsaName(isa) << " n=" << n;
        EXPECT_LE(UlpDistance(mx, want_mx), 4) << IsaName(isa) << " n=" << n;
        if (n > 2) {
          EXPECT_EQ(got[2], 50.0f) << IsaName(isa);
        }
        std::vector<float> l = s;
        Softcap(isa, l.data(), n, 30.0f);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_LE(UlpDistance(l[static_cast<size_t>(i)], want_logits[static_cast<size_t>(i)]), 4) << IsaName(isa);
        for (int64_t a : {int64_t{1}, int64_t{5}, n / 2}) {
          if (a <= 0 || a >= n) continue;
          std::vector<float> h = s;
          SoftcapMax(isa, h.data(), a, 0.0625f, 50.0f, init);
          SoftcapMax(isa, h.data() + a, n - a, 0.0625f, 50.0f, init);
          ASSERT_EQ(0, std::memcmp(h.data(), got.data(), h.size() * sizeof(float))) << IsaName(isa) << " split " << a;
        }
      }
    }
  }
}

}  // namespace
}  // namespace edgedecode::kernels
