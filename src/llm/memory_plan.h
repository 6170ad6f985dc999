// The memory budget of running a model: one function computes every buffer the runtime allocates, and
// the Context allocates exactly what it says, so `plan` cannot drift from what `run` really uses.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "llm/model.h"

namespace edgedecode::llm {

// Float counts of the Context's scratch buffers for batches of up to n_batch tokens.
struct ScratchSizes {
  size_t x = 0, xb = 0, q = 0, k = 0, v = 0, att = 0, gate = 0, up = 0, tmp = 0, logits = 0, rope = 0;
  size_t bcx = 0;  // lfm2: the short-convolution layers' in_proj output (n_batch, 3 x dim); 0 without them
  // The kernels' prepared activations (kernels::Activations) at their largest: float copy + int8 +
  // per-block scales (+ a 16-bit copy with f16 / bf16 matrices; + the q4_0 block sums and the
  // 8-column interleaved copy with q4_0 matrices), for the widest input (max of dim,
  // q_dim, ffn_dim) over n_batch rows.
  size_t activation_bytes = 0;
  size_t bytes() const {
    return (x + xb + q + k + v + att + gate + up + tmp + logits + rope + bcx) * sizeof(float) + activation_bytes;
  }
};
// half_matrices: some layer or output matrix is f16 or bf16 (HasHalfMatrices); q4_0_matrices: some is
// q4_0 (HasQ4_0Matrices).
ScratchSizes ComputeScratch(const ModelConfig& c, int n_ctx, int n_batch, bool half_matrices,
                            bool q4_0_matrices);
bool HasHalfMatrices(const Model& model);
bool HasQ4_0Matrices(const Model& model);

struct MemoryItem {
  std::string component;  // "weights (q4_0)", "KV cache", ...
  uint64_t bytes = 0;
  std::string detail;     // how it was computed
};

struct MemoryPlan {
  std::vector<MemoryItem> items;
  uint64_t total = 0;
};

struct PlanParams {
  int n_ctx = 2048;
  int n_batch = 512;
  int n_seqs = 1;
  GgmlType type_k = GgmlType::kF16;
  GgmlType type_v = GgmlType::kF16;
  int n_threads = 1;
};

// Fixed cost of the process itself (binary, libc/libstdc++, thread stacks touched, allocator), measured
// on this runtime with a tiny model; the plan adds it so that it compares with the process's peak RSS.
constexpr uint64_t kRuntimeOverheadBytes = 6ull << 20;

MemoryPlan PlanMemory(const Model& model, const PlanParams& p);
// The plan of `model` with its matrices re-encoded at load (`run --draft-quant`): the weights line is
// file_bytes (the re-encoded file's size) described by `how`, the scratch sized for the new matrix kinds.
MemoryPlan PlanMemoryRequantized(const Model& model, const PlanParams& p, uint64_t file_bytes, const std::string& how,
                                 bool half_matrices, bool q4_0_matrices);
// Appends a speculative draft model's plan to the target's, its lines named "draft ..." (the process
// overhead is counted once, by the target's plan), and adds them to the total.
void AddDraftPlan(const MemoryPlan& draft, MemoryPlan* plan);

// Bytes a decode step reads at `depth`: every weight matrix once (the token embedding one row, unless it
// doubles as the output matrix) and the KV cache (types kv) up to depth -- the roofline's byte count.
double DecodeStepBytes(const Model& m, int depth, GgmlType kv);

// Memory the device gives the process: MemAvailable, capped by the cgroup (v2 memory.max or v1
// limit_in_bytes) minus its current usage, and by EDGEDECODE_AVAILABLE_MEMORY (bytes) when set. 0 when unknown.
// InvalidArgument when EDGEDECODE_AVAILABLE_MEMORY is set but not a plain number of bytes in [1, kMaxMemoryBytes].
Result<uint64_t> AvailableMemoryBytes();
// The largest device memory a plan takes (64 PiB): beyond it a size is a typo or a negative number wrapped.
constexpr uint64_t kMaxMemoryBytes = uint64_t{1} << 56;
// Peak resident set of this process so far (VmHWM), bytes; 0 when unknown.
uint64_t PeakRssBytes();

std::string FormatBytes(uint64_t b);

}  // namespace edgedecode::llm
