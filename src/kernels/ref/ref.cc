// The scalar reference: float activations, quant::RefDotRow (dequantize, double accumulation) per output;
// q4_0 as integer block sums accumulated in float (see RefMatMul).
// Also the q8 activation quantizer used by every integer SIMD path (scalar: it is O(m*k), the matmul
// is O(rows*m*k)).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "quant/blocks.h"

#include "kernels/internal.h"
#include "quant/quant.h"

namespace edgedecode::kernels::detail {

void RefMatMul(GgmlType wt, const uint8_t* W, size_t row_bytes, int64_t k, int64_t r0, int64_t r1,
               const Activations& x, float* Y, int64_t ldy) {
  if (wt == GgmlType::kQ4_0 && k % 32 == 0) {
    // q4_0 x q8_0 as integers: each block's exact sum, accumulated block by block in float,
    // acc = fma(sum, d_w * d_x, acc) -- the order of the packed SIMD kernel and of llama.cpp's
    // repacked q4_0 kernels, so that this path agrees with both bit for bit.
    for (int64_t j = 0; j < x.m(); ++j) {
      for (int64_t r = r0; r < r1; ++r) {
        const auto* blk = reinterpret_cast<const quant::BlockQ4_0*>(W + r * row_bytes);
        float acc = 0.0f;
        for (int64_t b = 0; b < k / 32; ++b) {
          const int8_t* q = x.qs(j) + b * 32;
          int32_t sum = 0;
          for (int i = 0; i < 16; ++i)
            sum += ((blk[b].qs[i] & 0x0F) - 8) * q[i] + ((blk[b].qs[i] >> 4) - 8) * q[i + 16];
          acc = std::fma(static_cast<float>(sum), quant::HalfToFloat(blk[b].d) * x.d(j)[b], acc);
        }
        Y[j * ldy + r] = acc;
      }
    }
    return;
  }
  for (int64_t j = 0; j < x.m(); ++j) {
    const float* xj = x.xf(j);
    for (int64_t r = r0; r < r1; ++r) Y[j * ldy + r] = quant::RefDotRow(wt, W + r * row_bytes, xj, k);
  }
}

// Activations are quantized exactly as llama.cpp quantizes them for the same weight type (its
// vec_dot_type), so that both engines compute the same integer dot products and their outputs agree
// to float rounding: q8_0 for q4_0/q5_0/q8_0 and q8_1 for q4_1/q5_1 (fp16 scale, 127/amax, round half
// to even, as its x86 code does), q8_K for the k-quants (one float scale per 256, the element
// of largest magnitude maps to -127, round half to even). The q8_K scale is repeated over the eight
// 32-blocks of its super-block so that every kernel reads one layout.
void QuantizeQ8(GgmlType wt, const float* x, int64_t k, int8_t* qs, float* d, float* ds, int16_t* bs) {
  const bool k_quant = TypeTraits(wt).block_size == 256;
  if (k_quant) {
    for (int64_t sb = 0; sb < k / 256; ++sb) {
      const float* xs = x + sb * 256;
      float amax = 0.0f, max = 0.0f;
      for (int i = 0; i < 256; ++i) {
        const float ax = std::fabs(xs[i]);
        if (ax > amax) { amax = ax; max = xs[i]; }
      }
      const float iscale = amax > 0.0f ? -127.0f / max : 0.0f;
      const float scale = amax > 0.0f ? 1.0f / iscale : 0.0f;
      for (int b = 0; b < 8; ++b) {
        int sum[2] = {0, 0};
        for (int i = 0; i < 32; ++i) {
          int q = static_cast<int>(std::nearbyint(iscale * xs[b * 32 + i]));
          q = q > 127 ? 127 : (q < -127 ? -127 : q);
          qs[sb * 256 + b * 32 + i] = static_cast<int8_t>(q);
          sum[i / 16] += q;
        }
        const int64_t blk = sb * 8 + b;
        d[blk] = scale;
        ds[blk] = scale * static_cast<float>(sum[0] + sum[1]);
        bs[2 * blk] = static_cast<int16_t>(sum[0]);
        bs[2 * blk + 1] = static_cast<int16_t>(sum[1]);
      }
    }
    return;
  }
  for (int64_t b = 0; b < k / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) {
      const float ax = std::fabs(xb[i]);
      amax = ax > amax ? ax : amax;
    }
    const float scale = amax / 127.0f;
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;  // as llama.cpp's x86 quantize_row_q8_0
    int sum[2] = {0, 0};
    for (int i = 0; i < 32; ++i) {
      int q = static_cast<int>(std::nearbyint(xb[i] * inv));  // round half to even (_mm256_round_ps)
      q = q > 127 ? 127 : (q < -127 ? -127 : q);
      qs[b * 32 + i] = static_cast<int8_t>(q);
      sum[i / 16] += q;
    }
    const float dh = quant::HalfToFloat(quant::FloatToHalf(scale));
    d[b] = dh;
    // (llama.cpp's q8_1 also rounds d*sum to fp16 for q4_1/q5_1; kept in float here so that every
    // path computes exactly sum(w * d*q): the difference is below fp16 rounding of one term.)
    ds[b] = dh * static_cast<float>(sum[0] + sum[1]);
    bs[2 * b] = static_cast<int16_t>(sum[0]);
    bs[2 * b + 1] = static_cast<int16_t>(sum[1]);
  }
}

void RefHalfToFloatRow(const uint16_t* h, float* f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) f[i] = quant::HalfToFloat(h[i]);
}

namespace {
// x rounded to bf16 when bf16 is set: the factor bf16 keys and values are multiplied by (kernels.h).
float Bf16IfBf16(bool bf16, float x) { return bf16 ? quant::BHalfToFloat(quant::FloatToBHalf(x)) : x; }
}  // namespace

void RefAccumulateRows(GgmlType vt, const uint8_t* v, size_t row_bytes, int64_t hd, int64_t n, const float* w, int64_t ldw,
                       int64_t m, float* acc, int64_t ldacc) {
  // The reference: float rows as they are; quantized rows as their integer values q with the block's
  // scale in the weight, acc += (w * d) * q -- the same sums in the same order as the SIMD paths. bf16
  // rows: the weights rounded to bf16, as the vdpbf16ps path multiplies them (kernels.h).
  assert(vt == GgmlType::kF32 || vt == GgmlType::kF16 || vt == GgmlType::kBF16 || hd % 32 == 0);
  const bool bf16 = vt == GgmlType::kBF16;
  const bool quantized = vt == GgmlType::kQ8_0 || vt == GgmlType::kQ4_0;
  std::vector<float> row(static_cast<size_t>(hd)), scale(static_cast<size_t>(hd), 1.0f);
  for (int64_t t = 0; t < n; ++t) {
    const uint8_t* r = v + t * row_bytes;
    if (!quantized) {
      quant::DequantizeRow(vt, r, row.data(), hd);
    } else {
      for (int64_t b = 0; b < hd / 32; ++b) {
        float* rb = row.data() + 32 * b;
        uint16_t d16;
        if (vt == GgmlType::kQ8_0) {
          const auto& blk = reinterpret_cast<const quant::BlockQ8_0*>(r)[b];
          for (int e = 0; e < 32; ++e) rb[e] = static_cast<float>(blk.qs[e]);
          d16 = blk.d;
        } else {
          const auto& blk = reinterpret_cast<const quant::BlockQ4_0*>(r)[b];
          for (int e = 0; e < 16; ++e) {
            rb[e] = static_cast<float>((blk.qs[e] & 0x0F) - 8);
            rb[e + 16] = static_cast<float>((blk.qs[e] >> 4) - 8);
          }
          d16 = blk.d;
        }
        std::fill(scale.begin() + 32 * b, scale.begin() + 32 * (b + 1), quant::HalfToFloat(d16));
      }
    }
    for (int64_t j = 0; j < m; ++j) {
      const float wt = Bf16IfBf16(bf16, w[j * ldw + t]);
      for (int64_t d = 0; d < hd; ++d)
        acc[j * ldacc + d] = std::fma(wt * scale[static_cast<size_t>(d)], row[d], acc[j * ldacc + d]);
    }
  }
}

void RefAttentionScores(GgmlType kt, const uint8_t* k, size_t row_bytes, int64_t hd, int64_t n, const float* q, int64_t ldq,
                        int64_t m, float* s, int64_t lds) {
  std::vector<float> row(static_cast<size_t>(hd)), qk(static_cast<size_t>(m * hd));  // qk: the queries as multiplied
  for (int64_t j = 0; j < m; ++j)
    for (int64_t d = 0; d < hd; ++d) qk[static_cast<size_t>(j * hd + d)] = Bf16IfBf16(kt == GgmlType::kBF16, q[j * ldq + d]);
  for (int64_t t = 0; t < n; ++t) {
    quant::DequantizeRow(kt, k + t * row_bytes, row.data(), hd);
    for (int64_t j = 0; j < m; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(qk[static_cast<size_t>(j * hd + d)]) * row[d];
      s[j * lds + t] = static_cast<float>(dot);
    }
  }
}

float RefScaleMax(float* s, int64_t n, float scale, float init) {
  float m = init;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, s[i] *= scale);
  return m;
}

float RefExpSubSum(const float* s, float mx, float* w, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (w[i] = std::exp(s[i] - mx));
  return sum;
}

void RefSiluMul(float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

// gelu(h) rounded to f16 for every f16 bit pattern h, as floats (256 KiB, built on first use): llama.cpp's
// ggml_table_gelu_f16, whose f32 GELU and GEGLU read it at the f16 rounding of x (its GGML_GELU_FP16 path).
// The expression is ggml_gelu_f32's, in float with tanhf.
const float* GeluTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = quant::HalfToFloat(static_cast<uint16_t>(h));
      const float y = 0.5f * x * (1.0f + std::tanh(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
      t[h] = quant::HalfToFloat(quant::FloatToHalf(y));
    }
    return t;
  }();
  return table.data();
}

void RefGeluMul(float* g, const float* u, int64_t n) {
  const float* t = GeluTable();
  for (int64_t i = 0; i < n; ++i) {
    const float x = g[i];
    const float y = x <= -10.0f ? 0.0f : x >= 10.0f ? x : t[quant::FloatToHalf(x)];
    g[i] = y * u[i];
  }
}

float RefSoftcapMax(float* s, int64_t n, float scale, float cap, float init) {
  const float inv = 1.0f / cap;
  float m = init;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, s[i] = std::tanh(s[i] * scale * inv) * cap);
  return m;
}

void RefRmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  double part[8] = {};
  for (int64_t j = 0; j < n; ++j) part[j % 8] += static_cast<double>(x[j]) * x[j];
  const double ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  const float scale = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
  for (int64_t j = 0; j < n; ++j) out[j] = x[j] * scale * w[j];
}

}  // namespace edgedecode::kernels::detail
