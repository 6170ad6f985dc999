// Internals shared by the kernel files of src/kernels (not for other modules).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace edgedecode::kernels::detail {

// A kernel: rows [r0, r1) of W (row stride row_bytes) against every column of x.
using MatMulFn = void (*)(const uint8_t* W, size_t row_bytes, int64_t k, int64_t r0, int64_t r1,
                          const Activations& x, float* Y, int64_t ldy);

// Attention's weighted V sum (kernels.h AccumulateRows); false: this type/shape is not handled here.
using AccumulateRowsFn = bool (*)(GgmlType vt, const uint8_t* V, size_t row_bytes, int64_t hd, int64_t n,
                                  const float* w, int64_t ldw, int64_t m, float* acc, int64_t ldacc);

// Attention's Q.K scores over float keys (kernels.h AttentionScores); false: not handled here.
using AttentionScoresFn = bool (*)(GgmlType kt, const uint8_t* K, size_t row_bytes, int64_t hd, int64_t n,
                                   const float* q, int64_t ldq, int64_t m, float* s, int64_t lds);

// A kernel over weights repacked by Pack (q4_0, q8_0, q4_K, q6_K): rows [r0, r1) (multiples of 8) of a
// matrix of `rows` rows (the q4_0 layout pairs its groups, so where a group lies depends on rows).
using PackedFn = void (*)(const uint8_t* P, int64_t rows, int64_t k, int64_t r0, int64_t r1, const Activations& x,
                          float* Y, int64_t ldy);
constexpr size_t kQ4x8BlockBytes = 16 + 128;  // q4_0, a lone 8-row group: 8 fp16 scales, 4 vectors of 8 rows x 4 bytes
constexpr size_t kQ4x16BlockBytes = 32 + 256;  // q4_0, a pair: 16 fp16 scales, 4 vectors of 16 rows x 4 bytes
constexpr size_t kQ4Kx8Bytes = 16 + 16 + 64 + 64 + 1024;  // q4_K super-block of 8 rows (kernels.h)
constexpr size_t kQ6Kx8Bytes = 16 + 128 + 1024 + 512;  // q6_K super-block of 8 rows (kernels.h)
constexpr size_t kQ8x8BlockBytes = 16 + 8 * 32;  // q8_0 block of 8 rows (kernels.h)

// True for the weight types whose optimized kernels take 8-bit quantized activations.
inline bool UsesQ8(GgmlType t) {
  return t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16;
}

// One column of k floats (k % 32 == 0) to q8 blocks of 32: qs [k], d [k/32], ds [k/32], bs [k/16].
void QuantizeQ8(GgmlType wt, const float* x, int64_t k, int8_t* qs, float* d, float* ds, int16_t* bs);

// n floats of x rounded to f16 (wt kF16, quant::FloatToHalf) or bf16 (kBF16, FloatToBHalf): the bits in h,
// the values they stand for in f. The scalar form of X86Kernels::round_to_half (and its tail).
void RoundToHalfScalar(GgmlType wt, const float* x, int64_t n, uint16_t* h, float* f);

// The scalar reference of every op (ref/ref.cc): what --kernels ref runs, what every SIMD kernel is checked
// against in kernels_parity_test, and the path the dispatchers in kernels.cc fall back to.
void RefHalfToFloatRow(const uint16_t* h, float* f, int64_t n);
void RefAccumulateRows(GgmlType vt, const uint8_t* v, size_t row_bytes, int64_t hd, int64_t n, const float* w, int64_t ldw,
                       int64_t m, float* acc, int64_t ldacc);
void RefAttentionScores(GgmlType kt, const uint8_t* k, size_t row_bytes, int64_t hd, int64_t n, const float* q, int64_t ldq,
                        int64_t m, float* s, int64_t lds);
float RefScaleMax(float* s, int64_t n, float scale, float init);
float RefExpSubSum(const float* s, float mx, float* w, int64_t n);
void RefSiluMul(float* g, const float* u, int64_t n);
// GeluMul's table: gelu of every f16 bit pattern, rounded to f16, as floats (65536 entries; see ref.cc).
const float* GeluTable();
void RefGeluMul(float* g, const float* u, int64_t n);
float RefSoftcapMax(float* s, int64_t n, float scale, float cap, float init);
void RefRmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);
// The scalar reference matmul (quant::RefDotRow per output).
void RefMatMul(GgmlType wt, const uint8_t* W, size_t row_bytes, int64_t k, int64_t r0, int64_t r1,
               const Activations& x, float* Y, int64_t ldy);

// Per ISA: the kernel for a weight type, or nullptr when that type falls back to ref. Defined only in
// the files compiled for that ISA; callers check IsaAvailable first.
// What each x86 SIMD file (x86_kernels.inc, compiled once per ISA) provides.
struct X86Kernels {
  MatMulFn (*matmul)(GgmlType wt);                                    // nullptr: the type falls back to ref
  PackedFn (*packed)(GgmlType wt);                                    // weights repacked by Pack (CanPack)
  void (*half_to_float)(const uint16_t* h, float* f, int64_t n);      // F16C
  void (*dequantize)(GgmlType t, const uint8_t* src, float* y, int64_t nb);  // q8_0, q4_0 blocks
  AccumulateRowsFn accumulate_rows;                                    // attention: P.V
  float (*exp_sub_sum)(const float* s, float mx, float* w, int64_t n);  // attention: softmax weights
  AttentionScoresFn attention_scores;                                  // attention: Q.K, float keys
  bool (*attention_scores_q)(GgmlType kt, const uint8_t* K, size_t row_bytes, int64_t hd, int64_t n,
                             const Activations& q, float* s, int64_t lds);  // Q.K, q8_0 / q4_0 keys
  float (*scale_max)(float* s, int64_t n, float scale, float init);     // attention: scaled scores, max
  // Activations of the basic types (blocks of 32): QuantizeQ8's values, bit for bit.
  void (*quantize_q8)(const float* x, int64_t k, int8_t* qs, float* d, float* ds, int16_t* bs);
  // Activations of the k-quants (one scale per super-block of 256): QuantizeQ8's values, bit for bit.
  void (*quantize_q8k)(const float* x, int64_t k, int8_t* qs, float* d, float* ds, int16_t* bs);
  void (*silu_mul)(float* g, const float* u, int64_t n);                // the FFN's silu(gate) * up
  // Activations for f16 / bf16 weights: x rounded to 16 bits as quant::FloatToHalf / FloatToBHalf do, bit
  // for bit (NaN and subnormals too), the bits in h and the values they stand for in f.
  void (*round_to_half)(GgmlType wt, const float* x, int64_t n, uint16_t* h, float* f);
  void (*rms_norm)(const float* x, const float* w, int64_t n, float eps, float* out);  // RmsNorm's bits
  // gemma's gelu(gate) * up: GeluTable read at the F16C rounding of x by a gather (RefGeluMul's bits).
  void (*gelu_mul)(float* g, const float* u, int64_t n, const float* table);
  // gemma2's soft-cap (kernels.h SoftcapMax): tanh in double from an exp polynomial, rounded to float.
  float (*softcap_max)(float* s, int64_t n, float scale, float cap, float init);
};
namespace avx2 { const X86Kernels& Kernels(); }
// The CPU has AVX512-BF16 (vdpbf16ps): the avx512 build then runs bf16 weights by it.
bool X86HasAvx512Bf16();
namespace avx512 { const X86Kernels& Kernels(); }
// What each Arm file (arm/neon_kernels.inc, compiled once per variant) provides: neon_i8mm is built with
// +dotprod+i8mm (smmla for the basic formats) and used when HWCAP2 has i8mm; neon_dotprod is built with
// +dotprod (sdot) and used when HWCAP has asimddp; neon is plain Armv8-A Advanced SIMD, which every
// AArch64 CPU has (Cortex-A53/A72, Raspberry Pi 3/4).
struct NeonKernels {
  MatMulFn (*matmul)(GgmlType wt);                                    // nullptr: the type falls back to ref
  void (*half_to_float)(const uint16_t* h, float* f, int64_t n);
  void (*dequantize)(GgmlType t, const uint8_t* src, float* y, int64_t nb);  // q8_0, q4_0 blocks
  AccumulateRowsFn accumulate_rows;
  float (*exp_sub_sum)(const float* s, float mx, float* w, int64_t n);
  AttentionScoresFn attention_scores;
  void (*gelu_mul)(float* g, const float* u, int64_t n, const float* table);  // as X86Kernels
  float (*softcap_max)(float* s, int64_t n, float scale, float cap, float init);  // as X86Kernels
};
namespace neon { const NeonKernels& Kernels(); }
namespace neon_dotprod { const NeonKernels& Kernels(); }
namespace neon_i8mm { const NeonKernels& Kernels(); }
// The Arm variant in use (HWCAP, HWCAP2); false off Arm.
bool NeonHasDotprod();
bool NeonHasI8mm();
// The types the i8mm build runs by smmla (q4_0, q4_1, q5_0, q5_1, q8_0).
bool NeonI8mmType(GgmlType wt);

}  // namespace edgedecode::kernels::detail
