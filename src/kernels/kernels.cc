// ISA selection, activation preparation and the MatMul dispatcher.
#include "kernels/kernels.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "kernels/internal.h"
#include "quant/blocks.h"
#include "quant/quant.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

namespace edgedecode::kernels {
namespace {

// The x86 SIMD table of an ISA, or nullptr (ref, neon, or not an x86 build).
const detail::X86Kernels* X86For(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx2) return &detail::avx2::Kernels();
  if (isa == Isa::kAvx512) return &detail::avx512::Kernels();
#endif
  (void)isa;
  return nullptr;
}

// The Arm table of an ISA, or nullptr: the i8mm build where HWCAP2 says smmla exists, else the dotprod
// build where HWCAP says sdot exists, else plain NEON.
const detail::NeonKernels* NeonFor(Isa isa) {
#if defined(__aarch64__)
  if (isa == Isa::kNeon) {
    if (detail::NeonHasI8mm()) return &detail::neon_i8mm::Kernels();
    return detail::NeonHasDotprod() ? &detail::neon_dotprod::Kernels() : &detail::neon::Kernels();
  }
#endif
  (void)isa;
  return nullptr;
}

detail::MatMulFn KernelFor(Isa isa, GgmlType wt) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->matmul(wt);
  if (const detail::NeonKernels* n = NeonFor(isa)) return n->matmul(wt);
  return nullptr;
}

using QuantizeFn = void (*)(const float* x, int64_t k, int8_t* qs, float* d, float* ds, int16_t* bs);

// The SIMD activation quantizer for (isa, weight type, k), or nullptr: detail::QuantizeQ8 (scalar) runs.
QuantizeFn SimdQuantizer(Isa isa, GgmlType wt, int64_t k) {
  const detail::X86Kernels* x86 = X86For(isa);
  if (x86 == nullptr || !detail::UsesQ8(wt)) return nullptr;
  if (TypeTraits(wt).block_size == 256) return k % 256 == 0 ? x86->quantize_q8k : nullptr;
  return k % 32 == 0 ? x86->quantize_q8 : nullptr;
}

}  // namespace

std::string ActivationQuantizerName(Isa isa, GgmlType wt, int64_t k) {
  if (wt == GgmlType::kF16) return std::string("round to f16") + (X86For(isa) != nullptr ? ", f16c" : ", scalar");
  if (wt == GgmlType::kBF16) return std::string("round to bf16") + (X86For(isa) != nullptr ? ", avx2" : ", scalar");
  if (!detail::UsesQ8(wt)) return "none";
  const std::string blocks = TypeTraits(wt).block_size == 256 ? "q8 blocks of 32, one scale per 256" : "q8 blocks of 32";
  if (isa == Isa::kRef) return blocks + ", expanded to float (ref)";
  if (SimdQuantizer(isa, wt, k) == nullptr) return blocks + ", scalar";
  // The AVX-512 build has its own quantizer for the basic types (x86_kernels.inc); the k-quants' is AVX2.
  return blocks + (isa == Isa::kAvx512 && TypeTraits(wt).block_size == 32 ? ", avx512" : ", avx2");
}

bool detail::NeonHasDotprod() {
#if defined(__aarch64__) && defined(__linux__)
  // Read once: the answer cannot change while the process runs.
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
#elif defined(__ARM_FEATURE_DOTPROD)
  return true;  // the baseline of this build has it
#else
  return false;
#endif
}

bool detail::X86HasAvx512Bf16() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

bool detail::NeonHasI8mm() {
#if defined(__aarch64__) && defined(__linux__)
  // smmla is optional from Armv8.2; the build is also compiled with sdot, so both must be there.
  static const bool has = NeonHasDotprod() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
  return has;
#else
  return false;
#endif
}

bool detail::NeonI8mmType(GgmlType wt) {
  return wt == GgmlType::kQ4_0 || wt == GgmlType::kQ4_1 || wt == GgmlType::kQ5_0 || wt == GgmlType::kQ5_1 ||
         wt == GgmlType::kQ8_0;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kRef: return "ref";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

#if defined(__x86_64__)
// clang 14 (the fuzz build's compiler, fuzz/) knows no "f16c" in __builtin_cpu_supports: CPUID leaf 1, ECX.
static bool HasF16c() {
#if defined(__clang__) && __clang_major__ < 15
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
#else
  return __builtin_cpu_supports("f16c");
#endif
}
#endif

bool IsaAvailable(Isa isa) {
  switch (isa) {
    case Isa::kRef: return true;
#if defined(__x86_64__)
    // __builtin_cpu_supports also checks that the OS saves the YMM/ZMM state (XCR0).
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
    case Isa::kAvx512:
      return IsaAvailable(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
#endif
#if defined(__aarch64__)
#if defined(__linux__)
    // Advanced SIMD is part of the AArch64 base; HWCAP still says so where an OS could turn it off.
    case Isa::kNeon: return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
    case Isa::kNeon: return true;
#endif
#endif
    default: return false;
  }
}

Result<Isa> ResolveIsa(std::string_view name) {
  if (name == "auto") {
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kNeon})
      if (IsaAvailable(isa)) return isa;
    return Isa::kRef;
  }
  for (Isa isa : {Isa::kRef, Isa::kAvx2, Isa::kAvx512, Isa::kNeon}) {
    if (name == IsaName(isa)) {
      if (!IsaAvailable(isa))
        return InvalidArgument(std::string("--kernels ") + std::string(name) +
                               ": this CPU (or this build) lacks that instruction set");
      return isa;
    }
  }
  return InvalidArgument("--kernels '" + std::string(name) +
                         "': expected one of ref, auto, avx2, avx512, neon");
}

void Activations::Prepare(Isa isa, GgmlType weight_type, const float* X, int64_t m, int64_t k) {
  Begin(isa, weight_type, m, k);
  Fill(X, 0, m);
}

void Activations::Begin(Isa isa, GgmlType weight_type, int64_t m, int64_t k) {
  isa_ = isa;
  wt_ = weight_type;
  m_ = m;
  k_ = k;
  quantized_ = detail::UsesQ8(weight_type) && KernelFor(isa, weight_type) != nullptr;
  assert(!quantized_ || k % 32 == 0);
  // Resizing keeps capacity: no allocation once warm.
  const bool q8 = detail::UsesQ8(weight_type) && k % 32 == 0;
  if (!quantized_) xf_.resize(static_cast<size_t>(m * k));
  if (weight_type == GgmlType::kF16 || weight_type == GgmlType::kBF16) xh_.resize(static_cast<size_t>(m * k));
  if (q8) {
    qs_.resize(static_cast<size_t>(m * k));
    d_.resize(static_cast<size_t>(m * (k / 32)));
    ds_.resize(static_cast<size_t>(m * (k / 32)));
    bs_.resize(static_cast<size_t>(m * (k / 16)));
    if (weight_type == GgmlType::kQ4_0) c8_.resize(static_cast<size_t>(m * (k / 32)));
    if (weight_type == GgmlType::kQ6_K) c32_.resize(static_cast<size_t>(m * (k / 16)));
  }
  // Sized (or emptied) on every Begin: q4_chunk8 answers from it.
  const bool chunks = weight_type == GgmlType::kQ4_0 && isa == Isa::kAvx512 && quantized_;
  const size_t chunk_bytes = chunks ? static_cast<size_t>((m / 8) * (k / 32) * kQ4Chunk8Bytes) : 0;
  qi_buf_.resize(chunk_bytes > 0 ? chunk_bytes + 64 : 0);
}

void Activations::Fill(const float* X, int64_t j0, int64_t j1) {
  const int64_t k = k_;
  const GgmlType wt = wt_;
  if (wt == GgmlType::kF16 || wt == GgmlType::kBF16) {
    // llama.cpp's dot product for 16-bit weights takes 16-bit activations (its vec_dot_type): round
    // them the same way, so that both engines compute the same function (round to nearest even).
    const size_t i0 = static_cast<size_t>(j0 * k);
    const detail::X86Kernels* x86 = X86For(isa_);
    (x86 != nullptr ? x86->round_to_half : &detail::RoundToHalfScalar)(wt, X + i0, (j1 - j0) * k, xh_.data() + i0,
                                                                      xf_.data() + i0);
    return;
  }
  if (!detail::UsesQ8(wt) || k % 32 != 0) {
    std::copy(X + j0 * k, X + j1 * k, xf_.begin() + j0 * k);
    return;
  }
  const QuantizeFn simd = SimdQuantizer(isa_, wt, k);
  for (int64_t j = j0; j < j1; ++j) {
    if (simd != nullptr)
      simd(X + j * k, k, qs_.data() + j * k, d_.data() + j * (k / 32), ds_.data() + j * (k / 32),
           bs_.data() + j * (k / 16));
    else
      detail::QuantizeQ8(wt, X + j * k, k, qs_.data() + j * k, d_.data() + j * (k / 32), ds_.data() + j * (k / 32),
                         bs_.data() + j * (k / 16));
    if (wt == GgmlType::kQ6_K) {
      const int16_t* bs = bs_.data() + j * (k / 16);
      int32_t* c32 = c32_.data() + j * (k / 16);
      for (int64_t i = 0; i < k / 16; ++i) c32[i] = -32 * bs[i];
    }
    if (wt == GgmlType::kQ4_0) {
      const int16_t* bs = bs_.data() + j * (k / 16);
      int32_t* c8 = c8_.data() + j * (k / 32);
      for (int64_t b = 0; b < k / 32; ++b) c8[b] = -8 * (bs[2 * b] + bs[2 * b + 1]);
      if (q4_chunk8(j / 8) != nullptr) {  // column j's slots in its chunk
        const float* d = d_.data() + j * (k / 32);
        const int8_t* q = qs_.data() + j * k;
        uint8_t* o = qi_buf_.data() + ChunkOffset() + (j / 8) * (k / 32) * kQ4Chunk8Bytes;
        const int col = static_cast<int>(j % 8);
        for (int64_t b = 0; b < k / 32; ++b, o += kQ4Chunk8Bytes) {
          std::memcpy(o + Q4Chunk8QsOffset(col), q + 32 * b, 32);
          std::memcpy(o + Q4Chunk8ScaleOffset(col), d + b, 4);
          std::memcpy(o + Q4Chunk8SumOffset(col), c8 + b, 4);
        }
      }
    }
    if (quantized_) continue;
    // The reference path computes the same function as the integer paths: the activations are
    // quantized as for them, then expanded back to float for the float dot product.
    for (int64_t i = 0; i < k; ++i)
      xf_[static_cast<size_t>(j * k + i)] = d_[static_cast<size_t>(j * (k / 32) + i / 32)] * qs_[static_cast<size_t>(j * k + i)];
  }
}

void detail::RoundToHalfScalar(GgmlType wt, const float* x, int64_t n, uint16_t* h, float* f) {
  if (wt == GgmlType::kBF16) {
    for (int64_t i = 0; i < n; ++i) h[i] = quant::FloatToBHalf(x[i]), f[i] = quant::BHalfToFloat(h[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) h[i] = quant::FloatToHalf(x[i]), f[i] = quant::HalfToFloat(h[i]);
}

void MatMul(Isa isa, GgmlType wt, const void* W, int64_t k, int64_t r0, int64_t r1,
            const Activations& x, float* Y, int64_t ldy) {
  MatMulStrided(isa, wt, W, RowBytes(wt, k), k, r0, r1, x, Y, ldy);
}

void MatMulStrided(Isa isa, GgmlType wt, const void* W, size_t row_bytes, int64_t k, int64_t r0, int64_t r1,
                   const Activations& x, float* Y, int64_t ldy) {
  assert(x.isa() == isa && x.weight_type() == wt && x.k() == k);
  if (r1 <= r0 || x.m() == 0) return;
  const auto* w = static_cast<const uint8_t*>(W);
  detail::MatMulFn fn = KernelFor(isa, wt);
  if (fn == nullptr || (detail::UsesQ8(wt) && !x.quantized())) {
    detail::RefMatMul(wt, w, row_bytes, k, r0, r1, x, Y, ldy);
    return;
  }
  fn(w, row_bytes, k, r0, r1, x, Y, ldy);
}

bool CanPack(Isa isa, GgmlType t, int64_t rows, int64_t k) {
  if (isa != Isa::kAvx2 && isa != Isa::kAvx512) return false;
  if (rows <= 0 || rows % 8 != 0) return false;
  if (t == GgmlType::kQ4_0) return k % 32 == 0;
  if (t == GgmlType::kQ8_0) return isa == Isa::kAvx512 && k % 32 == 0;  // a 512-bit kernel only
  if (t == GgmlType::kQ4_K || t == GgmlType::kQ6_K) return k % 256 == 0;
  return false;
}

size_t PackedBytes(GgmlType t, int64_t rows, int64_t k) {
  const auto groups = static_cast<size_t>(rows / 8);
  if (t == GgmlType::kQ4_K) return groups * static_cast<size_t>(k / 256) * detail::kQ4Kx8Bytes;
  if (t == GgmlType::kQ6_K) return groups * static_cast<size_t>(k / 256) * detail::kQ6Kx8Bytes;
  if (t == GgmlType::kQ8_0) return groups * static_cast<size_t>(k / 32) * detail::kQ8x8BlockBytes;
  return groups * static_cast<size_t>(k / 32) * detail::kQ4x8BlockBytes;
}

namespace {

// The walk every packed layout shares: per group of 8 rows, per step (block or super-block) of the row,
// write_row(dst, block of row r, r) fills row r's part of the step's step_bytes bytes at dst.
template <class Block, class WriteRow>
void PackBy8(const void* W, int64_t rows, int64_t steps, size_t step_bytes, uint8_t* dst, WriteRow write_row) {
  const auto* src = static_cast<const Block*>(W);
  for (int64_t g = 0; g < rows / 8; ++g)
    for (int64_t s = 0; s < steps; ++s, dst += step_bytes)
      for (int r = 0; r < 8; ++r) write_row(dst, src[(g * 8 + r) * steps + s], r);
}

// q4_0: pairs of groups (16 rows) while 16 rows remain, then a lone group; per block of G rows (16 or 8),
// the G fp16 scales, then 4 vectors of G rows x 4 bytes.
void PackQ4_0(const void* W, int64_t rows, int64_t k, uint8_t* dst) {
  const auto* src = static_cast<const quant::BlockQ4_0*>(W);
  const int64_t nb = k / 32;
  for (int64_t r0 = 0; r0 < rows;) {
    const int G = r0 + 16 <= rows ? 16 : 8;
    for (int64_t b = 0; b < nb; ++b, dst += 18 * G) {
      for (int r = 0; r < G; ++r) {
        const quant::BlockQ4_0& blk = src[(r0 + r) * nb + b];
        std::memcpy(dst + 2 * r, &blk.d, 2);
        for (int v = 0; v < 4; ++v) std::memcpy(dst + 2 * G + 4 * G * v + 4 * r, blk.qs + 4 * v, 4);
      }
    }
    r0 += G;
  }
}

void PackQ8_0x8(const void* W, int64_t rows, int64_t k, uint8_t* dst) {
  PackBy8<quant::BlockQ8_0>(W, rows, k / 32, detail::kQ8x8BlockBytes, dst,
                            [](uint8_t* d, const quant::BlockQ8_0& blk, int r) {
                              std::memcpy(d + 2 * r, &blk.d, 2);
                              for (int i = 0; i < 32; ++i) d[16 + 32 * r + i] = static_cast<uint8_t>(blk.qs[i] + 128);
                            });
}

void PackQ4_Kx8(const void* W, int64_t rows, int64_t k, uint8_t* dst) {
  PackBy8<quant::BlockQ4_K>(W, rows, k / 256, detail::kQ4Kx8Bytes, dst, [](uint8_t* d, const quant::BlockQ4_K& B, int r) {
    std::memcpy(d + 2 * r, &B.d, 2);
    std::memcpy(d + 16 + 2 * r, &B.dmin, 2);
    for (int i = 0; i < 8; ++i) {
      uint8_t sc, mn;
      quant::GetScaleMinK4(i, B.scales, &sc, &mn);
      d[32 + 8 * i + r] = sc;
      d[96 + 16 * (i / 2) + 2 * r + i % 2] = mn;
    }
    for (int p = 0; p < 4; ++p)
      for (int v = 0; v < 8; ++v) std::memcpy(d + 160 + 256 * p + 32 * v + 4 * r, B.qs + 32 * p + 4 * v, 4);
  });
}

void PackQ6_Kx8(const void* W, int64_t rows, int64_t k, uint8_t* dst) {
  PackBy8<quant::BlockQ6_K>(W, rows, k / 256, detail::kQ6Kx8Bytes, dst, [](uint8_t* d, const quant::BlockQ6_K& B, int r) {
    constexpr int kQ = 144;
    std::memcpy(d + 2 * r, &B.d, 2);
    for (int i = 0; i < 16; ++i) std::memcpy(d + 16 + 8 * i + r, &B.scales[i], 1);
    for (int n = 0; n < 2; ++n) {
      for (int u = 0; u < 8; ++u) {
        uint8_t* v = d + kQ + 768 * n + 96 * u + 4 * r;
        std::memcpy(v, B.ql + 64 * n + 4 * u, 4);
        std::memcpy(v + 32, B.ql + 64 * n + 32 + 4 * u, 4);
        std::memcpy(v + 64, B.qh + 32 * n + 4 * u, 4);
      }
    }
  });
}

}  // namespace

void Pack(GgmlType t, const void* W, int64_t rows, int64_t k, void* out) {
  assert(t == GgmlType::kQ4_0 || t == GgmlType::kQ8_0 || t == GgmlType::kQ4_K || t == GgmlType::kQ6_K);
  if (t == GgmlType::kQ8_0) return PackQ8_0x8(W, rows, k, static_cast<uint8_t*>(out));
  if (t == GgmlType::kQ4_K) return PackQ4_Kx8(W, rows, k, static_cast<uint8_t*>(out));
  if (t == GgmlType::kQ6_K) return PackQ6_Kx8(W, rows, k, static_cast<uint8_t*>(out));
  PackQ4_0(W, rows, k, static_cast<uint8_t*>(out));
}

void MatMulPacked(Isa isa, GgmlType t, const void* P, int64_t rows, int64_t k, int64_t r0, int64_t r1,
                  const Activations& x, float* Y, int64_t ldy) {
  assert(x.isa() == isa && x.weight_type() == t && x.k() == k && x.quantized());
  assert(r0 % 8 == 0 && r1 % 8 == 0 && r1 <= rows);
  if (r1 <= r0 || x.m() == 0) return;
  const detail::X86Kernels* x86 = X86For(isa);
  assert(x86 != nullptr);
  const detail::PackedFn fn = x86->packed(t);
  assert(fn != nullptr);
  fn(static_cast<const uint8_t*>(P), rows, k, r0, r1, x, Y, ldy);
}

void HalfToFloatRow(Isa isa, const uint16_t* h, float* f, int64_t n) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->half_to_float(h, f, n);
  if (const detail::NeonKernels* x = NeonFor(isa)) return x->half_to_float(h, f, n);
  detail::RefHalfToFloatRow(h, f, n);
}

void DequantizeRow(Isa isa, GgmlType t, const void* src, float* dst, int64_t n) {
  const bool simd = (t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0) && n % 32 == 0;
  if (const detail::X86Kernels* x = X86For(isa); x != nullptr && simd)
    return x->dequantize(t, static_cast<const uint8_t*>(src), dst, n / 32);
  if (const detail::NeonKernels* x = NeonFor(isa); x != nullptr && simd)
    return x->dequantize(t, static_cast<const uint8_t*>(src), dst, n / 32);
  quant::DequantizeRow(t, src, dst, n);
}

void AccumulateRows(Isa isa, GgmlType vt, const void* V, size_t row_bytes, int64_t hd, int64_t n,
                    const float* w, int64_t ldw, int64_t m, float* acc, int64_t ldacc) {
  const auto* v = static_cast<const uint8_t*>(V);
  if (const detail::X86Kernels* x = X86For(isa); x != nullptr && x->accumulate_rows(vt, v, row_bytes, hd, n, w, ldw, m, acc, ldacc))
    return;
  if (const detail::NeonKernels* x = NeonFor(isa); x != nullptr && x->accumulate_rows(vt, v, row_bytes, hd, n, w, ldw, m, acc, ldacc))
    return;
  detail::RefAccumulateRows(vt, v, row_bytes, hd, n, w, ldw, m, acc, ldacc);
}

void AttentionScores(Isa isa, GgmlType kt, const void* K, size_t row_bytes, int64_t hd, int64_t n, const float* q,
                     int64_t ldq, int64_t m, float* s, int64_t lds) {
  assert(kt == GgmlType::kF32 || kt == GgmlType::kF16 || kt == GgmlType::kBF16);
  const auto* k = static_cast<const uint8_t*>(K);
  if (const detail::X86Kernels* x = X86For(isa); x != nullptr && x->attention_scores(kt, k, row_bytes, hd, n, q, ldq, m, s, lds))
    return;
  if (const detail::NeonKernels* x = NeonFor(isa); x != nullptr && x->attention_scores(kt, k, row_bytes, hd, n, q, ldq, m, s, lds))
    return;
  detail::RefAttentionScores(kt, k, row_bytes, hd, n, q, ldq, m, s, lds);
}

void AttentionScoresQ(Isa isa, GgmlType kt, const void* K, size_t row_bytes, int64_t hd, int64_t n,
                      const Activations& q, float* s, int64_t lds) {
  const auto* k = static_cast<const uint8_t*>(K);
  if (const detail::X86Kernels* x = X86For(isa); x != nullptr && x->attention_scores_q(kt, k, row_bytes, hd, n, q, s, lds))
    return;
  MatMulStrided(isa, kt, K, row_bytes, hd, 0, n, q, s, lds);
}

float ScaleMax(Isa isa, float* s, int64_t n, float scale, float init) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->scale_max(s, n, scale, init);
  return detail::RefScaleMax(s, n, scale, init);
}

float ExpSubSum(Isa isa, const float* s, float mx, float* w, int64_t n) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->exp_sub_sum(s, mx, w, n);
  if (const detail::NeonKernels* x = NeonFor(isa)) return x->exp_sub_sum(s, mx, w, n);
  return detail::RefExpSubSum(s, mx, w, n);
}

void SiluMul(Isa isa, float* g, const float* u, int64_t n) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->silu_mul(g, u, n);
  detail::RefSiluMul(g, u, n);
}

void GeluMul(Isa isa, float* g, const float* u, int64_t n) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->gelu_mul(g, u, n, detail::GeluTable());
  if (const detail::NeonKernels* x = NeonFor(isa)) return x->gelu_mul(g, u, n, detail::GeluTable());
  detail::RefGeluMul(g, u, n);
}

float SoftcapMax(Isa isa, float* s, int64_t n, float scale, float cap, float init) {
  if (const detail::X86Kernels* x = X86For(isa)) return x->softcap_max(s, n, scale, cap, init);
  if (const detail::NeonKernels* x = NeonFor(isa)) return x->softcap_max(s, n, scale, cap, init);
  return detail::RefSoftcapMax(s, n, scale, cap, init);
}

void Softcap(Isa isa, float* s, int64_t n, float cap) { SoftcapMax(isa, s, n, 1.0f, cap, -INFINITY); }

void RmsNorm(Isa isa, const float* x, const float* w, int64_t n, float eps, float* out) {
  if (const detail::X86Kernels* k = X86For(isa)) return k->rms_norm(x, w, n, eps, out);
  detail::RefRmsNorm(x, w, n, eps, out);
}

std::string RmsNormName(Isa isa) {
  return X86For(isa) != nullptr ? IsaName(isa) : "scalar";
}

std::string SiluMulName(Isa isa) {
  return X86For(isa) != nullptr ? std::string("silu*mul ") + IsaName(isa) + " (exp in double)" : "silu*mul scalar";
}

std::string GeluMulName(Isa isa) {
  if (X86For(isa) != nullptr) return std::string("gelu*mul ") + IsaName(isa) + " (f16c + gather from llama.cpp's f16 table)";
  if (NeonFor(isa) != nullptr) return "gelu*mul neon (fcvtn + llama.cpp's f16 table)";
  return "gelu*mul scalar (llama.cpp's f16 table)";
}

std::string SoftcapName(Isa isa) {
  return X86For(isa) != nullptr || NeonFor(isa) != nullptr ? std::string("softcap ") + IsaName(isa) + " (tanh in double)"
                                                           : "softcap scalar (std::tanh)";
}

std::string KernelName(Isa isa, GgmlType wt) {
  const std::string t = TypeName(static_cast<uint32_t>(wt));
  if (isa == Isa::kRef)
    return "ref " + t + (wt == GgmlType::kQ4_0 ? " x q8_0 (integer block sums, f32 accumulate)" : " (dequantize, f64 accumulate)");
  if (KernelFor(isa, wt) == nullptr)
    return "ref " + t + " (no " + IsaName(isa) + " kernel for this type)";
  const std::string act = detail::UsesQ8(wt) ? " x q8_0" : " x f32";
  switch (isa) {
    case Isa::kAvx2: return "avx2 " + t + act;
    case Isa::kAvx512:
      if (wt == GgmlType::kBF16 && detail::X86HasAvx512Bf16()) return "avx512-bf16 bf16 x bf16 (vdpbf16ps)";
      return (detail::UsesQ8(wt) ? "avx512-vnni " : "avx512 ") + t + act;
    case Isa::kNeon:
      if (detail::NeonHasI8mm() && detail::NeonI8mmType(wt)) return "neon-i8mm " + t + act;
      return (detail::UsesQ8(wt) ? (detail::NeonHasDotprod() ? "neon-dotprod " : "neon-smull ") : "neon ") + t + act;
    default: return t;
  }
}

}  // namespace edgedecode::kernels
