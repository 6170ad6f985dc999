#include "llm/context.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <thread>

#include "llm/memory_plan.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace edgedecode::llm {

size_t KvCacheBytes(const ModelConfig& c, int n_ctx, GgmlType type_k, GgmlType type_v) {
  return static_cast<size_t>(c.n_layers) * static_cast<size_t>(n_ctx) * (RowBytes(type_k, c.kv_dim()) + RowBytes(type_v, c.kv_dim()));
}

Status CheckKvType(const ModelConfig& c, GgmlType t, const char* which) {
  if (t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kQ8_0 && t != GgmlType::kQ4_0)
    return InvalidArgument(std::string(which) + " cache type " + TypeName(static_cast<uint32_t>(t)) + " is not supported (f32, f16, q8_0, q4_0)");
  if (c.kv_dim() % TypeTraits(t).block_size != 0)
    return InvalidArgument(std::string(which) + " cache type " + TypeName(static_cast<uint32_t>(t)) + " needs kv_heads x head_dim (" +
                           std::to_string(c.kv_dim()) + ") to be a multiple of " + std::to_string(TypeTraits(t).block_size));
  return Status::Ok();
}

namespace {

// In-place normalized Walsh-Hadamard transform of n (a power of two) floats: orthogonal, its own inverse.
void Hadamard(float* x, int n) {
  for (int len = 1; len < n; len <<= 1) {
    for (int i = 0; i < n; i += 2 * len) {
      for (int j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  for (int i = 0; i < n; ++i) x[i] *= s;
}

bool IsPow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

Result<std::unique_ptr<Context>> Context::Create(const Model& model, const ContextParams& params) {
  const ModelConfig& c = model.config();
  int n_ctx = params.n_ctx > 0 ? params.n_ctx : std::min(c.n_ctx_train, 4096);
  if (n_ctx < 1 || n_ctx > (1 << 20)) return InvalidArgument("context size " + std::to_string(n_ctx) + " is out of range");
  if (params.n_batch < 1) return InvalidArgument("batch size must be at least 1");
  int n_threads = params.n_threads > 0 ? params.n_threads : static_cast<int>(std::thread::hardware_concurrency());
  if (n_threads < 1) n_threads = 1;
  if (!kernels::IsaAvailable(params.isa))
    return InvalidArgument(std::string("kernels '") + kernels::IsaName(params.isa) + "' are not available on this CPU");
  ED_RETURN_IF_ERROR(CheckKvType(model.config(), params.type_k, "K"));
  ED_RETURN_IF_ERROR(CheckKvType(model.config(), params.type_v, "V"));
  if (params.attn_f16 && model.config().head_dim > 256)
    return InvalidArgument("--attn-f16 supports head dimensions up to 256");
  if (params.attn_f16 && (params.type_k != GgmlType::kF16 || params.type_v != GgmlType::kF16))
    return InvalidArgument("f16 attention accumulation (--attn-f16) needs an f16 K and V cache");
  if (params.rotate_k == 1 && !IsPow2(model.config().head_dim))
    return InvalidArgument("key rotation needs a power-of-two head dimension (this model has " +
                           std::to_string(model.config().head_dim) + ")");
  return std::unique_ptr<Context>(new Context(model, params, n_ctx, n_threads));
}

Context::Context(const Model& model, const ContextParams& params, int n_ctx, int n_threads)
    : model_(model), params_(params), n_ctx_(n_ctx), n_vocab_(model.config().n_vocab), pool_(n_threads) {
  const ModelConfig& c = model.config();
  const size_t nb = static_cast<size_t>(std::min(params.n_batch, n_ctx));
  params_.n_batch = static_cast<int>(nb);
  k_row_ = RowBytes(params.type_k, c.kv_dim());
  v_row_ = RowBytes(params.type_v, c.kv_dim());
  k_cache_.assign(static_cast<size_t>(c.n_layers) * n_ctx * k_row_, 0);
  v_cache_.assign(static_cast<size_t>(c.n_layers) * n_ctx * v_row_, 0);
  // Auto: on for both quantized K types. 4-bit keys need it; for q8_0 keys it halves the KL
  // divergence on stories260K (0.0021 -> 0.0010 nats against f16 KV), at the cost of one
  // head_dim-point transform per key written and per query.
  const bool quantized_k = params.type_k == GgmlType::kQ4_0 || params.type_k == GgmlType::kQ8_0;
  rotate_k_ = params.rotate_k == 1 || (params.rotate_k < 0 && quantized_k && IsPow2(c.head_dim));
  // Every buffer is sized by ComputeScratch, the function `plan` reports from.
  const ScratchSizes sz = ComputeScratch(c, n_ctx, params.n_batch);
  x_.resize(sz.x);
  xb_.resize(sz.xb);
  q_.resize(sz.q);
  k_.resize(sz.k);
  v_.resize(sz.v);
  att_.resize(sz.att);
  gate_.resize(sz.gate);
  up_.resize(sz.up);
  tmp_.resize(sz.tmp);
  logits_.resize(sz.logits);

  // RoPE angles, computed the way llama.cpp does (float, theta multiplied step by step) so that
  // greedy outputs match it: theta_i(p) = freq_scale * p * base^(-2i/n_rot) / freq_factor_i.
  const int half = c.n_rot / 2;
  rope_cos_.resize(sz.rope / 2);
  rope_sin_.resize(sz.rope / 2);
  const float theta_scale = std::pow(c.rope_base, -2.0f / static_cast<float>(c.n_rot));
  const std::vector<float>& ff = model.rope_freq_factors();
  for (int p = 0; p < n_ctx; ++p) {
    float theta_base = static_cast<float>(p);
    for (int i = 0; i < half; ++i) {
      float theta = c.rope_freq_scale * (ff.empty() ? theta_base : theta_base / ff[static_cast<size_t>(i)]);
      rope_cos_[static_cast<size_t>(p) * half + i] = std::cos(theta);
      rope_sin_[static_cast<size_t>(p) * half + i] = std::sin(theta);
      theta_base *= theta_scale;
    }
  }
}

Status Context::Eval(const int32_t* tokens, int n, bool all_logits) {
  if (n <= 0) return InvalidArgument("nothing to evaluate");
  if (n_past_ + n > n_ctx_)
    return ResourceExhausted("context full: " + std::to_string(n_past_) + " + " + std::to_string(n) +
                             " tokens do not fit in a context of " + std::to_string(n_ctx_));
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab_)
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " is outside the vocabulary (0.." +
                             std::to_string(n_vocab_ - 1) + ")");
  }
  if (all_logits && n > params_.n_batch) {
    // Keep every row: evaluate chunk by chunk and gather.
    std::vector<float> all(static_cast<size_t>(n) * n_vocab_);
    for (int i = 0; i < n; i += params_.n_batch) {
      int m = std::min(params_.n_batch, n - i);
      EvalBatch(tokens + i, m, true);
      std::copy(logits_.begin(), logits_.begin() + static_cast<long>(m) * n_vocab_, all.begin() + static_cast<long>(i) * n_vocab_);
    }
    logits_ = std::move(all);
    n_logit_rows_ = n;
    return Status::Ok();
  }
  if (logits_.size() < static_cast<size_t>(params_.n_batch) * n_vocab_) logits_.resize(static_cast<size_t>(params_.n_batch) * n_vocab_);
  for (int i = 0; i < n; i += params_.n_batch) {
    int m = std::min(params_.n_batch, n - i);
    EvalBatch(tokens + i, m, all_logits);
  }
  return Status::Ok();
}

void Context::Linear(const Weight& w, const float* X, int m, float* Y) {
  const kernels::Isa isa = params_.isa;
  if (m < 4) {
    acts_.Prepare(isa, w.type, X, m, w.cols);
  } else {  // prefill: the threads share the activation quantization too
    acts_.Begin(isa, w.type, m, w.cols);
    pool_.ParallelFor(m, 1, [&](int64_t j0, int64_t j1, int) { acts_.Fill(X, j0, j1); });
  }
  // The packed layout is one for every x86 SIMD ISA; other paths read the file layout (still mapped).
  const bool packed = w.packed != nullptr && kernels::CanPackQ4_0x8(isa, w.rows, w.cols) && acts_.quantized();
  auto rows = [&](int64_t r0, int64_t r1) {
    if (packed) {
      kernels::MatMulPackedQ4_0x8(isa, w.packed, w.cols, r0, r1, acts_, Y, w.rows);
    } else {
      kernels::MatMul(isa, w.type, w.data, w.cols, r0, r1, acts_, Y, w.rows);
    }
  };
  // Small matrices are not worth waking the workers for.
  if (w.rows * w.cols * m < (1 << 15)) {
    rows(0, w.rows);
    return;
  }
  // Grain 16: every range starts at a multiple of 8, as the packed kernels need.
  pool_.ParallelFor(w.rows, 16, [&](int64_t r0, int64_t r1, int) { rows(r0, r1); });
}

void Context::RmsNorm(const float* x, const std::vector<float>& w, int m, float* out) const {
  const int dim = model_.config().dim;
  for (int i = 0; i < m; ++i) {
    const float* xi = x + static_cast<size_t>(i) * dim;
    float* oi = out + static_cast<size_t>(i) * dim;
    double ss = 0;
    for (int j = 0; j < dim; ++j) ss += static_cast<double>(xi[j]) * xi[j];
    const float scale = 1.0f / std::sqrt(static_cast<float>(ss / dim) + model_.config().norm_eps);
    for (int j = 0; j < dim; ++j) oi[j] = xi[j] * scale * w[static_cast<size_t>(j)];
  }
}

// Rotates the first n_rot dims of each head of v (n_heads heads of head_dim) to position pos.
void Context::Rope(float* v, int n_heads, int pos) const {
  const ModelConfig& c = model_.config();
  const int half = c.n_rot / 2;
  const float* cs = rope_cos_.data() + static_cast<size_t>(pos) * half;
  const float* sn = rope_sin_.data() + static_cast<size_t>(pos) * half;
  for (int h = 0; h < n_heads; ++h) {
    float* x = v + static_cast<size_t>(h) * c.head_dim;
    for (int i = 0; i < half; ++i) {
      // kNorm rotates adjacent pairs; kNeox rotates dims i and i + n_rot/2.
      const int a = c.rope == RopeStyle::kNorm ? 2 * i : i;
      const int b = c.rope == RopeStyle::kNorm ? 2 * i + 1 : i + half;
      const float x0 = x[a], x1 = x[b];
      x[a] = x0 * cs[i] - x1 * sn[i];
      x[b] = x0 * sn[i] + x1 * cs[i];
    }
  }
}

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
  const int hd = c.head_dim, kvd = c.kv_dim(), qd = c.q_dim();
  const int group = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const uint8_t* kc = k_cache_.data() + static_cast<size_t>(layer) * n_ctx_ * k_row_;
  const uint8_t* vc = v_cache_.data() + static_cast<size_t>(layer) * n_ctx_ * v_row_;
  const GgmlType tk = params_.type_k, tv = params_.type_v;
  constexpr int kChunk = 16;  // positions converted per step (Dot16T's width)
  pool_.ParallelFor(static_cast<int64_t>(m) * c.n_kv_heads, 1, [&](int64_t b, int64_t e, int) {
    std::vector<float> kf(static_cast<size_t>(kChunk) * hd), vf(kf.size()), qr(static_cast<size_t>(group) * hd),
        acc(static_cast<size_t>(group) * hd), row(static_cast<size_t>(kvd)), s(static_cast<size_t>(kChunk)),
        w(static_cast<size_t>(kChunk)),
        kT(kf.size());
    std::vector<float> mx(static_cast<size_t>(group)), sum(static_cast<size_t>(group));
    for (int64_t item = b; item < e; ++item) {
      const int kvh = static_cast<int>(item % c.n_kv_heads);
      const int j = static_cast<int>(item / c.n_kv_heads);
      const int i = j % 2 == 0 ? j / 2 : m - 1 - j / 2;  // 0, m-1, 1, m-2, ...
      const int n = p0 + i + 1;                          // positions this token sees
      const float* q0 = q_.data() + static_cast<size_t>(i) * qd + static_cast<size_t>(kvh) * group * hd;
      const float* qs = q0;
      if (rotate_k_) {  // keys were stored rotated: rotate the queries the same way
        std::memcpy(qr.data(), q0, sizeof(float) * group * hd);
        for (int g = 0; g < group; ++g) Hadamard(qr.data() + static_cast<size_t>(g) * hd, hd);
        qs = qr.data();
      }
      float* out = att_.data() + static_cast<size_t>(i) * qd + static_cast<size_t>(kvh) * group * hd;
      if (params_.attn_f16) {
        for (int g = 0; g < group; ++g) AttendF16(kc, vc, kvh, qs + g * hd, n, out + g * hd);
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(mx.begin(), mx.end(), -INFINITY);
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (int t0 = 0; t0 < n; t0 += kChunk) {
        const int nt = std::min(kChunk, n - t0);
        for (int tt = 0; tt < nt; ++tt) {
          LoadHead(kc + static_cast<size_t>(t0 + tt) * k_row_, tk, kvh, kf.data() + tt * hd, row.data());
          LoadHead(vc + static_cast<size_t>(t0 + tt) * v_row_, tv, kvh, vf.data() + tt * hd, row.data());
        }
        // Keys transposed (d-major, 16 positions per row; unused positions zero) for Dot16T.
        for (int d = 0; d < hd; ++d)
          for (int tt = 0; tt < kChunk; ++tt) kT[static_cast<size_t>(d) * kChunk + tt] = tt < nt ? kf[static_cast<size_t>(tt) * hd + d] : 0.0f;
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

void Context::EvalBatch(const int32_t* tokens, int m, bool all_logits) {
  const ModelConfig& c = model_.config();
  const int dim = c.dim, qd = c.q_dim(), kvd = c.kv_dim(), ffn = c.ffn_dim;
  const int p0 = n_past_;
  const Weight& emb = model_.token_embd();
  const size_t emb_row = RowBytes(emb.type, emb.cols);
  for (int i = 0; i < m; ++i) {
    quant::DequantizeRow(emb.type, static_cast<const uint8_t*>(emb.data) + emb_row * static_cast<size_t>(tokens[i]),
                         x_.data() + static_cast<size_t>(i) * dim, dim);
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = model_.layers()[static_cast<size_t>(l)];
    // Attention block.
    RmsNorm(x_.data(), L.attn_norm, m, xb_.data());
    Linear(L.wq, xb_.data(), m, q_.data());
    Linear(L.wk, xb_.data(), m, k_.data());
    Linear(L.wv, xb_.data(), m, v_.data());
    uint8_t* kc = k_cache_.data() + static_cast<size_t>(l) * n_ctx_ * k_row_;
    uint8_t* vc = v_cache_.data() + static_cast<size_t>(l) * n_ctx_ * v_row_;
    for (int i = 0; i < m; ++i) {
      float* q = q_.data() + static_cast<size_t>(i) * qd;
      float* k = k_.data() + static_cast<size_t>(i) * kvd;
      float* v = v_.data() + static_cast<size_t>(i) * kvd;
      if (c.qkv_bias) {
        for (int j = 0; j < qd; ++j) q[j] += L.bq[static_cast<size_t>(j)];
        for (int j = 0; j < kvd; ++j) k[j] += L.bk[static_cast<size_t>(j)];
        for (int j = 0; j < kvd; ++j) v[j] += L.bv[static_cast<size_t>(j)];
      }
      Rope(q, c.n_heads, p0 + i);
      Rope(k, c.n_kv_heads, p0 + i);
      if (rotate_k_) {
        for (int h = 0; h < c.n_kv_heads; ++h) Hadamard(k + static_cast<size_t>(h) * c.head_dim, c.head_dim);
      }
      quant::QuantizeRow(params_.type_k, k, kc + static_cast<size_t>(p0 + i) * k_row_, kvd);
      quant::QuantizeRow(params_.type_v, v, vc + static_cast<size_t>(p0 + i) * v_row_, kvd);
    }
    Attention(l, m, p0);
    Linear(L.wo, att_.data(), m, tmp_.data());
    for (size_t j = 0; j < static_cast<size_t>(m) * dim; ++j) x_[j] += tmp_[j];

    // Feed-forward block: down(silu(gate(x)) * up(x)).
    RmsNorm(x_.data(), L.ffn_norm, m, xb_.data());
    Linear(L.w_gate, xb_.data(), m, gate_.data());
    Linear(L.w_up, xb_.data(), m, up_.data());
    for (size_t j = 0; j < static_cast<size_t>(m) * ffn; ++j) {
      const float g = gate_[j];
      gate_[j] = g / (1.0f + std::exp(-g)) * up_[j];
    }
    Linear(L.w_down, gate_.data(), m, tmp_.data());
    for (size_t j = 0; j < static_cast<size_t>(m) * dim; ++j) x_[j] += tmp_[j];
  }

  // Output: only the rows whose logits are wanted.
  const int first = all_logits ? 0 : m - 1;
  const int rows = m - first;
  RmsNorm(x_.data() + static_cast<size_t>(first) * dim, model_.output_norm(), rows, xb_.data());
  Linear(model_.output(), xb_.data(), rows, logits_.data());
  n_logit_rows_ = rows;
  n_past_ += m;
}

}  // namespace edgedecode::llm
