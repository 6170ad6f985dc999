// A decoder-only transformer loaded from GGUF: the architectures `llama` (TinyLlama, Llama 2/3.x with
// llama3 RoPE scaling, SmolLM/SmolLM2, Mistral, llama2.c imports; GQA/MQA), `qwen2` (QKV biases, NEOX
// RoPE), `qwen3` (per-head RMSNorm of Q and K before RoPE, NEOX RoPE, head_dim set apart from dim) and
// `smollm3` (llama whose every 4th layer has no RoPE) and `phi3` (Phi-3 / Phi-4-mini: fused QKV and gate/up
// matrices, NEOX RoPE, partial rotary, LongRoPE factors).
// `gemma3` (embeddings scaled by sqrt(dim), norms after attention and FFN too, Q/K RMSNorm, GELU-gated FFN,
// sliding-window layers interleaved with global ones) and `gemma2` (as gemma3 without the q/k norm, with
// soft-capped attention scores and logits, every other layer sliding).
// `lfm2` (LiquidAI LFM2): attention layers (qwen3-like q/k RMSNorm, NEOX RoPE) interleaved with gated short
// convolution layers, whose per-sequence state is the last conv_l - 1 inputs of the convolution (see
// Context::ShortConv); {arch}.attention.head_count_kv is then a per-layer array, 0 marking a conv layer.
//
// Ownership: a Model owns its gguf::File; weight pointers point into the file's mapping (weights are
// never copied; small 1-D tensors are converted to float at load). Immutable after Load and safe to
// share between threads and contexts.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"
#include "gguf/gguf.h"
#include "kernels/kernels.h"
#include "tok/tokenizer.h"

namespace edgedecode::llm {

enum class RopeStyle { kNorm, kNeox };  // kNorm: adjacent pairs (2i, 2i+1); kNeox: (i, i + n_rot/2)

struct ModelConfig {
  std::string arch;         // "llama" | "qwen2" | "qwen3" | "smollm3" | "phi3" | "gemma3" | "gemma2" | "lfm2"
  std::string name;         // general.name
  int n_vocab = 0;
  int n_ctx_train = 0;      // {arch}.context_length
  int dim = 0;              // embedding length
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;         // dim / n_heads unless {arch}.attention.key_length says otherwise
  int ffn_dim = 0;
  int n_rot = 0;            // rotary dims per head
  float rope_base = 10000.f;
  float rope_freq_scale = 1.f;  // 1 / linear scaling factor
  float norm_eps = 1e-5f;
  RopeStyle rope = RopeStyle::kNorm;
  bool qkv_bias = false;
  bool qk_norm = false;     // qwen3: RMSNorm over each head of q and k (weights of head_dim) before RoPE
  bool tied_embeddings = false;
  // smollm3 (NoPE layers): layers l with (l + 1) % no_rope_every == 0 rotate nothing; 0: every layer rotates.
  int no_rope_every = 0;

  // LongRoPE (phi3): a context longer than n_ctx_orig ({arch}.rope.scaling.original_context_length, else
  // n_ctx_train) rotates with rope_factors_long.weight, a shorter one with rope_factors_short.weight, as
  // llama.cpp chooses. rope_attn_factor ({arch}.rope.scaling.attn_factor, 1 when absent) scales cos and sin.
  int n_ctx_orig = 0;
  float rope_attn_factor = 1.f;

  bool layer_uses_rope(int l) const { return no_rope_every == 0 || (l + 1) % no_rope_every != 0; }
  float attn_scale = 0;     // multiplies q.k; 1/sqrt(head_dim) unless the architecture says otherwise
  // gemma3 (see GemmaConfig in model.cc): x = embedding * sqrt(dim); RMSNorm of the attention and FFN
  // outputs before each residual add (attn_post_norm, ffn_post_norm); gate activation GELU (tanh) instead of SiLU.
  bool gemma = false;
  // Sliding-window attention: a layer with swa_layer(l) attends to the n_swa positions up to its own
  // (key position p0 is seen from query position p1 when p1 - p0 < n_swa) and rotates with rope_base_swa.
  // Layer l is a sliding one when l % swa_period < swa_period - 1 (every swa_period-th layer is global).
  int n_swa = 0;            // 0: no sliding-window layers
  int swa_period = 0;
  float rope_base_swa = 10000.f;
  float final_logit_softcap = 0;  // > 0: logits = cap * tanh(logits / cap)
  float attn_logit_softcap = 0;   // > 0 (gemma2): each scaled score s = cap * tanh(s / cap) before the softmax

  // lfm2: conv_layers[l] marks a short-convolution layer (no attention, no KV cache); empty: none.
  // conv_l: the convolution's kernel length ({arch}.shortconv.l_cache); its state holds conv_l - 1 rows.
  std::vector<bool> conv_layers;
  int conv_l = 0;
  bool conv_layer(int l) const { return !conv_layers.empty() && conv_layers[static_cast<size_t>(l)]; }
  int n_conv_layers() const {
    int n = 0;
    for (bool b : conv_layers) n += b ? 1 : 0;
    return n;
  }
  bool has_conv() const { return n_conv_layers() > 0; }

  bool swa_layer(int l) const { return n_swa > 0 && (swa_period <= 0 || l % swa_period < swa_period - 1); }
  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
};

// A 2-D weight as stored in the file: `rows` rows of `cols` elements of `type`.
struct Weight {
  const void* data = nullptr;      // in the file's mapping, or in the model's arena after RepackForKernels
  GgmlType type = GgmlType::kF32;
  int64_t cols = 0;  // input features (row length, ggml ne0)
  int64_t rows = 0;  // output features
  std::string name;
  const void* packed = nullptr;    // repacked for the kernels (kernels::Pack: q4_0 by 16-row pairs, q8_0 / q4_K / q6_K by 8 rows), or null
  size_t nbytes() const { return RowBytes(type, cols) * static_cast<size_t>(rows); }
};

struct LayerWeights {
  std::vector<float> attn_norm;  // (dim)
  Weight wq;                     // (q_dim rows, dim cols)
  Weight wk;                     // (kv_dim, dim)
  Weight wv;                     // (kv_dim, dim)
  Weight wo;                     // (dim, q_dim)
  std::vector<float> bq, bk, bv; // (q_dim), (kv_dim), (kv_dim); empty unless qkv_bias
  std::vector<float> q_norm;     // (head_dim), shared by every query head; empty unless qk_norm
  std::vector<float> k_norm;     // (head_dim), shared by every key head; empty unless qk_norm
  std::vector<float> attn_post_norm;  // (dim), gemma only: RMSNorm of the attention output
  std::vector<float> ffn_norm;   // (dim)
  std::vector<float> ffn_post_norm;   // (dim), gemma only: RMSNorm of the FFN output
  Weight w_gate;                 // (ffn_dim, dim)
  Weight w_up;                   // (ffn_dim, dim)
  Weight w_down;                 // (dim, ffn_dim)
  // lfm2 conv layers (wq, wk, wv, wo, q_norm and k_norm then stay empty): in_proj (3 dim rows: b, c, x),
  // the depthwise kernel transposed to conv[k * dim + channel] (conv_l x dim; the file stores dim rows of
  // conv_l), out_proj (dim, dim).
  Weight in_proj;
  Weight out_proj;
  std::vector<float> conv;

  // The layer's matrices in evaluation order. Those a layer lacks (lfm2: a conv layer's attention matrices,
  // an attention layer's conv ones) have no data and no rows.
  std::array<Weight*, 9> matrices() { return {&wq, &wk, &wv, &wo, &in_proj, &out_proj, &w_gate, &w_up, &w_down}; }
  std::array<const Weight*, 9> matrices() const {
    return {&wq, &wk, &wv, &wo, &in_proj, &out_proj, &w_gate, &w_up, &w_down};
  }
};

class Model {
 public:
  // Opens and validates: architecture supported, required keys present, every tensor present with
  // the shape the architecture needs and a supported type. Errors name the file and the tensor/key.
  // load_tokenizer=false skips the tokenizer (tests of the forward pass alone; tokenizer() is then invalid).
  static Result<std::unique_ptr<Model>> Load(const std::string& path, bool load_tokenizer = true);

  const ModelConfig& config() const { return cfg_; }
  const tok::Tokenizer& tokenizer() const { return *tokenizer_; }
  const gguf::File& file() const { return *file_; }

  const Weight& token_embd() const { return token_embd_; }  // (n_vocab rows, dim)
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const std::vector<float>& output_norm() const { return output_norm_; }  // (dim)
  // (n_vocab, dim); token_embd's bytes when tied (after RepackForKernels, the arena's copy of them)
  const Weight& output() const { return output_; }
  // Divisors of the RoPE frequencies (llama3 scaling): the file's rope_freqs.weight, else computed from
  // rope.scaling.* when rope.scaling.type is llama3; empty when the model has none.
  const std::vector<float>& rope_freq_factors() const { return rope_freqs_; }  // (n_rot/2) or empty
  // The divisors a context of n_ctx positions rotates with: rope_freq_factors() when the file has them, else
  // phi3's LongRoPE factors (long when n_ctx > n_ctx_orig, else short); empty when the model has none.
  const std::vector<float>& RopeFactorsFor(int n_ctx) const;
  size_t rope_factor_floats() const { return rope_freqs_.size() + rope_long_.size() + rope_short_.size(); }

  // Moves the matrices every token streams (the layers' and the output; never the token embedding,
  // which is read by rows) out of the file mapping into one arena the model owns, backed by transparent
  // huge pages where the kernel allows: q4_0, q4_K and q6_K repacked for the SIMD kernels of `isa`
  // (kernels::CanPack), the other types copied as they are. The mapping's 4 KiB pages cost a TLB
  // miss every 4 KiB of a decode step's stream (q4_k_m decode measured 33 -> 48 t/s at 2 threads with
  // the copy). The originals' pages are given back to the kernel (never read again), so resident
  // memory stays about the file size. Call once, after Load and before any Context uses the model.
  // Returns the bytes now held in the arena.
  size_t RepackForKernels(kernels::Isa isa);
  size_t packed_bytes() const { return packed_bytes_; }

  // Checks that no stored weight is NaN or Inf (the 1-D tensors are checked by Load). full=false reads only the
  // scales of the block-quantized matrices, one f16 per block (cheap next to loading; a block of integers
  // under finite scales is finite); full=true also reads every element of the f32 / f16 / bf16 matrices, a
  // pass over them (Context runs it to explain non-finite logits). Corrupt naming the tensor, the element
  // (or block) and its offset in the file.
  Status CheckWeights(bool full) const;

  // Bytes of all weights as stored (what decode streams once per token).
  size_t weight_bytes() const;
  // Every 2-D weight, for logging and accounting.
  std::vector<const Weight*> all_weights() const;

 private:
  Model() = default;
  Status Init(bool load_tokenizer);

  std::unique_ptr<gguf::File> file_;
  std::unique_ptr<tok::Tokenizer> tokenizer_;
  ModelConfig cfg_;
  Weight token_embd_;
  std::vector<LayerWeights> layers_;
  std::vector<float> output_norm_;
  Weight output_;
  std::vector<float> rope_freqs_;
  std::vector<float> rope_long_, rope_short_;  // phi3: rope_factors_long / _short.weight (n_rot/2) or empty
  struct FreeDeleter { void operator()(uint8_t* p) const { std::free(p); } };
  // Owns Weight::packed and the copied Weight::data of the streamed matrices (RepackForKernels).
  std::unique_ptr<uint8_t[], FreeDeleter> arena_;
  size_t packed_bytes_ = 0;
};

}  // namespace edgedecode::llm
