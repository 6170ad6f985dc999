// Microbenchmark (not a test): single-thread GB/s of kernels::MatMul on a TinyLlama ffn_down-sized
// matrix (2048 rows x k=5632) per weight type per ISA, m=1 (decode) and m=8 (verify of a draft), next to a
// read-bandwidth and a memcpy baseline. The matrix is replicated to exceed the L3 cache (copies are
// rotated), so the figures are DRAM streaming rates. First, the compute side of verify: the core's int8
// dot-product peak (independent vpdpbusd chains) beside the packed q4_0 kernel at m = 8 on a matrix that
// stays in L2, so verify's compute floor (K tokens' MACs / that rate) can be set against a decode step,
// and the same kernel on a matrix streamed from DRAM (the gap is what the memory side costs); medians.
// Usage: kernels_bench [seconds_per_case=0.5] [verify|act|attn|attnstream]   (verify: the compute-side lines
// only; act: the times of gemma's GELU gate and soft-caps per ISA, ActivationTimes; attn: the stages of
// decode attention per ISA, AttentionTimes, then AttentionStreamRates; attnstream: AttentionStreamRates alone)
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <sys/mman.h>

#include "kernels/kernels.h"
#include "quant/quant.h"

using namespace edgedecode;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int64_t kRows = 2048, kK = 5632;
constexpr size_t kTotal = size_t{512} << 20;  // bytes streamed per sweep over the copies

#if defined(__x86_64__)
// Read baseline with 256-bit loads (the kernels' own load width); AVX2 is checked before use.
constexpr const char* kSimdName = "avx2";
bool HasSimd() { return __builtin_cpu_supports("avx2"); }
__attribute__((target("avx2"))) uint64_t SumSimd(const uint64_t* p, size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i + 16 <= n; i += 16) {
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  return static_cast<uint64_t>(_mm256_extract_epi64(a, 0) + _mm256_extract_epi64(a, 3));
}
#elif defined(__aarch64__)
// Read baseline with 128-bit loads, the NEON kernels' width.
constexpr const char* kSimdName = "neon";
bool HasSimd() { return true; }
uint64_t SumSimd(const uint64_t* p, size_t n) {
  uint64x2_t a = vdupq_n_u64(0), b = a, c = a, d = a;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    a = vaddq_u64(a, vld1q_u64(p + i));
    b = vaddq_u64(b, vld1q_u64(p + i + 2));
    c = vaddq_u64(c, vld1q_u64(p + i + 4));
    d = vaddq_u64(d, vld1q_u64(p + i + 6));
  }
  return vaddvq_u64(vaddq_u64(vaddq_u64(a, b), vaddq_u64(c, d)));
}
#else
constexpr const char* kSimdName = "simd";
bool HasSimd() { return false; }
uint64_t SumSimd(const uint64_t*, size_t) { return 0; }
#endif

#if defined(__x86_64__)
// One peak probe loop: w and x broadcast into zmm31 / zmm30, then `steps` times 24 instructions `op` on
// accumulators zmm0..zmm23 (independent chains, enough to cover the instruction's latency).
#define ED_CHAIN(op, i) op " %%zmm30, %%zmm31, %%zmm" #i "\n\t"
#define ED_PEAK_LOOP(broadcast, op, steps, w, x)                                                                 \
  __asm__ volatile(broadcast " %[w], %%zmm31\n\t" broadcast " %[x], %%zmm30\n\t"                             \
                   "1:\n\t" ED_CHAIN(op, 0) ED_CHAIN(op, 1) ED_CHAIN(op, 2) ED_CHAIN(op, 3) ED_CHAIN(op, 4)     \
                   ED_CHAIN(op, 5) ED_CHAIN(op, 6) ED_CHAIN(op, 7) ED_CHAIN(op, 8) ED_CHAIN(op, 9) ED_CHAIN(op, 10) \
                   ED_CHAIN(op, 11) ED_CHAIN(op, 12) ED_CHAIN(op, 13) ED_CHAIN(op, 14) ED_CHAIN(op, 15)            \
                   ED_CHAIN(op, 16) ED_CHAIN(op, 17) ED_CHAIN(op, 18) ED_CHAIN(op, 19) ED_CHAIN(op, 20)            \
                   ED_CHAIN(op, 21) ED_CHAIN(op, 22) ED_CHAIN(op, 23) "dec %[n]\n\t"                               \
                   "jnz 1b\n\t"                                                                                  \
                   : [n] "+r"(steps)                                                                             \
                   : [w] "m"(w), [x] "m"(x)                                                                      \
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",     \
                     "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",   \
                     "xmm21", "xmm22", "xmm23", "xmm30", "xmm31", "cc")

// The int8 multiply-accumulate peak of one core: 24 independent accumulator chains (enough to cover the
// instruction's latency), one vpdpbusd each per step; 64 MACs per 512-bit instruction. Measured only on
// CPUs with AVX-512 VNNI (the kernels' fastest int8 path); elsewhere not probed.
// Written in assembly: as intrinsics over an array GCC kept the accumulators on the stack (a store and a
// load per instruction), which measured ~25% under the packed kernel itself.
bool HasInt8Probe() { return __builtin_cpu_supports("avx512vnni"); }
__attribute__((target("avx512f,avx512vnni"))) void Int8Zmm(long steps) {
  const int w = 0x03030303, x = 0x05050505;
  ED_PEAK_LOOP("vpbroadcastd", "vpdpbusd", steps, w, x);
}
// The float FMA peak of one core, the same way: 24 chains of 512-bit vfmadd231ps (16 MACs each), the
// ceiling of attention's arithmetic (the scores and the weighted V sum are f32 FMAs).
__attribute__((target("avx512f"))) void FmaZmm(long steps) {
  const float w = 0.999f, x = 1e-4f;
  ED_PEAK_LOOP("vbroadcastss", "vfmadd231ps", steps, w, x);
}
bool HasFmaProbe() { return __builtin_cpu_supports("avx512f"); }
bool BF16Available() { return __builtin_cpu_supports("avx512bf16"); }
#else
bool HasInt8Probe() { return false; }
void Int8Zmm(long) {}
bool HasFmaProbe() { return false; }
bool BF16Available() { return false; }
void FmaZmm(long) {}
#endif
constexpr double kInt8MacsPerStep = 24.0 * 64;  // Int8Zmm: 24 instructions of 64 MACs per step
constexpr double kFmaPerStep = 24.0;            // FmaZmm: 24 512-bit FMAs per step

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// GB/s of fn(i) moving `bytes` per call, over ~budget seconds: the best call, or with median set the
// median call (the verify lines: a pass over a model is many calls, not its luckiest one).
template <class F>
double Rate(size_t bytes, double budget, F fn, bool median = false) {
  std::vector<double> t;
  const auto start = Clock::now();
  int i = 0;
  while (Seconds(start, Clock::now()) < budget || i < 3) {
    const auto t0 = Clock::now();
    fn(i++);
    t.push_back(Seconds(t0, Clock::now()));
  }
  std::sort(t.begin(), t.end());
  return bytes / (median ? t[t.size() / 2] : t.front()) / 1e9;
}

// Median GMAC/s of the packed kernel of type t at m = kM on `rows` x 2048, per ISA that packs t, over
// `copies` copies of the matrix used in turn (0: enough to exceed the L3), printed as "weights <where>".
// The copies sit in 2 MiB pages where the kernel allows, as the runtime's packed copy does.
void PackedRates(GgmlType t, int kM, int64_t rows, int copies, const char* where, double budget) {
  constexpr int64_t kK = 2048;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(kK), x(kM * kK), y(kM * rows);
  for (float& f : w) f = nd(rng) * 0.05f;
  for (float& f : x) f = nd(rng);
  const size_t rb = RowBytes(t, kK);
  std::vector<uint8_t> q(rb * rows);
  quant::QuantizeRow(t, w.data(), q.data(), kK);  // one row, replicated: values do not change speed
  for (int64_t r = 1; r < rows; ++r) std::memcpy(q.data() + r * rb, q.data(), rb);
  for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::Isa::kAvx512, kernels::Isa::kNeon}) {
    if (!kernels::IsaAvailable(isa) || !kernels::CanPack(isa, t, rows, kK)) continue;
    const size_t pb = kernels::PackedBytes(t, rows, kK);
    const int n = copies > 0 ? copies : static_cast<int>(std::max<size_t>(2, kTotal / 4 / pb));
    constexpr size_t kPage = size_t{2} << 20;
    const size_t bytes = (pb * n + kPage - 1) / kPage * kPage;
    struct Free {
      void operator()(uint8_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t, Free> P(static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes)));
#ifdef MADV_HUGEPAGE
    madvise(P.get(), bytes, MADV_HUGEPAGE);
#endif
    kernels::Pack(t, q.data(), rows, kK, P.get());
    for (int i = 1; i < n; ++i) std::memcpy(P.get() + pb * i, P.get(), pb);
    kernels::Activations a;
    a.Prepare(isa, t, x.data(), kM, kK);
    const double g = Rate(static_cast<size_t>(rows * kK * kM), budget, [&](int i) {
      kernels::MatMulPacked(isa, t, P.get() + pb * (i % n), rows, kK, 0, rows, a, y.data(), rows);
    }, true);
    std::printf("%s packed, m=%d, weights %s: %.0f GMAC/s (%.1f GB/s of weights), %s; 1 thread\n",
                TypeName(static_cast<uint32_t>(t)).c_str(), kM, where, g,
                g * pb / static_cast<double>(rows * kK * kM), kernels::IsaName(isa));
  }
}

// gemma's activations per ISA (ref is the scalar code the forward pass ran before the SIMD kernels): the
// median time of GeluMul over one token's gate of gemma3-1b (ffn 6912) and over a prefill chunk of 64
// tokens, Softcap over one row of gemma2's logits (256000) and SoftcapMax over 8 heads' scores at 4096
// positions. Fresh inputs each call (a copy; its time is measured alone and taken off).
void ActivationTimes(double budget) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  struct Case { const char* name; int64_t n; bool gelu; float scale, cap; };
  const Case cases[] = {{"gelu*mul, gemma3-1b gate, 1 token", 6912, true, 0, 0},
                        {"gelu*mul, gemma3-1b gate, 64 tokens", 6912 * 64, true, 0, 0},
                        {"softcap, gemma2 logits (256000)", 256000, false, 1.0f, 30.0f},
                        {"softcap+max, 8 heads x 4096 scores", 8 * 4096, false, 0.0625f, 50.0f}};
  for (const Case& c : cases) {
    std::vector<float> x0(static_cast<size_t>(c.n)), u(x0.size()), x(x0.size());
    for (float& f : x0) f = c.gelu ? nd(rng) : nd(rng) * 20.0f;
    for (float& f : u) f = nd(rng);
    const double copy = 1.0 / Rate(1000000000, budget, [&](int) { std::memcpy(x.data(), x0.data(), 4 * x.size()); }, true);
    for (kernels::Isa isa : {kernels::Isa::kRef, kernels::Isa::kAvx2, kernels::Isa::kAvx512, kernels::Isa::kNeon}) {
      if (!kernels::IsaAvailable(isa)) continue;
      volatile float sink = 0;
      const double t = 1.0 / Rate(1000000000, budget, [&](int) {
        std::memcpy(x.data(), x0.data(), 4 * x.size());
        if (c.gelu) kernels::GeluMul(isa, x.data(), u.data(), c.n);
        else sink = sink + kernels::SoftcapMax(isa, x.data(), c.n, c.scale, c.cap, -INFINITY);
      }, true);
      std::printf("%-38s %-7s %9.1f us  (%.2f ns/element)  %s\n", c.name, kernels::IsaName(isa), (t - copy) * 1e6,
                  (t - copy) * 1e9 / c.n, c.gelu ? kernels::GeluMulName(isa).c_str() : kernels::SoftcapName(isa).c_str());
      std::fflush(stdout);
    }
  }
}

// The stages of decode attention on one KV head of f16 or bf16 keys and values (TinyLlama's shape: a
// group of 8 query heads, head_dim 64) over 1024 positions that stay in L2, in chunks of 128 positions as
// the runtime walks them: the scores, the scale + max and exp + sum of the softmax, the weighted V sum;
// the best call's ns per position per ISA (the compute side of attention at depth; 1 thread).
void AttentionTimes(double budget) {
  constexpr int64_t kHd = 64, kGroup = 8, kN = 1024, kC = 128;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> kv(kN * kHd), q(kGroup * kHd), s(kGroup * kC), w(kGroup * kC), acc(kGroup * kHd);
  for (float& f : kv) f = nd(rng);
  for (float& f : q) f = nd(rng);
  double fma_per_s = 0;  // the f32 FMA peak, probed once
  for (GgmlType t : {GgmlType::kF16, GgmlType::kBF16}) {
    const size_t rb = RowBytes(t, kHd);
    std::vector<uint8_t> K(rb * kN), V(rb * kN);
    for (int64_t i = 0; i < kN; ++i) {
      quant::QuantizeRow(t, kv.data() + i * kHd, K.data() + i * rb, kHd);
      quant::QuantizeRow(t, kv.data() + (kN - 1 - i) * kHd, V.data() + i * rb, kHd);
    }
    for (kernels::Isa isa : {kernels::Isa::kRef, kernels::Isa::kAvx2, kernels::Isa::kAvx512, kernels::Isa::kNeon}) {
      if (!kernels::IsaAvailable(isa)) continue;
      volatile float sink = 0;
      auto stage = [&](auto fn) {  // ns per position of fn over the kN positions
        return 1.0 / Rate(kN, isa == kernels::Isa::kRef ? std::min(budget, 0.2) : budget, [&](int) {
          for (int64_t t0 = 0; t0 < kN; t0 += kC) fn(t0);
        });
      };
      const double scores = stage([&](int64_t t0) {
        kernels::AttentionScores(isa, t, K.data() + t0 * rb, rb, kHd, kC, q.data(), kHd, kGroup, s.data(), kC);
      });
      const double softmax = stage([&](int64_t) {
        for (int64_t g = 0; g < kGroup; ++g) {
          const float mx = kernels::ScaleMax(isa, s.data() + g * kC, kC, 1.0f, -INFINITY);
          sink = sink + kernels::ExpSubSum(isa, s.data() + g * kC, mx, w.data() + g * kC, kC);
        }
      });
      const double values = stage([&](int64_t t0) {
        kernels::AccumulateRows(isa, t, V.data() + t0 * rb, rb, kHd, kC, w.data(), kC, kGroup, acc.data(), kHd);
      });
      std::printf("attention, %-4s K/V, 8 heads x 64 dims, %-7s scores %6.2f  softmax %6.2f  V %6.2f  ns/position\n",
                  TypeName(static_cast<uint32_t>(t)).c_str(), kernels::IsaName(isa), scores, softmax, values);
      if (isa == kernels::Isa::kAvx512 && HasFmaProbe()) {
        // Scores and V sum are each 8 heads x 64 dims = 32 512-bit FMAs per position (f16), or 16 vdpbf16ps
        // (bf16, where the CPU has AVX512-BF16), which issue at the FMA's rate on the cores measured.
        constexpr long kSteps = 1 << 20;
        if (fma_per_s == 0) fma_per_s = kSteps * kFmaPerStep * 1e9 * Rate(1, budget, [&](int) { FmaZmm(kSteps); });
        const double instr = t == GgmlType::kBF16 && BF16Available() ? 16 : 32;
        const double peak_ns = instr / fma_per_s * 1e9;
        std::printf("  f32 FMA peak %.2f G zmm/s (%.0f instructions: %.2f ns): scores at %.0f%%, V sum at %.0f%% of it\n",
                    fma_per_s / 1e9, instr, peak_ns, 100 * peak_ns / scores, 100 * peak_ns / values);
      }
      std::fflush(stdout);
    }
  }
}


// Decode attention at depth as the runtime walks it: TinyLlama's 4 KV heads x 4096 positions per layer (8
// query heads per KV head, head_dim 64); per KV head the chunks of 128 positions: scores, scale + max and
// exp + sum (online softmax), weighted V sum. The median GB/s of K + V read, 1 thread, per KV type and ISA,
// over one layer read again and again (f16: 4 MiB, from the caches) and over 22 layers used in turn (f16:
// 92 MB, streamed from DRAM): the gap between the two is what the KV stream costs attention.
void AttentionStreamRates(double budget) {
  constexpr int64_t kHd = 64, kGroup = 8, kHeads = 4, kN = 4096, kC = 128, kLayers = 22;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> row(kHd), q(kGroup * kHd), s(kGroup * kC), w(kGroup * kC), acc(kGroup * kHd), mx(kGroup), sum(kGroup);
  for (float& f : q) f = nd(rng);
  for (GgmlType t : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const size_t rb = RowBytes(t, kHd), layer = rb * kHeads * kN;
    std::vector<uint8_t> K(layer * kLayers), V(K.size());
    for (size_t r = 0; r < K.size() / rb; ++r) {  // a few distinct rows, replicated: values do not change speed
      if (r < 64) {
        for (float& f : row) f = nd(rng);
        quant::QuantizeRow(t, row.data(), K.data() + r * rb, kHd);
        quant::QuantizeRow(t, row.data(), V.data() + r * rb, kHd);
      } else {
        std::memcpy(K.data() + r * rb, K.data() + (r % 64) * rb, rb);
        std::memcpy(V.data() + r * rb, V.data() + (r % 64) * rb, rb);
      }
    }
    for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::Isa::kAvx512, kernels::Isa::kNeon}) {
      if (!kernels::IsaAvailable(isa)) continue;
      kernels::Activations qa;
      const bool float_k = t == GgmlType::kF16 || t == GgmlType::kBF16;  // else integer dots, q8 queries
      if (!float_k) qa.Prepare(isa, t, q.data(), kGroup, kHd);
      auto rate = [&](int64_t layers) { return Rate(2 * layer, budget, [&](int i) {
        const size_t l = static_cast<size_t>(i % layers) * layer;
        for (int64_t h = 0; h < kHeads; ++h) {
          const uint8_t* k = K.data() + l + h * kN * rb;
          const uint8_t* v = V.data() + l + h * kN * rb;
          std::fill(acc.begin(), acc.end(), 0.0f), std::fill(mx.begin(), mx.end(), -INFINITY), std::fill(sum.begin(), sum.end(), 0.0f);
          for (int64_t t0 = 0; t0 < kN; t0 += kC) {
            if (float_k) kernels::AttentionScores(isa, t, k + t0 * rb, rb, kHd, kC, q.data(), kHd, kGroup, s.data(), kC);
            else kernels::AttentionScoresQ(isa, t, k + t0 * rb, rb, kHd, kC, qa, s.data(), kC);
            for (int64_t j = 0; j < kGroup; ++j) {
              const float cm = kernels::ScaleMax(isa, s.data() + j * kC, kC, 0.125f, mx[j]);
              if (cm > mx[j]) {
                const float f = std::exp(mx[j] - cm);
                for (int64_t d = 0; d < kHd; ++d) acc[j * kHd + d] *= f;
                sum[j] *= f, mx[j] = cm;
              }
              sum[j] += kernels::ExpSubSum(isa, s.data() + j * kC, cm, w.data() + j * kC, kC);
            }
            kernels::AccumulateRows(isa, t, v + t0 * rb, rb, kHd, kC, w.data(), kC, kGroup, acc.data(), kHd);
          }
        }
      }, true); };
      const double cached = rate(1), dram = rate(kLayers);
      std::printf("attention at depth 4096, %-4s K/V, 4 KV heads x 8 x 64, %-7s one layer (cached) %5.1f GB/s, "
                  "from DRAM %5.1f GB/s of K+V; 1 thread\n", TypeName(static_cast<uint32_t>(t)).c_str(),
                  kernels::IsaName(isa), cached, dram);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 0.5;
  const bool verify_only = argc > 2 && std::strcmp(argv[2], "verify") == 0;  // skip the per-type table
  if (argc > 2 && std::strcmp(argv[2], "act") == 0) {  // gemma's activations only
    ActivationTimes(budget);
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "attnstream") == 0) {  // decode attention at depth, from DRAM
    AttentionStreamRates(budget);
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "decode") == 0) {  // m = 1: the kernels' own rate against DRAM's
    for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
      PackedRates(t, 1, 256, 1, "in L2", budget);
      PackedRates(t, 1, 5632, 0, "from DRAM", budget);
    }
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "attn") == 0) {  // the stages of decode attention
    AttentionTimes(budget);
    AttentionStreamRates(budget);
    return 0;
  }
  // Baselines over 512 MiB.
  std::vector<uint64_t> buf(kTotal / 8, 1), dst(kTotal / 8);
  volatile uint64_t sink = 0;
  const double read_gbs = Rate(kTotal, budget, [&](int) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < buf.size(); i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
    sink = sink + s0 + s1 + s2 + s3;
  });
  const double read_gbs_simd = !HasSimd() ? 0.0 : Rate(kTotal, budget, [&](int) {
    sink = sink + SumSimd(buf.data(), buf.size());
  });
  const double copy_gbs = Rate(kTotal, budget, [&](int) { std::memcpy(dst.data(), buf.data(), kTotal); });
  std::printf("baseline read: scalar u64 sum %.1f GB/s, %s sum %.1f GB/s; memcpy %.1f GB/s (bytes read); 1 thread\n",
              read_gbs, kSimdName, read_gbs_simd, copy_gbs);
  const double ref_gbs = std::max(read_gbs, read_gbs_simd);

  // Verify's compute side, 1 thread: the int8 peak, then the packed q4_0 kernel at m = 8.
  if (HasInt8Probe()) {
    constexpr long kSteps = 1 << 20;
    const double g = Rate(static_cast<size_t>(kInt8MacsPerStep * kSteps), budget, [&](int) { Int8Zmm(kSteps); });
    std::printf("int8 peak: %.0f GMAC/s, vpdpbusd zmm (avx512-vnni); 1 thread\n", g);
  }
  // The packed q4_0 kernel at m = 8 (k = 2048, TinyLlama's dim): 256 rows (288 KiB) stay in L2; ffn_gate's
  // 5632 rows, copies rotated past the L3, stream from DRAM: the gap is what the memory side costs a pass.
  PackedRates(GgmlType::kQ4_0, 8, 256, 1, "in L2", budget);
  PackedRates(GgmlType::kQ4_0, 8, 5632, 0, "from DRAM", budget);
  // The other packed types the same way: q8_0, and the k-quants of the Q4_K_M mix.
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    PackedRates(t, 8, 256, 1, "in L2", budget);
    PackedRates(t, 8, 5632, 0, "from DRAM", budget);
  }

  if (verify_only) return 0;
  std::printf("%-7s %-6s %-40s %10s %10s %12s\n", "isa", "type", "kernel", "m=1 GB/s", "%read", "m=8/m=1 time");

  const GgmlType types[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                            GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K,
                            GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(8 * kK), wrow(kK);
  for (float& f : x) f = nd(rng);
  for (float& f : wrow) f = nd(rng) * 0.05f;
  std::vector<float> Y(8 * kRows);
  for (GgmlType t : types) {
    const size_t rb = RowBytes(t, kK), mat = rb * kRows;
    const int copies = static_cast<int>(std::max<size_t>(2, kTotal / mat));
    std::vector<uint8_t> W(mat * copies);
    quant::QuantizeRow(t, wrow.data(), W.data(), kK);  // one row, replicated: values do not change speed
    for (size_t off = rb; off < W.size(); off += rb) std::memcpy(W.data() + off, W.data(), rb);
    for (kernels::Isa isa : {kernels::Isa::kRef, kernels::Isa::kAvx2, kernels::Isa::kAvx512, kernels::Isa::kNeon}) {
      if (!kernels::IsaAvailable(isa)) continue;
      kernels::Activations a1, a8;
      a1.Prepare(isa, t, x.data(), 1, kK);
      a8.Prepare(isa, t, x.data(), 8, kK);
      const double b = isa == kernels::Isa::kRef ? std::min(budget, 0.2) : budget;
      auto run = [&](const kernels::Activations& a, int i) {
        kernels::MatMul(isa, t, W.data() + mat * (i % copies), kK, 0, kRows, a, Y.data(), kRows);
      };
      const double g1 = Rate(mat, b, [&](int i) { run(a1, i); });
      const double g8 = Rate(mat, b, [&](int i) { run(a8, i); });
      std::printf("%-7s %-6s %-40s %10.1f %9.0f%% %12.2f\n", kernels::IsaName(isa),
                  TypeName(static_cast<uint32_t>(t)).c_str(), kernels::KernelName(isa, t).c_str(), g1,
                  100 * g1 / ref_gbs, g1 / g8);
      std::fflush(stdout);
    }
  }
  return 0;
}
