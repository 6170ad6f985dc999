#include "llm/model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <utility>

#include "llm/rope_scaling.h"
#include "quant/quant.h"

namespace edgedecode::llm {
namespace {

const char* kSupported = "llama, qwen2, qwen3, smollm3, phi3, gemma3, gemma2, lfm2";
constexpr int64_t kMaxDim = int64_t{1} << 24;      // embedding, ffn and q widths, block count
constexpr int64_t kMaxContext = int64_t{1} << 30;  // trained context length
constexpr uint64_t kTensorsPerBlock = 9;           // attn_norm, q, k, v, output, ffn_norm, gate, up, down
constexpr uint64_t kLfm2TensorsPerBlock = 8;       // a conv layer: attn_norm, conv, in_proj, out_proj, ffn_norm, gate, up, down
constexpr uint64_t kPhi3TensorsPerBlock = 6;       // attn_norm, qkv, output, ffn_norm, up (gate and up), down
constexpr int64_t kMaxConvL = 64;                  // lfm2's shortconv.l_cache (3 in every released model)

// A fused matrix (phi3's attn_qkv, its ffn_up holding gate and up) as views of consecutive row ranges: each
// part is a matrix of its own to the kernels and to RepackForKernels, and keeps the file tensor's name.
void SplitRows(const Weight& fused, std::initializer_list<std::pair<int64_t, Weight*>> parts) {
  int64_t r0 = 0;
  for (const auto& [rows, w] : parts) {
    *w = fused;
    w->data = static_cast<const uint8_t*>(fused.data) + RowBytes(fused.type, fused.cols) * static_cast<size_t>(r0);
    w->rows = rows;
    r0 += rows;
  }
}

// gemma3's hyper-parameters, read as llama.cpp reads them (llama_model_gemma3::load_arch_hparams): Q and K
// RMSNorm'd per head, NEOX RoPE; sliding-window layers only when attention.sliding_window is present and
// positive, then every sliding_window_pattern-th layer (default 6) is global and the others rotate with
// rope.freq_base_swa (default 10000); the attention scale is 1/sqrt(head_dim), but 1/sqrt(dim / n_heads) for
// the 62-layer (27B) model. The norm weights are used as stored: llama.cpp's converter already added
// gemma's +1 to them. gemma2 (llama_model_gemma2) differs: no q/k norm; always sliding layers (window
// default 4096, pattern default 2: the even layers), rope.freq_base_swa defaulting to rope.freq_base;
// attention scores soft-capped by attn_logit_softcapping (default 50) and the logits by
// final_logit_softcapping (default 30); the scale's exception is its 46-layer 27B.
Status GemmaConfig(const gguf::File& f, ModelConfig* c) {
  const std::string a = c->arch + ".";
  const bool g2 = c->arch == "gemma2";
  c->gemma = true;
  c->qk_norm = !g2;
  c->norm_eps = static_cast<float>(f.GetFloatOr(a + "attention.layer_norm_rms_epsilon", 1e-6));
  const int64_t swa = f.GetIntOr(a + "attention.sliding_window", g2 ? 4096 : 0);
  if (swa < 0 || swa > kMaxContext)
    return Corrupt("metadata '" + a + "attention.sliding_window' has an invalid value " + std::to_string(swa));
  if (swa > 0) {
    c->n_swa = static_cast<int>(swa);
    const int64_t period = f.GetIntOr(a + "attention.sliding_window_pattern", g2 ? 2 : 6);
    if (period < 0 || period > kMaxDim)
      return Corrupt("metadata '" + a + "attention.sliding_window_pattern' has an invalid value " + std::to_string(period));
    c->swa_period = static_cast<int>(period);
    c->rope_base_swa = static_cast<float>(f.GetFloatOr(a + "rope.freq_base_swa", g2 ? c->rope_base : 10000.0));
    if (!(c->rope_base_swa > 0)) return Corrupt("metadata '" + a + "rope.freq_base_swa' must be positive");
  }
  const double cap = f.GetFloatOr(a + "final_logit_softcapping", g2 ? 30.0 : 0.0);
  if (!(cap >= 0) || !std::isfinite(cap)) return Corrupt("metadata '" + a + "final_logit_softcapping' must be >= 0");
  c->final_logit_softcap = static_cast<float>(cap);
  if (g2) {
    const double acap = f.GetFloatOr(a + "attn_logit_softcapping", 50.0);
    if (!(acap > 0) || !std::isfinite(acap)) return Corrupt("metadata '" + a + "attn_logit_softcapping' must be > 0");
    c->attn_logit_softcap = static_cast<float>(acap);
  }
  c->attn_scale = c->n_layers == (g2 ? 46 : 62) ? 1.0f / std::sqrt(static_cast<float>(c->dim / c->n_heads))
                                               : 1.0f / std::sqrt(static_cast<float>(c->head_dim));
  return Status::Ok();
}

// lfm2's layer pattern, read as llama.cpp reads it (llama_model_lfm2::load_arch_hparams): the converter writes
// {arch}.attention.head_count_kv as one value per layer, 0 for a short-convolution layer; the attention layers
// must agree on one count (the cache has one row size). shortconv.l_cache (the kernel length) is required.
// Sliding-window attention (attention.sliding_window > 0) and the bidirectional embedding variant
// (attention.causal false) are refused: this runtime generates text with causal, full attention.
Status Lfm2Config(const gguf::File& f, ModelConfig* c) {
  const std::string a = c->arch + ".";
  const std::string kv_key = a + "attention.head_count_kv";
  c->conv_layers.assign(static_cast<size_t>(c->n_layers), false);
  const gguf::Value* kv = f.Find(kv_key);
  if (kv != nullptr && kv->type == gguf::ValueType::kArray) {
    ED_ASSIGN_OR_RETURN(std::vector<int64_t> per_layer, f.GetIntArray(kv_key));
    if (per_layer.size() != static_cast<size_t>(c->n_layers))
      return Corrupt("metadata '" + kv_key + "' has " + std::to_string(per_layer.size()) + " entries, block_count is " +
                     std::to_string(c->n_layers));
    int64_t heads = 0;
    for (size_t l = 0; l < per_layer.size(); ++l) {
      const int64_t h = per_layer[l];
      if (h < 0 || h > c->n_heads)
        return Corrupt("metadata '" + kv_key + "' entry " + std::to_string(l) + " is " + std::to_string(h) +
                       " (expected 0 for a conv layer, or 1 to head_count " + std::to_string(c->n_heads) + ")");
      if (h == 0) {
        c->conv_layers[l] = true;
      } else if (heads != 0 && h != heads) {
        return Unsupported("metadata '" + kv_key + "': attention layers with different KV head counts (" +
                           std::to_string(heads) + " and " + std::to_string(h) + ") are not supported");
      } else {
        heads = h;
      }
    }
    c->n_kv_heads = static_cast<int>(heads > 0 ? heads : c->n_heads);  // all conv: the count is never used
  }
  ED_ASSIGN_OR_RETURN(int64_t l_cache, f.GetInt(a + "shortconv.l_cache"));
  if (l_cache < 2 || l_cache > kMaxConvL)
    return Corrupt("metadata '" + a + "shortconv.l_cache' has an invalid value " + std::to_string(l_cache) +
                   " (expected 2 to " + std::to_string(kMaxConvL) + ")");
  c->conv_l = static_cast<int>(l_cache);
  if (f.GetIntOr(a + "attention.sliding_window", 0) > 0)
    return Unsupported("lfm2 with sliding-window attention ('" + a + "attention.sliding_window') is not supported");
  if (const gguf::Value* causal = f.Find(a + "attention.causal"); causal != nullptr && causal->as_int() == 0)
    return Unsupported("lfm2 with bidirectional attention ('" + a + "attention.causal' false: an embedding model) is not supported");
  return Status::Ok();
}

// Prefixes the file name unless the message already starts with it (the gguf getters name the file).
Status WithPath(const Status& st, const std::string& path) {
  if (st.ok() || st.message().rfind(path + ": ", 0) == 0) return st;
  return st.WithContext(path);
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, bool load_tokenizer) {
  ED_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file, gguf::File::Open(path));
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  Status st = m->Init(load_tokenizer);
  if (!st.ok()) return WithPath(st, path);
  return m;
}

Status Model::Init(bool load_tokenizer) {
  const gguf::File& f = *file_;
  ED_ASSIGN_OR_RETURN(cfg_.arch, f.GetString("general.architecture"));
  if (cfg_.arch != "llama" && cfg_.arch != "qwen2" && cfg_.arch != "qwen3" && cfg_.arch != "smollm3" &&
      cfg_.arch != "phi3" && cfg_.arch != "gemma3" && cfg_.arch != "gemma2" && cfg_.arch != "lfm2")
    return Unsupported("architecture '" + cfg_.arch + "' is not supported (supported: " + kSupported + ")");
  const std::string a = cfg_.arch + ".";
  cfg_.name = f.GetStringOr("general.name", "");
  // Every hyper-parameter is range-checked as int64 before it becomes an int, and the products the runtime
  // forms from them (q_dim, kv_dim) before they are formed; the tensors then have to match them.
  auto in_range = [&](const std::string& key, int64_t v, int64_t lo, int64_t hi, int* out) -> Status {
    if (v < lo || v > hi)
      return Corrupt("metadata '" + key + "' has an invalid value " + std::to_string(v) + " (expected " +
                     std::to_string(lo) + " to " + std::to_string(hi) + ")");
    *out = static_cast<int>(v);
    return Status::Ok();
  };
  auto need = [&](const std::string& key, int* out) -> Status {
    ED_ASSIGN_OR_RETURN(int64_t v, f.GetInt(key));
    return in_range(key, v, 1, kMaxDim, out);
  };
  auto opt = [&](const std::string& key, int64_t def, int64_t lo, int64_t hi, int* out) -> Status {
    return in_range(key, f.GetIntOr(key, def), lo, hi, out);
  };
  ED_RETURN_IF_ERROR(need(a + "embedding_length", &cfg_.dim));
  ED_RETURN_IF_ERROR(need(a + "block_count", &cfg_.n_layers));
  ED_RETURN_IF_ERROR(need(a + "feed_forward_length", &cfg_.ffn_dim));
  ED_RETURN_IF_ERROR(need(a + "attention.head_count", &cfg_.n_heads));
  ED_RETURN_IF_ERROR(opt(a + "context_length", 2048, 1, kMaxContext, &cfg_.n_ctx_train));
  const bool lfm2 = cfg_.arch == "lfm2";
  // lfm2 writes head_count_kv as one value per layer, which Lfm2Config reads; a single value is read here.
  const gguf::Value* kv_heads = f.Find(a + "attention.head_count_kv");
  if (!lfm2 || kv_heads == nullptr || kv_heads->type != gguf::ValueType::kArray)
    ED_RETURN_IF_ERROR(opt(a + "attention.head_count_kv", cfg_.n_heads, 1, cfg_.n_heads, &cfg_.n_kv_heads));
  if (lfm2) ED_RETURN_IF_ERROR(Lfm2Config(f, &cfg_));
  if (cfg_.n_heads % cfg_.n_kv_heads != 0)
    return Corrupt("head_count " + std::to_string(cfg_.n_heads) + " is not a multiple of head_count_kv " +
                   std::to_string(cfg_.n_kv_heads));
  const int64_t head_dim = f.GetIntOr(a + "attention.key_length", cfg_.dim / cfg_.n_heads);
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > (1 << 16))
    return Corrupt("head dimension " + std::to_string(head_dim) + " must be positive, even and at most 65536");
  cfg_.head_dim = static_cast<int>(head_dim);
  if (static_cast<int64_t>(cfg_.n_heads) * head_dim > kMaxDim)
    return Corrupt("head_count " + std::to_string(cfg_.n_heads) + " x head dimension " + std::to_string(head_dim) +
                   " exceeds " + std::to_string(kMaxDim));
  // One head size serves K and V here (as in every model of these architectures).
  const int64_t v_len = f.GetIntOr(a + "attention.value_length", cfg_.head_dim);
  if (v_len != cfg_.head_dim)
    return Unsupported("attention.value_length " + std::to_string(v_len) + " differs from key_length " +
                       std::to_string(cfg_.head_dim) + " (only equal K and V head sizes are supported)");
  const int64_t n_rot = f.GetIntOr(a + "rope.dimension_count", cfg_.head_dim);
  if (n_rot <= 0 || n_rot > cfg_.head_dim || n_rot % 2)
    return Corrupt("rope.dimension_count " + std::to_string(n_rot) + " does not fit head dimension " +
                   std::to_string(cfg_.head_dim));
  cfg_.n_rot = static_cast<int>(n_rot);
  cfg_.rope_base = static_cast<float>(f.GetFloatOr(a + "rope.freq_base", 10000.0));
  std::string scaling = f.GetStringOr(a + "rope.scaling.type", "none");
  double factor = f.GetFloatOr(a + "rope.scaling.factor", 0.0);
  if (scaling == "linear" && factor > 0) cfg_.rope_freq_scale = static_cast<float>(1.0 / factor);
  cfg_.norm_eps = static_cast<float>(f.GetFloatOr(a + "attention.layer_norm_rms_epsilon", 1e-5));
  // As llama.cpp's llama_model_rope_type: qwen2 and qwen3 rotate (i, i + n_rot/2), llama and smollm3 adjacent pairs.
  cfg_.rope = cfg_.arch == "llama" || cfg_.arch == "smollm3" ? RopeStyle::kNorm : RopeStyle::kNeox;
  // SmolLM3 leaves RoPE out of every 4th layer (3, 7, ...): a constant of the architecture in llama.cpp
  // (n_no_rope_layer_step), not a GGUF key.
  if (cfg_.arch == "smollm3") cfg_.no_rope_every = 4;
  const bool phi3 = cfg_.arch == "phi3";
  // phi3's {arch}.attention.sliding_window is read by no one: llama.cpp turns sliding-window attention off
  // for phi3 (its converters do not describe the layer pattern), and so does edgedecode (full causal
  // attention in every layer), to compute the function llama.cpp does.
  cfg_.n_ctx_orig = cfg_.n_ctx_train;
  if (phi3)
    ED_RETURN_IF_ERROR(opt(a + "rope.scaling.original_context_length", cfg_.n_ctx_train, 1, kMaxContext, &cfg_.n_ctx_orig));
  const double attn_factor = f.GetFloatOr(a + "rope.scaling.attn_factor", 1.0);
  if (!(attn_factor > 0 && attn_factor <= 100))
    return Corrupt("metadata '" + a + "rope.scaling.attn_factor' has an invalid value " + std::to_string(attn_factor) +
                   " (expected more than 0 and at most 100)");
  cfg_.rope_attn_factor = static_cast<float>(attn_factor);
  cfg_.qkv_bias = cfg_.arch == "qwen2";
  cfg_.qk_norm = cfg_.arch == "qwen3" || lfm2;
  cfg_.attn_scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));
  if (cfg_.arch == "gemma3" || cfg_.arch == "gemma2") ED_RETURN_IF_ERROR(GemmaConfig(f, &cfg_));

  // Tensors, each checked against the shape the architecture needs.
  // The 2-D tensor `name` of cols x rows (rows 0: any count, the vocabulary's), or why it is not there.
  auto matrix = [&](const std::string& name, int64_t cols, int64_t rows) -> Result<const gguf::TensorInfo*> {
    const gguf::TensorInfo* t = f.FindTensor(name);
    if (!t)
      return NotFound("required tensor '" + name + "' is missing (the architecture needs " + std::to_string(cols) + "x" +
                      (rows > 0 ? std::to_string(rows) : std::string("n_vocab")) + ")");
    if (t->dims.size() != 2 || t->dims[0] != cols || (rows > 0 && t->dims[1] != rows)) {
      std::string shape;
      for (size_t i = 0; i < t->dims.size(); ++i) {
        if (i > 0) shape += 'x';
        shape += std::to_string(t->dims[i]);
      }
      return Corrupt("tensor '" + name + "' has shape " + shape + ", the architecture needs " + std::to_string(cols) +
                     "x" + (rows > 0 ? std::to_string(rows) : std::string("n_vocab")));
    }
    return t;
  };
  auto weight = [&](const std::string& name, int64_t cols, int64_t rows, Weight* out) -> Status {
    ED_ASSIGN_OR_RETURN(const gguf::TensorInfo* t, matrix(name, cols, rows));
    if (!quant::CanDequantize(t->ggml_type()))
      return Unsupported("tensor '" + name + "' has type " + TypeName(t->type) +
                         ", which is not supported (supported: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k)");
    *out = Weight{t->data, t->ggml_type(), t->dims[0], t->dims[1], name};
    return Status::Ok();
  };
  auto vec = [&](const std::string& name, int64_t n, std::vector<float>* out, bool required) -> Status {
    const gguf::TensorInfo* t = f.FindTensor(name);
    if (!t)
      return required ? NotFound("required tensor '" + name + "' is missing (the architecture needs " + std::to_string(n) +
                                 " elements)")
                      : Status::Ok();
    if (t->n_elements() != n)
      return Corrupt("tensor '" + name + "' has " + std::to_string(t->n_elements()) + " elements, the architecture needs " +
                     std::to_string(n));
    if (!quant::CanDequantize(t->ggml_type()) || t->dims[0] % TypeTraits(t->type).block_size)
      return Unsupported("tensor '" + name + "' has unsupported type " + TypeName(t->type));
    out->resize(static_cast<size_t>(n));
    quant::DequantizeRow(t->ggml_type(), t->data, out->data(), n);
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite((*out)[static_cast<size_t>(i)]))
        return Corrupt("tensor '" + name + "' element " + std::to_string(i) + " is " +
                       std::to_string((*out)[static_cast<size_t>(i)]) + " (NaN or Inf: the weights are broken)");
    return Status::Ok();
  };

  const int64_t dim = cfg_.dim, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), ffn = cfg_.ffn_dim;
  // A layer's attention matrices (phi3: one fused QKV matrix), biases and q/k norms.
  auto attention_weights = [&](const std::string& p, bool phi3, LayerWeights* Lp) -> Status {
    LayerWeights& L = *Lp;
    // phi3 stores q, k and v as one matrix (rows q, then k, then v); llama.cpp also takes them apart.
    if (phi3 && (f.FindTensor(p + "attn_qkv.weight") != nullptr || f.FindTensor(p + "attn_q.weight") == nullptr)) {
      Weight qkv;
      ED_RETURN_IF_ERROR(weight(p + "attn_qkv.weight", dim, qd + 2 * kvd, &qkv));
      SplitRows(qkv, {{qd, &L.wq}, {kvd, &L.wk}, {kvd, &L.wv}});
    } else {
      ED_RETURN_IF_ERROR(weight(p + "attn_q.weight", dim, qd, &L.wq));
      ED_RETURN_IF_ERROR(weight(p + "attn_k.weight", dim, kvd, &L.wk));
      ED_RETURN_IF_ERROR(weight(p + "attn_v.weight", dim, kvd, &L.wv));
    }
    ED_RETURN_IF_ERROR(weight(p + "attn_output.weight", qd, dim, &L.wo));
    ED_RETURN_IF_ERROR(vec(p + "attn_q.bias", qd, &L.bq, cfg_.qkv_bias));
    ED_RETURN_IF_ERROR(vec(p + "attn_k.bias", kvd, &L.bk, cfg_.qkv_bias));
    ED_RETURN_IF_ERROR(vec(p + "attn_v.bias", kvd, &L.bv, cfg_.qkv_bias));
    if (cfg_.qk_norm) {
      ED_RETURN_IF_ERROR(vec(p + "attn_q_norm.weight", cfg_.head_dim, &L.q_norm, true));
      ED_RETURN_IF_ERROR(vec(p + "attn_k_norm.weight", cfg_.head_dim, &L.k_norm, true));
    }
    return Status::Ok();
  };
  // lfm2's short-convolution layer: in_proj (dim -> b, c, x), the depthwise kernel (conv_l x dim as ggml lists
  // its dims: dim rows of conv_l taps), out_proj.
  auto shortconv_weights = [&](const std::string& p, LayerWeights* L) -> Status {
    ED_RETURN_IF_ERROR(weight(p + "shortconv.in_proj.weight", dim, 3 * dim, &L->in_proj));
    ED_RETURN_IF_ERROR(weight(p + "shortconv.out_proj.weight", dim, dim, &L->out_proj));
    const std::string name = p + "shortconv.conv.weight";
    const int64_t taps = cfg_.conv_l;
    ED_RETURN_IF_ERROR(matrix(name, taps, dim).status());
    std::vector<float> rows;  // dim rows of `taps`, as stored
    ED_RETURN_IF_ERROR(vec(name, taps * dim, &rows, true));
    L->conv.resize(rows.size());
    for (int64_t ch = 0; ch < dim; ++ch)
      for (int64_t k = 0; k < taps; ++k) L->conv[static_cast<size_t>(k * dim + ch)] = rows[static_cast<size_t>(ch * taps + k)];
    return Status::Ok();
  };
  ED_RETURN_IF_ERROR(weight("token_embd.weight", dim, 0, &token_embd_));
  if (token_embd_.rows > static_cast<int64_t>(tok::kMaxVocab))
    return Corrupt("tensor 'token_embd.weight' has " + std::to_string(token_embd_.rows) + " rows, more than the limit of " +
                   std::to_string(tok::kMaxVocab) + " tokens");
  cfg_.n_vocab = static_cast<int>(token_embd_.rows);
  // Each block has at least kTensorsPerBlock tensors: a block count the file cannot hold is refused before
  // anything is sized by it.
  const uint64_t per_block = phi3 ? kPhi3TensorsPerBlock : lfm2 ? kLfm2TensorsPerBlock : kTensorsPerBlock;
  if (static_cast<uint64_t>(cfg_.n_layers) * per_block > f.tensors().size())
    return Corrupt("metadata '" + a + "block_count' is " + std::to_string(cfg_.n_layers) + " but the file has " +
                   std::to_string(f.tensors().size()) + " tensors (each block needs at least " +
                   std::to_string(per_block) + ")");
  layers_.resize(static_cast<size_t>(cfg_.n_layers));
  for (int l = 0; l < cfg_.n_layers; ++l) {
    LayerWeights& L = layers_[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    ED_RETURN_IF_ERROR(vec(p + "attn_norm.weight", dim, &L.attn_norm, true));
    if (cfg_.conv_layer(l)) {
      ED_RETURN_IF_ERROR(shortconv_weights(p, &L));
    } else {
      ED_RETURN_IF_ERROR(attention_weights(p, phi3, &L));
    }
    ED_RETURN_IF_ERROR(vec(p + "ffn_norm.weight", dim, &L.ffn_norm, true));
    if (cfg_.gemma) {
      ED_RETURN_IF_ERROR(vec(p + "post_attention_norm.weight", dim, &L.attn_post_norm, true));
      ED_RETURN_IF_ERROR(vec(p + "post_ffw_norm.weight", dim, &L.ffn_post_norm, true));
    }
    if (phi3) {  // ffn_up holds gate (rows 0..ffn, silu applied) then up: llama.cpp's SWIGLU of one matrix
      Weight gate_up;
      ED_RETURN_IF_ERROR(weight(p + "ffn_up.weight", dim, 2 * ffn, &gate_up));
      SplitRows(gate_up, {{ffn, &L.w_gate}, {ffn, &L.w_up}});
    } else {
      ED_RETURN_IF_ERROR(weight(p + "ffn_gate.weight", dim, ffn, &L.w_gate));
      ED_RETURN_IF_ERROR(weight(p + "ffn_up.weight", dim, ffn, &L.w_up));
    }
    ED_RETURN_IF_ERROR(weight(p + "ffn_down.weight", ffn, dim, &L.w_down));
  }
  // lfm2's final norm is written as token_embd_norm.weight (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2).
  ED_RETURN_IF_ERROR(vec(lfm2 ? "token_embd_norm.weight" : "output_norm.weight", dim, &output_norm_, true));
  if (f.FindTensor("output.weight")) {
    ED_RETURN_IF_ERROR(weight("output.weight", dim, cfg_.n_vocab, &output_));
  } else {
    output_ = token_embd_;
    cfg_.tied_embeddings = true;
  }
  ED_RETURN_IF_ERROR(vec("rope_freqs.weight", cfg_.n_rot / 2, &rope_freqs_, false));
  if (phi3) {  // LongRoPE: optional (Phi-3-mini-4k has none), one pair for every layer
    ED_RETURN_IF_ERROR(vec("rope_factors_long.weight", cfg_.n_rot / 2, &rope_long_, false));
    ED_RETURN_IF_ERROR(vec("rope_factors_short.weight", cfg_.n_rot / 2, &rope_short_, false));
  }
  for (const auto& [name, v] : {std::pair{"rope_freqs.weight", &rope_freqs_}, std::pair{"rope_factors_long.weight", &rope_long_},
                                std::pair{"rope_factors_short.weight", &rope_short_}})
    for (size_t i = 0; i < v->size(); ++i)
      if (!((*v)[i] > 0))  // a divisor of the rotary frequencies
        return Corrupt(std::string("tensor '") + name + "' element " + std::to_string(i) + " is " +
                       std::to_string((*v)[i]) + " (RoPE frequency factors must be positive)");
  if (rope_freqs_.empty() && scaling == "llama3") {
    // llama.cpp's files carry rope_freqs.weight instead; this serves writers that keep the parameters.
    Llama3RopeScaling s;
    s.factor = static_cast<float>(f.GetFloatOr(a + "rope.scaling.factor", s.factor));
    s.low_freq_factor = static_cast<float>(f.GetFloatOr(a + "rope.scaling.low_freq_factor", s.low_freq_factor));
    s.high_freq_factor = static_cast<float>(f.GetFloatOr(a + "rope.scaling.high_freq_factor", s.high_freq_factor));
    s.orig_ctx = static_cast<float>(f.GetIntOr(a + "rope.scaling.original_context_length", 8192));
    if (!(s.factor > 0) || !(s.low_freq_factor > 0) || !(s.high_freq_factor > s.low_freq_factor) || !(s.orig_ctx > 0))
      return Corrupt("llama3 rope scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                     "original_context_length > 0");
    rope_freqs_ = Llama3RopeFactors(cfg_.n_rot, cfg_.rope_base, s);
  }

  if (!load_tokenizer) return Status::Ok();
  {
    auto t = tok::Tokenizer::FromGguf(f);
    if (!t.ok()) return t.status();
    tokenizer_ = std::move(t).value();
  }
  if (tokenizer_->vocab_size() != cfg_.n_vocab)
    return Corrupt("the tokenizer has " + std::to_string(tokenizer_->vocab_size()) + " tokens but token_embd.weight has " +
                   std::to_string(cfg_.n_vocab) + " rows");
  return Status::Ok();
}

const std::vector<float>& Model::RopeFactorsFor(int n_ctx) const {
  if (!rope_freqs_.empty()) return rope_freqs_;
  return n_ctx > cfg_.n_ctx_orig ? rope_long_ : rope_short_;
}

Status Model::CheckWeights(bool full) const {
  const gguf::TensorInfo* last = nullptr;
  for (const Weight* w : all_weights()) {
    const gguf::TensorInfo* t = file_->FindTensor(w->name);
    if (t == nullptr || t == last) continue;  // the views of one fused tensor come one after the other
    last = t;
    const int64_t bad = quant::FirstNonFinite(t->ggml_type(), t->data, t->n_elements(), !full);
    if (bad < 0) continue;
    const GgmlTypeTraits& tr = TypeTraits(t->type);
    const uint64_t block = static_cast<uint64_t>(bad / tr.block_size);
    const uint64_t at = file_->data_offset() + t->offset + block * tr.type_size;
    const std::string where = tr.block_size > 1 ? "block " + std::to_string(block) + " (elements from " + std::to_string(bad) + ")"
                                                : "element " + std::to_string(bad);
    return Corrupt("tensor '" + w->name + "' (" + tr.name + ") " + where + " at file offset " + std::to_string(at) +
                   (tr.block_size > 1 ? " has a NaN or Inf scale" : " is NaN or Inf") + ": the weights are broken");
  }
  return Status::Ok();
}

size_t Model::weight_bytes() const {
  size_t n = 0;
  for (const Weight* w : all_weights()) n += w->nbytes();
  // Norms and biases (float copies of small tensors).
  for (const LayerWeights& L : layers_)
    n += (L.attn_norm.size() + L.ffn_norm.size() + L.attn_post_norm.size() + L.ffn_post_norm.size() + L.bq.size() + L.bk.size() + L.bv.size() + L.q_norm.size() +
          L.k_norm.size() + L.conv.size()) * 4;
  return n + output_norm_.size() * 4;
}

namespace {
// A buffer for weights the kernels stream every token: 2 MiB aligned and marked for transparent huge
// pages, so that a decode step's walk over hundreds of MiB misses the TLB once per 2 MiB instead of
// once per 4 KiB page (where THP is "madvise", the common default, a plain allocation gets 4 KiB pages).
uint8_t* AllocHuge(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t size = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, size) != 0) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, size, MADV_HUGEPAGE);
#endif
  return static_cast<uint8_t*>(p);
}
}  // namespace

size_t Model::RepackForKernels(kernels::Isa isa) {
  if (arena_ != nullptr) return packed_bytes_;
  // Every matrix a token streams: the layers' and the output (not the token embedding, read by rows).
  // Tied, output_ is a second Weight over token_embd's bytes: the classifier gets its own copy in the
  // arena (repacked where the type allows) while the embedding keeps reading its rows from the mapping.
  // Left in the mapping, a large-vocabulary tied classifier ran the file-layout kernel over 4 KiB pages:
  // half of qwen3-0.6b q4_0's decode step (4.7 GB/s against the layers' 15).
  std::vector<Weight*> ws;
  for (LayerWeights& L : layers_)
    for (Weight* x : L.matrices())
      if (x->data != nullptr) ws.push_back(x);
  ws.push_back(&output_);
  auto packs = [&](const Weight& w) { return kernels::CanPack(isa, w.type, w.rows, w.cols); };
  auto bytes = [&](const Weight& w) { return packs(w) ? kernels::PackedBytes(w.type, w.rows, w.cols) : w.nbytes(); };
  auto round64 = [](size_t n) { return (n + 63) / 64 * 64; };
  size_t total = 0;
  for (const Weight* w : ws) total += round64(bytes(*w));
  if (total == 0) return 0;
  arena_.reset(AllocHuge(total));
  const long page = sysconf(_SC_PAGESIZE);
  size_t off = 0;
  for (Weight* w : ws) {
    uint8_t* dst = arena_.get() + off;
    off += round64(bytes(*w));
    if (packs(*w)) {
      kernels::Pack(w->type, w->data, w->rows, w->cols, dst);
      w->packed = dst;
    } else {
      std::memcpy(dst, w->data, w->nbytes());
    }
    // The original bytes are not read again (tied: only the embedding rows of the tokens seen): drop their
    // whole pages from resident memory (a file mapping, so touched pages are simply read back from the file).
    const auto b = reinterpret_cast<uintptr_t>(w->data), e = b + w->nbytes();
    const uintptr_t pb = (b + page - 1) / page * page, pe = e / page * page;
    if (pe > pb) madvise(reinterpret_cast<void*>(pb), pe - pb, MADV_DONTNEED);
    if (w->packed == nullptr) w->data = dst;
    packed_bytes_ += bytes(*w);
  }
  return packed_bytes_;
}

std::vector<const Weight*> Model::all_weights() const {
  std::vector<const Weight*> w;
  w.push_back(&token_embd_);
  for (const LayerWeights& L : layers_) {
    for (const Weight* x : L.matrices())
      if (x->data != nullptr) w.push_back(x);
  }
  if (!cfg_.tied_embeddings) w.push_back(&output_);
  return w;
}

}  // namespace edgedecode::llm
