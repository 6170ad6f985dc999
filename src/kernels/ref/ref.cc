// The scalar reference: float activations, quant::RefDotRow (dequantize, double accumulation) per output.
// Also the q8 activation quantizer used by every integer SIMD path (scalar: it is O(m*k), the matmul
// is O(rows*m*k)).
#include <cmath>

#include "kernels/internal.h"
#include "quant/quant.h"

namespace edgedecode::kernels::detail {

void RefMatMul(GgmlType wt, const uint8_t* W, size_t row_bytes, int64_t k, int64_t r0, int64_t r1,
               const Activations& x, float* Y, int64_t ldy) {
  for (int64_t j = 0; j < x.m(); ++j) {
    const float* xj = x.xf(j);
    for (int64_t r = r0; r < r1; ++r) Y[j * ldy + r] = quant::RefDotRow(wt, W + r * row_bytes, xj, k);
  }
}

void QuantizeQ8(const float* x, int64_t k, int8_t* qs, float* d, float* ds, int16_t* bs) {
  for (int64_t b = 0; b < k / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float scale = amax / 127.0f;
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int sum[2] = {0, 0};
    for (int i = 0; i < 32; ++i) {
      int q = static_cast<int>(std::nearbyint(xb[i] * inv));
      q = q > 127 ? 127 : (q < -127 ? -127 : q);
      qs[b * 32 + i] = static_cast<int8_t>(q);
      sum[i / 16] += q;
    }
    d[b] = scale;
    ds[b] = scale * static_cast<float>(sum[0] + sum[1]);
    bs[2 * b] = static_cast<int16_t>(sum[0]);
    bs[2 * b + 1] = static_cast<int16_t>(sum[1]);
  }
}

}  // namespace edgedecode::kernels::detail
