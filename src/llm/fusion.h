// The fusions of the forward pass, each of which can be switched off (`--no-fuse NAME[,NAME]` or the
// environment variable EDGEDECODE_NO_FUSE) to measure its gain A/B. Every unfused path computes the
// same function; see kFusionInfo for which are bit-identical and which differ in rounding only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "edgedecode/status.h"

namespace edgedecode::llm {

enum class Fusion : int {
  kNormQuant,   // RMSNorm and the activation quantization of the next matmul, row by row, one parallel region
  kQkv,         // Q, K and V matmuls over one quantization of the input, in one parallel region
  kGateUpSilu,  // gate and up matmuls and silu(gate) * up in one parallel region (each thread its rows)
  kRopeKv,      // bias, RoPE, key rotation and the KV cache write done per token while the row is in L1
  kAttnOnline,  // attention with online softmax over the KV cache (no score row per query)
  kResidual,    // the residual add of wo and down done by each thread on the rows it computed
  kAttnTiles,   // attention of up to kAttnTileRows consecutive rows of a sequence per work item (one KV read)
  kCount
};

struct FusionInfo {
  const char* name;
  bool bit_identical;   // unfused output equals fused output bit for bit
  const char* summary;  // for --help and errors
};
const FusionInfo& Info(Fusion f);

// Which fusions are on (all by default).
class FusionSet {
 public:
  bool on(Fusion f) const { return (off_ & Bit(f)) == 0; }
  void Disable(Fusion f) { off_ |= Bit(f); }
  bool all_on() const { return off_ == 0; }
  // "qkv,gate_up_silu" (or "all", or ""); an unknown name is an InvalidArgument error that lists
  // the valid ones. `what` names the source in the message ("--no-fuse" or "EDGEDECODE_NO_FUSE").
  Status DisableList(std::string_view list, const char* what);
  // The names switched off, comma-separated ("" when none).
  std::string OffList() const;

 private:
  static uint32_t Bit(Fusion f) { return 1u << static_cast<int>(f); }
  uint32_t off_ = 0;
};

// The set for a command: EDGEDECODE_NO_FUSE (when set) and then the --no-fuse argument.
Result<FusionSet> ResolveFusions(const std::string& no_fuse_arg);
// "norm_quant, qkv, ..." for help texts.
std::string FusionNames();

}  // namespace edgedecode::llm
