#include "tooling/synth.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/json_depth.h"

#include "base/thread_pool.h"
#include "quant/quant.h"
#include "tooling/convert_util.h"
#include "tooling/rng.h"
#include "tooling/vocab.h"

namespace edgedecode::tooling {
namespace {

ModelShape Make(const char* arch, const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv,
                int64_t ffn, int64_t vocab, int64_t ctx, double rope, double eps, bool tied, bool bias) {
  ModelShape s;
  s.arch = arch;
  s.name = name;
  s.dim = dim;
  s.n_layers = layers;
  s.n_heads = heads;
  s.n_kv_heads = kv;
  s.ffn = ffn;
  s.vocab = vocab;
  s.context = ctx;
  s.rope_base = rope;
  s.rms_eps = eps;
  s.tied = tied;
  s.qkv_bias = bias;
  return s;
}

// qwen3: head_dim set apart from dim / n_heads (attention.key_length), as in every Qwen3 model.
ModelShape Qwen3(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim,
                 int64_t ffn, int64_t vocab, int64_t ctx) {
  ModelShape s = Make("qwen3", name, dim, layers, heads, kv, ffn, vocab, ctx, 1000000, 1e-6, true, false);
  s.key_length = head_dim;
  return s;
}

// phi3 (Phi-3 / Phi-4-mini): fused QKV and gate/up, theta 10000, eps 1e-5.
ModelShape Phi3(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv, int64_t ffn, int64_t vocab,
                int64_t ctx, bool tied, int64_t rope_dims, int64_t orig_ctx, bool longrope, int64_t sliding_window) {
  ModelShape s = Make("phi3", name, dim, layers, heads, kv, ffn, vocab, ctx, 10000, 1e-5, tied, false);
  s.rope_dims = rope_dims;
  s.rope_orig_context = orig_ctx;
  s.longrope = longrope;
  s.sliding_window = sliding_window;
  return s;
}

// llama with llama3 RoPE scaling (factor, low/high frequency factors, original context).
ModelShape Llama3(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv, int64_t ffn, int64_t vocab,
                  int64_t ctx, double factor, int64_t orig_ctx) {
  ModelShape s = Make("llama", name, dim, layers, heads, kv, ffn, vocab, ctx, 500000, 1e-5, true, false);
  s.rope_scaling_factor = factor;
  s.rope_low_freq_factor = 1;
  s.rope_high_freq_factor = 4;
  s.rope_orig_context = orig_ctx;
  return s;
}

// gemma3: head_dim set apart (256 in every size), tied, RoPE base 1e6 for the global layers and 10000 for
// the sliding-window ones, every 6th layer global.
ModelShape Gemma3(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim,
                  int64_t ffn, int64_t vocab, int64_t ctx, int64_t window, int64_t period) {
  ModelShape s = Make("gemma3", name, dim, layers, heads, kv, ffn, vocab, ctx, 1000000, 1e-6, true, false);
  s.key_length = head_dim;
  s.sliding_window = window;
  s.swa_period = period;
  s.rope_base_swa = 10000;
  return s;
}

// gemma2: as gemma3 without q/k norm; every other layer sliding (window 4096), one RoPE base, soft caps.
ModelShape Gemma2(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim,
                  int64_t ffn, int64_t vocab, int64_t ctx, int64_t window, double attn_cap, double final_cap) {
  ModelShape s = Gemma3(name, dim, layers, heads, kv, head_dim, ffn, vocab, ctx, window, 2);
  s.arch = "gemma2";
  s.rope_base = s.rope_base_swa = 10000;
  s.attn_softcap = attn_cap;
  s.final_softcap = final_cap;
  return s;
}

// lfm2: tied, theta 1e6, eps 1e-5, kernel length 3; attention in the listed layers, short convolutions elsewhere.
ModelShape Lfm2(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t kv, int64_t ffn, int64_t vocab,
                int64_t ctx, std::vector<int64_t> attn_layers) {
  ModelShape s = Make("lfm2", name, dim, layers, heads, kv, ffn, vocab, ctx, 1000000, 1e-5, true, false);
  s.attn_layers = std::move(attn_layers);
  s.conv_l = 3;
  return s;
}

struct PresetEntry {
  const char* name;
  ModelShape shape;
};

const std::vector<PresetEntry>& Presets() {
  static const std::vector<PresetEntry> k = {
      {"tinyllama-1.1b", Make("llama", "synth-tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000, 1e-5, false, false)},
      {"smollm2-135m", Make("llama", "synth-smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000, 1e-5, true, false)},
      {"qwen2.5-0.5b", Make("qwen2", "synth-qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, 32768, 1000000, 1e-6, true, true)},
      {"llama-tiny", Make("llama", "synth-llama-tiny", 256, 4, 8, 4, 768, 2048, 2048, 10000, 1e-5, false, false)},
      {"qwen2-tiny", Make("qwen2", "synth-qwen2-tiny", 256, 4, 8, 4, 768, 2048, 2048, 1000000, 1e-6, true, true)},
      // Qwen3-0.6B / -1.7B (config.json: hidden 1024 / 2048, 28 layers, 16 / 8 heads, head_dim 128, tied).
      {"qwen3-0.6b", Qwen3("synth-qwen3-0.6b", 1024, 28, 16, 8, 128, 3072, 151936, 40960)},
      {"qwen3-1.7b", Qwen3("synth-qwen3-1.7b", 2048, 28, 16, 8, 128, 6144, 151936, 40960)},
      // Llama-3.2-1B: rope_scaling {llama3, factor 32, low 1, high 4, original_max_position_embeddings 8192}.
      {"llama3.2-1b", Llama3("synth-llama3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 32, 8192)},
      // Test shapes. qwen3-tiny: head_dim 128 with dim 256 and 4 heads (q_dim 512 != dim). llama3-tiny: an
      // original context of 64, so that the oracle prompts (up to 65 tokens) reach the positions where the
      // scaled frequencies turn the heads by radians (with 8192 they would only differ in tiny angles).
      {"qwen3-tiny", Qwen3("synth-qwen3-tiny", 256, 4, 4, 2, 128, 768, 2048, 2048)},
      {"llama3-tiny", Llama3("synth-llama3-tiny", 256, 4, 4, 2, 768, 2048, 2048, 32, 64)},
      // SmolLM3-3B (config.json: hidden 2048, 36 layers, 16 heads / 4 kv, ffn 11008, theta 5e6, tied; NoPE in
      // every 4th layer). smollm3-tiny: 4 layers, so that layer 3 is a NoPE layer.
      {"smollm3-3b", Make("smollm3", "synth-smollm3-3b", 2048, 36, 16, 4, 11008, 128256, 65536, 5000000, 1e-6, true, false)},
      // Phi-3-mini-4k-instruct (hidden 3072, 32 layers, 32 heads, ffn 8192, vocab 32064, sliding_window 2047, no
      // LongRoPE, untied) and Phi-4-mini-instruct (24 / 8 heads of 128, partial_rotary_factor 0.75, LongRoPE
      // from 4096 to 131072, vocab 200064, tied).
      {"phi3-mini-4k", Phi3("synth-phi-mini-4k", 3072, 32, 32, 32, 8192, 32064, 4096, false, 0, 4096, false, 2047)},
      {"phi4-mini", Phi3("synth-phi4-mini", 3072, 32, 24, 8, 8192, 200064, 131072, true, 96, 4096, true, 0)},
      // (general.name avoids "phi3" and "phi-3": llama.cpp then marks the tokens of Phi-3's vocabulary special,
      // looking up <|endoftext|>, which the synthetic vocabulary does not have, and fails to load.)
      // phi3 test shapes. phi4-tiny: 8 / 2 heads of 32 rotating 24 dims, tied, LongRoPE from 32 to 2048: every
      // context of more than 32 positions (both engines' in the oracle test: 2048 and 256) takes the long
      // factors. phi3-tiny: untied, a sliding window written, LongRoPE whose original context is the whole
      // 2048: the short factors on both sides.
      {"phi4-tiny", Phi3("synth-phi4-tiny", 256, 4, 8, 2, 768, 2048, 2048, true, 24, 32, true, 0)},
      {"phi3-tiny", Phi3("synth-phi-tiny", 256, 4, 8, 8, 768, 2048, 2048, false, 0, 2048, true, 2047)},
      {"smollm3-tiny", Make("smollm3", "synth-smollm3-tiny", 256, 4, 8, 2, 768, 2048, 2048, 5000000, 1e-6, true, false)},
      // Gemma 3 270M / 1B (config.json: hidden 640 / 1152, 18 / 26 layers, 4 heads, 1 KV head, head_dim 256,
      // sliding_window 512, every 6th layer global, vocabulary 262144).
      {"gemma3-270m", Gemma3("synth-gemma3-270m", 640, 18, 4, 1, 256, 2048, 262144, 32768, 512, 6)},
      {"gemma3-1b", Gemma3("synth-gemma3-1b", 1152, 26, 4, 1, 256, 6912, 262144, 32768, 512, 6)},
      // Test shape: a window of 16 so that the oracle prompts (up to 65 tokens) run far past it, and a
      // period of 3 so that 4 layers have both kinds (0, 1, 3 sliding; 2 global).
      {"gemma3-tiny", Gemma3("synth-gemma3-tiny", 256, 4, 4, 1, 128, 768, 2048, 2048, 16, 3)},
      // Gemma 2 2B (hidden 2304, 26 layers, 8 heads / 4 KV of 256, ffn 9216, vocabulary 256000, window 4096,
      // soft caps 50 / 30). Test shape: window 16, and caps of 1.5 / 10 so that tanh bends the typical
      // scores (std ~1) and logits (std ~4) instead of passing them through (a cap of 4 left 45% of the
      // probability outside the oracle's top 256).
      {"gemma2-2b", Gemma2("synth-gemma2-2b", 2304, 26, 8, 4, 256, 9216, 256000, 8192, 4096, 50, 30)},
      {"gemma2-tiny", Gemma2("synth-gemma2-tiny", 256, 4, 4, 2, 64, 768, 2048, 2048, 16, 1.5, 10)},
      // LFM2-350M / -1.2B (config.json: hidden 1024 / 2048, 16 layers, 16 / 32 heads, 8 KV heads, block_ff_dim
      // 6656 / 12288 auto-adjusted by the converter to 4608 / 8192, vocabulary 65536, 128000 positions, theta
      // 1e6, norm_eps 1e-5, conv_L_cache 3, tied; attention in layers 2, 5, 8, 10, 12, 14, the rest short
      // convolutions). lfm2-tiny: conv, attention, conv, attention, conv (both kinds, a conv layer first and last).
      {"lfm2-350m", Lfm2("synth-lfm2-350m", 1024, 16, 16, 8, 4608, 65536, 128000, {2, 5, 8, 10, 12, 14})},
      {"lfm2-1.2b", Lfm2("synth-lfm2-1.2b", 2048, 16, 32, 8, 8192, 65536, 128000, {2, 5, 8, 10, 12, 14})},
      {"lfm2-tiny", Lfm2("synth-lfm2-tiny", 256, 5, 4, 2, 768, 2048, 2048, {1, 3})},
  };
  return k;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// How one tensor's elements are drawn: value = mean + std * Normal().
struct Init {
  float mean;
  float std;
};

Init InitFor(const TensorSpec& t, const ModelShape& s, double logit_scale) {
  const float inv_dim = 1.0f / std::sqrt(static_cast<float>(s.dim));
  // Tied models use small embeddings: the classifier is the embedding itself, and with unit-scale
  // embeddings the input token's own logit would dominate every distribution.
  const float emb_std = s.tied ? inv_dim : 1.0f;
  switch (t.role) {
    case TensorRole::kEmbedding: return {0.0f, emb_std};
    case TensorRole::kNorm:
      if (t.layer < 0) {
        // output_norm: sets the logit scale when tied (logit std = gain * emb_std * sqrt(dim)).
        const float gain = s.tied ? static_cast<float>(logit_scale) / (emb_std * std::sqrt(static_cast<float>(s.dim)))
                                  : 1.0f;
        return {gain, 0.05f * gain};
      }
      return {1.0f, 0.1f};
    case TensorRole::kBias: return {0.0f, 0.2f};
    case TensorRole::kOutput: return {0.0f, static_cast<float>(logit_scale) * inv_dim};
    case TensorRole::kAttnQ: case TensorRole::kAttnK: case TensorRole::kAttnV:
    case TensorRole::kFfnGate: case TensorRole::kFfnUp:
      return {0.0f, inv_dim};
    case TensorRole::kAttnOut: case TensorRole::kFfnDown:
      return {0.0f, 1.0f / std::sqrt(static_cast<float>(t.dims[0]))};
    case TensorRole::kConvIn: return {0.0f, inv_dim};
    case TensorRole::kConvOut: return {0.0f, 1.0f / std::sqrt(static_cast<float>(t.dims[0]))};
    case TensorRole::kConvKernel: return {0.0f, 1.0f / std::sqrt(static_cast<float>(t.dims[0]))};  // unit-RMS output over conv_l taps
    case TensorRole::kRopeFreqs: case TensorRole::kRopeLong: case TensorRole::kRopeShort:
      return {0.0f, 0.0f};  // computed values, not drawn (SynthesizeModel)
  }
  return {0.0f, 1.0f};
}

// The config's fields, each checked for its JSON type before it is read (nlohmann's get<> would convert a
// float to an integer, or a 1e30 to an int64 with undefined behaviour).
std::string Describe(const nlohmann::json& v) {
  if (v.is_number_float()) return "the non-integer number " + v.dump();
  return std::string("a JSON ") + v.type_name();
}

Status GetField(const nlohmann::json& j, const char* key, int64_t* out, const std::string& src) {
  if (!j.contains(key)) return Status::Ok();
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}))
    return InvalidArgument(src + ": key '" + key + "' must be an integer, got " + Describe(v));
  *out = v.get<int64_t>();
  return Status::Ok();
}

Status GetField(const nlohmann::json& j, const char* key, double* out, const std::string& src) {
  if (!j.contains(key)) return Status::Ok();
  const nlohmann::json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    return InvalidArgument(src + ": key '" + key + "' must be a finite number, got " + Describe(v));
  *out = v.get<double>();
  return Status::Ok();
}

Status GetField(const nlohmann::json& j, const char* key, bool* out, const std::string& src) {
  if (!j.contains(key)) return Status::Ok();
  const nlohmann::json& v = j.at(key);
  if (!v.is_boolean()) return InvalidArgument(src + ": key '" + key + "' must be true or false, got " + Describe(v));
  *out = v.get<bool>();
  return Status::Ok();
}

Status GetField(const nlohmann::json& j, const char* key, std::string* out, const std::string& src) {
  if (!j.contains(key)) return Status::Ok();
  const nlohmann::json& v = j.at(key);
  if (!v.is_string()) return InvalidArgument(src + ": key '" + key + "' must be a string, got " + Describe(v));
  *out = v.get<std::string>();
  return Status::Ok();
}

Status GetField(const nlohmann::json& j, const char* key, std::vector<int64_t>* out, const std::string& src) {
  if (!j.contains(key)) return Status::Ok();
  const nlohmann::json& v = j.at(key);
  if (!v.is_array() || v.size() > 1024)
    return InvalidArgument(src + ": key '" + key + "' must be an array of at most 1024 integers, got " + Describe(v));
  out->clear();
  for (const nlohmann::json& e : v) {
    if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<uint64_t>() > uint64_t{INT64_MAX}))
      return InvalidArgument(src + ": key '" + key + "' must hold integers, got " + Describe(e));
    out->push_back(e.get<int64_t>());
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> PresetNames() {
  std::vector<std::string> n;
  for (const auto& p : Presets()) n.push_back(p.name);
  return n;
}

Result<ModelShape> Preset(const std::string& name) {
  for (const auto& p : Presets())
    if (name == p.name) return p.shape;
  std::string list;
  for (const auto& n : PresetNames()) list += (list.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown preset '" + name + "' (presets: " + list + ")");
}

Result<ModelShape> ShapeFromJson(const std::string& text, const std::string& src, const std::string& base_preset) {
  ED_RETURN_IF_ERROR(CheckJsonDepth(text, src));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return InvalidArgument(src + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return InvalidArgument(src + ": expected a JSON object of model shape fields");
  static const char* kKeys[] = {"preset", "arch", "name", "dim", "n_layers", "n_heads", "n_kv_heads", "ffn",
                                "vocab", "context", "rope_base", "rms_eps", "tied", "qkv_bias", "head_dim",
                                "rope_scaling_factor", "rope_low_freq_factor", "rope_high_freq_factor",
                                "rope_orig_context", "rope_dims", "longrope", "sliding_window", "swa_period",
                                "rope_base_swa", "attn_softcap", "final_softcap", "attn_layers", "conv_l"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKeys) known |= it.key() == k;
    if (!known) return InvalidArgument(src + ": unknown key '" + it.key() + "'");
  }
  std::string base = base_preset.empty() ? "llama-tiny" : base_preset;
  ED_RETURN_IF_ERROR(GetField(j, "preset", &base, src));
  ED_ASSIGN_OR_RETURN(ModelShape s, Preset(base));
  ED_RETURN_IF_ERROR(GetField(j, "arch", &s.arch, src));
  if (j.contains("arch") && !j.contains("qkv_bias")) s.qkv_bias = s.arch == "qwen2";
  if (!j.contains("name")) s.name = "synth-custom";
  ED_RETURN_IF_ERROR(GetField(j, "name", &s.name, src));
  ED_RETURN_IF_ERROR(GetField(j, "dim", &s.dim, src));
  ED_RETURN_IF_ERROR(GetField(j, "n_layers", &s.n_layers, src));
  ED_RETURN_IF_ERROR(GetField(j, "n_heads", &s.n_heads, src));
  ED_RETURN_IF_ERROR(GetField(j, "n_kv_heads", &s.n_kv_heads, src));
  ED_RETURN_IF_ERROR(GetField(j, "ffn", &s.ffn, src));
  ED_RETURN_IF_ERROR(GetField(j, "vocab", &s.vocab, src));
  ED_RETURN_IF_ERROR(GetField(j, "context", &s.context, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_base", &s.rope_base, src));
  ED_RETURN_IF_ERROR(GetField(j, "rms_eps", &s.rms_eps, src));
  ED_RETURN_IF_ERROR(GetField(j, "tied", &s.tied, src));
  ED_RETURN_IF_ERROR(GetField(j, "qkv_bias", &s.qkv_bias, src));
  ED_RETURN_IF_ERROR(GetField(j, "head_dim", &s.key_length, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_scaling_factor", &s.rope_scaling_factor, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_low_freq_factor", &s.rope_low_freq_factor, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_high_freq_factor", &s.rope_high_freq_factor, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_orig_context", &s.rope_orig_context, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_dims", &s.rope_dims, src));
  ED_RETURN_IF_ERROR(GetField(j, "longrope", &s.longrope, src));
  ED_RETURN_IF_ERROR(GetField(j, "sliding_window", &s.sliding_window, src));
  ED_RETURN_IF_ERROR(GetField(j, "swa_period", &s.swa_period, src));
  ED_RETURN_IF_ERROR(GetField(j, "rope_base_swa", &s.rope_base_swa, src));
  ED_RETURN_IF_ERROR(GetField(j, "attn_softcap", &s.attn_softcap, src));
  ED_RETURN_IF_ERROR(GetField(j, "final_softcap", &s.final_softcap, src));
  ED_RETURN_IF_ERROR(GetField(j, "attn_layers", &s.attn_layers, src));
  ED_RETURN_IF_ERROR(GetField(j, "conv_l", &s.conv_l, src));
  ED_RETURN_IF_ERROR(s.Validate().WithContext(src));
  return s;
}

double DefaultLogitScale(int64_t vocab) {
  // Calibrated with the float forward pass of synth_test.cc: a logit std equal to the expected
  // maximum of `vocab` standard normals puts the top-1 probability mostly in 0.2-0.9.
  return 1.0 * std::sqrt(2.0 * std::log(static_cast<double>(std::max<int64_t>(vocab, 2))));
}

Status SynthesizeModel(const SynthConfig& cfg, const std::string& out_path, SynthStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  ModelShape s = cfg.shape;
  if (!IsWritableType(cfg.type))
    return InvalidArgument(std::string("cannot write type ") + TypeTraits(cfg.type).name + " (types: " +
                           WritableTypeList() + ")");
  StreamWriter w;
  std::unique_ptr<gguf::File> vocab_file;
  if (!cfg.vocab_path.empty()) {
    ED_ASSIGN_OR_RETURN(vocab_file, gguf::File::Open(cfg.vocab_path));
    ED_ASSIGN_OR_RETURN(s.vocab, CopyTokenizer(*vocab_file, &w));
  }
  ED_RETURN_IF_ERROR(s.Validate());
  if (cfg.vocab_path.empty()) ED_RETURN_IF_ERROR(SetSyntheticSpmTokenizer(s.vocab, &w));
  SetArchMetadata(s, &w);
  w.Set("general.file_type", gguf::Value::U32(FileTypeFor(cfg.type)));
  if (TypeTraits(cfg.type).block_size > 1) w.Set("general.quantization_version", gguf::Value::U32(2));

  const std::vector<TensorSpec> specs = ModelTensors(s);
  std::vector<GgmlType> types;
  SynthStats st;
  for (const TensorSpec& t : specs) {
    const bool f32 = t.dims.size() == 1 || t.role == TensorRole::kConvKernel;  // 1-D, and lfm2's conv kernel
    GgmlType ty = f32 ? GgmlType::kF32 : FitType(cfg.type, t.dims[0]);
    if (!f32 && ty != cfg.type) {
      ++st.n_fallbacks;
      if (cfg.log)
        cfg.log(t.name + ": row length " + std::to_string(t.dims[0]) + " does not fit " + TypeTraits(cfg.type).name +
                ", using " + TypeTraits(ty).name);
    }
    types.push_back(ty);
    ED_RETURN_IF_ERROR(w.Declare(t.name, t.dims, ty));
    st.n_params += t.n_elements();
  }
  const double logit_scale = cfg.logit_scale > 0 ? cfg.logit_scale : DefaultLogitScale(s.vocab);
  ED_RETURN_IF_ERROR(w.Begin(out_path));

  ThreadPool pool(std::max(1, cfg.threads));
  std::vector<float> f32;
  std::vector<uint8_t> packed;
  const bool big = st.n_params > 50'000'000;
  int last_layer = -2;
  for (size_t ti = 0; ti < specs.size(); ++ti) {
    const TensorSpec& t = specs[ti];
    if (cfg.log && big && t.layer != last_layer) {
      last_layer = t.layer;
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char line[96];
      std::snprintf(line, sizeof line, "layer %d/%lld (%.1f s)", t.layer + 1, static_cast<long long>(s.n_layers), el);
      if (t.layer >= 0) cfg.log(line);
    }
    const Init init = InitFor(t, s, logit_scale);
    const uint64_t tensor_seed = MixSeed(cfg.seed, Fnv1a(t.name));
    const int64_t n = t.dims[0], rows = t.n_elements() / n;
    const size_t row_bytes = RowBytes(types[ti], n);
    if (t.role == TensorRole::kRopeFreqs || t.role == TensorRole::kRopeLong || t.role == TensorRole::kRopeShort) {  // 1-D f32
      const std::vector<float> ff = t.role == TensorRole::kRopeFreqs ? RopeFreqFactors(s)
                                                                     : LongRopeFactors(s, t.role == TensorRole::kRopeLong);
      ED_RETURN_IF_ERROR(w.Write(ff.data(), ff.size() * sizeof(float)));
      continue;
    }
    // About 4M elements per chunk: small memory, enough rows to split over threads.
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 22) / n);
    f32.resize(static_cast<size_t>(std::min(chunk, rows) * n));
    packed.resize(static_cast<size_t>(std::min(chunk, rows)) * row_bytes);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
      const int64_t nr = std::min(chunk, rows - r0);
      auto gen = [&](int64_t a, int64_t b, int) {
        for (int64_t r = a; r < b; ++r) {
          Rng rng(MixSeed(tensor_seed, static_cast<uint64_t>(r0 + r)));
          float* row = f32.data() + r * n;
          for (int64_t i = 0; i < n; ++i) row[i] = init.mean + init.std * rng.Normal();
          if (types[ti] == GgmlType::kF32) continue;
          quant::QuantizeRow(types[ti], row, packed.data() + r * row_bytes, n);
        }
      };
      if (nr > 1 && pool.size() > 1) pool.ParallelFor(nr, 1, gen);
      else gen(0, nr, 0);
      const void* src = types[ti] == GgmlType::kF32 ? static_cast<const void*>(f32.data()) : packed.data();
      ED_RETURN_IF_ERROR(w.Write(src, static_cast<size_t>(nr) * row_bytes));
    }
  }
  ED_RETURN_IF_ERROR(w.Finish());
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  FILE* f = std::fopen(out_path.c_str(), "rb");
  if (f) {
    std::fseek(f, 0, SEEK_END);
    st.file_bytes = static_cast<uint64_t>(std::ftell(f));
    std::fclose(f);
  }
  if (stats) *stats = st;
  return Status::Ok();
}

}  // namespace edgedecode::tooling
