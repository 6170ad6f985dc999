// GGUF scan. A transformer block is: rms_norm -> q/k/v matmuls -> rope -> attention (GQA when
// n_head_kv < n_head) with softmax -> output matmul -> rms_norm -> gate/up matmuls -> swiglu -> down
// matmul. Every op the profile lacks runs on the CPU; each accelerator<->CPU switch copies the
// activation row (n_embd or n_ff floats) for the token.
#include "scan/gguf_scan.h"

#include <fstream>
#include <set>

#include "edgedecode/ggml_types.h"
#include "gguf/gguf.h"

namespace edgedecode::scan {

bool LooksLikeGguf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char m[4] = {};
  return in.read(m, 4) && std::string(m, 4) == "GGUF";
}

Result<ScanReport> ScanGguf(const std::string& path, const Profile& p) {
  auto f = gguf::File::Open(path);
  if (!f.ok()) return f.status();
  const gguf::File& file = *f.value();
  std::string arch = file.GetStringOr("general.architecture", "llama");
  int64_t n_embd = file.GetIntOr(arch + ".embedding_length", 0);
  int64_t n_ff = file.GetIntOr(arch + ".feed_forward_length", 0);
  int64_t n_head = file.GetIntOr(arch + ".attention.head_count", 0);
  int64_t n_kv = file.GetIntOr(arch + ".attention.head_count_kv", n_head);
  int64_t n_layer = file.GetIntOr(arch + ".block_count", 0);
  // These come from the file unchecked: the per-layer nodes below are bounded by the tensors actually present
  // (a block has at least one), and the row widths by 2^32, before anything is sized or multiplied by them.
  if (n_layer < 0 || static_cast<uint64_t>(n_layer) > file.tensors().size())
    return Corrupt(path + ": " + arch + ".block_count " + std::to_string(n_layer) + " does not fit the file's " +
                   std::to_string(file.tensors().size()) + " tensors");
  for (int64_t* v : {&n_embd, &n_ff, &n_head, &n_kv})
    if (*v < 0 || *v > (int64_t{1} << 32)) *v = 0;  // unknown
  std::set<std::string> types, ops;
  if (p.llm.is_object()) {
    for (const auto& t : p.llm.value("matmul_types", nlohmann::json::array())) types.insert(t.get<std::string>());
    for (const auto& o : p.llm.value("ops", nlohmann::json::array())) ops.insert(o.get<std::string>());
  }
  bool cpu_profile = p.accelerator == "CPU";
  ScanReport r;
  r.model = path; r.target = p.name; r.accelerator = p.accelerator; r.bandwidth = p.bandwidth;
  r.memory_bytes = p.memory_bytes;
  r.per = "token";
  auto add = [&](const std::string& name, const std::string& op, const std::string& type, const std::string& graph) {
    NodeResult n;
    n.name = name; n.op_type = op; n.domain = "gguf:" + arch; n.graph = graph;
    n.out_desc.push_back(type);
    bool op_ok = cpu_profile || ops.count(op) || (op == "gqa" && ops.count("attention"));
    if (!op_ok) { n.placement = Placement::kCpu; n.reason = FallbackReason::kOpNotSupported; n.detail = op + " is not in the profile's llm.ops"; }
    else if ((op == "matmul" || op == "embedding") && !cpu_profile && !types.count(type)) {
      n.placement = Placement::kCpu; n.reason = FallbackReason::kDtypeNotSupported; n.detail = "weight type " + type + " not in llm.matmul_types";
    } else n.placement = Placement::kAccel;
    r.nodes.push_back(n);
  };
  for (const auto& t : file.tensors()) {
    r.weight_bytes += static_cast<int64_t>(t.nbytes);
    std::string type = TypeName(t.type);
    std::string graph;
    if (t.name.rfind("blk.", 0) == 0) graph = t.name.substr(0, t.name.find('.', 4));
    std::string op;
    if (t.name.find("token_embd") != std::string::npos) op = "embedding";
    else if (t.name.find("norm") != std::string::npos) op = "rms_norm";
    else if (t.dims.size() >= 2) op = "matmul";
    else continue;
    add(t.name, op, type, graph);
  }
  for (int64_t l = 0; l < n_layer; ++l) {
    std::string g = "blk." + std::to_string(l);
    add(g + ".rope", "rope", "f32", g);
    add(g + ".attention", n_kv && n_kv < n_head ? "gqa" : "attention", "f32", g);
    add(g + ".softmax", "softmax", "f32", g);
    add(g + ".swiglu", "swiglu", "f32", g);
  }
  // Transitions: in file order within a layer, each switch between CPU and accelerator copies one
  // activation row per token (n_ff for the FFN down input, n_embd otherwise), float32.
  Placement prev = Placement::kAccel;
  bool first = true;
  for (const auto& n : r.nodes) {
    if (n.placement == Placement::kAccel) ++r.n_accel; else ++r.n_cpu;
    if (!first && n.placement != prev && !cpu_profile) {
      int64_t row = (n.name.find("ffn_down") != std::string::npos ? n_ff : n_embd) * 4;
      r.transitions.push_back({n.name, prev == Placement::kAccel ? p.accelerator : "CPU",
                               n.placement == Placement::kAccel ? p.accelerator : "CPU", row});
      r.bytes += row;
    }
    prev = n.placement;
    first = false;
  }
  r.partitions = r.n_accel ? 1 : 0;
  r.seconds = r.bytes / p.bandwidth + p.transition_latency * static_cast<double>(r.transitions.size());
  bool too_big = p.memory_bytes && r.weight_bytes > p.memory_bytes;
  r.verdict = r.n_cpu == 0 && !too_big ? "GOOD" : (r.n_accel == 0 || too_big || r.seconds >= 0.005) ? "BAD" : "MAYBE";
  std::set<std::string> bad_types;
  for (const auto& n : r.nodes) if (n.reason == FallbackReason::kDtypeNotSupported) bad_types.insert(n.out_desc[0]);
  for (const auto& t : bad_types)
    r.suggestions.push_back("weights of type " + t + " fall back: requantize them to a type the device's matmul takes (`edgedecode quantize`), e.g. " +
                            (types.empty() ? std::string("q8_0") : *types.begin()));
  if (too_big) r.suggestions.push_back("the weights do not fit in the device memory: use a smaller model or a lower-bit type");
  r.warnings.push_back("GGUF: transition bytes are per generated token (one float32 activation row per switch)");
  return r;
}

}  // namespace edgedecode::scan
