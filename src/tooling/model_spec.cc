#include "tooling/model_spec.h"

#include <algorithm>
#include <cmath>

#include "llm/rope_scaling.h"

namespace edgedecode::tooling {

int64_t TensorSpec::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t ModelShape::n_params() const {
  int64_t n = 0;
  for (const TensorSpec& t : ModelTensors(*this)) n += t.n_elements();
  return n;
}

Status ModelShape::Validate() const {
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "smollm3" && arch != "phi3" && arch != "gemma3" &&
      arch != "gemma2" && arch != "lfm2")
    return InvalidArgument("architecture '" + arch + "' is not supported (supported: llama, qwen2, qwen3, smollm3, phi3, gemma3, gemma2, lfm2)");
  if (!attn_layers.empty() && !lfm2()) return InvalidArgument("attn_layers is lfm2's");
  for (int64_t l : attn_layers)
    if (l < 0 || l >= n_layers)
      return InvalidArgument("attn_layers entry " + std::to_string(l) + " is not a layer (0 to n_layers - 1)");
  if (conv_l < 2 || conv_l > 64) return InvalidArgument("conv_l must be in [2, 64]");
  auto bad = [](const char* what, int64_t v) {
    return InvalidArgument(std::string(what) + " must be positive (got " + std::to_string(v) + ")");
  };
  if (dim <= 0) return bad("dim", dim);
  if (n_layers <= 0) return bad("n_layers", n_layers);
  if (n_heads <= 0) return bad("n_heads", n_heads);
  if (n_kv_heads <= 0) return bad("n_kv_heads", n_kv_heads);
  if (ffn <= 0) return bad("ffn", ffn);
  if (vocab <= 0) return bad("vocab", vocab);
  if (context <= 0) return bad("context", context);
  if (key_length < 0 || key_length > 4096) return InvalidArgument("head_dim must be in [1, 4096] (0: dim / n_heads)");
  if (key_length == 0 && dim % n_heads != 0)
    return InvalidArgument("dim " + std::to_string(dim) + " is not a multiple of n_heads (or give head_dim)");
  if (head_dim() % 2 != 0) return InvalidArgument("head dim must be even (RoPE rotates pairs)");
  if (rope_dims < 0 || rope_dims % 2 != 0 || rope_dims > head_dim())
    return InvalidArgument("rope_dims must be even and at most the head dim (0: the head dim)");
  if (longrope && !phi3()) return InvalidArgument("longrope is phi3's");
  if (sliding_window != 0 && !phi3() && !gemma()) return InvalidArgument("sliding_window is phi3's, gemma3's and gemma2's");
  if (sliding_window < 0) return InvalidArgument("sliding_window must not be negative");
  if (longrope && !(rope_orig_context > 0 && rope_orig_context <= context))
    return InvalidArgument("longrope needs 0 < rope_orig_context <= context");
  if (rope_scaling_factor < 0) return InvalidArgument("rope_scaling_factor must be positive (0: no llama3 scaling)");
  if (llama3_rope() && !(rope_low_freq_factor > 0 && rope_high_freq_factor > rope_low_freq_factor && rope_orig_context > 0))
    return InvalidArgument("llama3 rope scaling needs 0 < rope_low_freq_factor < rope_high_freq_factor and "
                           "rope_orig_context > 0");
  if (n_heads % n_kv_heads != 0) return InvalidArgument("n_heads must be a multiple of n_kv_heads");
  // n_heads bounds the attention width with an explicit head_dim (dim does not then): n_heads * head_dim
  // must not overflow in ModelTensors.
  if (dim > (1 << 20) || ffn > (1 << 22) || vocab > (1 << 24) || n_layers > 1024 || n_heads > (1 << 16) ||
      n_heads * head_dim() > (1 << 20))
    return InvalidArgument("model shape is absurdly large");
  if (!(rope_base > 0) || !(rms_eps > 0)) return InvalidArgument("rope_base and rms_eps must be positive");
  if (sliding_window < 0 || sliding_window > context || swa_period < 0 || swa_period > 1024 || !(rope_base_swa > 0))
    return InvalidArgument("sliding_window must be in [0, context], swa_period in [0, 1024] and rope_base_swa positive");
  if (!(attn_softcap > 0) || !(final_softcap > 0)) return InvalidArgument("attn_softcap and final_softcap must be positive");
  return Status::Ok();
}

namespace {

// phi3 after the global tensors: the LongRoPE factors, then per block attn_norm, attn_qkv (q, k, v rows),
// attn_output, ffn_norm, ffn_up (gate rows, then up rows), ffn_down.
std::vector<TensorSpec> Phi3Tensors(const ModelShape& s, std::vector<TensorSpec> t) {
  const int64_t hd = s.head_dim(), q = s.n_heads * hd, kv = s.n_kv_heads * hd;
  if (s.longrope) {
    t.push_back({"rope_factors_long.weight", {s.n_rot() / 2}, TensorRole::kRopeLong});
    t.push_back({"rope_factors_short.weight", {s.n_rot() / 2}, TensorRole::kRopeShort});
  }
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    t.push_back({b + "attn_norm.weight", {s.dim}, TensorRole::kNorm, l});
    t.push_back({b + "attn_qkv.weight", {s.dim, q + 2 * kv}, TensorRole::kAttnQ, l});
    t.push_back({b + "attn_output.weight", {q, s.dim}, TensorRole::kAttnOut, l});
    t.push_back({b + "ffn_norm.weight", {s.dim}, TensorRole::kNorm, l});
    t.push_back({b + "ffn_up.weight", {s.dim, 2 * s.ffn}, TensorRole::kFfnUp, l});
    t.push_back({b + "ffn_down.weight", {s.ffn, s.dim}, TensorRole::kFfnDown, l});
  }
  return t;
}

}  // namespace

std::vector<TensorSpec> ModelTensors(const ModelShape& s) {
  const int64_t hd = s.head_dim(), q = s.n_heads * hd, kv = s.n_kv_heads * hd;
  std::vector<TensorSpec> t;
  t.push_back({"token_embd.weight", {s.dim, s.vocab}, TensorRole::kEmbedding});
  t.push_back({"output_norm.weight", {s.dim}, TensorRole::kNorm});
  if (!s.tied) t.push_back({"output.weight", {s.dim, s.vocab}, TensorRole::kOutput});
  if (s.llama3_rope()) t.push_back({"rope_freqs.weight", {hd / 2}, TensorRole::kRopeFreqs});
  if (s.phi3()) return Phi3Tensors(s, std::move(t));
  if (s.lfm2()) t[1].name = "token_embd_norm.weight";  // llama.cpp's name for lfm2's final norm
  for (int l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (s.conv_layer(l)) {  // lfm2's short-convolution layer in place of attention
      t.push_back({b + "shortconv.conv.weight", {s.conv_l, s.dim}, TensorRole::kConvKernel, l});
      t.push_back({b + "shortconv.in_proj.weight", {s.dim, 3 * s.dim}, TensorRole::kConvIn, l});
      t.push_back({b + "shortconv.out_proj.weight", {s.dim, s.dim}, TensorRole::kConvOut, l});
      t.push_back({b + "attn_norm.weight", {s.dim}, TensorRole::kNorm, l});
      t.push_back({b + "ffn_gate.weight", {s.dim, s.ffn}, TensorRole::kFfnGate, l});
      t.push_back({b + "ffn_down.weight", {s.ffn, s.dim}, TensorRole::kFfnDown, l});
      t.push_back({b + "ffn_up.weight", {s.dim, s.ffn}, TensorRole::kFfnUp, l});
      t.push_back({b + "ffn_norm.weight", {s.dim}, TensorRole::kNorm, l});
      continue;
    }
    t.push_back({b + "attn_q.weight", {s.dim, q}, TensorRole::kAttnQ, l});
    if (s.qkv_bias) t.push_back({b + "attn_q.bias", {q}, TensorRole::kBias, l});
    t.push_back({b + "attn_k.weight", {s.dim, kv}, TensorRole::kAttnK, l});
    if (s.qkv_bias) t.push_back({b + "attn_k.bias", {kv}, TensorRole::kBias, l});
    t.push_back({b + "attn_v.weight", {s.dim, kv}, TensorRole::kAttnV, l});
    if (s.qkv_bias) t.push_back({b + "attn_v.bias", {kv}, TensorRole::kBias, l});
    t.push_back({b + "attn_output.weight", {q, s.dim}, TensorRole::kAttnOut, l});
    t.push_back({b + "attn_norm.weight", {s.dim}, TensorRole::kNorm, l});
    if (s.qk_norm()) {
      t.push_back({b + "attn_q_norm.weight", {hd}, TensorRole::kNorm, l});
      t.push_back({b + "attn_k_norm.weight", {hd}, TensorRole::kNorm, l});
    }
    if (s.gemma()) t.push_back({b + "post_attention_norm.weight", {s.dim}, TensorRole::kNorm, l});
    t.push_back({b + "ffn_gate.weight", {s.dim, s.ffn}, TensorRole::kFfnGate, l});
    t.push_back({b + "ffn_down.weight", {s.ffn, s.dim}, TensorRole::kFfnDown, l});
    t.push_back({b + "ffn_up.weight", {s.dim, s.ffn}, TensorRole::kFfnUp, l});
    t.push_back({b + "ffn_norm.weight", {s.dim}, TensorRole::kNorm, l});
    if (s.gemma()) t.push_back({b + "post_ffw_norm.weight", {s.dim}, TensorRole::kNorm, l});
  }
  return t;
}

void SetArchMetadata(const ModelShape& s, StreamWriter* w) {
  using gguf::Value;
  const std::string a = s.arch + ".";
  w->Set("general.architecture", Value::Str(s.arch));
  w->Set("general.name", Value::Str(s.name));
  w->Set(a + "context_length", Value::U32(static_cast<uint32_t>(s.context)));
  w->Set(a + "embedding_length", Value::U32(static_cast<uint32_t>(s.dim)));
  w->Set(a + "block_count", Value::U32(static_cast<uint32_t>(s.n_layers)));
  w->Set(a + "feed_forward_length", Value::U32(static_cast<uint32_t>(s.ffn)));
  w->Set(a + "attention.head_count", Value::U32(static_cast<uint32_t>(s.n_heads)));
  if (s.lfm2()) {  // as llama.cpp's LFM2Model converter: one count per layer, 0 for a conv layer
    std::vector<int32_t> kv;
    for (int64_t l = 0; l < s.n_layers; ++l) kv.push_back(s.conv_layer(l) ? 0 : static_cast<int32_t>(s.n_kv_heads));
    w->Set(a + "attention.head_count_kv", Value::I32Array(kv));
    w->Set(a + "shortconv.l_cache", Value::U32(static_cast<uint32_t>(s.conv_l)));
  } else {
    w->Set(a + "attention.head_count_kv", Value::U32(static_cast<uint32_t>(s.n_kv_heads)));
  }
  if (s.key_length > 0) {
    w->Set(a + "attention.key_length", Value::U32(static_cast<uint32_t>(s.key_length)));
    w->Set(a + "attention.value_length", Value::U32(static_cast<uint32_t>(s.key_length)));
  }
  w->Set(a + "rope.dimension_count", Value::U32(static_cast<uint32_t>(s.n_rot())));
  w->Set(a + "rope.freq_base", Value::F32(static_cast<float>(s.rope_base)));
  w->Set(a + "attention.layer_norm_rms_epsilon", Value::F32(static_cast<float>(s.rms_eps)));
  w->Set(a + "vocab_size", Value::U32(static_cast<uint32_t>(s.vocab)));
  if (s.gemma() && s.sliding_window > 0) {
    w->Set(a + "attention.sliding_window", Value::U32(static_cast<uint32_t>(s.sliding_window)));
    w->Set(a + "attention.sliding_window_pattern", Value::U32(static_cast<uint32_t>(s.swa_period)));
    w->Set(a + "rope.freq_base_swa", Value::F32(static_cast<float>(s.rope_base_swa)));
  }
  if (s.arch == "gemma2") {
    w->Set(a + "attn_logit_softcapping", Value::F32(static_cast<float>(s.attn_softcap)));
    w->Set(a + "final_logit_softcapping", Value::F32(static_cast<float>(s.final_softcap)));
  }
  if (s.phi3()) {  // as llama.cpp's Phi3MiniModel converter writes them
    w->Set(a + "rope.scaling.original_context_length", Value::U32(static_cast<uint32_t>(s.rope_orig_context)));
    w->Set(a + "attention.sliding_window", Value::U32(static_cast<uint32_t>(s.sliding_window)));
    if (s.longrope) w->Set(a + "rope.scaling.attn_factor", Value::F32(static_cast<float>(LongRopeAttnFactor(s))));
  }
}

std::vector<float> LongRopeFactors(const ModelShape& s, bool long_factors) {
  const int64_t half = s.n_rot() / 2;
  const double scale = static_cast<double>(s.context) / static_cast<double>(s.rope_orig_context);
  std::vector<float> f(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double t = half > 1 ? static_cast<double>(i) / static_cast<double>(half - 1) : 0.0;
    // Like the real ones: rising with the dimension, the high-frequency pairs left near 1.
    f[static_cast<size_t>(i)] = static_cast<float>(long_factors ? std::pow(std::max(scale, 1.0), t * t) : 1.0 + t * t);
  }
  return f;
}

double LongRopeAttnFactor(const ModelShape& s) {
  const double scale = static_cast<double>(s.context) / static_cast<double>(s.rope_orig_context);
  return scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(s.rope_orig_context))) : 1.0;
}

std::vector<float> RopeFreqFactors(const ModelShape& s) {
  llm::Llama3RopeScaling r;
  r.factor = static_cast<float>(s.rope_scaling_factor);
  r.low_freq_factor = static_cast<float>(s.rope_low_freq_factor);
  r.high_freq_factor = static_cast<float>(s.rope_high_freq_factor);
  r.orig_ctx = static_cast<float>(s.rope_orig_context);
  return llm::Llama3RopeFactors(static_cast<int>(s.head_dim()), static_cast<float>(s.rope_base), r);
}

uint32_t FileTypeFor(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return 0;    // LLAMA_FTYPE_ALL_F32
    case GgmlType::kF16: return 1;    // MOSTLY_F16
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 12;  // Q3_K_M
    case GgmlType::kQ4_K: return 15;  // Q4_K_M
    case GgmlType::kQ5_K: return 17;  // Q5_K_M
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kBF16: return 32;
    default: return 1024;             // LLAMA_FTYPE_GUESSED
  }
}

}  // namespace edgedecode::tooling
