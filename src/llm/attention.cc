// Attention of the forward pass over the KV cache (f32, f16, q8_0, q4_0 rows, per KV head), with online
// softmax (the default) or, with the attn_online fusion off, the scores of each query first.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "llm/context.h"
#include "llm/hadamard.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace edgedecode::llm {

// One KV head of a cache row, as floats.
void Context::LoadHead(const uint8_t* row, GgmlType t, int kvh, float* out, float* row_buf) const {
  const int hd = model_.config().head_dim;
  switch (t) {
    case GgmlType::kF32:
      std::memcpy(out, reinterpret_cast<const float*>(row) + static_cast<size_t>(kvh) * hd, sizeof(float) * hd);
      return;
    case GgmlType::kF16:
      kernels::HalfToFloatRow(params_.isa, reinterpret_cast<const uint16_t*>(row) + static_cast<size_t>(kvh) * hd, out, hd);
      return;
    default:
      if (hd % 32 == 0) {  // the head is whole blocks: decode only those
        const size_t bs = TypeTraits(t).type_size;
        kernels::DequantizeRow(params_.isa, t, row + static_cast<size_t>(kvh) * (hd / 32) * bs, out, hd);
      } else {  // blocks span heads (head_dim < 32): decode the row
        kernels::DequantizeRow(params_.isa, t, row, row_buf, model_.config().kv_dim());
        std::memcpy(out, row_buf + static_cast<size_t>(kvh) * hd, sizeof(float) * hd);
      }
      return;
  }
}

void Context::LoadKeysT(const uint8_t* kc, int kvh, int t0, int nt, float* kf, float* kT, float* row_buf) const {
  constexpr int kChunk = 16;
  const int hd = model_.config().head_dim;
  for (int tt = 0; tt < nt; ++tt)
    LoadHead(kc + static_cast<size_t>(t0 + tt) * k_row_, params_.type_k, kvh, kf + tt * hd, row_buf);
  for (int d = 0; d < hd; ++d)
    for (int tt = 0; tt < kChunk; ++tt) kT[static_cast<size_t>(d) * kChunk + tt] = tt < nt ? kf[static_cast<size_t>(tt) * hd + d] : 0.0f;
}

Context::AttentionItem Context::AttentionItemAt(int64_t item, int m, int p0, float* qr) {
  const ModelConfig& c = model_.config();
  const int hd = c.head_dim, qd = c.q_dim(), group = c.n_heads / c.n_kv_heads;
  const int kvh = static_cast<int>(item % c.n_kv_heads);
  const int j = static_cast<int>(item / c.n_kv_heads);
  const int i = j % 2 == 0 ? j / 2 : m - 1 - j / 2;  // 0, m-1, 1, m-2, ...
  const size_t off = static_cast<size_t>(i) * qd + static_cast<size_t>(kvh) * group * hd;
  const float* q = q_.data() + off;
  if (rotate_k_) {  // keys were stored rotated: rotate the queries the same way
    std::memcpy(qr, q, sizeof(float) * group * hd);
    for (int g = 0; g < group; ++g) Hadamard(qr + static_cast<size_t>(g) * hd, hd);
    q = qr;
  }
  return {p0 + i + 1, q, att_.data() + off};
}

namespace {

// s[t] = sum_d q[d] * kT[d][t] for 16 keys stored transposed (kT: head_dim rows of 16): each sum in the
// plain order d = 0, 1, ..., a multiply then an add (as one scalar loop does it, so results do not
// depend on this batching), 16 keys in four vectors of 4 lanes. 16-byte vectors map onto the SSE
// registers of the baseline x86-64 (and NEON) target this file is compiled for; wider generic vectors
// were split by the compiler into halves that went through the stack on every step.
typedef float F4 __attribute__((vector_size(16)));
inline void Dot16T(const float* q, const float* kT, int hd, float* s) {
  F4 a0 = {}, a1 = {}, a2 = {}, a3 = {};
  for (int d = 0; d < hd; ++d) {
    F4 k0, k1, k2, k3;
    std::memcpy(&k0, kT + d * 16, sizeof k0);
    std::memcpy(&k1, kT + d * 16 + 4, sizeof k1);
    std::memcpy(&k2, kT + d * 16 + 8, sizeof k2);
    std::memcpy(&k3, kT + d * 16 + 12, sizeof k3);
    const float qd = q[d];
    a0 = a0 + qd * k0;
    a1 = a1 + qd * k1;
    a2 = a2 + qd * k2;
    a3 = a3 + qd * k3;
  }
  std::memcpy(s, &a0, sizeof a0);
  std::memcpy(s + 4, &a1, sizeof a1);
  std::memcpy(s + 8, &a2, sizeof a2);
  std::memcpy(s + 12, &a3, sizeof a3);
}

// a[d] += sum over t < nt of w[t] * v[t][d], added in position order (v: nt rows of hd), 16 dims at a
// time held in registers across the chunk instead of a load and a store of a per position.
inline void AccumulateV(const float* w, const float* v, int nt, int hd, float* a) {
  int d = 0;
  for (; d + 16 <= hd; d += 16) {
    F4 a0, a1, a2, a3;
    std::memcpy(&a0, a + d, sizeof a0);
    std::memcpy(&a1, a + d + 4, sizeof a1);
    std::memcpy(&a2, a + d + 8, sizeof a2);
    std::memcpy(&a3, a + d + 12, sizeof a3);
    for (int t = 0; t < nt; ++t) {
      const float* vt = v + static_cast<size_t>(t) * hd + d;
      F4 v0, v1, v2, v3;
      std::memcpy(&v0, vt, sizeof v0);
      std::memcpy(&v1, vt + 4, sizeof v1);
      std::memcpy(&v2, vt + 8, sizeof v2);
      std::memcpy(&v3, vt + 12, sizeof v3);
      a0 = a0 + w[t] * v0;
      a1 = a1 + w[t] * v1;
      a2 = a2 + w[t] * v2;
      a3 = a3 + w[t] * v3;
    }
    std::memcpy(a + d, &a0, sizeof a0);
    std::memcpy(a + d + 4, &a1, sizeof a1);
    std::memcpy(a + d + 8, &a2, sizeof a2);
    std::memcpy(a + d + 12, &a3, sizeof a3);
  }
  for (; d < hd; ++d)  // head_dim not a multiple of 16 (stories260K: 8)
    for (int t = 0; t < nt; ++t) a[d] += w[t] * v[static_cast<size_t>(t) * hd + d];
}

}  // namespace

// One query head over positions [0, n) of an f16 cache, in the arithmetic of llama.cpp's CPU flash
// attention (ggml_compute_forward_flash_attn_ext_f16 with f16 K/V and its scalar loops): q rounded to
// f16; each score the float product of f16 values summed in double; on a new maximum M the f16
// accumulator is scaled by exp(M_old - M) (rounded back to f16), then v * exp(s - M) is added, rounded
// to f16; the sum S in float; out = f32(acc) * (1 / S).
void Context::AttendF16(const uint8_t* kc, const uint8_t* vc, int kvh, const float* q, int n, float* out) const {
  const int hd = model_.config().head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  uint16_t qh[256], acc[256];  // head_dim <= 256 (checked at Create)
  for (int d = 0; d < hd; ++d) qh[d] = quant::FloatToHalf(q[d]), acc[d] = 0;
  float M = -INFINITY, S = 0.0f;
  for (int t = 0; t < n; ++t) {
    const uint16_t* k = reinterpret_cast<const uint16_t*>(kc + static_cast<size_t>(t) * k_row_) + kvh * hd;
    const uint16_t* v = reinterpret_cast<const uint16_t*>(vc + static_cast<size_t>(t) * v_row_) + kvh * hd;
    double dot = 0;
    for (int d = 0; d < hd; ++d) dot += static_cast<double>(quant::HalfToFloat(qh[d]) * quant::HalfToFloat(k[d]));
    const float s = static_cast<float>(dot) * scale;
    float ms = 1.0f, vs = 1.0f;
    if (s > M) {
      ms = std::exp(M - s);
      M = s;
      for (int d = 0; d < hd; ++d) acc[d] = quant::FloatToHalf(quant::HalfToFloat(acc[d]) * ms);
    } else {
      vs = std::exp(s - M);
    }
    for (int d = 0; d < hd; ++d) acc[d] = quant::FloatToHalf(quant::HalfToFloat(acc[d]) + quant::HalfToFloat(v[d]) * vs);
    S = S * ms + vs;
  }
  const float inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int d = 0; d < hd; ++d) out[d] = quant::HalfToFloat(acc[d]) * inv;
}

// Causal attention of the m new tokens (positions p0..p0+m-1) over the cache, with online softmax (no
// score matrix). One work item is (token, KV head): the cache is read in its stored type, a chunk of
// positions at a time, and each K/V row is converted once for all the query heads that share it (GQA).
// Items are ordered so that any contiguous range mixes short and long histories (balanced threads).
void Context::Attention(int layer, int m, int p0) {
  const ModelConfig& c = model_.config();
  const int hd = c.head_dim, kvd = c.kv_dim();
  const int group = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const uint8_t* kc = k_cache_.data() + static_cast<size_t>(layer) * n_ctx_ * k_row_;
  const uint8_t* vc = v_cache_.data() + static_cast<size_t>(layer) * n_ctx_ * v_row_;
  const GgmlType tv = params_.type_v;
  constexpr int kChunk = 16;  // positions converted per step (Dot16T's width)
  pool_.ParallelFor(static_cast<int64_t>(m) * c.n_kv_heads, 1, [&](int64_t b, int64_t e, int) {
    std::vector<float> kf(static_cast<size_t>(kChunk) * hd), vf(kf.size()), qr(static_cast<size_t>(group) * hd),
        acc(static_cast<size_t>(group) * hd), row(static_cast<size_t>(kvd)), s(static_cast<size_t>(kChunk)),
        w(static_cast<size_t>(kChunk)),
        kT(kf.size());
    std::vector<float> mx(static_cast<size_t>(group)), sum(static_cast<size_t>(group));
    for (int64_t item = b; item < e; ++item) {
      const int kvh = static_cast<int>(item % c.n_kv_heads);
      const AttentionItem it = AttentionItemAt(item, m, p0, qr.data());
      const int n = it.n;
      const float* qs = it.q;
      float* out = it.out;
      if (params_.attn_f16) {
        for (int g = 0; g < group; ++g) AttendF16(kc, vc, kvh, qs + g * hd, n, out + g * hd);
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(mx.begin(), mx.end(), -INFINITY);
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int t0 = 0; t0 < n; t0 += kChunk) {
        const int nt = std::min(kChunk, n - t0);
        LoadKeysT(kc, kvh, t0, nt, kf.data(), kT.data(), row.data());
        for (int tt = 0; tt < nt; ++tt)
          LoadHead(vc + static_cast<size_t>(t0 + tt) * v_row_, tv, kvh, vf.data() + tt * hd, row.data());
        for (int g = 0; g < group; ++g) {
          const float* q = qs + static_cast<size_t>(g) * hd;
          float* a = acc.data() + static_cast<size_t>(g) * hd;
          Dot16T(q, kT.data(), hd, s.data());
          // Online softmax one chunk at a time: the running max moves once per chunk (one rescale of
          // what was accumulated), then the chunk's weights and its V rows are summed in position order.
          float cm = mx[g];
          for (int tt = 0; tt < nt; ++tt) {
            s[static_cast<size_t>(tt)] *= scale;
            cm = std::max(cm, s[static_cast<size_t>(tt)]);
          }
          if (cm > mx[g]) {
            const float r = std::exp(mx[g] - cm);  // 0 on the first chunk (mx = -inf)
            for (int d = 0; d < hd; ++d) a[d] *= r;
            sum[g] *= r;
            mx[g] = cm;
          }
          for (int tt = 0; tt < nt; ++tt) {
            w[static_cast<size_t>(tt)] = std::exp(s[static_cast<size_t>(tt)] - cm);
            sum[g] += w[static_cast<size_t>(tt)];
          }
          AccumulateV(w.data(), vf.data(), nt, hd, a);
        }
      }
      for (int g = 0; g < group; ++g)
        for (int d = 0; d < hd; ++d) out[g * hd + d] = acc[static_cast<size_t>(g) * hd + d] / sum[static_cast<size_t>(g)];
    }
  });
}

// The unfused attention (attn_online off): for each (token, KV head) item, the scores of every query
// head of the group over all n positions are computed first (one K pass, the same dot products as the
// online path), then one softmax per query over the whole row, then the weighted V sum (a second pass
// over V). Same function as the online softmax; the sums differ in rounding only (the online path
// rescales its running sums when the maximum moves).
void Context::AttentionFullScores(int layer, int m, int p0) {
  const ModelConfig& c = model_.config();
  const int hd = c.head_dim, kvd = c.kv_dim();
  const int group = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const uint8_t* kc = k_cache_.data() + static_cast<size_t>(layer) * n_ctx_ * k_row_;
  const uint8_t* vc = v_cache_.data() + static_cast<size_t>(layer) * n_ctx_ * v_row_;
  const GgmlType tv = params_.type_v;
  constexpr int kChunk = 16;
  const size_t n_max = static_cast<size_t>(p0 + m);
  pool_.ParallelFor(static_cast<int64_t>(m) * c.n_kv_heads, 1, [&](int64_t b, int64_t e, int) {
    std::vector<float> kf(static_cast<size_t>(kChunk) * hd), kT(kf.size()), vf(kf.size()), row(static_cast<size_t>(kvd)),
        qr(static_cast<size_t>(group) * hd), s(static_cast<size_t>(kChunk));
    std::vector<float> sc(static_cast<size_t>(group) * n_max);  // the score rows
    std::vector<float> sum(static_cast<size_t>(group));
    for (int64_t item = b; item < e; ++item) {
      const int kvh = static_cast<int>(item % c.n_kv_heads);
      const AttentionItem it = AttentionItemAt(item, m, p0, qr.data());
      const int n = it.n;
      const float* qs = it.q;
      float* out = it.out;
      for (int t0 = 0; t0 < n; t0 += kChunk) {  // scores: Q K^T
        const int nt = std::min(kChunk, n - t0);
        LoadKeysT(kc, kvh, t0, nt, kf.data(), kT.data(), row.data());
        for (int g = 0; g < group; ++g) {
          Dot16T(qs + static_cast<size_t>(g) * hd, kT.data(), hd, s.data());
          for (int tt = 0; tt < nt; ++tt) sc[static_cast<size_t>(g) * n_max + t0 + tt] = s[static_cast<size_t>(tt)] * scale;
        }
      }
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int g = 0; g < group; ++g) {  // softmax over the whole row
        float* r = sc.data() + static_cast<size_t>(g) * n_max;
        const float mx = *std::max_element(r, r + n);
        for (int t = 0; t < n; ++t) {
          r[t] = std::exp(r[t] - mx);
          sum[static_cast<size_t>(g)] += r[t];
        }
      }
      std::fill(out, out + static_cast<size_t>(group) * hd, 0.0f);
      for (int t0 = 0; t0 < n; t0 += kChunk) {  // P V
        const int nt = std::min(kChunk, n - t0);
        for (int tt = 0; tt < nt; ++tt)
          LoadHead(vc + static_cast<size_t>(t0 + tt) * v_row_, tv, kvh, vf.data() + tt * hd, row.data());
        for (int g = 0; g < group; ++g)
          AccumulateV(sc.data() + static_cast<size_t>(g) * n_max + t0, vf.data(), nt, hd, out + static_cast<size_t>(g) * hd);
      }
      for (int g = 0; g < group; ++g)
        for (int d = 0; d < hd; ++d) out[g * hd + d] /= sum[static_cast<size_t>(g)];
    }
  });
}

}  // namespace edgedecode::llm
