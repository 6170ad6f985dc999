// Matrix-vector / small-matrix kernels for decode and verify: Y = W * X^T with W stored in a GGUF type
// (llama.cpp block layouts, unchanged) and X in float. One scalar reference path (always there) and SIMD
// paths per ISA chosen at run time (cpuid on x86, HWCAP on Arm); the binary runs on any x86-64 / aarch64.
//
// Usage per matmul:   x.Prepare(isa, wt, X, m, k);   then, from each thread, on disjoint row ranges:
//                     MatMul(isa, wt, W, k, r0, r1, x, Y, ldy);
// Thread-safety: Activations is written by Prepare (one thread) and then read-only; MatMul only reads W and
// x and writes rows [r0, r1) of each column of Y, so threads with disjoint row ranges never conflict.
// Determinism: each output element is computed by the same instruction sequence whatever the row split,
// so results are bit-identical for any thread count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"

namespace edgedecode::kernels {

enum class Isa { kRef, kAvx2, kAvx512, kNeon };
const char* IsaName(Isa isa);                       // "ref", "avx2", "avx512", "neon"
// "auto" = best this CPU supports (cpuid / HWCAP); a named ISA the CPU lacks = InvalidArgument error.
Result<Isa> ResolveIsa(std::string_view name);
bool IsaAvailable(Isa isa);

// Activations prepared once per matmul (quantized to 8-bit blocks for the integer paths, or kept as
// float for ref/f32/f16/bf16 weights), shared read-only by the threads that split the rows.
// Integer paths use blocks of 32: qs int8 [m][k], d = amax/127 float [m][k/32], ds = d*sum(qs) float
// [m][k/32], bsum16 = sum of each 16 qs int16 [m][k/16] (for the k-quants with 16-element sub-blocks).
// Buffers grow to the largest m*k seen and are reused: no allocation per call once warm.
class Activations {
 public:
  // X: m rows of k floats, row-major (m = tokens, k = input features).
  void Prepare(Isa isa, GgmlType weight_type, const float* X, int64_t m, int64_t k);
  // Prepare in two steps, so that threads can share the work: Begin (one thread) sizes the buffers,
  // then Fill(X, j0, j1) prepares columns [j0, j1); Fill calls on disjoint ranges may run concurrently.
  void Begin(Isa isa, GgmlType weight_type, int64_t m, int64_t k);
  void Fill(const float* X, int64_t j0, int64_t j1);

  Isa isa() const { return isa_; }
  GgmlType weight_type() const { return wt_; }
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  bool quantized() const { return quantized_; }
  // Float path: column j, k floats.
  const float* xf(int64_t j) const { return xf_.data() + j * k_; }
  // f16 / bf16 weights only: column j as the fp16 / bf16 values xf holds (half the bytes: the f16
  // prefill tiles, the vdpbf16ps kernel).
  const uint16_t* xh(int64_t j) const { return xh_.data() + j * k_; }
  // Quantized path: column j.
  const int8_t* qs(int64_t j) const { return qs_.data() + j * k_; }
  const float* d(int64_t j) const { return d_.data() + j * (k_ / 32); }
  const float* ds(int64_t j) const { return ds_.data() + j * (k_ / 32); }
  const int16_t* bsum16(int64_t j) const { return bs_.data() + j * (k_ / 16); }
  // q4_0 weights only: -8 * sum of each block's 32 qs, the integer correction that turns the dot with
  // nibbles read as 0..15 into the dot with the weights (nibble - 8). Precomputed so that a kernel can
  // start each block's sum from it (one broadcast) instead of subtracting it per row group.
  const int32_t* neg8sum(int64_t j) const { return c8_.data() + j * (k_ / 32); }
  // q6_K weights only: -32 * each 16 activations' sum (bsum16), the correction for the 6-bit weights read
  // as 0..63, as an int32 a kernel starts a sub-block's dot from (one broadcast).
  const int32_t* neg32sum16(int64_t j) const { return c32_.data() + j * (k_ / 16); }
  // q4_0 weights on AVX-512, whole chunks of 8 columns: the same values as qs, d and neg8sum, interleaved
  // block by block so that the 16-row kernel reads all 8 columns through one pointer (with 8 column
  // pointers it ran out of general registers): chunk c (columns 8c..8c+7), block b is kQ4Chunk8Bytes at
  // q4_chunk8(c) + b * kQ4Chunk8Bytes (64-byte aligned), two halves of 192 bytes: columns 4h..4h+3 at
  // 192h, their qs[4][32], then d[4] (float), then neg8sum[4] (int32), then 16 bytes unused. The halves
  // are whole cache lines so that two threads filling columns 0-3 and 4-7 share none (Context fills
  // by 4 columns per thread).
  static constexpr int64_t kQ4Chunk8Bytes = 2 * 192;
  static constexpr int64_t Q4Chunk8QsOffset(int j) { return 192 * (j / 4) + 32 * (j % 4); }
  static constexpr int64_t Q4Chunk8ScaleOffset(int j) { return 192 * (j / 4) + 128 + 4 * (j % 4); }
  static constexpr int64_t Q4Chunk8SumOffset(int j) { return 192 * (j / 4) + 144 + 4 * (j % 4); }
  // nullptr where not prepared (other ISA or weight type, or columns 8c..8c+7 not all present).
  const uint8_t* q4_chunk8(int64_t c) const {
    return qi_buf_.empty() || 8 * (c + 1) > m_ ? nullptr : qi_buf_.data() + ChunkOffset() + c * (k_ / 32) * kQ4Chunk8Bytes;
  }

 private:
  Isa isa_ = Isa::kRef;
  GgmlType wt_ = GgmlType::kF32;
  int64_t m_ = 0, k_ = 0;
  bool quantized_ = false;
  std::vector<float> xf_;    // [m][k]
  std::vector<uint16_t> xh_; // [m][k], f16 and bf16 weights only (their 16-bit activations)
  std::vector<int8_t> qs_;   // [m][k]
  std::vector<float> d_;     // [m][k/32]
  std::vector<float> ds_;    // [m][k/32]
  std::vector<int16_t> bs_;  // [m][k/16]
  std::vector<int32_t> c8_;  // [m][k/32], q4_0 weights only
  std::vector<int32_t> c32_; // [m][k/16], q6_K weights only
  // q4_0 on AVX-512 only (empty otherwise): [m/8][k/32][kQ4Chunk8Bytes] from the first 64-byte boundary.
  std::vector<uint8_t> qi_buf_;
  size_t ChunkOffset() const { return (64 - reinterpret_cast<uintptr_t>(qi_buf_.data()) % 64) % 64; }
};

// How Activations::Fill quantizes the activations of weight type wt at input size k on isa, e.g.
// "q8 blocks of 32, avx2" (the SIMD quantizer), "round to f16, f16c" or "..., scalar" (for the
// profiler's kernel column).
std::string ActivationQuantizerName(Isa isa, GgmlType wt, int64_t k);

// Y[j*ldy + r] = dot(row r of W, row j of X) for r in [r0, r1), j in [0, m).
// W: rows of k elements of type wt, row stride RowBytes(wt, k). Thread-safe for disjoint row ranges.
// x must have been prepared with the same isa, wt and k.
void MatMul(Isa isa, GgmlType wt, const void* W, int64_t k, int64_t r0, int64_t r1,
            const Activations& x, float* Y, int64_t ldy);

// MatMul over rows of stride row_bytes instead of RowBytes(wt, k): the attention scores, where the rows
// are one KV head's slice of the cache rows (k = head_dim elements, stride = the whole cache row).
void MatMulStrided(Isa isa, GgmlType wt, const void* W, size_t row_bytes, int64_t k, int64_t r0, int64_t r1,
                   const Activations& x, float* Y, int64_t ldy);

// ---- attention over a KV cache, read in its stored type ----------------------------------------
// acc[j*ldacc + d] += sum over t = 0, 1, ..., n-1 (in that order, one fused multiply-add per term) of
// w[j*ldw + t] * V_t[d], for j < m, d < hd. V_t: hd elements of type vt at V + t*row_bytes; vt is f32,
// f16, bf16, or q8_0 / q4_0 with hd % 32 == 0, never materialized as a float copy of the cache: for those
// the term is (w * d) * q, the block scale d in the weight and q the integer element (q8: q, q4: nibble - 8).
// bf16: the weights rounded to bf16 first, so that each product is exact; the AVX512-BF16 path
// (vdpbf16ps) adds two positions' products per step, so it is within float rounding of the others, not
// bit-identical. Thread-safe: reads V and w, writes only acc.
void AccumulateRows(Isa isa, GgmlType vt, const void* V, size_t row_bytes, int64_t hd, int64_t n,
                    const float* w, int64_t ldw, int64_t m, float* acc, int64_t ldacc);
// s[j*lds + t] = sum over d < hd of q[j*ldq + d] * K_t[d], for t < n, j < m: the scores of m query heads
// against n float keys (kt f32, f16 or bf16; K_t: hd elements at K + t*row_bytes). The queries stay f32
// for f32 and f16 keys; for bf16 keys they are rounded to bf16 (llama.cpp's vec_dot_type for bf16, and
// what vdpbf16ps multiplies), every product exact. Quantized keys: AttentionScoresQ. SIMD paths sum in
// vector lanes then across them; ref in double. Thread-safe: reads K and q, writes only s.
void AttentionScores(Isa isa, GgmlType kt, const void* K, size_t row_bytes, int64_t hd, int64_t n, const float* q,
                     int64_t ldq, int64_t m, float* s, int64_t lds);
// The same scores over q8_0 / q4_0 keys (hd % 32 == 0) with the queries prepared by Activations for kt
// (q.m() heads, q.k() == hd): per position the sum over blocks of fma(integer block dot, d_k * d_q, acc).
// x86 has a positions-in-lanes kernel; elsewhere this is MatMulStrided (the same function; the q4_0 ref
// and x86 paths are bit-identical, q8_0 within float rounding).
void AttentionScoresQ(Isa isa, GgmlType kt, const void* K, size_t row_bytes, int64_t hd, int64_t n,
                      const Activations& q, float* s, int64_t lds);
// s[i] *= scale for i < n; returns the largest s[i] (after scaling) or `init` if larger: the softmax's
// scaled scores and their running maximum in one pass. Exact on every ISA (a product and a max per element).
float ScaleMax(Isa isa, float* s, int64_t n, float scale, float init);
// w[i] = exp(s[i] - mx) for i < n (s[i] <= mx: the softmax weights; w may be s); returns their sum. SIMD paths use a
// polynomial within 2 ulp of std::exp (0 below e^-87.3); ref uses std::exp and sums in order.
float ExpSubSum(Isa isa, const float* s, float mx, float* w, int64_t n);

// g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n: the FFN's gate activation. ref and
// NEON use std::exp; x86 SIMD computes exp in double and rounds it (std::exp's float value but for rare
// near-ties), then the same float expression. Element-wise on every path: the value of g[i] does not
// depend on n or on where the range starts.
void SiluMul(Isa isa, float* g, const float* u, int64_t n);
// g[i] = gelu(g[i]) * u[i] for i < n, gelu the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
// the gate activation of gemma's FFN, in llama.cpp's CPU arithmetic for f32 (its GELU_FP16 table, which
// ggml's f32 GELU and GEGLU read): 0 for x <= -10, x for x >= 10, else the f16 rounding of gelu(f16 rounding
// of x). The same bits on every ISA: ref converts and looks up per element; x86 converts 8 / 16 lanes by
// F16C and gathers from the table; NEON converts 4 lanes by fcvtn and loads the 4 entries. Element-wise.
void GeluMul(Isa isa, float* g, const float* u, int64_t n);
// s[i] = tanh(s[i] * scale * (1 / cap)) * cap for i < n (cap > 0), in that float order; returns the largest
// s[i] (after capping) or `init` if larger: gemma2's soft-capped attention scores with the softmax's running
// maximum in one pass (scale the attention scale), and with scale 1 its final-logit soft-cap (Softcap).
// ref uses std::tanh (glibc's tanhf, as llama.cpp: within 2 ulp of the true tanh). The SIMD paths (x86 8 / 16
// lanes, NEON 4) compute tanh(|a|) = (1 - e) / (1 + e), e = exp(-2|a|) by the SiLU gate's double polynomial,
// in double and round it to float: the correctly rounded tanh but for near-ties (kernels_parity_test: 0 of
// 400k inputs over every exponent differ from tanh in double rounded; 2 ulp at most from std::tanh); a for
// |a| < 2^-12 (where tanh(a) rounds to a), exactly +-1 from where tanh rounds to it (infinities included: exp
// clamped, no overflow), NaN for NaN. Element-wise: no value depends on n or on where the range starts.
float SoftcapMax(Isa isa, float* s, int64_t n, float scale, float cap, float init);
// x[i] = tanh(x[i] * (1 / cap)) * cap for i < n: SoftcapMax with scale 1 (the final logits).
void Softcap(Isa isa, float* x, int64_t n, float cap);
// out[i] = x[i] * scale * w[i], scale = 1 / sqrt(mean(x^2) + eps): RMSNorm of one row of n. The sum of
// squares is 8 partial sums in double (element i into sum i % 8, each in order), added as
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)); every path gives these bits (the squares of floats are exact in
// double, so a fused multiply-add changes nothing). out may be x.
void RmsNorm(Isa isa, const float* x, const float* w, int64_t n, float eps, float* out);
// "avx512", "avx2" or "scalar": for the profiler's kernel column.
std::string RmsNormName(Isa isa);
// How SiluMul runs on isa, for the profiler's kernel column: "silu*mul avx2 (exp in double)" or "silu*mul scalar".
std::string SiluMulName(Isa isa);
// How GeluMul and SoftcapMax run on isa, for the profiler's kernel column.
std::string GeluMulName(Isa isa);
std::string SoftcapName(Isa isa);

// ---- weights repacked at load by 8 rows (q4_0: pairs of 8): q4_0, q8_0, q4_K, q6_K --------------------
// The file keeps llama.cpp's layout; the repacked copy is internal to the x86 SIMD kernels (AVX2 and up,
// rows % 8 == 0; never the token embedding, which is read by rows). q4_0 and q4_K are repacked where
// llama.cpp's CPU backend repacks them, and every packed kernel sums each row in the order of its unpacked
// kernel (bit-identical). In the k-quant layouts one 32-byte vector holds 4 consecutive weight bytes of
// each of the 8 rows (row r at bytes 4r..4r+3; q4_0: 16 rows in 64 bytes), so an integer dot with 4
// activations broadcast leaves each row's sum in its own lane: no horizontal sums. The vectors lie in the
// order the kernels read them: a decode step streams each group front to back (an out-of-order walk
// defeats the hardware prefetchers from DRAM).
//
// q4_0, in pairs of groups (16 rows) while 16 rows remain, then (rows % 16 == 8) a lone group of 8; per
// block b of 32 columns of G rows (G = 16: 288 bytes, G = 8: 144, the same as the G original blocks): the
// G rows' fp16 scales, then 4 vectors of 4G bytes; vector v holds bytes 4v..4v+3 of each row's original
// qs, row r at 4r (low nibbles: elements 4v..4v+3, high nibbles: elements 16+4v..16+4v+3). So a pair's
// vector is one 512-bit load for the 16-row kernel, and one stream of bytes feeds 16 rows (two groups
// read side by side were two streams: the hardware prefetcher overlapped them worse).
//
// q8_0 (AVX-512 only), per group of 8 rows, per block b of 32 columns (272 bytes, the same as the 8 original
// blocks): the 8 rows' fp16 scales, then each row's 32 bytes in turn, stored + 128 (uint8): two rows per
// 512-bit vector, each row keeping the 8-lane order of the unpacked kernel (not rows in lanes).
//
// q4_K, per group of 8 rows, per super-block of 256 columns (1184 bytes; the 8 original blocks are 1152):
//   d[8], dmin[8]         fp16, row r at index r
//   scales[8][8]          uint8, [sub-block i][row r] (the 6-bit scales unpacked)
//   mins[4][8][2]         uint8, [pair q][row r][sub-block 2q, 2q+1] (the 6-bit mins unpacked)
//   qs[4][8][8][4]        [chunk p][vector v][row r][byte]: bytes 32p+4v..32p+4v+3 of row r's qs (low
//                         nibbles: elements 64p+4v.., sub-block 2p; high: 64p+32+4v.., sub-block 2p+1)
//
// q6_K, per group of 8 rows, per super-block of 256 columns (1680 bytes, the same as the 8 original blocks):
//   d[8]                  fp16
//   scales[16][8]         int8, [sub-block of 16][row r]
//   q[2][8][3][8][4]      [half n][vector u][ql lo, ql hi, qh][row r][byte]: bytes 64n+4u.., 64n+32+4u..
//                         of row r's ql and 32n+4u.. of its qh; together elements 128n + 32j + 4u..+3
//                         for j = 0..3 (ql-lo low nibbles, ql-hi low, ql-lo high, ql-hi high; qh bits 2j)
bool CanPack(Isa isa, GgmlType t, int64_t rows, int64_t k);
size_t PackedBytes(GgmlType t, int64_t rows, int64_t k);
// W: rows x k of type t in file layout; out: PackedBytes(t, rows, k) bytes. Requires CanPack.
void Pack(GgmlType t, const void* W, int64_t rows, int64_t k, void* out);
// As MatMul for a packed weight of `rows` rows (as given to Pack); r0 and r1 multiples of 8, r1 <= rows;
// x prepared for (isa, t, k).
void MatMulPacked(Isa isa, GgmlType t, const void* P, int64_t rows, int64_t k, int64_t r0, int64_t r1,
                  const Activations& x, float* Y, int64_t ldy);

// n fp16 values to float (exact; F16C on x86 SIMD ISAs, fcvtl on NEON). For the attention over an f16 cache.
void HalfToFloatRow(Isa isa, const uint16_t* h, float* f, int64_t n);
// n elements of a row of type t to float, the values quant::DequantizeRow gives (SIMD for q8_0 and q4_0
// on x86 and NEON, the KV cache types; quant::DequantizeRow otherwise).
void DequantizeRow(Isa isa, GgmlType t, const void* src, float* dst, int64_t n);

// Which kernel a weight type gets on an ISA (for -v logging), e.g. "avx512-vnni q4_0 x q8_0"; on Arm
// "neon-i8mm q4_0 x q8_0" (smmla, the basic formats on a CPU with i8mm), "neon-dotprod q4_0 x q8_0"
// (sdot) or "neon-smull q4_0 x q8_0" (a CPU without dotprod).
std::string KernelName(Isa isa, GgmlType wt);

}  // namespace edgedecode::kernels
