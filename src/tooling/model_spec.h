// The shape of a llama-family model and the GGUF names, dims and metadata llama.cpp expects for it.
// Shared by synth, convert and quantize so every writer follows the same conventions.
// Plain data and pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "edgedecode/status.h"
#include "tooling/gguf_stream.h"

namespace edgedecode::tooling {

struct ModelShape {
  std::string arch = "llama";  // "llama", "qwen2", "qwen3", "smollm3" (llama's tensors; the runtime skips RoPE in every 4th layer), "phi3", "gemma3", "gemma2" or "lfm2"
  std::string name = "synthetic";
  int64_t dim = 256;           // embedding_length
  int64_t n_layers = 4;        // block_count
  int64_t n_heads = 8;
  int64_t n_kv_heads = 4;
  int64_t ffn = 768;           // feed_forward_length
  int64_t vocab = 2048;
  int64_t context = 2048;
  double rope_base = 10000.0;
  double rms_eps = 1e-5;
  bool tied = false;           // output.weight omitted, token_embd used as classifier
  bool qkv_bias = false;       // qwen2: attn_q/k/v.bias
  int64_t key_length = 0;      // attention.key_length (= value_length): head_dim; 0: dim / n_heads
  // llama3 RoPE scaling (Llama 3.1/3.2): rope_scaling_factor > 0 writes rope_freqs.weight, the factors of
  // llm::Llama3RopeFactors, as llama.cpp's converter does (no rope.scaling.* keys: llama.cpp reads a
  // scaling factor without a known type as linear scaling).
  double rope_scaling_factor = 0;
  double rope_low_freq_factor = 1;
  double rope_high_freq_factor = 4;
  int64_t rope_orig_context = 8192;
  // phi3: attn_qkv and ffn_up (gate and up) fused; rope.scaling.original_context_length = rope_orig_context.
  int64_t rope_dims = 0;       // rope.dimension_count (partial rotary: Phi-4-mini rotates 96 of 128); 0: head_dim
  bool longrope = false;       // phi3: rope_factors_long / _short.weight (LongRoPEFactors) and rope.scaling.attn_factor
  // attention.sliding_window. phi3: written as the converter does (the runtimes ignore it). gemma3/gemma2: the
  // window (0: every layer global), with attention.sliding_window_pattern (every swa_period-th layer global)
  // and rope.freq_base_swa (the sliding layers' RoPE base).
  int64_t sliding_window = 0;
  int64_t swa_period = 6;
  double rope_base_swa = 10000.0;
  // gemma2: attn_logit_softcapping and final_logit_softcapping (written for gemma2 only).
  double attn_softcap = 50.0;
  double final_softcap = 30.0;
  // lfm2: the attention layers (the others are short-convolution layers; attention.head_count_kv is written
  // per layer, 0 for those) and the convolution's kernel length (shortconv.l_cache).
  std::vector<int64_t> attn_layers;
  int64_t conv_l = 3;

  int64_t head_dim() const { return key_length > 0 ? key_length : dim / n_heads; }
  bool qk_norm() const { return arch == "qwen3" || arch == "gemma3" || arch == "lfm2"; }
  bool lfm2() const { return arch == "lfm2"; }
  bool conv_layer(int64_t l) const {
    return lfm2() && std::find(attn_layers.begin(), attn_layers.end(), l) == attn_layers.end();
  }  // attn_q_norm / attn_k_norm.weight (head_dim) per layer
  bool gemma() const { return arch == "gemma3" || arch == "gemma2"; }  // post_attention_norm / post_ffw_norm.weight (dim) per layer
  bool llama3_rope() const { return rope_scaling_factor > 0; }
  bool phi3() const { return arch == "phi3"; }
  int64_t n_rot() const { return rope_dims > 0 ? rope_dims : head_dim(); }
  int64_t n_params() const;
  Status Validate() const;
};

// kRopeFreqs: rope_freqs.weight, computed values (llm::Llama3RopeFactors), not random.
// kConvKernel, kConvIn, kConvOut: lfm2's shortconv.conv (written f32, as llama.cpp's converter keeps it),
// shortconv.in_proj and shortconv.out_proj.
enum class TensorRole { kEmbedding, kNorm, kBias, kAttnQ, kAttnK, kAttnV, kAttnOut, kFfnGate, kFfnUp, kFfnDown, kOutput,
                        kRopeFreqs, kRopeLong, kRopeShort, kConvKernel, kConvIn, kConvOut };

struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the row length
  TensorRole role;
  int layer = -1;             // -1 for global tensors
  int64_t n_elements() const;
};

// Tensors in llama.cpp's order: token_embd, output_norm, output, rope_freqs (llama3 scaling), then per block
// attn_q, attn_k, attn_v, attn_output, attn_norm, ffn_gate, ffn_down, ffn_up, ffn_norm (biases after their
// weights; qwen3's and gemma3's attn_q_norm and attn_k_norm after attn_norm; gemma3's post_attention_norm
// after them, post_ffw_norm last).
std::vector<TensorSpec> ModelTensors(const ModelShape& s);
// The values of rope_freqs.weight (head_dim / 2) of a shape with llama3_rope().
std::vector<float> RopeFreqFactors(const ModelShape& s);
// phi3 LongRoPE: the values of rope_factors_long.weight (long) or rope_factors_short.weight (n_rot / 2 each):
// made-up smooth curves of the real ones' ranges (short 1 to 2, long 1 to context / rope_orig_context).
std::vector<float> LongRopeFactors(const ModelShape& s, bool long_factors);
// rope.scaling.attn_factor as llama.cpp's converter computes it for LongRoPE: sqrt(1 + ln(scale) / ln(orig)).
double LongRopeAttnFactor(const ModelShape& s);

// general.architecture, general.name and the {arch}.* hyper-parameters.
void SetArchMetadata(const ModelShape& s, StreamWriter* w);

// llama.cpp's general.file_type (llama_ftype) for a model whose matrices are mostly of type t.
uint32_t FileTypeFor(GgmlType t);

}  // namespace edgedecode::tooling
