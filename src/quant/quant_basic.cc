// The 32-element block formats (q4_0, q4_1, q5_0, q5_1, q8_0). The quantizers follow the semantics of
// llama.cpp's deterministic reference quantizers (the ones llama-quantize uses without an importance
// matrix), step for step in float arithmetic, so that files re-quantized here match llama.cpp's bytes.
// That is why the scale inverse is taken from the unrounded float scale and the rounding is
// "add 0.5 and truncate" (q4/q5) or roundf (q8_0). This file is compiled with -ffp-contract=off so
// that no fused multiply-add changes a rounding.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace edgedecode::quant::internal {
namespace {


// Truncates t (expected in [0, hi + 1)) to an integer code in [0, hi]. NaN (from inf/NaN input)
// gives 0 instead of the undefined behaviour of a raw cast.
inline int TruncCode(float t, int hi) {
  if (!(t > 0.0f)) return 0;
  if (t >= static_cast<float>(hi)) return hi;
  return static_cast<int>(t);
}

// The element of largest magnitude, with its sign (first one on ties, as llama.cpp).
inline float SignedAbsMax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

inline void MinMax(const float* x, int n, float* mn, float* mx) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < n; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  *mn = lo;
  *mx = hi;
}

}  // namespace

void DequantQ4_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(BlockQ4_0), y += kQK) {
    const BlockQ4_0 b = LoadBlock<BlockQ4_0>(src);
    const float d = HalfToFloat(b.d);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0xF) - 8) * d;
      y[j + 16] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantQ4_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(BlockQ4_1), y += kQK) {
    const BlockQ4_1 b = LoadBlock<BlockQ4_1>(src);
    const float d = HalfToFloat(b.d), m = HalfToFloat(b.m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0xF) * d + m;
      y[j + 16] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void DequantQ5_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(BlockQ5_0), y += kQK) {
    const BlockQ5_0 b = LoadBlock<BlockQ5_0>(src);
    const float d = HalfToFloat(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

void DequantQ5_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(BlockQ5_1), y += kQK) {
    const BlockQ5_1 b = LoadBlock<BlockQ5_1>(src);
    const float d = HalfToFloat(b.d), m = HalfToFloat(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

void DequantQ8_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, src += sizeof(BlockQ8_0), y += kQK) {
    const BlockQ8_0 b = LoadBlock<BlockQ8_0>(src);
    const float d = HalfToFloat(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// Symmetric 4-bit: the extreme value maps to -8 exactly, so the full range [-8, 7] is used with the
// sign chosen by the extreme element.
void QuantQ4_0(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK, dst += sizeof(BlockQ4_0)) {
    BlockQ4_0 b;
    const float d = SignedAbsMax(x, kQK) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = FloatToHalf(d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = TruncCode(x[j] * id + 8.5f, 15);
      const int q1 = TruncCode(x[j + 16] * id + 8.5f, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    StoreBlock(b, dst);
  }
}

void QuantQ4_1(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK, dst += sizeof(BlockQ4_1)) {
    BlockQ4_1 b;
    float mn, mx;
    MinMax(x, kQK, &mn, &mx);
    const float d = (mx - mn) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = FloatToHalf(d);
    b.m = FloatToHalf(mn);
    for (int j = 0; j < 16; ++j) {
      const int q0 = TruncCode((x[j] - mn) * id + 0.5f, 15);
      const int q1 = TruncCode((x[j + 16] - mn) * id + 0.5f, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    StoreBlock(b, dst);
  }
}

void QuantQ5_0(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK, dst += sizeof(BlockQ5_0)) {
    BlockQ5_0 b;
    const float d = SignedAbsMax(x, kQK) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = FloatToHalf(d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = TruncCode(x[j] * id + 16.5f, 31);
      const int q1 = TruncCode(x[j + 16] * id + 16.5f, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
    }
    std::memcpy(b.qh, &qh, 4);
    StoreBlock(b, dst);
  }
}

void QuantQ5_1(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK, dst += sizeof(BlockQ5_1)) {
    BlockQ5_1 b;
    float mn, mx;
    MinMax(x, kQK, &mn, &mx);
    const float d = (mx - mn) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = FloatToHalf(d);
    b.m = FloatToHalf(mn);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = TruncCode((x[j] - mn) * id + 0.5f, 31);
      const int q1 = TruncCode((x[j + 16] - mn) * id + 0.5f, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
    }
    std::memcpy(b.qh, &qh, 4);
    StoreBlock(b, dst);
  }
}

void QuantQ8_0(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK, dst += sizeof(BlockQ8_0)) {
    BlockQ8_0 b;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = FloatToHalf(d);
    for (int j = 0; j < kQK; ++j) {
      const float r = std::round(x[j] * id);  // half away from zero, as roundf
      b.qs[j] = static_cast<int8_t>(r >= 127.0f ? 127 : r <= -127.0f ? -127 : (r == r ? r : 0.0f));
    }
    StoreBlock(b, dst);
  }
}

}  // namespace edgedecode::quant::internal
