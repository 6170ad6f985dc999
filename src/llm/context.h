// An inference context: the KV cache and scratch buffers for one sequence over a Model, and the
// forward pass that fills them.
//
// Ownership: a Context borrows the Model (which must outlive it) and owns its buffers and thread pool.
// Not thread-safe: one caller at a time; the forward pass itself runs on the context's pool.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "edgedecode/status.h"
#include "kernels/kernels.h"
#include "llm/fusion.h"
#include "llm/model.h"
#include "llm/profiler.h"

namespace edgedecode::llm {

struct ContextParams {
  int n_ctx = 0;          // 0: min(model's training context, 4096)
  int n_batch = 512;      // tokens per forward pass (prefill is chunked by this)
  int n_threads = 0;      // 0: all cores
  kernels::Isa isa = kernels::Isa::kRef;
  // KV cache element types: f32, f16 (default), q8_0 or q4_0, separately for K and V.
  GgmlType type_k = GgmlType::kF16;
  GgmlType type_v = GgmlType::kF16;
  // Rotate keys with a per-head Walsh-Hadamard transform before quantizing them (and queries alike,
  // so q.k is unchanged): it spreads outlier channels over the block, which 4-bit blocks need and
  // 8-bit blocks gain from. -1: on for q8_0 and q4_0 K (power-of-two head_dim), 0: off, 1: on.
  int rotate_k = -1;
  // Attention over an f16 cache computed as llama.cpp's CPU flash attention does it (its default): the
  // query rounded to f16, the weighted V sum accumulated in f16, rescaled on each new maximum. It
  // reproduces llama.cpp's output bit for bit where its vector loops run scalar (head_dim below the
  // SIMD step), at some cost in precision at long contexts; off: f32 accumulation. Needs f16 K and V.
  bool attn_f16 = false;
  // Fused paths of the forward pass (all on by default; each off computes the same function, see fusion.h).
  // attn_online has no effect with attn_f16, whose arithmetic is llama.cpp's online one.
  FusionSet fusions;
};

// Rows (positions) layer `layer`'s KV cache holds in a context of n_ctx positions evaluated in batches of up
// to n_batch tokens: n_ctx, but a sliding-window layer keeps only a ring of min(n_ctx, n_swa + n_batch - 1)
// (each token of a batch sees the window before it), and a short-convolution layer (lfm2) none.
int LayerKvRows(const ModelConfig& c, int layer, int n_ctx, int n_batch);
// Bytes the KV cache of a context takes: 2 x the layers' rows (LayerKvRows) x row bytes of (kv_heads x head_dim).
// With n_batch 1 and n_ctx a depth: the bytes a decode step reads at that depth.
size_t KvCacheBytes(const ModelConfig& c, int n_ctx, GgmlType type_k, GgmlType type_v, int n_batch);
// Bytes of one sequence's short-convolution state (lfm2): per conv layer the last conv_l - 1 inputs of the
// convolution (rows of dim floats); 0 for models without conv layers.
size_t ConvStateBytes(const ModelConfig& c);
// Whether a type can hold a KV row of this model (block size divides kv_dim).
Status CheckKvType(const ModelConfig& c, GgmlType t, const char* which);

class Context;

// One sequence's part of a multi-sequence pass (Context::EvalMulti): n tokens appended to ctx at positions
// ctx->n_past() .. n_past()+n-1. all_logits: keep the logits of every one of them (a speculative verify),
// else only the last.
struct SeqTokens {
  Context* ctx;
  const int32_t* tokens;
  int n;
  bool all_logits = false;
};

class Context {
 public:
  static Result<std::unique_ptr<Context>> Create(const Model& model, const ContextParams& params);

  // Evaluates `n` tokens at positions n_past() .. n_past()+n-1 and appends them to the KV cache.
  // all_logits: keep the logits of every token (else only the last). Fails (without changing the
  // cache) when the tokens do not fit in the context or an id is out of range; Corrupt (the positions
  // dropped again; with short-convolution layers, whose state took them, every position) when the logits
  // come out NaN or Inf, naming the broken weight where there is one.
  Status Eval(const int32_t* tokens, int n, bool all_logits);

  // Evaluates the tokens of several sequences (distinct contexts over the same model, with the same kernels,
  // KV types and fusions) in shared forward passes: every matmul runs once over the rows of all of them (one
  // read of the weights), while RoPE, the KV write and attention of each row use its own context's positions,
  // cache, sliding-window ring and RoPE tables. Each row's arithmetic is the one it gets alone (the kernels
  // compute every row independently of the others), so afterwards each ctx->logits(0) is its last token's
  // logits, bit for bit those of ctx->Eval(tokens, n, false) (with all_logits, logits(i) its i-th token's,
  // those of Eval(tokens, n, true)), and its n_past() has advanced by n. Each n is at most that context's
  // n_batch(); the rows are packed into passes of up to the last sequence's n_batch(), run on the last
  // sequence's scratch and thread pool -- in one pass when any sequence keeps all its logits (more rows
  // than one pass holds are then InvalidArgument). Fails without changing any cache on bad input (a
  // context full, an id out of range, mismatched contexts: the message names the sequence by index); Corrupt
  // (every sequence's positions dropped again) when a sequence's logits come out NaN or Inf.
  static Status EvalMulti(std::span<const SeqTokens> seqs);

  // A token tree in one pass (speculative decoding's tree verify): n rows after n_past(), row 0 the root
  // (parents[0] = -1), every other row's parent an earlier row (0 <= parents[i] < i). Row i at depth d (the
  // root's depth is 0) is evaluated as the token at position n_past() + d after its ancestors -- its RoPE
  // position, and it attends to the cache [0, n_past()) plus its ancestors' rows and itself, in the same
  // order and chunks as that chain would be evaluated, so its logits are bit for bit those of the chain
  // (root .. row i) evaluated by Eval. Its K/V go to cache slot n_past() + i. Keeps every row's logits (row i
  // at logits(i)). n at most n_batch(). Afterwards n_past() has advanced by n (slots in use) until
  // KeepTreePath; sliding-window rings hold every row (a pass is at most a batch). Fails like Eval, and
  // InvalidArgument (cache unchanged) on a malformed parent list.
  Status EvalTree(const int32_t* tokens, const int* parents, int n);
  // Right after EvalTree: keeps the path of rows path[0] = 0 (the root), path[1], ... (each the child of the one
  // before) as positions base, base + 1, ... (base: n_past() before EvalTree) by moving their K/V rows
  // (every layer, the bytes of any KV type) to those slots, and drops every other row of the tree.
  void KeepTreePath(const int* path, int k);

  // Logits of the last Eval: (n or 1 rows, n_vocab).
  const float* logits(int row = 0) const { return logits_.data() + static_cast<size_t>(row) * n_vocab_; }
  int n_logit_rows() const { return n_logit_rows_; }
  int n_vocab() const { return n_vocab_; }
  int n_past() const { return n_past_; }
  int n_batch() const { return params_.n_batch; }
  int n_ctx() const { return n_ctx_; }
  // Drops positions >= n from the cache (used to roll back speculative tokens). Sliding-window layers keep
  // only the last window + batch - 1 positions (a ring): a roll back below min_truncate() would need
  // positions already overwritten, so it drops everything instead (n_past() becomes 0; callers that keep
  // a prefix ask min_truncate() first). Within a batch of the end (a speculative verify) it always holds --
  // except for models with short-convolution layers (lfm2), whose state cannot go back: there
  // min_truncate() is n_past() and any roll back drops everything.
  void Truncate(int n) {
    if (n >= n_past_) return;
    n_past_ = n >= min_truncate() ? n : 0;
    if (n_past_ == 0) ring_floor_ = 0;
  }
  // The lowest n to which Truncate keeps a prefix: 0 without sliding-window rings, else the position from
  // which every ring still holds the window before it; n_past() for models with short-convolution layers.
  int min_truncate() const;
  void Reset() { n_past_ = 0; ring_floor_ = 0; tree_base_ = -1; }

  const Model& model() const { return model_; }
  int n_threads() const { return pool_.size(); }
  kernels::Isa isa() const { return params_.isa; }
  const FusionSet& fusions() const { return params_.fusions; }

  // Attaches a profiler (nullptr: detach). The profiler must have n_threads() threads and outlive its
  // use; it is given the kernel of each op here. Off (the default) costs one pointer test per op.
  void SetProfiler(Profiler* p);
  Profiler* profiler() const { return prof_; }

  // Layer skip (self-speculative drafting, llm/self_spec.h): the passes of Eval bypass the layers l with
  // skip[l] set (the residual stream passes through unchanged; their KV cache is neither written nor read),
  // the model's other layers compute as always. Empty (the default): every layer. The size must be
  // n_layers or 0; the caller clears it again before passes whose output must be the model's own.
  void SetSkipLayers(std::vector<bool> skip) { skip_ = std::move(skip); }
  const std::vector<bool>& skip_layers() const { return skip_; }

 private:
  Context(const Model& model, const ContextParams& params, int n_ctx, int n_threads);
  void EvalBatch(const int32_t* tokens, int m, bool all_logits);
  // Where row i of a pass goes: the context whose cache, positions and RoPE tables it uses, and its position.
  struct RowAt {
    Context* seq;
    int pos;
    // A tree row (EvalTree): positions tree_base .. pos are the cache slots path[0 ..] (its ancestors and
    // itself); else (nullptr) every position is its own slot.
    const int* path = nullptr;
    int tree_base = 0;
    int Slot(int p) const { return path != nullptr && p >= tree_base ? path[p - tree_base] : p; }
  };
  // The forward pass over m rows described by rows_at_ (filled by the caller): logits_ gets the rows listed
  // in out_rows, in that order. Changes no n_past.
  void Forward(const int32_t* tokens, int m, std::span<const int> out_rows);
  // After n_past_ advanced: positions below n_past - rows are gone from the sliding-window rings.
  void AdvanceRingFloor();
  // Whether another context can share this one's passes (EvalMulti), else why not.
  Status CheckSharesPasses(const Context& o) const;
  // Whether n tokens fit after n_past() and every id is in the vocabulary (Eval's and EvalMulti's check).
  Status CheckTokens(const int32_t* tokens, int n) const;
  // Corrupt when a logits row of the last Eval (which started at position p_start) holds a NaN or Inf, naming
  // the position and the weight that caused it; the Eval's positions are then dropped.
  Status CheckLogits(int p_start);

  // One weight matrix and where its output goes: Y (m, w.rows) = X (m, w.cols) * W^T.
  struct MatJob {
    const Weight* w;
    float* y;                  // (m, w->rows)
    float* add_to = nullptr;   // (m, w->rows) or null: add_to += y, each thread on the rows it computed
  };
  // The activations (acts_) for a matmul input X (m rows of k) and weights of type wt.
  void Quantize(const float* X, int m, GgmlType wt, int64_t k);
  // fill(j0, j1, thread) over the columns [0, m) of acts_ (after Begin), shared by the threads where m
  // is worth it, each taking whole half-chunks where acts_ has the q4_0 chunk copy.
  void FillColumns(int m, const ThreadPool::RangeFn& fill);
  // out = RMSNorm(x) * w (m rows of dim), then acts_ prepared from out for weights of type wt: with
  // norm_quant, row by row in one parallel region (the row is quantized while in L1); else as two ops.
  void NormQuantize(const float* x, const std::vector<float>& w, int m, float* out, GgmlType wt, Op fused, Op norm_op);
  // Every job's matmul over the prepared acts_ (same weight type and cols), in one parallel region split
  // by rows of the jobs laid end to end.
  void MatMuls(std::initializer_list<MatJob> jobs, int m);
  // Rows [r0, r1) of one matmul over acts_.
  void MatMulRows(const Weight& w, int64_t r0, int64_t r1, float* Y) const;
  void Qkv(const LayerWeights& L, int m);
  void GateUpSilu(const LayerWeights& L, int m);
  // The gate activation in place over n elements of gate (gate = act(gate) * up): SiLU, or gemma's GELU.
  void GateAct(float* g, const float* u, int64_t n) const;
  // gemma: x += RMSNorm(tmp) * w, row by row (the attention or FFN output normed before its residual add).
  void PostNormResidual(const std::vector<float>& w, int m);
  void RopeAndWriteKv(int layer, const LayerWeights& L, int m);
  // lfm2's short-convolution layer after in_proj (bcx_): per row y = c * conv(b * x) into xb_, each row with
  // its own context's state (rows_at_), which it then advances by one row.
  void ShortConv(int layer, const LayerWeights& L, int m);
  void RmsNormRow(const float* x, const std::vector<float>& w, float* out) const;
  void RmsNorm(const float* x, const std::vector<float>& w, int m, float* out) const;
  // swa: the sliding-window layers' angles (their own base), where the model has such layers.
  void Rope(float* v, int n_heads, int pos, bool swa = false) const;
  void Attention(int layer, int m);
  // Rows of one sequence attention reads the cache for at once (the attn_tiles fusion), see AttentionTiles.
  static constexpr int kAttnTileRows = 8;
  int AttentionTiles(int layer, int m, int max_rows);
  // A thread's buffers for AttendTile: per row of a tile its prepared queries (quantized keys), rotated
  // queries, and per query head its accumulator, scores, weights, running maximum and sum.
  struct TileScratch {
    TileScratch(int max_rows, int group, int hd);
    std::vector<kernels::Activations> qa;
    std::vector<float> qr, acc, s, w, mx, sum, ktmp, vtmp;
  };
  void AttendTile(int layer, int i0, int nr, int kvh, TileScratch* sc);
  void OrderTilesByCost(int layer, int n_tiles);
  // Attention with the scores of a query over all n positions first, then one softmax (attn_online off).
  void AttentionFullScores(int layer, int m);
  void AttendF16(int layer, const uint8_t* kc, const uint8_t* vc, int kvh, const float* q, int lo, int n, const RowAt& at,
                 float* out) const;
  // Positions attention reads per step (scores of a chunk, then its V rows).
  static constexpr int kAttnChunk = 128;
  // Head kvh of nt consecutive cache positions as attention reads them: nt rows of head_dim elements of
  // `type`, `stride` bytes apart (in the cache itself, or a float copy for blocks that span heads).
  struct HeadRows {
    const uint8_t* rows;
    size_t stride;
    GgmlType type;
  };
  // t0: the cache row (ring slot) of the first position, rows: the layer's rows (see layer_rows_).
  HeadRows HeadRowsAt(const uint8_t* c, size_t row_bytes, GgmlType t, int kvh, int t0, int nt, int rows,
                      std::vector<float>* tmp) const;
  GgmlType KeyReadType() const;  // the type the keys are read in (and the queries prepared for)
  // One attention work item (row, KV head) of a pass of m rows (rows_at_): which row (ordered 0, m-1,
  // 1, m-2, ... so that any range of items mixes short and long histories), the context whose cache it
  // reads, how many positions it sees, its group's queries (rotated into qr when the keys were stored
  // rotated) and its output.
  struct AttentionItem {
    const Context* seq;           // whose cache (layer `layer`): kc, vc, `rows` ring rows
    const uint8_t* kc;
    const uint8_t* vc;
    int rows;
    int lo;           // first position this token sees (0, or the start of its sliding window)
    int n;            // positions this token sees end at n - 1
    const RowAt* row; // where each position sits in the cache (RowAt::Slot)
    const float* q;   // (group, head_dim) queries
    float* out;       // (group, head_dim) in att_
  };
  AttentionItem AttentionItemAt(int64_t item, int m, int layer, float* qr);
  // Positions [t0, t0 + nt) of a layer's cache as ring rows: the first row and how many of the nt fit before
  // the ring wraps (callers split their chunks there).
  int ChunkRows(int layer, int t0, int nt, int* row) const;
  // Head kvh of the cache positions [t0, t0 + nt) of item `it` as attention reads them: HeadRowsAt in place,
  // unless part of them are tree rows (elsewhere in the cache), which are then gathered into `tmp` in order.
  HeadRows ItemRows(const AttentionItem& it, bool v, int kvh, int t0, int nt, int row, std::vector<float>* tmp) const;

  const Model& model_;
  ContextParams params_;
  int n_ctx_;
  int n_vocab_;
  int n_past_ = 0;
  int n_logit_rows_ = 0;
  ThreadPool pool_;
  kernels::Activations acts_;

  bool rotate_k() const { return rotate_k_; }
  bool fused(Fusion f) const { return params_.fusions.on(f); }

  // Profiling: no clock read unless a profiler is attached.
  uint64_t ProfBegin(Op op) const { return prof_ != nullptr ? prof_->Begin(op) : 0; }
  template <class Bytes>
  void ProfEnd(Op op, uint64_t t0, Bytes bytes) const {
    if (prof_ != nullptr) [[unlikely]] prof_->End(op, t0, bytes());
  }
  uint64_t ActBytes(int m, int64_t k) const;  // bytes of acts_ a matmul reads
  Profiler* prof_ = nullptr;
  std::vector<bool> skip_;  // SetSkipLayers: empty, or one flag per layer

  // KV cache stored per KV head (never expanded to the query heads). Where a head's row is whole blocks
  // of the type (f32, f16, or head_dim % 32 == 0: ByHead) a layer is head-major, (kv_head, n_ctx,
  // RowBytes(type, head_dim)), so that attention streams each head's rows contiguously and reads no
  // cache line of another head (position-major rows of 68-byte q8_0 heads cost as many lines as f16).
  // Otherwise (stories260K, head_dim 8) position-major, (n_ctx, RowBytes(type, kv_dim)): blocks span
  // heads. The same bytes either way.
  std::vector<uint8_t> k_cache_;  // (layer, kv_head, n_ctx, head row) or (layer, n_ctx, row of kv_dim)
  std::vector<uint8_t> v_cache_;  // as k_cache_, of type_v
  size_t k_row_ = 0, v_row_ = 0;  // bytes per position (all heads)
  // Rows of each layer's cache: n_ctx, or for a sliding-window layer a ring of LayerKvRows (window + batch - 1)
  // rows where position p sits in row p % rows. k_off_/v_off_: where each layer's rows start.
  std::vector<int> layer_rows_;
  std::vector<size_t> k_off_, v_off_;
  // The lowest position every ring still holds (positions below it were overwritten since the last Reset).
  int ring_floor_ = 0;
  bool ByHead(GgmlType t) const;
  // Byte offset of head kvh of cache row `row` in a layer's cache of type t with `rows` rows (ByHead(t) only).
  size_t HeadRowOffset(GgmlType t, int kvh, int row, int rows) const;
  bool rotate_k_ = false;

  // Scratch for one batch of up to n_batch tokens.
  std::vector<float> x_;      // (n_batch, dim) residual stream
  std::vector<float> xb_;     // (n_batch, dim) normed input
  std::vector<float> q_;      // (n_batch, q_dim)
  std::vector<float> k_;      // (n_batch, kv_dim)
  std::vector<float> v_;      // (n_batch, kv_dim)
  std::vector<float> att_;    // (n_batch, q_dim) attention output
  std::vector<float> gate_;   // (n_batch, ffn_dim)
  std::vector<float> up_;     // (n_batch, ffn_dim)
  std::vector<float> tmp_;    // (n_batch, dim)
  std::vector<float> logits_; // (n_batch or 1, n_vocab)
  std::vector<float> bcx_;    // (n_batch, 3 x dim) lfm2: in_proj's b, c and x; empty without conv layers
  // lfm2: per conv layer l, (conv_l - 1, dim) at conv_off_[l]: the convolution inputs (b * x) of the last
  // conv_l - 1 positions, oldest first (zeros before position 0: a row at position 0 clears it).
  std::vector<float> conv_state_;
  std::vector<size_t> conv_off_;
  std::vector<float> rope_cos_, rope_sin_;  // (n_ctx, n_rot/2)
  std::vector<float> rope_cos_swa_, rope_sin_swa_;  // the same with rope_base_swa; empty without sliding layers
  std::vector<RowAt> rows_at_;  // (n_batch) the rows of the pass being run
  std::vector<int> tree_paths_; // EvalTree: each row's path of slots (RowAt::path points here)
  std::vector<int> tile_first_; // Attention: where each tile of rows starts (AttentionTiles), then m
  std::vector<int> tile_order_; // Attention: the tiles, the costliest first (OrderTilesByCost)
  int tree_base_ = -1;          // EvalTree's base until KeepTreePath (-1: none)
};

}  // namespace edgedecode::llm
