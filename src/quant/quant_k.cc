// K-quants: 256-element super-blocks split in 16- or 32-element sub-blocks whose scales (and mins)
// are themselves quantized against one or two fp16 super-block scales. Layouts: blocks.h.
//
// The quantizers are our own least-squares search (not llama.cpp's code, and not bit-identical to
// it): each sub-block gets the scale (and min) that minimizes its squared error over a grid of
// candidate ranges, refined by alternating "round the codes / re-solve the scale"; the sub-block
// scales are then quantized, the codes re-rounded against the quantized scales, and the
// super-block scale(s) re-fitted by least squares over the whole super-block.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace edgedecode::quant::internal {
namespace {


// Round to nearest even after clamping to [lo, hi] (|lo|, |hi| < 2^22): adding 1.5 * 2^23 leaves
// the rounded integer in the low mantissa bits, which is much faster than lrint's library call.
inline int RoundClamp(float v, int lo, int hi) {
  if (!(v == v)) return 0;  // NaN
  if (v <= static_cast<float>(lo)) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  const float t = v + 12582912.0f;
  uint32_t u;
  std::memcpy(&u, &t, 4);
  return static_cast<int>(u & 0x007FFFFF) - 0x00400000;
}

inline float Fp16Round(float f) { return HalfToFloat(FloatToHalf(f)); }

// ---- sub-block fits -----------------------------------------------------------------------------

// Asymmetric fit x[i] ~= scale * L[i] - mn with L in [0, nmax], scale >= 0, mn >= 0 (the K-quant
// minimum can only move the zero point down). Returns the squared error.
double FitAsym(const float* x, int n, int nmax, uint8_t* L, float* scale, float* mn) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (!(hi > lo)) {  // all equal to lo <= 0 (or NaN): exact with scale 0
    for (int i = 0; i < n; ++i) L[i] = 0;
    *scale = 0.0f;
    *mn = lo == lo ? -lo : 0.0f;
    return 0.0;
  }
  uint8_t cand[32];
  double best = -1.0;
  auto evaluate = [&](float a, float b) {  // b = offset (<= 0); codes from rounding
    double err = 0.0;
    const float ia = a > 0.0f ? 1.0f / a : 0.0f;
    for (int i = 0; i < n; ++i) {
      cand[i] = static_cast<uint8_t>(RoundClamp((x[i] - b) * ia, 0, nmax));
      const double e = static_cast<double>(a) * cand[i] + b - x[i];
      err += e * e;
    }
    if (best < 0.0 || err < best) {
      best = err;
      std::memcpy(L, cand, static_cast<size_t>(n));
      *scale = a;
      *mn = -b;
    }
  };
  // Least-squares (a, b) for fixed codes, with the constraint b <= 0.
  auto solve = [&](const uint8_t* q, float* a, float* b) {
    double sl = 0, sl2 = 0, sx = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      sl += q[i];
      sl2 += static_cast<double>(q[i]) * q[i];
      sx += x[i];
      slx += static_cast<double>(q[i]) * x[i];
    }
    const double det = n * sl2 - sl * sl;
    if (det <= 0.0) return false;
    double aa = (n * slx - sl * sx) / det;
    double bb = (sl2 * sx - sl * slx) / det;
    if (bb > 0.0) {
      bb = 0.0;
      aa = sl2 > 0.0 ? slx / sl2 : 0.0;
    }
    if (!(aa > 0.0)) return false;
    *a = static_cast<float>(aa);
    *b = static_cast<float>(bb);
    return true;
  };
  const float range = hi - lo;
  evaluate(range / nmax, lo);
  for (int s = -10; s <= 10; ++s) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * s) / range;
    if (!(iscale > 0.0f)) continue;
    uint8_t q[32];
    for (int i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(RoundClamp((x[i] - lo) * iscale, 0, nmax));
    float a, b;
    if (solve(q, &a, &b)) evaluate(a, b);
  }
  for (int it = 0; it < 3; ++it) {  // alternate: re-solve for the best codes, re-round
    float a, b;
    uint8_t q[32];
    std::memcpy(q, L, static_cast<size_t>(n));
    if (!solve(q, &a, &b)) break;
    const double before = best;
    evaluate(a, b);
    if (!(best < before)) break;
  }
  return best;
}

// Symmetric fit x[i] ~= scale * L[i] with L in [-nmax, nmax - 1]; the scale is signed so the
// extreme element can use the extra negative level. Returns the squared error.
double FitSym(const float* x, int n, int nmax, int8_t* L, float* scale) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (!(amax > 1e-30f)) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *scale = 0.0f;
    return 0.0;
  }
  int8_t cand[32];
  double best = -1.0;
  auto evaluate = [&](float a) {
    const float ia = 1.0f / a;
    double err = 0.0;
    for (int i = 0; i < n; ++i) {
      cand[i] = static_cast<int8_t>(RoundClamp(x[i] * ia, -nmax, nmax - 1));
      const double e = static_cast<double>(a) * cand[i] - x[i];
      err += e * e;
    }
    if (best < 0.0 || err < best) {
      best = err;
      std::memcpy(L, cand, static_cast<size_t>(n));
      *scale = a;
    }
  };
  auto solve = [&](const int8_t* q, float* a) {
    double slx = 0, sl2 = 0;
    for (int i = 0; i < n; ++i) {
      slx += static_cast<double>(q[i]) * x[i];
      sl2 += static_cast<double>(q[i]) * q[i];
    }
    if (!(sl2 > 0.0) || slx == 0.0) return false;
    *a = static_cast<float>(slx / sl2);
    return true;
  };
  evaluate(max / -static_cast<float>(nmax));
  for (int s = -10; s <= 10; ++s) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * s) / max;
    int8_t q[32];
    for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(RoundClamp(x[i] * iscale, -nmax, nmax - 1));
    float a;
    if (solve(q, &a)) evaluate(a);
  }
  for (int it = 0; it < 3; ++it) {
    float a;
    int8_t q[32];
    std::memcpy(q, L, static_cast<size_t>(n));
    if (!solve(q, &a)) break;
    const double before = best;
    evaluate(a);
    if (!(best < before)) break;
  }
  return best;
}

// ---- super-block packing with quantized sub-block scales ----------------------------------------

// Codes and squared error of one sub-block for the affine map v = a * L - b (a >= 0).
double SubAsym(const float* x, int n, int nmax, float a, float b, uint8_t* L) {
  const float ia = a > 0.0f ? 1.0f / a : 0.0f;
  double err = 0.0;
  for (int i = 0; i < n; ++i) {
    const int l = a > 0.0f ? RoundClamp((x[i] + b) * ia, 0, nmax) : 0;
    L[i] = static_cast<uint8_t>(l);
    const double e = static_cast<double>(a) * l - b - x[i];
    err += e * e;
  }
  return err;
}

// Codes and squared error of one sub-block for v = a * L (a signed).
double SubSym(const float* x, int n, int nmax, float a, int8_t* L) {
  const float ia = a != 0.0f ? 1.0f / a : 0.0f;
  double err = 0.0;
  for (int i = 0; i < n; ++i) {
    const int l = a != 0.0f ? RoundClamp(x[i] * ia, -nmax, nmax - 1) : 0;
    L[i] = static_cast<int8_t>(l);
    const double e = static_cast<double>(a) * l - x[i];
    err += e * e;
  }
  return err;
}

// The fp16 value k steps (of fp16 ulps) away from h's value, keeping the sign; 0 stays usable.
float Fp16Step(float f, int k) {
  int h = FloatToHalf(std::fabs(f)) + k;
  h = std::clamp(h, 0, 0x7BFF);
  return std::copysign(HalfToFloat(static_cast<uint16_t>(h)), f);
}

// Below 2^-14 an fp16 scale has fewer than 10 significant bits, so its neighbours are worth trying.
inline bool IsFp16Subnormal(float f) { return std::fabs(f) < 6.103515625e-05f; }

// Asymmetric super-block (q2_K, q4_K, q5_K): nsub sub-blocks of sub elements, codes [0, nmax],
// scales and mins quantized to [0, smax] against fp16 d and dmin. Outputs codes, integer scales
// and mins, d and dmin (fp16-representable).
void QuantSuperAsym(const float* x, int nsub, int sub, int nmax, int smax, uint8_t* L, uint8_t* sc,
                    uint8_t* mq, float* d_out, float* dmin_out) {
  float scales[16], mins[16];
  float max_scale = 0.0f, max_min = 0.0f;
  uint8_t tmp[32];
  for (int j = 0; j < nsub; ++j) {
    FitAsym(x + j * sub, sub, nmax, tmp, &scales[j], &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  // For fixed (d, dmin), every sub-block takes the integer scale and min (the nearest ones and
  // their neighbours) with the smallest error. Returns the total squared error.
  auto assign = [&](float d, float dm, uint8_t* sc_o, uint8_t* m_o, uint8_t* L_o) {
    double total = 0.0;
    for (int j = 0; j < nsub; ++j) {
      const int s0 = d > 0.0f ? RoundClamp(scales[j] / d, 0, smax) : 0;
      const int m0 = dm > 0.0f ? RoundClamp(mins[j] / dm, 0, smax) : 0;
      double best = -1.0;
      for (int s = std::max(0, s0 - 1); s <= std::min(smax, s0 + 1); ++s) {
        for (int m = std::max(0, m0 - 1); m <= std::min(smax, m0 + 1); ++m) {
          if (s != s0 && m != m0) continue;  // a cross, not the full 3x3: same quality, less time
          const double e = SubAsym(x + j * sub, sub, nmax, d * s, dm * m, tmp);
          if (best < 0.0 || e < best) {
            best = e;
            sc_o[j] = static_cast<uint8_t>(s);
            m_o[j] = static_cast<uint8_t>(m);
            std::memcpy(L_o + j * sub, tmp, static_cast<size_t>(sub));
          }
        }
      }
      total += best;
    }
    return total;
  };
  float d = Fp16Round(max_scale / smax), dmin = Fp16Round(max_min / smax);
  double best = assign(d, dmin, sc, mq, L);
  uint8_t sc2[16], mq2[16], L2[256];
  auto try_pair = [&](float nd, float ndm) {
    if (!(nd >= 0.0f) || !(ndm >= 0.0f)) return false;
    const double e = assign(nd, ndm, sc2, mq2, L2);
    if (!(e < best)) return false;
    best = e;
    d = nd;
    dmin = ndm;
    std::memcpy(sc, sc2, static_cast<size_t>(nsub));
    std::memcpy(mq, mq2, static_cast<size_t>(nsub));
    std::memcpy(L, L2, static_cast<size_t>(nsub * sub));
    return true;
  };
  // Neighbouring fp16 super-scales (matters most when d is an fp16 subnormal).
  const float d0 = d, dmin0 = dmin;
  if (IsFp16Subnormal(d0)) for (int k : {-2, -1, 1, 2}) try_pair(Fp16Step(d0, k), dmin);
  if (IsFp16Subnormal(dmin0)) for (int k : {-2, -1, 1, 2}) try_pair(d, Fp16Step(dmin0, k));
  // Least-squares (d, dmin) for the chosen integers: x ~= d * (sc*L) - dmin * m.
  for (int it = 0; it < 2; ++it) {
    double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
    for (int j = 0; j < nsub; ++j) {
      for (int i = 0; i < sub; ++i) {
        const double u = static_cast<double>(sc[j]) * L[j * sub + i], w = -static_cast<double>(mq[j]);
        const double v = x[j * sub + i];
        s11 += u * u;
        s12 += u * w;
        s22 += w * w;
        r1 += u * v;
        r2 += w * v;
      }
    }
    const double det = s11 * s22 - s12 * s12;
    float nd, ndm;
    if (s22 > 0.0 && det > 1e-12 * s11 * s22) {
      nd = static_cast<float>((r1 * s22 - r2 * s12) / det);
      ndm = static_cast<float>((s11 * r2 - s12 * r1) / det);
    } else if (s11 > 0.0) {
      nd = static_cast<float>(r1 / s11);
      ndm = dmin;
    } else {
      break;
    }
    if (!try_pair(Fp16Round(nd), Fp16Round(ndm))) break;
  }
  *d_out = d;
  *dmin_out = dmin;
}

// Symmetric super-block (q3_K, q6_K): 16 sub-blocks of 16, codes [-nmax, nmax-1], signed integer
// scales in [-smax, smax-1] against one fp16 d.
void QuantSuperSym(const float* x, int nmax, int smax, int8_t* L, int8_t* sc, float* d_out) {
  float scales[16];
  float amax = 0.0f, max = 0.0f;
  int8_t tmp[16];
  for (int j = 0; j < 16; ++j) {
    FitSym(x + 16 * j, 16, nmax, tmp, &scales[j]);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max = scales[j];
    }
  }
  auto assign = [&](float d, int8_t* sc_o, int8_t* L_o) {
    double total = 0.0;
    for (int j = 0; j < 16; ++j) {
      const int s0 = d != 0.0f ? RoundClamp(scales[j] / d, -smax, smax - 1) : 0;
      double best = -1.0;
      for (int s = std::max(-smax, s0 - 1); s <= std::min(smax - 1, s0 + 1); ++s) {
        const double e = SubSym(x + 16 * j, 16, nmax, d * s, tmp);
        if (best < 0.0 || e < best) {
          best = e;
          sc_o[j] = static_cast<int8_t>(s);
          std::memcpy(L_o + 16 * j, tmp, 16);
        }
      }
      total += best;
    }
    return total;
  };
  float d = Fp16Round(max / -static_cast<float>(smax));
  double best = assign(d, sc, L);
  int8_t sc2[16], L2[256];
  auto try_d = [&](float nd) {
    const double e = assign(nd, sc2, L2);
    if (!(e < best)) return false;
    best = e;
    d = nd;
    std::memcpy(sc, sc2, 16);
    std::memcpy(L, L2, 256);
    return true;
  };
  const float d0 = d;
  if (IsFp16Subnormal(d0)) for (int k : {-2, -1, 1, 2}) try_d(Fp16Step(d0, k));
  for (int it = 0; it < 2; ++it) {
    double suu = 0, suv = 0;
    for (int i = 0; i < 256; ++i) {
      const double u = static_cast<double>(sc[i / 16]) * L[i];
      suu += u * u;
      suv += u * x[i];
    }
    if (!(suu > 0.0)) break;
    if (!try_d(Fp16Round(static_cast<float>(suv / suu)))) break;
  }
  *d_out = d;
}

// Packs 8 6-bit scales and 8 6-bit mins into q4_K/q5_K's 12 bytes (inverse of GetScaleMinK4).
void PackScaleMinK4(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

}  // namespace

// ---- dequantization -----------------------------------------------------------------------------

void DequantQ2_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ2_K), y += kQKK) {
    const BlockQ2_K blk = LoadBlock<BlockQ2_K>(src);
    const float d = HalfToFloat(blk.d), dmin = HalfToFloat(blk.dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, j = (e % 128) / 32, l = e % 32;
      const int q = (blk.qs[32 * n + l] >> (2 * j)) & 3;
      const uint8_t s = blk.scales[e / 16];
      y[e] = d * static_cast<float>(s & 0xF) * static_cast<float>(q) - dmin * static_cast<float>(s >> 4);
    }
  }
}

void DequantQ3_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ3_K), y += kQKK) {
    const BlockQ3_K blk = LoadBlock<BlockQ3_K>(src);
    const float d = HalfToFloat(blk.d);
    int scale[16];
    for (int j = 0; j < 16; ++j) {
      const int lo = (blk.scales[j % 8] >> (4 * (j / 8))) & 0xF;
      const int hi = (blk.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scale[j] = (lo | (hi << 4)) - 32;
    }
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, j = (e % 128) / 32, l = e % 32;
      const int low = (blk.qs[32 * n + l] >> (2 * j)) & 3;
      const int high = (blk.hmask[l] >> (4 * n + j)) & 1;
      y[e] = d * static_cast<float>(scale[e / 16]) * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

void DequantQ4_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ4_K), y += kQKK) {
    const BlockQ4_K blk = LoadBlock<BlockQ4_K>(src);
    const float d = HalfToFloat(blk.d), dmin = HalfToFloat(blk.dmin);
    for (int j = 0; j < 4; ++j) {
      uint8_t s0, m0, s1, m1;
      GetScaleMinK4(2 * j, blk.scales, &s0, &m0);
      GetScaleMinK4(2 * j + 1, blk.scales, &s1, &m1);
      const float d0 = d * s0, mm0 = dmin * m0, d1 = d * s1, mm1 = dmin * m1;
      for (int l = 0; l < 32; ++l) {
        y[64 * j + l] = d0 * static_cast<float>(blk.qs[32 * j + l] & 0xF) - mm0;
        y[64 * j + 32 + l] = d1 * static_cast<float>(blk.qs[32 * j + l] >> 4) - mm1;
      }
    }
  }
}

void DequantQ5_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ5_K), y += kQKK) {
    const BlockQ5_K blk = LoadBlock<BlockQ5_K>(src);
    const float d = HalfToFloat(blk.d), dmin = HalfToFloat(blk.dmin);
    for (int j = 0; j < 4; ++j) {
      uint8_t s0, m0, s1, m1;
      GetScaleMinK4(2 * j, blk.scales, &s0, &m0);
      GetScaleMinK4(2 * j + 1, blk.scales, &s1, &m1);
      const float d0 = d * s0, mm0 = dmin * m0, d1 = d * s1, mm1 = dmin * m1;
      for (int l = 0; l < 32; ++l) {
        const int q0 = (blk.qs[32 * j + l] & 0xF) | (((blk.qh[l] >> (2 * j)) & 1) << 4);
        const int q1 = (blk.qs[32 * j + l] >> 4) | (((blk.qh[l] >> (2 * j + 1)) & 1) << 4);
        y[64 * j + l] = d0 * static_cast<float>(q0) - mm0;
        y[64 * j + 32 + l] = d1 * static_cast<float>(q1) - mm1;
      }
    }
  }
}

void DequantQ6_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ6_K), y += kQKK) {
    const BlockQ6_K blk = LoadBlock<BlockQ6_K>(src);
    const float d = HalfToFloat(blk.d);
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = blk.ql + 64 * n;
      const uint8_t* qh = blk.qh + 32 * n;
      float* yy = y + 128 * n;
      for (int l = 0; l < 32; ++l) {
        const int q0 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        const int s = 8 * n + l / 16;
        yy[l] = d * static_cast<float>(blk.scales[s]) * static_cast<float>(q0);
        yy[l + 32] = d * static_cast<float>(blk.scales[s + 2]) * static_cast<float>(q1);
        yy[l + 64] = d * static_cast<float>(blk.scales[s + 4]) * static_cast<float>(q2);
        yy[l + 96] = d * static_cast<float>(blk.scales[s + 6]) * static_cast<float>(q3);
      }
    }
  }
}

void DequantQ8_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, src += sizeof(BlockQ8_K), y += kQKK) {
    const BlockQ8_K blk = LoadBlock<BlockQ8_K>(src);
    for (int e = 0; e < kQKK; ++e) y[e] = blk.d * static_cast<float>(blk.qs[e]);
  }
}

// ---- quantization -------------------------------------------------------------------------------

void QuantQ2_K(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK, dst += sizeof(BlockQ2_K)) {
    uint8_t L[256], sc[16], mq[16];
    float d, dmin;
    QuantSuperAsym(x, 16, 16, 3, 15, L, sc, mq, &d, &dmin);
    BlockQ2_K blk;
    std::memset(&blk, 0, sizeof(blk));
    for (int j = 0; j < 16; ++j) blk.scales[j] = static_cast<uint8_t>(sc[j] | (mq[j] << 4));
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, j = (e % 128) / 32, l = e % 32;
      blk.qs[32 * n + l] |= static_cast<uint8_t>(L[e] << (2 * j));
    }
    blk.d = FloatToHalf(d);
    blk.dmin = FloatToHalf(dmin);
    StoreBlock(blk, dst);
  }
}

void QuantQ3_K(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK, dst += sizeof(BlockQ3_K)) {
    int8_t L[256], sc[16];
    float d;
    QuantSuperSym(x, 4, 32, L, sc, &d);
    BlockQ3_K blk;
    std::memset(&blk, 0, sizeof(blk));
    for (int j = 0; j < 16; ++j) {
      const int s = sc[j] + 32;  // [0, 63]
      blk.scales[j % 8] |= static_cast<uint8_t>((s & 0xF) << (4 * (j / 8)));
      blk.scales[8 + j % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (j / 4)));
    }
    for (int e = 0; e < kQKK; ++e) {
      const int n = e / 128, j = (e % 128) / 32, l = e % 32;
      const int v = L[e] + 4;  // [0, 7]
      blk.qs[32 * n + l] |= static_cast<uint8_t>((v & 3) << (2 * j));
      blk.hmask[l] |= static_cast<uint8_t>((v >> 2) << (4 * n + j));
    }
    blk.d = FloatToHalf(d);
    StoreBlock(blk, dst);
  }
}

void QuantQ4_K(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK, dst += sizeof(BlockQ4_K)) {
    uint8_t L[256], sc[8], mq[8];
    float d, dmin;
    QuantSuperAsym(x, 8, 32, 15, 63, L, sc, mq, &d, &dmin);
    BlockQ4_K blk;
    PackScaleMinK4(sc, mq, blk.scales);
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l)
        blk.qs[32 * j + l] = static_cast<uint8_t>(L[64 * j + l] | (L[64 * j + 32 + l] << 4));
    blk.d = FloatToHalf(d);
    blk.dmin = FloatToHalf(dmin);
    StoreBlock(blk, dst);
  }
}

void QuantQ5_K(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK, dst += sizeof(BlockQ5_K)) {
    uint8_t L[256], sc[8], mq[8];
    float d, dmin;
    QuantSuperAsym(x, 8, 32, 31, 63, L, sc, mq, &d, &dmin);
    BlockQ5_K blk;
    std::memset(&blk, 0, sizeof(blk));
    PackScaleMinK4(sc, mq, blk.scales);
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int q0 = L[64 * j + l], q1 = L[64 * j + 32 + l];
        blk.qs[32 * j + l] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
        blk.qh[l] |= static_cast<uint8_t>(((q0 >> 4) << (2 * j)) | ((q1 >> 4) << (2 * j + 1)));
      }
    }
    blk.d = FloatToHalf(d);
    blk.dmin = FloatToHalf(dmin);
    StoreBlock(blk, dst);
  }
}

void QuantQ6_K(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK, dst += sizeof(BlockQ6_K)) {
    int8_t L[256], sc[16];
    float d;
    QuantSuperSym(x, 32, 128, L, sc, &d);
    BlockQ6_K blk;
    std::memset(&blk, 0, sizeof(blk));
    for (int j = 0; j < 16; ++j) blk.scales[j] = sc[j];
    for (int n = 0; n < 2; ++n) {
      for (int l = 0; l < 32; ++l) {
        const int base = 128 * n + l;
        const int q0 = L[base] + 32, q1 = L[base + 32] + 32, q2 = L[base + 64] + 32, q3 = L[base + 96] + 32;
        blk.ql[64 * n + l] = static_cast<uint8_t>((q0 & 0xF) | ((q2 & 0xF) << 4));
        blk.ql[64 * n + l + 32] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        blk.qh[32 * n + l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
      }
    }
    blk.d = FloatToHalf(d);
    StoreBlock(blk, dst);
  }
}

// Activations for K-quant dot products: one float scale, codes in [-127, 127] (never -128, so
// SIMD kernels may negate them), and per-16 sums.
void QuantQ8_K(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQKK, dst += sizeof(BlockQ8_K)) {
    BlockQ8_K blk;
    float amax = 0.0f;
    for (int e = 0; e < kQKK; ++e) amax = std::max(amax, std::fabs(x[e]));
    const float iscale = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int e = 0; e < kQKK; ++e) blk.qs[e] = static_cast<int8_t>(RoundClamp(x[e] * iscale, -127, 127));
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += blk.qs[16 * g + i];
      blk.bsums[g] = static_cast<int16_t>(s);
    }
    blk.d = amax > 0.0f ? amax / 127.0f : 0.0f;
    StoreBlock(blk, dst);
  }
}

}  // namespace edgedecode::quant::internal
