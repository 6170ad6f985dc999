// Per-family block routines behind quant.h's dispatch. nb = number of blocks. Sources and
// destinations may be unaligned (blocks are memcpy'd). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

namespace edgedecode::quant::internal {

// Blocks are packed structs at any byte offset: copy them in and out rather than cast the pointer.
template <typename B>
B LoadBlock(const uint8_t* p) {
  B b;
  std::memcpy(&b, p, sizeof(B));
  return b;
}
template <typename B>
void StoreBlock(const B& b, uint8_t* p) {
  std::memcpy(p, &b, sizeof(B));
}

// quant_basic.cc: 32-element formats.
void DequantQ4_0(const uint8_t* src, float* y, int64_t nb);
void DequantQ4_1(const uint8_t* src, float* y, int64_t nb);
void DequantQ5_0(const uint8_t* src, float* y, int64_t nb);
void DequantQ5_1(const uint8_t* src, float* y, int64_t nb);
void DequantQ8_0(const uint8_t* src, float* y, int64_t nb);
void QuantQ4_0(const float* x, uint8_t* dst, int64_t nb);
void QuantQ4_1(const float* x, uint8_t* dst, int64_t nb);
void QuantQ5_0(const float* x, uint8_t* dst, int64_t nb);
void QuantQ5_1(const float* x, uint8_t* dst, int64_t nb);
void QuantQ8_0(const float* x, uint8_t* dst, int64_t nb);

// quant_k.cc: 256-element super-blocks.
void DequantQ2_K(const uint8_t* src, float* y, int64_t nb);
void DequantQ3_K(const uint8_t* src, float* y, int64_t nb);
void DequantQ4_K(const uint8_t* src, float* y, int64_t nb);
void DequantQ5_K(const uint8_t* src, float* y, int64_t nb);
void DequantQ6_K(const uint8_t* src, float* y, int64_t nb);
void DequantQ8_K(const uint8_t* src, float* y, int64_t nb);
void QuantQ2_K(const float* x, uint8_t* dst, int64_t nb);
void QuantQ3_K(const float* x, uint8_t* dst, int64_t nb);
void QuantQ4_K(const float* x, uint8_t* dst, int64_t nb);
void QuantQ5_K(const float* x, uint8_t* dst, int64_t nb);
void QuantQ6_K(const float* x, uint8_t* dst, int64_t nb);
void QuantQ8_K(const float* x, uint8_t* dst, int64_t nb);

}  // namespace edgedecode::quant::internal
