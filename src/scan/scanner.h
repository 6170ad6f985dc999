// Device profiles (targets/*.json, documented in docs/profiles.md) and the placement scan: for every
// node, accelerator or CPU and why; partitions, transitions and the bytes they copy per inference.
//
// Ownership: a Profile holds its parsed JSON; a ScanReport copies what it needs and does not point
// into the model. Both are plain values; not thread-safe to mutate concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgedecode/status.h"
#include "scan/constraint.h"
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
  // `defaults` and `ops` parsed and type-checked (constraint.h): what the scan checks nodes against.
  Constraint default_constraint;
  std::map<std::string, std::map<std::string, Constraint>> op_constraints;  // domain -> op type -> constraint

  // A profile file (the CLI resolves --target NAME to its file: cli/common.h ResolveTarget). Errors (kCorrupt,
  // kNotFound) name the file and, for a wrong field, its key and the type expected.
  static Result<Profile> Load(const std::string& path);
  static Result<Profile> FromJson(const nlohmann::json& j, const std::string& where);
};

enum class Placement { kAccel, kCpu, kFolded };

// Why a node is not on the accelerator: the `reason` column of the text, JSON and CSV reports. Each value
// has one code string and one line of text in the table in scanner.cc; the codes are a documented contract
// (docs/profiles.md, "Fallback reasons") that scripts match on, so a code is never renamed, only added.
// kConstant is not a fallback: it is the reason of every Placement::kFolded node. New values go at the end.
enum class FallbackReason {
  kOpNotSupported,
  kCustomDomain,
  kUnknownOp,
  kDtypeNotSupported,
  kDynamicShape,
  kRankLimit,
  kDimLimit,
  kBatchLimit,
  kAttributeNotSupported,
  kNonConstantInput,
  kConstant,
  kInputValueNotSupported,
  kScaleNotSupported,
  kBroadcastNotSupported,
};

const char* FallbackReasonCode(FallbackReason r);  // "op_not_supported", as printed in the reports
const char* FallbackReasonText(FallbackReason r);  // one line: what it means
std::span<const FallbackReason> AllFallbackReasons();  // every value, in declaration order

struct NodeResult {
  std::string name, op_type, domain, graph;  // graph: "" main, else subgraph path
  int64_t opset = 0;
  Placement placement = Placement::kCpu;
  std::optional<FallbackReason> reason;  // empty on the accelerator
  std::string detail;   // human text: "mode=linear not in [nearest]"
  std::vector<std::string> in_desc, out_desc;  // "name float32[1,3,320,320]"
  std::string ReasonCode() const { return reason ? FallbackReasonCode(*reason) : ""; }
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
