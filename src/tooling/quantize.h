// Re-encoding a GGUF model's tensors into another type (llama-quantize's job). Every tensor of a
// readable type is dequantized to f32 first, then written in the target type; metadata is copied
// with general.file_type and general.quantization_version updated. Thread-safe (no shared state).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"
#include "gguf/gguf.h"

namespace edgedecode::tooling {

struct QuantizeOptions {
  GgmlType type = GgmlType::kQ8_0;  // type of 2-D tensors (1-D tensors stay f32)
  // "q4_k_m"-style mixes: output.weight q6_k, attn_v and ffn_down q6_k (llama.cpp's Q4_K_M rule for
  // the first/last eighth of layers and every third one is simplified to "all of them").
  bool mix_m = false;
  // Overrides: ECMAScript regex that must match the WHOLE tensor name -> type, first match wins
  // ("output\\.weight" is only output.weight, not blk.N.attn_output.weight; "blk\\..*\\.ffn_down\\.weight").
  std::vector<std::pair<std::string, GgmlType>> overrides;
  // Re-encoding a matrix that is already quantized (not f32 / f16 / bf16) compounds the rounding: refused
  // (InvalidArgument naming the tensor) unless this is set.
  bool allow_requantize = false;
  int threads = 2;
  // Called with one line per tensor that does not get the type asked for (fallbacks), and progress.
  std::function<void(const std::string&)> log;
};

// Parses a TYPE argument: a GgmlType name or a mix name (q4_k_m, q5_k_m, q4_k_s, q5_k_s, q3_k_m).
Status ParseQuantizeType(const std::string& name, QuantizeOptions* opts);

// A tensor written in another type than it had.
struct TypeChange {
  std::string tensor;
  GgmlType from, to;
  std::string why;  // "type", "mix", "override PATTERN", "fallback: rows do not fit T", "1-D tensors are f32"
};

struct QuantizeStats {
  int tensors = 0;
  int fallbacks = 0;
  uint64_t in_bytes = 0, out_bytes = 0;
  std::vector<TypeChange> changes;  // in file order
};

// The type every tensor of `in` gets under opts, in file order (what QuantizeModel writes), with the
// stats it would report (tensors, fallbacks, changes; in_bytes and out_bytes of the tensor data), without
// writing anything: a memory plan can size the output before it exists. Fails as QuantizeModel does.
Result<std::vector<GgmlType>> PlanQuantize(const gguf::File& in, const QuantizeOptions& opts, QuantizeStats* stats);

Status QuantizeModel(const std::string& in_path, const std::string& out_path, const QuantizeOptions& opts,
                     QuantizeStats* stats = nullptr);

}  // namespace edgedecode::tooling
