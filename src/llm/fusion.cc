#include "llm/fusion.h"

#include <cstdlib>

namespace edgedecode::llm {
namespace {

constexpr FusionInfo kInfo[] = {
    {"norm_quant", true, "RMSNorm folded into the activation quantization of the next matmul"},
    {"qkv", true, "Q/K/V matmuls over one quantized input in one parallel region"},
    {"gate_up_silu", true, "gate/up matmuls with silu(gate)*up in the same parallel region"},
    {"rope_kv", true, "bias, RoPE and key rotation applied per token while writing K/V to the cache"},
    {"attn_online", false, "attention with online softmax over the KV cache (no score row)"},
    {"residual", true, "the residual add of wo and down by each thread on its own output rows"},
    {"attn_tiles", true, "attention of up to 8 consecutive rows of a sequence per work item: each chunk of the KV cache read once for them"},
};
static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == static_cast<size_t>(Fusion::kCount));

}  // namespace

const FusionInfo& Info(Fusion f) { return kInfo[static_cast<int>(f)]; }

std::string FusionNames() {
  std::string s;
  for (const FusionInfo& i : kInfo) {
    if (!s.empty()) s += ", ";
    s += i.name;
  }
  return s;
}

Status FusionSet::DisableList(std::string_view list, const char* what) {
  size_t i = 0;
  while (i <= list.size()) {
    size_t j = list.find(',', i);
    if (j == std::string_view::npos) j = list.size();
    std::string_view name = list.substr(i, j - i);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name == "all") {
      for (int f = 0; f < static_cast<int>(Fusion::kCount); ++f) Disable(static_cast<Fusion>(f));
    } else if (!name.empty()) {
      bool found = false;
      for (int f = 0; f < static_cast<int>(Fusion::kCount); ++f) {
        if (name == kInfo[f].name) {
          Disable(static_cast<Fusion>(f));
          found = true;
        }
      }
      if (!found)
        return InvalidArgument(std::string(what) + ": unknown fusion '" + std::string(name) + "' (valid: " + FusionNames() +
                               ", all)");
    }
    i = j + 1;
  }
  return Status::Ok();
}

std::string FusionSet::OffList() const {
  std::string s;
  for (int f = 0; f < static_cast<int>(Fusion::kCount); ++f) {
    if (on(static_cast<Fusion>(f))) continue;
    if (!s.empty()) s += ",";
    s += kInfo[f].name;
  }
  return s;
}

Result<FusionSet> ResolveFusions(const std::string& no_fuse_arg) {
  FusionSet set;
  if (const char* env = std::getenv("EDGEDECODE_NO_FUSE")) ED_RETURN_IF_ERROR(set.DisableList(env, "EDGEDECODE_NO_FUSE"));
  ED_RETURN_IF_ERROR(set.DisableList(no_fuse_arg, "--no-fuse"));
  return set;
}

}  // namespace edgedecode::llm
