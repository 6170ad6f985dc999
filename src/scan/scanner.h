// Device profiles (targets/*.json, documented in docs/profiles.md) and the placement scan: for every
// node, accelerator or CPU and why; partitions, transitions and the bytes they copy per inference.
//
// Ownership: a Profile holds its parsed JSON; a ScanReport copies what it needs and does not point
// into the model. Both are plain values; not thread-safe to mutate concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgedecode/status.h"
#include "scan/onnx_model.h"

namespace edgedecode::scan {

struct Profile {
  std::string name;
  std::string accelerator = "NPU";
  std::string source;           // "document, version" of the first source
  bool estimate = false;
  int64_t memory_bytes = 0;
  double bandwidth = 1e9;       // bytes/s
  double transition_latency = 0;// s per boundary
  nlohmann::json defaults = nlohmann::json::object();
  nlohmann::json ops = nlohmann::json::object();
  nlohmann::json llm;           // may be null
  nlohmann::json raw;

  // A profile file (the CLI resolves --target NAME to its file: cli/common.h ResolveTarget).
  static Result<Profile> Load(const std::string& path);
  static Result<Profile> FromJson(const nlohmann::json& j, const std::string& where);
};

enum class Placement { kAccel, kCpu, kFolded };

struct NodeResult {
  std::string name, op_type, domain, graph;  // graph: "" main, else subgraph path
  int64_t opset = 0;
  Placement placement = Placement::kCpu;
  std::string reason;   // "" on the accelerator; op_not_supported, attribute_not_supported, ...
  std::string detail;   // human text: "mode=linear not in [nearest]"
  std::vector<std::string> in_desc, out_desc;  // "name float32[1,3,320,320]"
};

struct Transition {
  std::string tensor, from, to;  // from/to: accelerator label or "CPU"
  int64_t bytes = -1;            // -1: size unknown (dynamic)
};

struct ScanOptions {
  bool quantized = false;  // assume float tensors become int8 at conversion
};

struct ScanReport {
  std::string model, target, accelerator;
  std::vector<NodeResult> nodes;
  int n_accel = 0, n_cpu = 0, n_folded = 0, partitions = 0;
  std::vector<Transition> transitions;
  int64_t bytes = 0;            // sum of known transition bytes
  int unknown_transitions = 0;  // transitions of unknown size
  double seconds = 0;           // bytes / bandwidth + latency * transitions
  double bandwidth = 0;
  int64_t weight_bytes = 0, memory_bytes = 0;
  std::vector<std::string> dynamic_inputs;  // "name [N,3,?,?]"
  std::vector<std::string> suggestions;
  std::vector<std::string> warnings;
  std::string verdict;          // GOOD / OK / MAYBE / BAD
  std::string per = "inference";// unit of bytes/seconds: "inference" (ONNX) or "token" (GGUF)
  std::string SummaryLine() const;
  nlohmann::json ToJson() const;
  std::string ToCsv() const;
  std::string ToText(bool all_nodes) const;
};

ScanReport Scan(const OnnxModel& model, const Profile& profile, const ScanOptions& opts = {});

const char* PlacementName(Placement p);

}  // namespace edgedecode::scan
