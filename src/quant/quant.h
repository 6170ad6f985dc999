// Block quantization formats of GGUF (llama.cpp's layouts, bit for bit): conversion between float and
// every supported GgmlType, and the scalar reference dot product the optimized kernels are checked
// against. All functions are pure and thread-safe.
#pragma once

#include <cstdint>

#include "edgedecode/ggml_types.h"

namespace edgedecode::quant {

float Fp16ToFp32(uint16_t h);
uint16_t Fp32ToFp16(float f);     // round to nearest even, as ggml does
float Bf16ToFp32(uint16_t h);
uint16_t Fp32ToBf16(float f);     // round to nearest even; NaN stays NaN

// True for the types DequantizeRow handles: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0,
// q2_k, q3_k, q4_k, q5_k, q6_k (and q8_k).
bool CanDequantize(GgmlType t);
// True for the types QuantizeRow writes: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1,
// q2_k, q3_k, q4_k, q5_k, q6_k, and q8_k (the activation format of K-quant dot products).
bool CanQuantize(GgmlType t);

// n must be a multiple of TypeTraits(t).block_size. src holds RowBytes(t, n) bytes.
void DequantizeRow(GgmlType t, const void* src, float* dst, int64_t n);
// dst receives RowBytes(t, n) bytes.
void QuantizeRow(GgmlType t, const float* src, void* dst, int64_t n);

// The first stored value of a row run that is NaN or Inf, as an element index (-1: all finite), for the types
// CanDequantize takes. n elements, a multiple of the block size; data holds RowBytes(t, n) bytes.
// scales_only: for the block formats only the scales (d, and m / dmin where the format has one) are read, one
// value per block, which is enough (a block's integers times finite scales are finite), and f32 / f16 / bf16
// are not read at all (-1); else every f32 / f16 / bf16 element is read too. A bad block is reported as its
// first element.
int64_t FirstNonFinite(GgmlType t, const void* data, int64_t n, bool scales_only);

// Reference dot product of one stored row (type t, n elements) with n float activations:
// dequantize, multiply, accumulate in double. Written for clarity, not speed.
float RefDotRow(GgmlType t, const void* row, const float* x, int64_t n);

}  // namespace edgedecode::quant
