#include "llm/context.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <thread>

#include "llm/hadamard.h"
#include "llm/memory_plan.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace edgedecode::llm {

int LayerKvRows(const ModelConfig& c, int layer, int n_ctx, int n_batch) {
  if (c.conv_layer(layer)) return 0;  // lfm2's short-convolution layers keep a state, not a cache
  if (!c.swa_layer(layer)) return n_ctx;
  // The first token of a batch of m sees the window before it while the batch's last token is written:
  // window + m - 1 positions live at once.
  const int64_t ring = static_cast<int64_t>(c.n_swa) + std::min(std::max(n_batch, 1), n_ctx) - 1;
  return static_cast<int>(std::min<int64_t>(ring, n_ctx));
}

size_t KvCacheBytes(const ModelConfig& c, int n_ctx, GgmlType type_k, GgmlType type_v, int n_batch) {
  size_t rows = 0;
  for (int l = 0; l < c.n_layers; ++l) rows += static_cast<size_t>(LayerKvRows(c, l, n_ctx, n_batch));
  return rows * (RowBytes(type_k, c.kv_dim()) + RowBytes(type_v, c.kv_dim()));
}

size_t ConvStateBytes(const ModelConfig& c) {
  if (!c.has_conv()) return 0;
  return static_cast<size_t>(c.n_conv_layers()) * static_cast<size_t>(c.conv_l - 1) * static_cast<size_t>(c.dim) * sizeof(float);
}

Status CheckKvType(const ModelConfig& c, GgmlType t, const char* which) {
  if (t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16 && t != GgmlType::kQ8_0 && t != GgmlType::kQ4_0)
    return InvalidArgument(std::string(which) + " cache type " + TypeName(static_cast<uint32_t>(t)) +
                           " is not supported (f32, f16, bf16, q8_0, q4_0)");
  if (c.kv_dim() % TypeTraits(t).block_size != 0)
    return InvalidArgument(std::string(which) + " cache type " + TypeName(static_cast<uint32_t>(t)) + " needs kv_heads x head_dim (" +
                           std::to_string(c.kv_dim()) + ") to be a multiple of " + std::to_string(TypeTraits(t).block_size));
  return Status::Ok();
}

namespace {

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
  size_t k_bytes = 0, v_bytes = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    layer_rows_.push_back(LayerKvRows(c, l, n_ctx, params_.n_batch));
    k_off_.push_back(k_bytes);
    v_off_.push_back(v_bytes);
    k_bytes += static_cast<size_t>(layer_rows_.back()) * k_row_;
    v_bytes += static_cast<size_t>(layer_rows_.back()) * v_row_;
  }
  k_cache_.assign(k_bytes, 0);
  v_cache_.assign(v_bytes, 0);
  size_t conv_floats = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    conv_off_.push_back(conv_floats);
    if (c.conv_layer(l)) conv_floats += static_cast<size_t>(c.conv_l - 1) * static_cast<size_t>(c.dim);
  }
  conv_state_.assign(conv_floats, 0.0f);
  // Auto: on for both quantized K types. 4-bit keys need it; for q8_0 keys it halves the KL
  // divergence on stories260K (0.0021 -> 0.0010 nats against f16 KV), at the cost of one
  // head_dim-point transform per key written and per query.
  const bool quantized_k = params.type_k == GgmlType::kQ4_0 || params.type_k == GgmlType::kQ8_0;
  rotate_k_ = params.rotate_k == 1 || (params.rotate_k < 0 && quantized_k && IsPow2(c.head_dim));
  // Every buffer is sized by ComputeScratch, the function `plan` reports from.
  const ScratchSizes sz = ComputeScratch(c, n_ctx, params.n_batch, HasHalfMatrices(model), HasQ4_0Matrices(model));
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
  bcx_.resize(sz.bcx);

  // RoPE angles, computed the way llama.cpp does (float, theta multiplied step by step) so that
  // greedy outputs match it: theta_i(p) = freq_scale * p * base^(-2i/n_rot) / freq_factor_i.
  const int half = c.n_rot / 2;
  rope_cos_.resize(static_cast<size_t>(n_ctx) * half);
  rope_sin_.resize(static_cast<size_t>(n_ctx) * half);
  const std::vector<float>& ff = model.RopeFactorsFor(n_ctx);
  const float mscale = c.rope_attn_factor;  // LongRoPE's attention factor: ggml scales cos and sin by it
  auto fill = [&](float base, std::vector<float>* cs, std::vector<float>* sn) {
    const float theta_scale = std::pow(base, -2.0f / static_cast<float>(c.n_rot));
    for (int p = 0; p < n_ctx; ++p) {
      float theta_base = static_cast<float>(p);
      for (int i = 0; i < half; ++i) {
        float theta = c.rope_freq_scale * (ff.empty() ? theta_base : theta_base / ff[static_cast<size_t>(i)]);
        (*cs)[static_cast<size_t>(p) * half + i] = std::cos(theta) * mscale;
        (*sn)[static_cast<size_t>(p) * half + i] = std::sin(theta) * mscale;
        theta_base *= theta_scale;
      }
    }
  };
  fill(c.rope_base, &rope_cos_, &rope_sin_);
  if (c.n_swa > 0) {  // sliding-window layers rotate with their own base (llama.cpp: rope.freq_base_swa)
    rope_cos_swa_.resize(rope_cos_.size());
    rope_sin_swa_.resize(rope_sin_.size());
    fill(c.rope_base_swa, &rope_cos_swa_, &rope_sin_swa_);
  }
}

int Context::min_truncate() const {
  const ModelConfig& c = model_.config();
  if (c.has_conv()) return n_past_;  // the conv state holds only the last positions' inputs: no going back
  return ring_floor_ > 0 ? ring_floor_ + c.n_swa - 1 : 0;
}

Status Context::CheckTokens(const int32_t* tokens, int n) const {
  if (n_past_ + n > n_ctx_)
    return ResourceExhausted("context full: " + std::to_string(n_past_) + " + " + std::to_string(n) +
                             " tokens do not fit in a context of " + std::to_string(n_ctx_));
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab_)
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " is outside the vocabulary (0.." +
                             std::to_string(n_vocab_ - 1) + ")");
  }
  return Status::Ok();
}

Status Context::Eval(const int32_t* tokens, int n, bool all_logits) {
  if (n <= 0) return InvalidArgument("nothing to evaluate");
  ED_RETURN_IF_ERROR(CheckTokens(tokens, n));
  const int p_start = n_past_;
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
    return CheckLogits(p_start);
  }
  if (logits_.size() < static_cast<size_t>(params_.n_batch) * n_vocab_) logits_.resize(static_cast<size_t>(params_.n_batch) * n_vocab_);
  for (int i = 0; i < n; i += params_.n_batch) {
    int m = std::min(params_.n_batch, n - i);
    EvalBatch(tokens + i, m, all_logits);
  }
  return CheckLogits(p_start);
}

namespace {

// Whether any of n floats is NaN or Inf (exponent all ones), as an integer reduction the compiler vectorizes:
// a scan of n_vocab floats per row, next to the n_vocab x dim multiply-adds that produced them.
bool AnyNonFinite(const float* x, size_t n) {
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, 4);
    any |= static_cast<uint32_t>((u & 0x7F800000u) == 0x7F800000u);
  }
  return any != 0;
}

}  // namespace

Status Context::CheckLogits(int p_start) {
  for (int r = 0; r < n_logit_rows_; ++r) {
    if (!AnyNonFinite(logits(r), static_cast<size_t>(n_vocab_))) continue;
    // The positions of this call are dropped (as if it failed before running) and the weights are scanned in
    // full to say where the NaN came from: a pass over the model, paid only on this failure.
    const int pos = n_past_ - n_logit_rows_ + r;
    // A conv state (lfm2) has already taken the dropped positions: nothing of the sequence is kept then.
    n_past_ = model_.config().has_conv() ? 0 : p_start;
    n_logit_rows_ = 0;
    const Status weights = model_.CheckWeights(true);
    return Corrupt("the logits at position " + std::to_string(pos) + " are NaN or Inf: " +
                   (weights.ok() ? std::string("every weight is finite, so the activations overflowed (the weights' "
                                               "scale is broken)")
                                 : weights.message()));
  }
  return Status::Ok();
}

void Context::Quantize(const float* X, int m, GgmlType wt, int64_t k) {
  const uint64_t t0 = ProfBegin(Op::kQuantize);
  acts_.Begin(params_.isa, wt, m, k);
  FillColumns(m, [&](int64_t j0, int64_t j1, int) { acts_.Fill(X, j0, j1); });
  ProfEnd(Op::kQuantize, t0, [&] { return static_cast<uint64_t>(m) * k * 4 + ActBytes(m, k); });
}

void Context::FillColumns(int m, const ThreadPool::RangeFn& fill) {
  // Where acts_ keeps q4_0 columns interleaved by chunks of 8, a thread fills whole half-chunks (their
  // own cache lines): two threads writing one line of each block ran verify-8's quantize at 2 threads in
  // 27.6 us per call against 11.8 us at 1 thread. Fewer than 4 columns (decode) stay on this thread.
  const int64_t grain = acts_.q4_chunk8(0) != nullptr ? 4 : 1;
  if (m < 4 || m <= grain) fill(0, m, 0);
  else pool_.ParallelFor(m, grain, fill);
}

uint64_t Context::ActBytes(int m, int64_t k) const {
  // q8 blocks: 32 int8 + a float scale (+ the block sum the kernel reads) per 32; else floats.
  return static_cast<uint64_t>(m) * static_cast<uint64_t>(k) * (acts_.quantized() ? 5 : 16) / 4;
}

void Context::RmsNormRow(const float* x, const std::vector<float>& w, float* out) const {
  const ModelConfig& c = model_.config();
  kernels::RmsNorm(params_.isa, x, w.data(), c.dim, c.norm_eps, out);
}

void Context::RmsNorm(const float* x, const std::vector<float>& w, int m, float* out) const {
  const size_t dim = static_cast<size_t>(model_.config().dim);
  for (int i = 0; i < m; ++i) RmsNormRow(x + i * dim, w, out + i * dim);
}

void Context::NormQuantize(const float* x, const std::vector<float>& w, int m, float* out, GgmlType wt, Op fused_op,
                           Op norm_op) {
  const int dim = model_.config().dim;
  const uint64_t norm_bytes = static_cast<uint64_t>(m) * dim * 8 + static_cast<uint64_t>(dim) * 4;
  if (!fused(Fusion::kNormQuant)) {
    const uint64_t t0 = ProfBegin(norm_op);
    RmsNorm(x, w, m, out);
    ProfEnd(norm_op, t0, [&] { return norm_bytes; });
    Quantize(out, m, wt, dim);
    return;
  }
  // Each row normalized and quantized while it is in L1, the rows shared by the threads. The float row
  // still goes to `out`: the float kernels read it, as do the unfused consumers (qkv, gate_up_silu off).
  const uint64_t t0 = ProfBegin(fused_op);
  acts_.Begin(params_.isa, wt, m, dim);
  auto rows = [&](int64_t j0, int64_t j1, int) {
    for (int64_t j = j0; j < j1; ++j) {
      RmsNormRow(x + j * dim, w, out + j * dim);
      acts_.Fill(out, j, j + 1);
    }
  };
  FillColumns(m, rows);
  ProfEnd(fused_op, t0, [&] { return norm_bytes + ActBytes(m, dim); });
}

void Context::MatMulRows(const Weight& w, int64_t r0, int64_t r1, float* Y) const {
  // The packed layout is one for every x86 SIMD ISA; other paths read the file layout (still mapped).
  if (w.packed != nullptr && kernels::CanPack(params_.isa, w.type, w.rows, w.cols) && acts_.quantized()) {
    kernels::MatMulPacked(params_.isa, w.type, w.packed, w.rows, w.cols, r0, r1, acts_, Y, w.rows);
  } else {
    kernels::MatMul(params_.isa, w.type, w.data, w.cols, r0, r1, acts_, Y, w.rows);
  }
}

void Context::MatMuls(std::initializer_list<MatJob> jobs, int m) {
  // The jobs' rows laid end to end, each starting at a multiple of 16, so that every thread's range
  // (grain 16) starts at a multiple of 8 within each matrix, as the packed kernels need.
  int64_t total = 0, work = 0;
  for (const MatJob& j : jobs) {
    total += (j.w->rows + 15) / 16 * 16;
    work += j.w->rows * j.w->cols * m;
  }
  auto rows = [&](int64_t r0, int64_t r1, int) {
    int64_t base = 0;
    for (const MatJob& j : jobs) {
      const int64_t a = std::max(r0, base) - base, b = std::min(r1, base + j.w->rows) - base;
      if (a < b) {
        MatMulRows(*j.w, a, b, j.y);
        // The residual while the rows are in this core's cache (at 2 threads a separate pass read
        // the other core's rows: 5.9 against 1.3 us per verify-8 call on TinyLlama).
        if (j.add_to != nullptr) {
          for (int i = 0; i < m; ++i) {
            const size_t o = static_cast<size_t>(i) * static_cast<size_t>(j.w->rows);
            for (int64_t r = a; r < b; ++r) j.add_to[o + r] += j.y[o + r];
          }
        }
      }
      base += (j.w->rows + 15) / 16 * 16;
    }
  };
  // Small matrices are not worth waking the workers for.
  if (work < (1 << 15)) rows(0, total, 0);
  else pool_.ParallelFor(total, 16, rows);
}

void Context::Qkv(const LayerWeights& L, int m) {
  const ModelConfig& c = model_.config();
  auto bytes = [&](const Weight& w) {
    return static_cast<uint64_t>(w.nbytes()) + ActBytes(m, w.cols) + static_cast<uint64_t>(m) * w.rows * 4;
  };
  // Fused: one quantized input (prepared by NormQuantize) for the three matrices and one parallel
  // region. The kernels need one activation format, hence one weight type.
  if (fused(Fusion::kQkv) && L.wk.type == L.wq.type && L.wv.type == L.wq.type) {
    const uint64_t t0 = ProfBegin(Op::kWqkv);
    MatMuls({{&L.wq, q_.data()}, {&L.wk, k_.data()}, {&L.wv, v_.data()}}, m);
    ProfEnd(Op::kWqkv, t0, [&] { return bytes(L.wq) + bytes(L.wk) + bytes(L.wv) - 2 * ActBytes(m, c.dim); });
    return;
  }
  // Unfused: each matrix quantizes its input again and has its own parallel region.
  uint64_t t0 = ProfBegin(Op::kWq);
  MatMuls({{&L.wq, q_.data()}}, m);
  ProfEnd(Op::kWq, t0, [&] { return bytes(L.wq); });
  Quantize(xb_.data(), m, L.wk.type, c.dim);
  t0 = ProfBegin(Op::kWk);
  MatMuls({{&L.wk, k_.data()}}, m);
  ProfEnd(Op::kWk, t0, [&] { return bytes(L.wk); });
  Quantize(xb_.data(), m, L.wv.type, c.dim);
  t0 = ProfBegin(Op::kWv);
  MatMuls({{&L.wv, v_.data()}}, m);
  ProfEnd(Op::kWv, t0, [&] { return bytes(L.wv); });
}

void Context::GateUpSilu(const LayerWeights& L, int m) {
  const ModelConfig& c = model_.config();
  const int64_t ffn = c.ffn_dim;
  auto bytes = [&](const Weight& w) {
    return static_cast<uint64_t>(w.nbytes()) + ActBytes(m, w.cols) + static_cast<uint64_t>(m) * w.rows * 4;
  };
  if (fused(Fusion::kGateUpSilu) && L.w_up.type == L.w_gate.type) {
    // Each thread computes its rows of gate and of up, then silu*mul on them while they are in cache:
    // one parallel region, no serial pass over (m, ffn), one quantization of the input.
    const uint64_t t0 = ProfBegin(Op::kGateUpSilu);
    float* g = gate_.data();
    const float* u = up_.data();
    auto rows = [&](int64_t r0, int64_t r1, int) {
      MatMulRows(L.w_gate, r0, r1, g);
      MatMulRows(L.w_up, r0, r1, up_.data());
      // Element-wise on every ISA, so both paths and every row split give the same bits.
      for (int64_t j = 0; j < m; ++j) GateAct(g + j * ffn + r0, u + j * ffn + r0, r1 - r0);
    };
    if (2 * ffn * c.dim * m < (1 << 15)) rows(0, ffn, 0);
    else pool_.ParallelFor(ffn, 16, rows);
    ProfEnd(Op::kGateUpSilu, t0, [&] { return bytes(L.w_gate) + bytes(L.w_up) - ActBytes(m, c.dim); });
    return;
  }
  uint64_t t0 = ProfBegin(Op::kGate);
  MatMuls({{&L.w_gate, gate_.data()}}, m);
  ProfEnd(Op::kGate, t0, [&] { return bytes(L.w_gate); });
  Quantize(xb_.data(), m, L.w_up.type, c.dim);
  t0 = ProfBegin(Op::kUp);
  MatMuls({{&L.w_up, up_.data()}}, m);
  ProfEnd(Op::kUp, t0, [&] { return bytes(L.w_up); });
  t0 = ProfBegin(Op::kSiluMul);
  GateAct(gate_.data(), up_.data(), static_cast<int64_t>(m) * ffn);
  ProfEnd(Op::kSiluMul, t0, [&] { return static_cast<uint64_t>(m) * ffn * 12; });
}

void Context::GateAct(float* g, const float* u, int64_t n) const {
  if (model_.config().gemma) kernels::GeluMul(params_.isa, g, u, n);
  else kernels::SiluMul(params_.isa, g, u, n);
}

void Context::PostNormResidual(const std::vector<float>& w, int m) {
  const size_t dim = static_cast<size_t>(model_.config().dim);
  const uint64_t t0 = ProfBegin(Op::kResidual);
  for (int i = 0; i < m; ++i) {
    float* t = tmp_.data() + i * dim;
    float* __restrict x = x_.data() + i * dim;
    RmsNormRow(t, w, t);
    for (size_t j = 0; j < dim; ++j) x[j] += t[j];
  }
  ProfEnd(Op::kResidual, t0, [&] { return static_cast<uint64_t>(m) * dim * 16; });
}

// Rotates the first n_rot dims of each head of v (n_heads heads of head_dim) to position pos.
void Context::Rope(float* v, int n_heads, int pos, bool swa) const {
  const ModelConfig& c = model_.config();
  const int half = c.n_rot / 2;
  const float* cs = (swa ? rope_cos_swa_ : rope_cos_).data() + static_cast<size_t>(pos) * half;
  const float* sn = (swa ? rope_sin_swa_ : rope_sin_).data() + static_cast<size_t>(pos) * half;
  for (int h = 0; h < n_heads; ++h) {
    float* x = v + static_cast<size_t>(h) * c.head_dim;
    if (c.rope == RopeStyle::kNeox) {
      // Dims i and i + n_rot/2: two contiguous halves, a loop the compiler vectorizes (restrict: no alias).
      float* __restrict lo = x;
      float* __restrict hi = x + half;
      for (int i = 0; i < half; ++i) {
        const float x0 = lo[i], x1 = hi[i];
        lo[i] = x0 * cs[i] - x1 * sn[i];
        hi[i] = x0 * sn[i] + x1 * cs[i];
      }
      continue;
    }
    for (int i = 0; i < half; ++i) {  // kNorm: adjacent pairs (2i, 2i+1)
      const float x0 = x[2 * i], x1 = x[2 * i + 1];
      x[2 * i] = x0 * cs[i] - x1 * sn[i];
      x[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
    }
  }
}

// Per row (rows_at_: the context and position of each): biases, the per-head q/k RMSNorm (qwen3), RoPE on q and k, the key rotation, then the K and V rows quantized into the cache,
// all while the token's rows are in L1 (rope_kv). Unfused: each step a pass over the whole batch, as a
// graph of separate ops would run them. The same operations on the same values either way.
void Context::RopeAndWriteKv(int layer, const LayerWeights& L, int m) {
  const ModelConfig& c = model_.config();
  const int qd = c.q_dim(), kvd = c.kv_dim();
  const size_t l = static_cast<size_t>(layer);
  const bool swa = c.swa_layer(layer);
  const bool uses_rope = c.layer_uses_rope(layer);  // smollm3's NoPE layers: q and k as projected
  auto bias_rope = [&](int i) {
    float* q = q_.data() + static_cast<size_t>(i) * qd;
    float* k = k_.data() + static_cast<size_t>(i) * kvd;
    float* v = v_.data() + static_cast<size_t>(i) * kvd;
    if (c.qkv_bias) {
      for (int j = 0; j < qd; ++j) q[j] += L.bq[static_cast<size_t>(j)];
      for (int j = 0; j < kvd; ++j) k[j] += L.bk[static_cast<size_t>(j)];
      for (int j = 0; j < kvd; ++j) v[j] += L.bv[static_cast<size_t>(j)];
    }
    if (c.qk_norm) {  // llama.cpp's build_norm over each head's head_dim values, in place
      for (int h = 0; h < c.n_heads; ++h)
        kernels::RmsNorm(params_.isa, q + static_cast<size_t>(h) * c.head_dim, L.q_norm.data(), c.head_dim, c.norm_eps,
                         q + static_cast<size_t>(h) * c.head_dim);
      for (int h = 0; h < c.n_kv_heads; ++h)
        kernels::RmsNorm(params_.isa, k + static_cast<size_t>(h) * c.head_dim, L.k_norm.data(), c.head_dim, c.norm_eps,
                         k + static_cast<size_t>(h) * c.head_dim);
    }
    if (uses_rope) {  // with the row's own context's tables (LongRoPE's factors depend on its n_ctx)
      const RowAt& r = rows_at_[static_cast<size_t>(i)];
      r.seq->Rope(q, c.n_heads, r.pos, swa);
      r.seq->Rope(k, c.n_kv_heads, r.pos, swa);
    }
    if (rotate_k_) {
      for (int h = 0; h < c.n_kv_heads; ++h) Hadamard(k + static_cast<size_t>(h) * c.head_dim, c.head_dim);
    }
  };
  auto write_row = [&](GgmlType t, const float* x, uint8_t* cache, size_t row_bytes, int pos, int rows) {
    const int row = pos % rows;  // a ring for sliding-window layers, the position itself otherwise
    if (!ByHead(t)) return quant::QuantizeRow(t, x, cache + static_cast<size_t>(row) * row_bytes, kvd);
    for (int h = 0; h < c.n_kv_heads; ++h)
      quant::QuantizeRow(t, x + static_cast<size_t>(h) * c.head_dim, cache + HeadRowOffset(t, h, row, rows), c.head_dim);
  };
  auto write = [&](int i) {  // into the row's own context's cache
    const RowAt& r = rows_at_[static_cast<size_t>(i)];
    Context& s = *r.seq;
    const int rows = s.layer_rows_[l];
    const int slot = r.Slot(r.pos);  // a tree row's own slot, else its position
    write_row(params_.type_k, k_.data() + static_cast<size_t>(i) * kvd, s.k_cache_.data() + s.k_off_[l], k_row_, slot, rows);
    write_row(params_.type_v, v_.data() + static_cast<size_t>(i) * kvd, s.v_cache_.data() + s.v_off_[l], v_row_, slot, rows);
  };
  const uint64_t rope_bytes = static_cast<uint64_t>(m) * (qd + kvd) * 8 + (c.qkv_bias ? static_cast<uint64_t>(m) * kvd * 8 : 0) +
                              (c.qk_norm ? static_cast<uint64_t>(m) * (qd + kvd) * 8 : 0);
  const uint64_t write_bytes = static_cast<uint64_t>(m) * (2 * kvd * 4 + k_row_ + v_row_);
  if (fused(Fusion::kRopeKv)) {
    const uint64_t t0 = ProfBegin(Op::kRopeKvWrite);
    for (int i = 0; i < m; ++i) {
      bias_rope(i);
      write(i);
    }
    ProfEnd(Op::kRopeKvWrite, t0, [&] { return rope_bytes + write_bytes; });
    return;
  }
  uint64_t t0 = ProfBegin(Op::kRope);
  for (int i = 0; i < m; ++i) bias_rope(i);
  ProfEnd(Op::kRope, t0, [&] { return rope_bytes; });
  t0 = ProfBegin(Op::kKvWrite);
  for (int i = 0; i < m; ++i) write(i);
  ProfEnd(Op::kKvWrite, t0, [&] { return write_bytes; });
}

// y = c * conv(b * x) per row, the causal depthwise convolution over the row's context's state (the inputs of
// its last conv_l - 1 positions) and its own input, as llama.cpp's ggml_ssm_conv sums it: taps oldest first,
// in float. Rows run in order (a sequence's rows are consecutive positions), so each reads the state its
// previous row left; the channels are independent and split between the threads. Every loop runs over
// contiguous channels (the kernel is stored tap-major) and vectorizes.
void Context::ShortConv(int layer, const LayerWeights& L, int m) {
  const ModelConfig& c = model_.config();
  const int64_t dim = c.dim;
  const int keep = c.conv_l - 1;
  const size_t l = static_cast<size_t>(layer);
  const uint64_t t0 = ProfBegin(Op::kShortConv);
  auto channels = [&](int64_t ch0, int64_t ch1, int) {
    const int64_t n = ch1 - ch0;
    const float* __restrict w_last = L.conv.data() + static_cast<size_t>(keep) * dim + ch0;
    for (int i = 0; i < m; ++i) {
      const RowAt& r = rows_at_[static_cast<size_t>(i)];
      float* st = r.seq->conv_state_.data() + r.seq->conv_off_[l] + ch0;
      if (r.pos == 0)  // a new sequence: nothing before it
        for (int k = 0; k < keep; ++k) std::fill(st + k * dim, st + k * dim + n, 0.0f);
      const float* __restrict b = bcx_.data() + static_cast<size_t>(i) * 3 * dim + ch0;
      const float* __restrict gc = b + dim;
      float* __restrict bx = const_cast<float*>(b) + 2 * dim;  // x, turned into b * x in place
      float* __restrict y = xb_.data() + static_cast<size_t>(i) * dim + ch0;
      for (int64_t j = 0; j < n; ++j) bx[j] = b[j] * bx[j];
      std::fill(y, y + n, 0.0f);
      for (int k = 0; k < keep; ++k) {
        const float* __restrict w = L.conv.data() + static_cast<size_t>(k) * dim + ch0;
        const float* __restrict s = st + k * dim;
        for (int64_t j = 0; j < n; ++j) y[j] += w[j] * s[j];
      }
      for (int64_t j = 0; j < n; ++j) y[j] = gc[j] * (y[j] + w_last[j] * bx[j]);
      for (int k = 0; k + 1 < keep; ++k) std::memcpy(st + k * dim, st + (k + 1) * dim, sizeof(float) * n);
      std::memcpy(st + (keep - 1) * dim, bx, sizeof(float) * n);
    }
  };
  // Small passes (decode: one row of a few thousand multiply-adds) stay on this thread.
  if (static_cast<int64_t>(m) * dim * c.conv_l < (1 << 16)) channels(0, dim, 0);
  else pool_.ParallelFor(dim, 64, channels);
  ProfEnd(Op::kShortConv, t0, [&] { return static_cast<uint64_t>(m) * dim * (3 * 4 + 4 + 2 * keep * 4); });
}

void Context::EvalBatch(const int32_t* tokens, int m, bool all_logits) {
  rows_at_.resize(static_cast<size_t>(m));
  for (int i = 0; i < m; ++i) rows_at_[static_cast<size_t>(i)] = {this, n_past_ + i};
  const int first = all_logits ? 0 : m - 1;
  std::vector<int> out(static_cast<size_t>(m - first));
  for (int i = first; i < m; ++i) out[static_cast<size_t>(i - first)] = i;
  Forward(tokens, m, out);
  n_logit_rows_ = m - first;
  n_past_ += m;
  AdvanceRingFloor();
}

void Context::AdvanceRingFloor() {
  for (size_t l = 0; l < layer_rows_.size(); ++l)
    if (layer_rows_[l] > 0 && layer_rows_[l] < n_ctx_)  // a ring (a conv layer's 0 rows are no cache)
      ring_floor_ = std::max(ring_floor_, n_past_ - layer_rows_[l]);
}

void Context::Forward(const int32_t* tokens, int m, std::span<const int> out_rows) {
  const ModelConfig& c = model_.config();
  const int dim = c.dim, qd = c.q_dim();
  if (prof_ != nullptr) prof_->BeginPass(m);
  const Weight& emb = model_.token_embd();
  const size_t emb_row = RowBytes(emb.type, emb.cols);
  uint64_t t0 = ProfBegin(Op::kEmbed);
  for (int i = 0; i < m; ++i) {
    quant::DequantizeRow(emb.type, static_cast<const uint8_t*>(emb.data) + emb_row * static_cast<size_t>(tokens[i]),
                         x_.data() + static_cast<size_t>(i) * dim, dim);
  }
  if (c.gemma) {  // gemma scales the embeddings by sqrt(dim) (a float, as llama.cpp's ggml_scale)
    const float sc = std::sqrt(static_cast<float>(dim));
    for (size_t j = 0; j < static_cast<size_t>(m) * dim; ++j) x_[j] *= sc;
  }
  ProfEnd(Op::kEmbed, t0, [&] { return static_cast<uint64_t>(m) * (emb_row + dim * 4); });
  auto matmul_bytes = [&](const Weight& w, int rows) {
    return static_cast<uint64_t>(w.nbytes()) + ActBytes(rows, w.cols) + static_cast<uint64_t>(rows) * w.rows * 4;
  };
  auto residual = [&] {  // x += tmp
    const uint64_t t = ProfBegin(Op::kResidual);
    for (size_t j = 0; j < static_cast<size_t>(m) * dim; ++j) x_[j] += tmp_[j];
    ProfEnd(Op::kResidual, t, [&] { return static_cast<uint64_t>(m) * dim * 12; });
  };
  // Fused, wo and down add their output rows into x themselves (MatJob::add_to).
  // gemma norms each block's output before the add: no fused residual there.
  float* const residual_to = fused(Fusion::kResidual) && !c.gemma ? x_.data() : nullptr;
  const uint64_t residual_bytes = residual_to != nullptr ? static_cast<uint64_t>(m) * dim * 8 : 0;

  for (int l = 0; l < c.n_layers; ++l) {
    if (!skip_.empty() && skip_[static_cast<size_t>(l)]) continue;  // a self-speculative draft pass
    const LayerWeights& L = model_.layers()[static_cast<size_t>(l)];
    if (c.conv_layer(l)) {  // lfm2's short-convolution block in place of attention
      NormQuantize(x_.data(), L.attn_norm, m, xb_.data(), L.in_proj.type, Op::kAttnNormQuant, Op::kAttnNorm);
      t0 = ProfBegin(Op::kConvInProj);
      MatMuls({{&L.in_proj, bcx_.data()}}, m);
      ProfEnd(Op::kConvInProj, t0, [&] { return matmul_bytes(L.in_proj, m); });
      ShortConv(l, L, m);
      Quantize(xb_.data(), m, L.out_proj.type, dim);
      t0 = ProfBegin(Op::kConvOutProj);
      MatMuls({{&L.out_proj, tmp_.data(), residual_to}}, m);
      ProfEnd(Op::kConvOutProj, t0, [&] { return matmul_bytes(L.out_proj, m) + residual_bytes; });
      if (residual_to == nullptr) residual();
    } else {
    // Attention block.
    NormQuantize(x_.data(), L.attn_norm, m, xb_.data(), L.wq.type, Op::kAttnNormQuant, Op::kAttnNorm);
    Qkv(L, m);
    RopeAndWriteKv(l, L, m);
    t0 = ProfBegin(Op::kAttention);
    if (fused(Fusion::kAttnOnline) || params_.attn_f16) Attention(l, m);
    else AttentionFullScores(l, m);
    ProfEnd(Op::kAttention, t0, [&] {
      // Each row reads the cache rows of its history (n = pos + 1), its query, and writes its output.
      uint64_t positions = 0;
      for (int i = 0; i < m; ++i) positions += static_cast<uint64_t>(rows_at_[static_cast<size_t>(i)].pos) + 1;
      return positions * (k_row_ + v_row_) + static_cast<uint64_t>(m) * qd * 8;
    });
    Quantize(att_.data(), m, L.wo.type, qd);
    t0 = ProfBegin(Op::kWo);
    MatMuls({{&L.wo, tmp_.data(), residual_to}}, m);
    ProfEnd(Op::kWo, t0, [&] { return matmul_bytes(L.wo, m) + residual_bytes; });
    if (c.gemma) PostNormResidual(L.attn_post_norm, m);
    else if (residual_to == nullptr) residual();
    }

    // Feed-forward block: down(silu(gate(x)) * up(x)).
    NormQuantize(x_.data(), L.ffn_norm, m, xb_.data(), L.w_gate.type, Op::kFfnNormQuant, Op::kFfnNorm);
    GateUpSilu(L, m);
    Quantize(gate_.data(), m, L.w_down.type, c.ffn_dim);
    t0 = ProfBegin(Op::kDown);
    MatMuls({{&L.w_down, tmp_.data(), residual_to}}, m);
    ProfEnd(Op::kDown, t0, [&] { return matmul_bytes(L.w_down, m) + residual_bytes; });
    if (c.gemma) PostNormResidual(L.ffn_post_norm, m);
    else if (residual_to == nullptr) residual();
  }

  // Output: only the rows whose logits are wanted. Rows [first, m) are read in place; other sets are first
  // gathered into tmp_ (free after the layers), which changes no arithmetic (each row is normed alone).
  const int rows = static_cast<int>(out_rows.size());
  const int first = m - rows;
  bool in_place = true;
  for (int r = 0; r < rows; ++r) in_place = in_place && out_rows[static_cast<size_t>(r)] == first + r;
  const float* x_out = x_.data() + static_cast<size_t>(first) * dim;
  if (!in_place) {
    for (int r = 0; r < rows; ++r)
      std::memcpy(tmp_.data() + static_cast<size_t>(r) * dim, x_.data() + static_cast<size_t>(out_rows[static_cast<size_t>(r)]) * dim,
                  sizeof(float) * dim);
    x_out = tmp_.data();
  }
  const Weight& out = model_.output();
  NormQuantize(x_out, model_.output_norm(), rows, xb_.data(), out.type, Op::kOutputNormQuant, Op::kOutputNorm);
  t0 = ProfBegin(Op::kOutput);
  MatMuls({{&out, logits_.data()}}, rows);
  ProfEnd(Op::kOutput, t0, [&] { return matmul_bytes(out, rows); });
  if (c.final_logit_softcap > 0)  // cap * tanh(logits / cap), as llama.cpp's scale, tanh, scale
    kernels::Softcap(params_.isa, logits_.data(), static_cast<int64_t>(rows) * n_vocab_, c.final_logit_softcap);
  if (prof_ != nullptr) prof_->EndPass();
}

void Context::SetProfiler(Profiler* p) {
  prof_ = p;
  pool_.SetObserver(p);
  if (p == nullptr) return;
  const ModelConfig& c = model_.config();
  const kernels::Isa isa = params_.isa;
  const LayerWeights& L0 = model_.layers()[0];
  // The kernel a weight gets (MatMulRows' choice).
  auto kernel_of = [&](const Weight& x) {
    const bool packed = x.packed != nullptr && kernels::CanPack(isa, x.type, x.rows, x.cols);
    if (!packed) return kernels::KernelName(isa, x.type);
    return kernels::KernelName(isa, x.type) + (x.type == GgmlType::kQ4_0 ? ", 16-row repacked" : ", 8-row repacked");
  };
  // A matmul op's kernel, from its weight in every layer ("mixed" when the layers differ).
  auto matmul = [&](const Weight LayerWeights::*w) {
    std::string k;
    for (const LayerWeights& L : model_.layers()) {
      if ((L.*w).data == nullptr) continue;  // lfm2: a conv layer's attention matrices, an attention layer's conv ones
      const std::string n = kernel_of(L.*w);
      if (k.empty()) k = n;
      else if (k.find(n) == std::string::npos) k += " | " + n;
    }
    return k;
  };
  p->SetKernel(Op::kWq, matmul(&LayerWeights::wq));
  p->SetKernel(Op::kWk, matmul(&LayerWeights::wk));
  p->SetKernel(Op::kWv, matmul(&LayerWeights::wv));
  p->SetKernel(Op::kWqkv, matmul(&LayerWeights::wq));
  const std::string plus_residual = fused(Fusion::kResidual) ? "; + residual" : "";
  p->SetKernel(Op::kWo, matmul(&LayerWeights::wo) + plus_residual);
  p->SetKernel(Op::kGate, matmul(&LayerWeights::w_gate));
  p->SetKernel(Op::kUp, matmul(&LayerWeights::w_up));
  const std::string silu = c.gemma ? kernels::GeluMulName(isa) : kernels::SiluMulName(isa);
  p->SetKernel(Op::kGateUpSilu, matmul(&LayerWeights::w_gate) + "; " + silu);
  p->SetKernel(Op::kSiluMul, silu);
  p->SetKernel(Op::kDown, matmul(&LayerWeights::w_down) + plus_residual);
  p->SetKernel(Op::kOutput, kernel_of(model_.output()));
  if (c.has_conv()) {
    p->SetKernel(Op::kConvInProj, matmul(&LayerWeights::in_proj));
    p->SetKernel(Op::kShortConv, "gated depthwise conv of " + std::to_string(c.conv_l) + " taps (compiler-vectorized)");
    p->SetKernel(Op::kConvOutProj, matmul(&LayerWeights::out_proj) + plus_residual);
  }
  // What the activations become for the layers' weight type (Activations::Fill).
  const GgmlType wt = (L0.wq.data != nullptr ? L0.wq : L0.in_proj).type;  // lfm2: layer 0 may be a conv layer
  const std::string quant = wt == GgmlType::kF32 ? "float copy" : kernels::ActivationQuantizerName(isa, wt, c.dim);
  p->SetKernel(Op::kQuantize, quant);
  const std::string norm = kernels::RmsNormName(isa) + " norm";
  for (Op o : {Op::kAttnNorm, Op::kFfnNorm, Op::kOutputNorm}) p->SetKernel(o, norm + ", f64 sum of squares");
  for (Op o : {Op::kAttnNormQuant, Op::kFfnNormQuant, Op::kOutputNormQuant}) p->SetKernel(o, norm + " + " + quant);
  p->SetKernel(Op::kEmbed, "dequantize " + TypeName(static_cast<uint32_t>(model_.token_embd().type)) + " rows");
  const std::string kv = std::string("K ") + TypeName(static_cast<uint32_t>(params_.type_k)) + " / V " +
                         TypeName(static_cast<uint32_t>(params_.type_v)) + (rotate_k_ ? ", K rotated" : "");
  std::string rope = c.rope == RopeStyle::kNorm ? "scalar rope (pairs)" : "rope (neox, compiler-vectorized)";
  if (c.qk_norm) rope = kernels::RmsNormName(isa) + " q/k head norm + " + rope;
  p->SetKernel(Op::kRope, rope);
  p->SetKernel(Op::kKvWrite, "quantize rows to " + kv);
  p->SetKernel(Op::kRopeKvWrite, rope + " + quantize rows to " + kv);
  p->SetKernel(Op::kAttention, (params_.attn_f16 ? std::string("llama.cpp f16 flash-attention arithmetic")
                                : fused(Fusion::kAttnOnline) ? std::string("online softmax, 128 positions per step")
                                                             : std::string("full score rows, then softmax")) +
                                   ", " + kv);
  p->SetKernel(Op::kResidual, "scalar");
}

}  // namespace edgedecode::llm
