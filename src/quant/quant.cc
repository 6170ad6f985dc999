// Dispatch of quant.h over the per-family routines (quant_basic.cc, quant_k.cc).
#include "quant/quant.h"

#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/quant_internal.h"

namespace edgedecode::quant {

float Fp16ToFp32(uint16_t h) { return HalfToFloat(h); }
uint16_t Fp32ToFp16(float f) { return FloatToHalf(f); }
float Bf16ToFp32(uint16_t h) { return BHalfToFloat(h); }
uint16_t Fp32ToBf16(float f) { return FloatToBHalf(f); }

bool CanDequantize(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: case GgmlType::kF16: case GgmlType::kBF16:
    case GgmlType::kQ4_0: case GgmlType::kQ4_1: case GgmlType::kQ5_0: case GgmlType::kQ5_1:
    case GgmlType::kQ8_0: case GgmlType::kQ2_K: case GgmlType::kQ3_K: case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: case GgmlType::kQ6_K: case GgmlType::kQ8_K:
      return true;
    default:
      return false;
  }
}

bool CanQuantize(GgmlType t) { return CanDequantize(t); }  // q8_k included (activation format)

namespace {

bool HalfFinite(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return (h & 0x7C00) != 0x7C00;  // exponent all ones: inf or NaN
}

// Byte offsets of the f16 scales inside one block of t (up to two), and how many.
int HalfScaleOffsets(GgmlType t, size_t off[2]) {
  switch (t) {
    case GgmlType::kQ4_0: off[0] = offsetof(BlockQ4_0, d); return 1;
    case GgmlType::kQ4_1: off[0] = offsetof(BlockQ4_1, d); off[1] = offsetof(BlockQ4_1, m); return 2;
    case GgmlType::kQ5_0: off[0] = offsetof(BlockQ5_0, d); return 1;
    case GgmlType::kQ5_1: off[0] = offsetof(BlockQ5_1, d); off[1] = offsetof(BlockQ5_1, m); return 2;
    case GgmlType::kQ8_0: off[0] = offsetof(BlockQ8_0, d); return 1;
    case GgmlType::kQ2_K: off[0] = offsetof(BlockQ2_K, d); off[1] = offsetof(BlockQ2_K, dmin); return 2;
    case GgmlType::kQ3_K: off[0] = offsetof(BlockQ3_K, d); return 1;
    case GgmlType::kQ4_K: off[0] = offsetof(BlockQ4_K, d); off[1] = offsetof(BlockQ4_K, dmin); return 2;
    case GgmlType::kQ5_K: off[0] = offsetof(BlockQ5_K, d); off[1] = offsetof(BlockQ5_K, dmin); return 2;
    case GgmlType::kQ6_K: off[0] = offsetof(BlockQ6_K, d); return 1;
    default: return 0;
  }
}

}  // namespace

int64_t FirstNonFinite(GgmlType t, const void* data, int64_t n, bool scales_only) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (t) {
    case GgmlType::kF32:
      if (scales_only) return -1;
      for (int64_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        if (!std::isfinite(f)) return i;
      }
      return -1;
    case GgmlType::kF16:
      if (scales_only) return -1;
      for (int64_t i = 0; i < n; ++i)
        if (!HalfFinite(p + 2 * i)) return i;
      return -1;
    case GgmlType::kBF16:
      if (scales_only) return -1;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        if ((h & 0x7F80) == 0x7F80) return i;
      }
      return -1;
    case GgmlType::kQ8_K: {
      const int64_t nb = n / kQKK;
      for (int64_t b = 0; b < nb; ++b) {
        float d;
        std::memcpy(&d, p + b * sizeof(BlockQ8_K) + offsetof(BlockQ8_K, d), 4);
        if (!std::isfinite(d)) return b * kQKK;
      }
      return -1;
    }
    default: break;
  }
  size_t off[2];
  const int n_scales = HalfScaleOffsets(t, off);
  const GgmlTypeTraits& tr = TypeTraits(static_cast<uint32_t>(t));
  if (n_scales == 0 || tr.block_size <= 0) return -1;
  const int64_t nb = n / tr.block_size;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = p + static_cast<size_t>(b) * tr.type_size;
    for (int k = 0; k < n_scales; ++k)
      if (!HalfFinite(blk + off[k])) return b * tr.block_size;
  }
  return -1;
}

void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n) {
  const int64_t bs = TypeTraits(t).block_size;
  assert(CanDequantize(t) && bs > 0 && n % bs == 0);
  const int64_t nb = n / bs;
  const auto* p = static_cast<const uint8_t*>(src);
  using namespace internal;
  switch (t) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = HalfToFloat(h);
      }
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = BHalfToFloat(h);
      }
      return;
    case GgmlType::kQ4_0: DequantQ4_0(p, dst, nb); return;
    case GgmlType::kQ4_1: DequantQ4_1(p, dst, nb); return;
    case GgmlType::kQ5_0: DequantQ5_0(p, dst, nb); return;
    case GgmlType::kQ5_1: DequantQ5_1(p, dst, nb); return;
    case GgmlType::kQ8_0: DequantQ8_0(p, dst, nb); return;
    case GgmlType::kQ2_K: DequantQ2_K(p, dst, nb); return;
    case GgmlType::kQ3_K: DequantQ3_K(p, dst, nb); return;
    case GgmlType::kQ4_K: DequantQ4_K(p, dst, nb); return;
    case GgmlType::kQ5_K: DequantQ5_K(p, dst, nb); return;
    case GgmlType::kQ6_K: DequantQ6_K(p, dst, nb); return;
    case GgmlType::kQ8_K: DequantQ8_K(p, dst, nb); return;
    default: assert(false && "DequantizeRow: unsupported type");
  }
}

void QuantizeRow(GgmlType t, const float* src, void* dst, int64_t n) {
  const int64_t bs = TypeTraits(t).block_size;
  assert(CanQuantize(t) && bs > 0 && n % bs == 0);
  const int64_t nb = n / bs;
  auto* p = static_cast<uint8_t*>(dst);
  using namespace internal;
  switch (t) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = FloatToHalf(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = FloatToBHalf(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    case GgmlType::kQ4_0: QuantQ4_0(src, p, nb); return;
    case GgmlType::kQ4_1: QuantQ4_1(src, p, nb); return;
    case GgmlType::kQ5_0: QuantQ5_0(src, p, nb); return;
    case GgmlType::kQ5_1: QuantQ5_1(src, p, nb); return;
    case GgmlType::kQ8_0: QuantQ8_0(src, p, nb); return;
    case GgmlType::kQ2_K: QuantQ2_K(src, p, nb); return;
    case GgmlType::kQ3_K: QuantQ3_K(src, p, nb); return;
    case GgmlType::kQ4_K: QuantQ4_K(src, p, nb); return;
    case GgmlType::kQ5_K: QuantQ5_K(src, p, nb); return;
    case GgmlType::kQ6_K: QuantQ6_K(src, p, nb); return;
    case GgmlType::kQ8_K: QuantQ8_K(src, p, nb); return;
    default: assert(false && "QuantizeRow: unsupported type");
  }
}

float RefDotRow(GgmlType t, const void* row, const float* x, int64_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  DequantizeRow(t, row, w.data(), n);
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(w[static_cast<size_t>(i)]) * x[i];
  return static_cast<float>(acc);
}

}  // namespace edgedecode::quant
