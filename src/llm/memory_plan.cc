#include "llm/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "llm/context.h"

namespace edgedecode::llm {

namespace {

// Whether a matrix the forward pass multiplies (every weight but the embedding lookup, plus the output
// matrix, which is token_embd's when tied) satisfies pred.
template <class Pred>
bool AnyMatrix(const Model& model, Pred pred) {
  if (pred(model.output())) return true;
  for (const Weight* w : model.all_weights())
    if (w != &model.token_embd() && pred(*w)) return true;
  return false;
}

}  // namespace

bool HasHalfMatrices(const Model& model) {
  return AnyMatrix(model, [](const Weight& w) { return w.type == GgmlType::kF16 || w.type == GgmlType::kBF16; });
}

bool HasQ4_0Matrices(const Model& model) {
  return AnyMatrix(model, [](const Weight& w) { return w.type == GgmlType::kQ4_0; });
}

ScratchSizes ComputeScratch(const ModelConfig& c, int n_ctx, int n_batch, bool half_matrices,
                            bool q4_0_matrices) {
  const size_t nb = static_cast<size_t>(std::min(n_batch, n_ctx));
  ScratchSizes s;
  s.x = s.xb = s.tmp = nb * c.dim;
  s.q = s.att = nb * c.q_dim();
  s.k = s.v = nb * c.kv_dim();
  s.gate = s.up = nb * c.ffn_dim;
  s.logits = nb * c.n_vocab;
  s.bcx = c.has_conv() ? nb * 3 * static_cast<size_t>(c.dim) : 0;
  s.rope = (c.n_swa > 0 ? 4 : 2) * static_cast<size_t>(n_ctx) * (c.n_rot / 2);  // a second table for sliding layers
  const size_t kmax = static_cast<size_t>(std::max({c.dim, c.q_dim(), c.ffn_dim}));
  // Float copy (4 B/elem) and the q8 form (1 B + 4/32 d + 4/32 d*sum + 2/16 block sums = 1.375 B/elem);
  // with f16 / bf16 matrices also the 16-bit copy the kernels read (2 B/elem).
  // With q4_0 matrices also the block sums times -8 (4/32 B/elem) and, on AVX-512, the 8-column
  // interleaved copy (Activations::q4_chunk8: 384 B per 32 elements of 8 columns, 1.5 B/elem, + 64 for
  // its alignment), counted whatever the ISA: `plan` may describe another machine.
  s.activation_bytes = nb * kmax * 4 + nb * kmax * 11 / 8 + (half_matrices ? nb * kmax * 2 : 0) +
                       (q4_0_matrices ? nb * kmax / 8 + nb / 8 * 8 * kmax * 3 / 2 + 64 : 0);
  return s;
}

namespace {

// Heap bytes of parsed metadata values (the tokenizer arrays dominate).
uint64_t ValueBytes(const gguf::Value& v) {
  uint64_t b = sizeof(gguf::Value) + v.packed.capacity() + v.strings.capacity() * sizeof(std::string);
  if (v.str.size() > 15) b += v.str.capacity() + 1;
  for (const std::string& s : v.strings)
    if (s.size() > 15) b += s.capacity() + 1;
  for (const gguf::Value& e : v.array) b += ValueBytes(e);
  return b;
}

}  // namespace

namespace {

// The plan of `model`'s shape with the given weights line and matrix kinds (PlanMemory: the model's own).
MemoryPlan PlanWith(const Model& model, const PlanParams& p, MemoryItem weights, bool half_matrices, bool q4_0_matrices);

}  // namespace

MemoryPlan PlanMemory(const Model& model, const PlanParams& p) {
  std::map<std::string, uint64_t> by_type;
  for (const Weight* w : model.all_weights()) by_type[TypeName(static_cast<uint32_t>(w->type))] += w->nbytes();
  std::string types;
  for (const auto& [t, b] : by_type) types += (types.empty() ? "" : ", ") + t + " " + FormatBytes(b);
  std::string how = "the GGUF file, mapped read-only: " + types;
  // The arena replaces the released pages of the originals: about the same total (q4_0 and q6_K repack
  // to their file size, q4_K to 2.8% more; plus < 2 MiB of rounding). The line counts the file size.
  if (model.packed_bytes() > 0)
    how += "; of which " + FormatBytes(model.packed_bytes()) + " held in huge-page memory for the kernels, q4_0 / q8_0 / q4_K / q6_K repacked (originals released)";
  else
    how += "; the runtime moves the matrices each token streams to huge-page memory at load (same total)";
  return PlanWith(model, p, {"weights", model.file().file_size(), how}, HasHalfMatrices(model), HasQ4_0Matrices(model));
}

MemoryPlan PlanMemoryRequantized(const Model& model, const PlanParams& p, uint64_t file_bytes, const std::string& how,
                                 bool half_matrices, bool q4_0_matrices) {
  return PlanWith(model, p, {"weights", file_bytes, how}, half_matrices, q4_0_matrices);
}

void AddDraftPlan(const MemoryPlan& draft, MemoryPlan* plan) {
  for (const MemoryItem& it : draft.items) {
    if (it.component == "runtime overhead") continue;  // one process: the target's line counts it
    plan->items.push_back({"draft " + it.component, it.bytes, it.detail});
    plan->total += it.bytes;
  }
}

namespace {

MemoryPlan PlanWith(const Model& model, const PlanParams& p, MemoryItem weights, bool half_matrices, bool q4_0_matrices) {
  const ModelConfig& c = model.config();
  MemoryPlan plan;
  plan.items.push_back(std::move(weights));
  uint64_t small = 0;
  for (const LayerWeights& L : model.layers())
    small += (L.attn_norm.size() + L.ffn_norm.size() + L.attn_post_norm.size() + L.ffn_post_norm.size() + L.bq.size() + L.bk.size() + L.bv.size() + L.q_norm.size() +
              L.k_norm.size() + L.conv.size()) * sizeof(float);
  small += (model.output_norm().size() + model.rope_factor_floats()) * sizeof(float);
  plan.items.push_back({"norms and biases (f32 copies)", small, "1-D tensors converted at load"});
  const uint64_t kv = KvCacheBytes(c, p.n_ctx, p.type_k, p.type_v, p.n_batch) * static_cast<uint64_t>(p.n_seqs);
  // Sliding-window layers hold a ring of LayerKvRows rows, not the context.
  int n_ring = 0, ring_rows = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    const int rows = LayerKvRows(c, l, p.n_ctx, p.n_batch);
    if (rows > 0 && rows < p.n_ctx) ++n_ring, ring_rows = rows;  // a conv layer (lfm2) keeps no rows
  }
  const std::string heads = std::to_string(c.n_kv_heads) + " kv heads x " + std::to_string(c.head_dim) + " head dim x ";
  const std::string layers = c.has_conv() ? std::to_string(c.n_layers - c.n_conv_layers()) + " attention layers (of " +
                                                 std::to_string(c.n_layers) + ")"
                                           : std::to_string(c.n_layers) + " layers";
  const std::string shape =
      n_ring == 0 ? layers + " x " + heads + std::to_string(p.n_ctx) + " ctx"
                  : "(" + std::to_string(c.n_layers - n_ring) + " global layers x " + std::to_string(p.n_ctx) + " ctx + " +
                        std::to_string(n_ring) + " sliding-window layers x a ring of " + std::to_string(ring_rows) + ") x " +
                        heads.substr(0, heads.size() - 3);
  plan.items.push_back({"KV cache", kv,
                        "2 x " + shape + " x " + std::to_string(p.n_seqs) + " seqs, K " + TypeName(static_cast<uint32_t>(p.type_k)) +
                            " / V " + TypeName(static_cast<uint32_t>(p.type_v)) + " (block scales included)"});
  if (c.has_conv())  // lfm2: the short-convolution layers' state, per sequence
    plan.items.push_back({"conv state", ConvStateBytes(c) * static_cast<uint64_t>(p.n_seqs),
                          std::to_string(c.n_conv_layers()) + " conv layers x " + std::to_string(c.conv_l - 1) + " rows x " +
                              std::to_string(c.dim) + " dim x f32 x " + std::to_string(p.n_seqs) + " seqs"});
  ScratchSizes s = ComputeScratch(c, p.n_ctx, p.n_batch, half_matrices, q4_0_matrices);
  plan.items.push_back({"activations and scratch", s.bytes() * static_cast<uint64_t>(p.n_seqs),
                        "batch " + std::to_string(std::min(p.n_batch, p.n_ctx)) + ": residual, q/k/v, ffn, logits (" +
                            FormatBytes(s.logits * 4) + "), rope tables, kernel activations"});
  uint64_t meta = 0;
  for (const auto& kvp : model.file().metadata()) meta += ValueBytes(kvp.second) + kvp.first.size();
  plan.items.push_back({"tokenizer and metadata", meta * 2, "parsed GGUF metadata plus the tokenizer's own tables (estimate: 2x the metadata)"});
  plan.items.push_back({"runtime overhead", kRuntimeOverheadBytes + static_cast<uint64_t>(p.n_threads) * (64 << 10),
                        "binary, C++ runtime, allocator, thread stacks (measured)"});
  for (const MemoryItem& it : plan.items) plan.total += it.bytes;
  return plan;
}

}  // namespace

static uint64_t ReadU64File(const std::string& path, bool* ok) {
  std::ifstream f(path);
  std::string s;
  *ok = false;
  if (!(f >> s) || s == "max") return 0;
  try {
    *ok = true;
    return std::stoull(s);
  } catch (...) {
    *ok = false;
    return 0;
  }
}

Result<uint64_t> AvailableMemoryBytes() {
  uint64_t avail = 0;
  std::ifstream mi("/proc/meminfo");
  std::string key;
  uint64_t val;
  std::string unit;
  while (mi >> key >> val >> unit) {
    if (key == "MemAvailable:") avail = val * 1024;
  }
  bool ok1, ok2;
  uint64_t lim = ReadU64File("/sys/fs/cgroup/memory.max", &ok1);
  uint64_t cur = ReadU64File("/sys/fs/cgroup/memory.current", &ok2);
  if (!ok1) {
    lim = ReadU64File("/sys/fs/cgroup/memory/memory.limit_in_bytes", &ok1);
    cur = ReadU64File("/sys/fs/cgroup/memory/memory.usage_in_bytes", &ok2);
    if (ok1 && lim > (1ull << 60)) ok1 = false;  // v1 "unlimited"
  }
  if (ok1) {
    uint64_t room = ok2 && cur < lim ? lim - cur : lim;
    avail = avail ? std::min(avail, room) : room;
  }
  // A stand-in for a smaller device (tests, or trying a deployment on a bigger machine).
  if (const char* env = std::getenv("EDGEDECODE_AVAILABLE_MEMORY")) {
    const std::string text = env;
    uint64_t v = 0;
    bool digits = !text.empty() && text.size() <= 19;
    for (char c : text) digits = digits && c >= '0' && c <= '9';
    if (digits) v = std::stoull(text);
    if (!digits || v == 0 || v > kMaxMemoryBytes)
      return InvalidArgument("EDGEDECODE_AVAILABLE_MEMORY='" + text + "' is not a number of bytes from 1 to " +
                             std::to_string(kMaxMemoryBytes));
    avail = avail ? std::min<uint64_t>(avail, v) : v;
  }
  return avail;
}

uint64_t PeakRssBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream ss(line.substr(6));
      uint64_t kb = 0;
      ss >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

double DecodeStepBytes(const Model& m, int depth, GgmlType kv) {
  double b = 0;
  for (const Weight* w : m.all_weights()) b += static_cast<double>(w->nbytes());
  const Weight& e = m.token_embd();
  if (!m.config().tied_embeddings) b -= static_cast<double>(e.nbytes()) - static_cast<double>(RowBytes(e.type, e.cols));
  b += static_cast<double>(KvCacheBytes(m.config(), depth, kv, kv, 1));
  return b;
}

std::string FormatBytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace edgedecode::llm
