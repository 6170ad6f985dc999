// Synthetic models: random weights in a real architecture shape, written as GGUF that llama.cpp loads,
// so any machine can measure and test without downloads. Deterministic: the same config and seed
// give the same file bytes on every machine and for any thread count.
//
// Weight scales are chosen so that the next-token distribution is peaked but not degenerate (top-1
// probability typically 0.2-0.9; see docs/tooling.md): unit-RMS activations into every matrix
// (N(0, 1/fan_in) weights), and a classifier whose logits have standard deviation `logit_scale`.
//
// Tensors are generated, converted and written a chunk of rows at a time, so memory stays small even
// for a 1.1B-parameter f32 model. Thread-safe: independent calls may run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"
#include "tooling/model_spec.h"

namespace edgedecode::tooling {

struct SynthConfig {
  ModelShape shape;
  GgmlType type = GgmlType::kF16;  // type of the matrices; 1-D tensors are always f32
  uint64_t seed = 1;
  std::string vocab_path;          // vocab GGUF whose tokenizer.* keys are copied; empty: synthetic SPM
  double logit_scale = 0;          // std of the output logits; 0: DefaultLogitScale(vocab)
  int threads = 2;
  // Called with per-layer progress and per-tensor type fallbacks (one line each, no newline); may be empty.
  std::function<void(const std::string&)> log;
};

// Preset names: tinyllama-1.1b, smollm2-135m, qwen2.5-0.5b, llama-tiny, qwen2-tiny, qwen3-0.6b, qwen3-1.7b,
// llama3.2-1b, qwen3-tiny, llama3-tiny, smollm3-3b, phi3-mini-4k, phi4-mini, phi4-tiny, phi3-tiny, smollm3-tiny,
// gemma3-270m, gemma3-1b, gemma3-tiny, gemma2-2b, gemma2-tiny, lfm2-350m, lfm2-1.2b, lfm2-tiny.
std::vector<std::string> PresetNames();
Result<ModelShape> Preset(const std::string& name);
// A JSON object of shape fields (all optional, over the preset `base` or llama-tiny): "preset",
// "arch", "name", "dim", "n_layers", "n_heads", "n_kv_heads", "ffn", "vocab", "context",
// "rope_base", "rms_eps", "tied", "qkv_bias", "head_dim" (0: dim / n_heads), "rope_scaling_factor" (> 0:
// llama3 RoPE scaling), "rope_low_freq_factor", "rope_high_freq_factor", "rope_orig_context" (also phi3's
// original context), "rope_dims" (0: head_dim), "longrope" (phi3), "sliding_window" (phi3, gemma3, gemma2),
// "swa_period", "rope_base_swa" (gemma3, gemma2), "attn_softcap", "final_softcap" (gemma2), "attn_layers" (lfm2:
// the attention layers' indices, the others short convolutions), "conv_l" (lfm2's kernel length). Unknown keys
// are errors (so typos are caught), so is a field of the wrong JSON type (the error names the key and the
// type it needs) and text nested deeper than kMaxJsonDepth. base_preset: the base when the text names
// none ("": llama-tiny).
Result<ModelShape> ShapeFromJson(const std::string& json_text, const std::string& source_name,
                                 const std::string& base_preset = "");

double DefaultLogitScale(int64_t vocab);

struct SynthStats {
  int64_t n_params = 0;
  uint64_t file_bytes = 0;
  double seconds = 0;
  int n_fallbacks = 0;  // matrices written in another type because their rows do not fit `type`
};

Status SynthesizeModel(const SynthConfig& config, const std::string& out_path, SynthStats* stats = nullptr);

}  // namespace edgedecode::tooling
