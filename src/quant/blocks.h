// Packed block structs of the GGUF quantization formats, laid out byte for byte as llama.cpp's
// ggml-common.h, plus inline fp16/bf16 conversions. Header-only and stable: the SIMD kernels include
// it. All structs are trivially copyable PODs with alignment 1 or 2 (read them from mapped files via
// reinterpret_cast only when the address is suitably aligned, otherwise memcpy).
//
// Element order inside a block (what DequantizeRow produces), so kernels can be written from this file:
//   q4_0/q4_1: element j (0..15) is qs[j] & 0xF, element j+16 is qs[j] >> 4.
//   q5_0/q5_1: as q4 plus bit 4 from qh (little-endian uint32): bit j for element j, bit j+16 for j+16.
//              q4_0 subtracts 8, q5_0 subtracts 16; the _1 variants are d*q + m.
//   q8_0:      element j is d * qs[j].
//   K-quants:  see the comments on each struct.
#pragma once

#include <cstdint>
#include <cstring>

namespace edgedecode::quant {

inline constexpr int kQK = 32;    // elements per block of the basic formats
inline constexpr int kQKK = 256;  // elements per K-quant super-block
inline constexpr int kKScaleBytes = 12;  // 8 6-bit scales + 8 6-bit mins of q4_K/q5_K

// ---- fp16 / bf16 --------------------------------------------------------------------------------

inline uint32_t FloatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// Exact (every half is representable as a float), including subnormals, inf and NaN (payload kept).
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return BitsFloat(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return BitsFloat(sign);  // +-0
  // Subnormal: normalize. value = mant * 2^-24.
  int e = 113;  // biased float exponent of 2^-14, decremented while shifting
  while ((mant & 0x400) == 0) { mant <<= 1; --e; }
  return BitsFloat(sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FF) << 13));
}

// Round to nearest, ties to even (as F16C's _cvtss_sh(x, 0) and ggml's scalar fallback).
// Overflow gives inf; NaN stays NaN (quiet, top payload bits kept).
inline uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    if (abs == 0x7F800000u) return sign | 0x7C00;
    return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00;  // >= 65520 rounds to inf
  if (abs >= 0x38800000u) {                       // normal half range (>= 2^-14)
    const uint32_t mant_round = abs + 0xFFF + ((abs >> 13) & 1);  // RNE at bit 13
    return static_cast<uint16_t>(sign | ((mant_round - 0x38000000u) >> 13));
  }
  // Subnormal half (or zero): value / 2^-24, rounded to nearest even integer.
  if (abs < 0x33000000u) return sign;  // < 2^-25 rounds to 0 (2^-25 exactly ties to 0, even)
  const uint32_t e = abs >> 23;              // biased exponent, 102..112
  const uint32_t m = (abs & 0x7FFFFF) | 0x800000;  // 24-bit significand
  const uint32_t shift = 126 - e;            // m * 2^(e-150) / 2^-24 = m >> (126 - e)
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  return static_cast<uint16_t>(sign | q);  // q may reach 0x400 = smallest normal, still correct
}

inline float BHalfToFloat(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// Round to nearest even; NaN stays NaN (quiet bit forced, as ggml does). Subnormals are kept.
inline uint16_t FloatToBHalf(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

// ---- basic formats (32 elements per block) ------------------------------------------------------

struct BlockQ4_0 {
  uint16_t d;        // fp16 scale
  uint8_t qs[16];    // nibbles, value = d * (q - 8)
};
struct BlockQ4_1 {
  uint16_t d;        // fp16 scale
  uint16_t m;        // fp16 min, value = d * q + m
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];     // 5th bits, little-endian uint32
  uint8_t qs[16];    // value = d * (q - 16)
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[16];    // value = d * q + m
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];     // value = d * q
};

// ---- K-quants (256 elements per super-block) ----------------------------------------------------

// 16 sub-blocks of 16. scales[i]: low nibble scale, high nibble min of sub-block i.
// Element 128*n + 32*j + l (n<2, j<4, l<32) is bits 2j..2j+1 of qs[32*n + l], in sub-block 8n + 2j + l/16;
// value = d * (sc & 0xF) * q - dmin * (sc >> 4).
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d;        // fp16 super-block scale of the scales
  uint16_t dmin;     // fp16 super-block scale of the mins
};

// 16 sub-blocks of 16, 6-bit signed scales (stored +32): sub-block j's low 4 bits are
// scales[j % 8] >> (4 * (j / 8)), its high 2 bits scales[8 + j % 4] >> (2 * (j / 4)).
// Element 128*n + 32*j + l: low 2 bits from qs[32*n + l] >> 2j, high bit hmask[l] bit (4n + j);
// q = low - (high ? 0 : 4), value = d * (scale - 32) * q.
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32 with 6-bit scales and mins packed in scales[12] (see GetScaleMinK4).
// Element 64*j + l (j<4, l<32): qs[32*j + l] & 0xF in sub-block 2j, element 64*j + 32 + l:
// qs[32*j + l] >> 4 in sub-block 2j+1. value = d * sc * q - dmin * m.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[128];
};

// As q4_K plus a 5th bit: element 64*j + l takes qh[l] bit 2j, element 64*j + 32 + l qh[l] bit 2j+1.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[32];
  uint8_t qs[128];
};

// 16 sub-blocks of 16, int8 scales. For half n (<2) and l < 32, with L = ql + 64n, H = qh + 32n:
//   element 128n + l      = (L[l] & 0xF)    | ((H[l] >> 0) & 3) << 4, sub-block 8n + l/16
//   element 128n + l + 32 = (L[l + 32] & 0xF) | ((H[l] >> 2) & 3) << 4, sub-block 8n + l/16 + 2
//   element 128n + l + 64 = (L[l] >> 4)     | ((H[l] >> 4) & 3) << 4, sub-block 8n + l/16 + 4
//   element 128n + l + 96 = (L[l + 32] >> 4) | ((H[l] >> 6) & 3) << 4, sub-block 8n + l/16 + 6
// value = d * scales[sub] * (q - 32).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};

// Intermediate activation format of the K-quant dot products: value = d * qs[i];
// bsums[g] = sum of qs[16g .. 16g+15].
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Sub-block j (< 8) scale and min of q4_K/q5_K: the first four are the low 6 bits of bytes 0..3 and
// 4..7; the last four take their low 4 bits from bytes 8..11 and their top 2 bits from the top
// bits of bytes 0..3 (scales) and 4..7 (mins).
inline void GetScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace edgedecode::quant
