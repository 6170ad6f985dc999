// Attention of the forward pass over the KV cache (f32, f16, bf16, q8_0, q4_0 rows, per KV head), with online
// softmax (the default) or, with the attn_online fusion off, the scores of each query first.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "llm/context.h"
#include "llm/hadamard.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace edgedecode::llm {

bool Context::ByHead(GgmlType t) const {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16 || model_.config().head_dim % 32 == 0;
}

size_t Context::HeadRowOffset(GgmlType t, int kvh, int row, int rows) const {
  return (static_cast<size_t>(kvh) * rows + static_cast<size_t>(row)) * RowBytes(t, model_.config().head_dim);
}

int Context::ChunkRows(int layer, int t0, int nt, int* row) const {
  const int rows = layer_rows_[static_cast<size_t>(layer)];
  *row = t0 % rows;
  return std::min(nt, rows - *row);
}

namespace {

// The scores of n positions scaled (and, with cap > 0, soft-capped: gemma2's cap * tanh(s / cap), as
// llama.cpp's scale, tanh, scale), and their maximum with mx (kernels::ScaleMax).
float ScaleCapMax(kernels::Isa isa, float* s, int n, float scale, float cap, float mx) {
  if (cap <= 0) return kernels::ScaleMax(isa, s, n, scale, mx);
  return kernels::SoftcapMax(isa, s, n, scale, cap, mx);
}

// Head kvh of nt position-major cache rows (quantized blocks that span heads) as f32 rows of hd floats in
// tmp, row tt read from cache row slot_of(tt): each whole row dequantized, then the head's slice copied.
template <class SlotOf>
void DequantizeHeadRows(kernels::Isa isa, const uint8_t* c, size_t row_bytes, GgmlType t, int hd, int kvd, int kvh,
                        int nt, SlotOf slot_of, std::vector<float>* tmp) {
  tmp->resize(static_cast<size_t>(nt + 1) * kvd);
  float* whole = tmp->data() + static_cast<size_t>(nt) * kvd;
  for (int tt = 0; tt < nt; ++tt) {
    kernels::DequantizeRow(isa, t, c + static_cast<size_t>(slot_of(tt)) * row_bytes, whole, kvd);
    std::memcpy(tmp->data() + static_cast<size_t>(tt) * hd, whole + static_cast<size_t>(kvh) * hd, sizeof(float) * hd);
  }
}
}  // namespace

// Where attention reads head kvh of positions [t0, t0+nt) of a layer's cache (c): in place, in the stored
// type, contiguous rows of the head-major layout -- unless the type is quantized and its blocks span
// heads (head_dim % 32 != 0, stories260K), when the position-major rows (row_bytes apart) are dequantized
// into `tmp` (nt x head_dim floats) and read from there.
Context::HeadRows Context::HeadRowsAt(const uint8_t* c, size_t row_bytes, GgmlType t, int kvh, int t0, int nt, int rows,
                                      std::vector<float>* tmp) const {
  const ModelConfig& cfg = model_.config();
  const int hd = cfg.head_dim;
  if (ByHead(t)) return {c + HeadRowOffset(t, kvh, t0, rows), RowBytes(t, hd), t};
  DequantizeHeadRows(params_.isa, c, row_bytes, t, hd, cfg.kv_dim(), kvh, nt, [t0](int tt) { return t0 + tt; }, tmp);
  return {reinterpret_cast<const uint8_t*>(tmp->data()), sizeof(float) * hd, GgmlType::kF32};
}

// The type the keys are read in: the K type in place, else f32 (see HeadRowsAt). f16 and bf16 keys are
// scored by kernels::AttentionScores (f32 queries; rounded to bf16 for bf16 keys); the others by
// AttentionScoresQ with the queries prepared for
// this type -- for f32 keys (the oracle tests' setting, and the float copy of blocks that span heads)
// that is the f32 weight-matmul dot, whose order those tests validated.
GgmlType Context::KeyReadType() const {
  return ByHead(params_.type_k) ? params_.type_k : GgmlType::kF32;
}

Context::AttentionItem Context::AttentionItemAt(int64_t item, int m, int layer, float* qr) {
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
  const RowAt& r = rows_at_[static_cast<size_t>(i)];
  const Context& s = *r.seq;
  const size_t l = static_cast<size_t>(layer);
  const int window = c.swa_layer(layer) ? c.n_swa : 0;
  const int n = r.pos + 1;
  return {&s, s.k_cache_.data() + s.k_off_[l], s.v_cache_.data() + s.v_off_[l], s.layer_rows_[l],
          window > 0 ? std::max(0, n - window) : 0, n, &r, q, att_.data() + off};
}

Context::HeadRows Context::ItemRows(const AttentionItem& it, bool v, int kvh, int t0, int nt, int row,
                                    std::vector<float>* tmp) const {
  const uint8_t* c = v ? it.vc : it.kc;
  const size_t row_bytes = v ? v_row_ : k_row_;
  const GgmlType t = v ? params_.type_v : params_.type_k;
  const RowAt& r = *it.row;
  if (r.path == nullptr || t0 + nt <= r.tree_base) return HeadRowsAt(c, row_bytes, t, kvh, row, nt, it.rows, tmp);
  // Tree rows: each position from its own slot, copied in position order (the same rows, the same kernels,
  // the same chunk as the chain would read in place).
  const int hd = model_.config().head_dim;
  if (ByHead(t)) {
    const size_t hb = RowBytes(t, hd);
    tmp->resize((static_cast<size_t>(nt) * hb + 3) / 4);
    uint8_t* dst = reinterpret_cast<uint8_t*>(tmp->data());
    for (int tt = 0; tt < nt; ++tt)
      std::memcpy(dst + static_cast<size_t>(tt) * hb, c + HeadRowOffset(t, kvh, r.Slot(t0 + tt) % it.rows, it.rows), hb);
    return {dst, hb, t};
  }
  DequantizeHeadRows(params_.isa, c, row_bytes, t, hd, model_.config().kv_dim(), kvh, nt,
                     [&](int tt) { return r.Slot(t0 + tt) % it.rows; }, tmp);
  return {reinterpret_cast<const uint8_t*>(tmp->data()), sizeof(float) * hd, GgmlType::kF32};
}


// One query head over positions [0, n) of an f16 cache, in the arithmetic of llama.cpp's CPU flash
// attention (ggml_compute_forward_flash_attn_ext_f16 with f16 K/V and its scalar loops): q rounded to
// f16; each score the float product of f16 values summed in double; on a new maximum M the f16
// accumulator is scaled by exp(M_old - M) (rounded back to f16), then v * exp(s - M) is added, rounded
// to f16; the sum S in float; out = f32(acc) * (1 / S).
void Context::AttendF16(int layer, const uint8_t* kc, const uint8_t* vc, int kvh, const float* q, int lo, int n,
                        const RowAt& at, float* out) const {
  const int hd = model_.config().head_dim;
  const float scale = model_.config().attn_scale;
  const int rows = layer_rows_[static_cast<size_t>(layer)];
  uint16_t qh[256], acc[256];  // head_dim <= 256 (checked at Create)
  for (int d = 0; d < hd; ++d) qh[d] = quant::FloatToHalf(q[d]), acc[d] = 0;
  float M = -INFINITY, S = 0.0f;
  for (int t = lo; t < n; ++t) {
    const int slot = at.Slot(t) % rows;  // tree rows sit elsewhere in the cache
    const uint16_t* k = reinterpret_cast<const uint16_t*>(kc + HeadRowOffset(GgmlType::kF16, kvh, slot, rows));
    const uint16_t* v = reinterpret_cast<const uint16_t*>(vc + HeadRowOffset(GgmlType::kF16, kvh, slot, rows));
    double dot = 0;
    for (int d = 0; d < hd; ++d) dot += static_cast<double>(quant::HalfToFloat(qh[d]) * quant::HalfToFloat(k[d]));
    float s = static_cast<float>(dot) * scale;
    if (const float cap = model_.config().attn_logit_softcap; cap > 0) s = std::tanh(s / cap) * cap;
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

// Splits the m rows of the pass into attention tiles in tile_first_ (tile j: rows tile_first_[j] ..
// tile_first_[j+1] - 1): runs of up to max_rows consecutive rows of one sequence at consecutive positions,
// none a tree row, with the same first visible position (a sliding-window layer's rows past the window
// each start elsewhere: one row per tile there). Returns the number of tiles.
int Context::AttentionTiles(int layer, int m, int max_rows) {
  const ModelConfig& c = model_.config();
  const int window = c.swa_layer(layer) ? c.n_swa : 0;
  auto lo = [window](const RowAt& r) { return window > 0 ? std::max(0, r.pos + 1 - window) : 0; };
  tile_first_.clear();
  for (int i = 0; i < m; ++i) {
    const RowAt& r = rows_at_[static_cast<size_t>(i)];
    bool joins = false;
    if (i > 0 && i - tile_first_.back() < max_rows) {
      const RowAt& p = rows_at_[static_cast<size_t>(i - 1)];
      joins = r.seq == p.seq && r.path == nullptr && p.path == nullptr && r.pos == p.pos + 1 && lo(r) == lo(p);
    }
    if (!joins) tile_first_.push_back(i);
  }
  const int n_tiles = static_cast<int>(tile_first_.size());
  tile_first_.push_back(m);
  return n_tiles;
}

// Causal attention of the m rows of the pass (rows_at_: each over its own context's cache up to its
// position), with online softmax (no score matrix). One work item is (tile of rows, KV head), see
// AttentionTiles: with the attn_tiles fusion up to kAttnTileRows rows, else one. The threads take items
// one at a time, the costliest tiles first. attn_f16: one item per (row, KV head), AttendF16.
void Context::Attention(int layer, int m) {
  const ModelConfig& c = model_.config();
  const int hd = c.head_dim;
  const int group = c.n_heads / c.n_kv_heads;
  if (params_.attn_f16) {
    pool_.ParallelFor(static_cast<int64_t>(m) * c.n_kv_heads, 1, [&](int64_t b, int64_t e, int) {
      std::vector<float> qr(static_cast<size_t>(group) * hd);
      for (int64_t item = b; item < e; ++item) {
        const int kvh = static_cast<int>(item % c.n_kv_heads);
        const AttentionItem it = AttentionItemAt(item, m, layer, qr.data());
        for (int g = 0; g < group; ++g)
          it.seq->AttendF16(layer, it.kc, it.vc, kvh, it.q + g * hd, it.lo, it.n, *it.row, it.out + g * hd);
      }
    });
    return;
  }
  const int n_tiles = AttentionTiles(layer, m, fused(Fusion::kAttnTiles) ? kAttnTileRows : 1);
  int max_rows = 1;  // the scratch of the largest tile (a decode step: one row)
  for (int j = 0; j < n_tiles; ++j)
    max_rows = std::max(max_rows, tile_first_[static_cast<size_t>(j) + 1] - tile_first_[static_cast<size_t>(j)]);
  OrderTilesByCost(layer, n_tiles);
  // Each thread takes the next item as it finishes one: the items' costs differ (tile rows, history
  // lengths, a thread descheduled by another process), and an item's result does not depend on which
  // thread runs it, so no thread waits at the end while work is left.
  const int64_t n_items = static_cast<int64_t>(n_tiles) * c.n_kv_heads;
  std::atomic<int64_t> next{0};
  pool_.ParallelFor(std::min<int64_t>(pool_.size(), n_items), 1, [&](int64_t, int64_t, int) {
    TileScratch sc(max_rows, group, hd);
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < n_items;) {
      const int tile = tile_order_[static_cast<size_t>(item / c.n_kv_heads)];
      const int i0 = tile_first_[static_cast<size_t>(tile)];
      AttendTile(layer, i0, tile_first_[static_cast<size_t>(tile) + 1] - i0, static_cast<int>(item % c.n_kv_heads), &sc);
    }
  });
}

// tile_order_: the n_tiles tiles of AttentionTiles, the costliest first (rows x the positions their last row
// sees), so that the last items the threads take are the cheap ones.
void Context::OrderTilesByCost(int layer, int n_tiles) {
  const ModelConfig& c = model_.config();
  const int window = c.swa_layer(layer) ? c.n_swa : 0;
  auto cost = [&](int j) {
    const int i0 = tile_first_[static_cast<size_t>(j)], nr = tile_first_[static_cast<size_t>(j) + 1] - i0;
    const int pos = rows_at_[static_cast<size_t>(i0 + nr - 1)].pos + 1;
    return static_cast<int64_t>(nr) * (window > 0 ? std::min(pos, window) : pos);
  };
  tile_order_.resize(static_cast<size_t>(n_tiles));
  for (int j = 0; j < n_tiles; ++j) tile_order_[static_cast<size_t>(j)] = j;
  std::stable_sort(tile_order_.begin(), tile_order_.end(), [&](int a, int b) { return cost(a) > cost(b); });
}

Context::TileScratch::TileScratch(int max_rows, int group, int hd)
    : qa(static_cast<size_t>(max_rows)),
      qr(static_cast<size_t>(max_rows) * group * hd),
      acc(qr.size()),
      s(static_cast<size_t>(max_rows) * group * kAttnChunk),
      w(s.size()),
      mx(static_cast<size_t>(max_rows) * group),
      sum(mx.size()) {}

// One tile (rows i0 .. i0 + nr - 1 of the pass, see AttentionTiles) and KV head kvh. The cache is walked in
// chunks of kAttnChunk positions from the tiles' first visible position (split where a sliding-window ring
// wraps), as far as the last row sees; each chunk's keys and values are read once for the tile and stay in
// L1 / L2 while every row that sees part of the chunk takes it. Per row, the arithmetic is exactly that of
// the row alone (a tile of one): its group of query heads (GQA) is scored against the positions of the
// chunk it sees (f16 / bf16 keys: kernels::AttentionScores; q8_0 / q4_0 keys:
// kernels::AttentionScoresQ, integer dot products with the queries quantized to 8-bit blocks, as for the
// weights; f32 keys: the f32 matmul dot), its running maximum moves once per chunk, and the weighted sum of
// the V rows is read in place. The rows that see the whole chunk share one kernels::AccumulateRows over
// their heads (each head's sum is the same in any tile shape: one fused multiply-add per position, in
// order); a row that sees part of the chunk (the causal edge) sums its own part.
void Context::AttendTile(int layer, int i0, int nr, int kvh, TileScratch* sc) {
  const ModelConfig& c = model_.config();
  const int hd = c.head_dim;
  const int group = c.n_heads / c.n_kv_heads;
  const size_t gh = static_cast<size_t>(group) * hd;
  const float scale = c.attn_scale;
  const kernels::Isa isa = params_.isa;
  const GgmlType kt = KeyReadType();
  const bool float_k = kt == GgmlType::kF16 || kt == GgmlType::kBF16;  // see KeyReadType
  constexpr int C = kAttnChunk;
  const RowAt& first = rows_at_[static_cast<size_t>(i0)];
  const size_t l = static_cast<size_t>(layer);
  const int window = c.swa_layer(layer) ? c.n_swa : 0;
  const int n_last = first.pos + nr;  // the last row sees positions up to first.pos + nr - 1
  const Context& seq = *first.seq;
  AttentionItem it{&seq, seq.k_cache_.data() + seq.k_off_[l], seq.v_cache_.data() + seq.v_off_[l], seq.layer_rows_[l],
                   window > 0 ? std::max(0, first.pos + 1 - window) : 0, n_last, &first, nullptr, nullptr};
  auto query = [&](int r) {  // row r's group of queries, rotated into qr when the keys were stored rotated
    const float* q = q_.data() + static_cast<size_t>(i0 + r) * c.q_dim() + static_cast<size_t>(kvh) * gh;
    if (!rotate_k_) return q;
    float* qr = sc->qr.data() + static_cast<size_t>(r) * gh;
    std::memcpy(qr, q, sizeof(float) * gh);
    for (int g = 0; g < group; ++g) Hadamard(qr + static_cast<size_t>(g) * hd, hd);
    return const_cast<const float*>(qr);
  };
  const float* q[kAttnTileRows];
  for (int r = 0; r < nr; ++r) {
    q[r] = query(r);
    if (!float_k) sc->qa[static_cast<size_t>(r)].Prepare(isa, kt, q[r], group, hd);
  }
  std::fill(sc->acc.begin(), sc->acc.begin() + static_cast<ptrdiff_t>(nr * gh), 0.0f);
  std::fill(sc->mx.begin(), sc->mx.begin() + static_cast<ptrdiff_t>(nr) * group, -INFINITY);
  std::fill(sc->sum.begin(), sc->sum.begin() + static_cast<ptrdiff_t>(nr) * group, 0.0f);
  for (int t0 = it.lo, nt = 0; t0 < n_last; t0 += nt) {
    int row;  // a chunk stops where a sliding-window ring wraps
    nt = seq.ChunkRows(layer, t0, std::min(C, n_last - t0), &row);
    const HeadRows K = ItemRows(it, false, kvh, t0, nt, row, &sc->ktmp);
    int whole = nr;  // rows whole.. see all nt positions (row r sees positions up to first.pos + r)
    for (int r = nr - 1; r >= 0 && first.pos + r + 1 - t0 >= nt; --r) whole = r;
    for (int r = 0; r < nr; ++r) {
      const int ns = std::min(nt, first.pos + r + 1 - t0);  // positions of this chunk row r sees
      if (ns <= 0) continue;
      float* s = sc->s.data() + static_cast<size_t>(r) * group * C;
      if (float_k) kernels::AttentionScores(isa, K.type, K.rows, K.stride, hd, ns, q[r], hd, group, s, C);
      else kernels::AttentionScoresQ(isa, K.type, K.rows, K.stride, hd, ns, sc->qa[static_cast<size_t>(r)], s, C);
      for (int g = 0; g < group; ++g) {
        const size_t h = static_cast<size_t>(r) * group + g;  // the head's index in the tile
        float* sg = s + static_cast<size_t>(g) * C;
        const float cm = ScaleCapMax(isa, sg, ns, scale, c.attn_logit_softcap, sc->mx[h]);
        if (cm > sc->mx[h]) {  // rescale what was summed so far (by 0 on the first chunk: mx = -inf)
          const float f = std::exp(sc->mx[h] - cm);
          for (int d = 0; d < hd; ++d) sc->acc[h * hd + d] *= f;
          sc->sum[h] *= f;
          sc->mx[h] = cm;
        }
        sc->sum[h] += kernels::ExpSubSum(isa, sg, cm, sc->w.data() + h * C, ns);
      }
    }
    const HeadRows V = ItemRows(it, true, kvh, t0, nt, row, &sc->vtmp);
    for (int r = 0; r < whole; ++r) {  // the causal edge: each row its own positions
      const int ns = first.pos + r + 1 - t0;
      if (ns <= 0) continue;
      kernels::AccumulateRows(isa, V.type, V.rows, V.stride, hd, ns, sc->w.data() + static_cast<size_t>(r) * group * C, C,
                              group, sc->acc.data() + r * gh, hd);
    }
    if (whole < nr)
      kernels::AccumulateRows(isa, V.type, V.rows, V.stride, hd, nt, sc->w.data() + static_cast<size_t>(whole) * group * C,
                              C, static_cast<int64_t>(nr - whole) * group, sc->acc.data() + whole * gh, hd);
  }
  for (int r = 0; r < nr; ++r) {
    float* out = att_.data() + static_cast<size_t>(i0 + r) * c.q_dim() + static_cast<size_t>(kvh) * gh;
    for (int g = 0; g < group; ++g) {
      const size_t h = static_cast<size_t>(r) * group + g;
      for (int d = 0; d < hd; ++d) out[g * hd + d] = sc->acc[h * hd + d] / sc->sum[h];
    }
  }
}

// The unfused attention (attn_online off): for each (token, KV head) item, the scores of every query
// head of the group over all n positions first (the same matmul as the online path), then one softmax
// per query over the whole row, then the weighted V sum over the whole row. Same function as the online
// softmax; the sums differ in rounding only (the online path rescales its running sums per chunk).
void Context::AttentionFullScores(int layer, int m) {
  const ModelConfig& c = model_.config();
  const int hd = c.head_dim;
  const int group = c.n_heads / c.n_kv_heads;
  const float scale = c.attn_scale;
  const kernels::Isa isa = params_.isa;
  const GgmlType kt = KeyReadType();
  const bool float_k = kt == GgmlType::kF16 || kt == GgmlType::kBF16;  // see KeyReadType
  constexpr int C = kAttnChunk;
  int64_t n_max = 0;  // the longest history of a row
  for (int i = 0; i < m; ++i) n_max = std::max<int64_t>(n_max, rows_at_[static_cast<size_t>(i)].pos + 1);
  pool_.ParallelFor(static_cast<int64_t>(m) * c.n_kv_heads, 1, [&](int64_t b, int64_t e, int) {
    kernels::Activations qa;
    std::vector<float> qr(static_cast<size_t>(group) * hd), sc(static_cast<size_t>(group * n_max)), ktmp, vtmp;
    std::vector<float> sum(static_cast<size_t>(group));
    for (int64_t item = b; item < e; ++item) {
      const int kvh = static_cast<int>(item % c.n_kv_heads);
      const AttentionItem it = AttentionItemAt(item, m, layer, qr.data());
      const int lo = it.lo, n = it.n - it.lo;  // scores of positions lo.. at sc + (t - lo)
      if (!float_k) qa.Prepare(isa, kt, it.q, group, hd);
      for (int t0 = 0, nt = 0; t0 < n; t0 += nt) {  // scores: Q K^T, row g at sc + g * n_max
        int row;
        nt = it.seq->ChunkRows(layer, lo + t0, std::min(C, n - t0), &row);
        const HeadRows K = ItemRows(it, false, kvh, lo + t0, nt, row, &ktmp);
        if (float_k) kernels::AttentionScores(isa, K.type, K.rows, K.stride, hd, nt, it.q, hd, group, sc.data() + t0, n_max);
        else kernels::AttentionScoresQ(isa, K.type, K.rows, K.stride, hd, nt, qa, sc.data() + t0, n_max);
      }
      for (int g = 0; g < group; ++g) {  // softmax over the whole row
        float* r = sc.data() + static_cast<size_t>(g) * n_max;
        const float mx = ScaleCapMax(isa, r, n, scale, c.attn_logit_softcap, -INFINITY);
        sum[static_cast<size_t>(g)] = kernels::ExpSubSum(isa, r, mx, r, n);
      }
      std::fill(it.out, it.out + static_cast<size_t>(group) * hd, 0.0f);
      for (int t0 = 0, nt = 0; t0 < n; t0 += nt) {  // P V
        int row;
        nt = it.seq->ChunkRows(layer, lo + t0, std::min(C, n - t0), &row);
        const HeadRows V = ItemRows(it, true, kvh, lo + t0, nt, row, &vtmp);
        kernels::AccumulateRows(isa, V.type, V.rows, V.stride, hd, nt, sc.data() + t0, n_max, group, it.out, hd);
      }
      for (int g = 0; g < group; ++g)
        for (int d = 0; d < hd; ++d) it.out[g * hd + d] /= sum[static_cast<size_t>(g)];
    }
  });
}

}  // namespace edgedecode::llm
