// A profile's constraint object (docs/profiles.md, "Constraint object"), parsed and type-checked once when
// the profile loads, so checking a node never meets a wrong-typed field. Each member is set only where the
// JSON object has the key: merging an op's entry over `defaults` replaces key by key.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgedecode/status.h"

namespace edgedecode::scan {

struct IntRange {
  int64_t lo = 0, hi = 0;  // inclusive
};

// input_values: key = an input index ("1") or an attribute name ("min"); allowed numbers, nullopt = absent.
using ValueRule = std::map<std::string, std::vector<std::optional<double>>>;

struct Constraint;

// cases: when every attribute in `when` has one of its values (ONNX default when absent), `then` applies too.
struct Case {
  std::map<std::string, std::vector<nlohmann::json>> when;
  std::shared_ptr<const Constraint> then;
};

struct Constraint {
  std::optional<std::vector<std::string>> dtypes;
  std::optional<int64_t> min_rank, max_rank, max_dim, max_batch, batch_axis, max_spatial_size;
  std::optional<std::map<std::string, IntRange>> dim_limits;  // "batch", "channel", "height", "width"
  std::optional<bool> static_shapes, not_supported, equal_spatial_scales;
  std::optional<std::map<std::string, std::vector<nlohmann::json>>> attrs;
  std::optional<std::map<std::string, IntRange>> attr_range;
  std::optional<std::vector<int64_t>> const_inputs;
  std::optional<std::vector<ValueRule>> input_values;  // alternatives: one must hold
  std::optional<std::vector<double>> scale_values;
  std::optional<std::pair<double, double>> scale_range;
  std::optional<std::vector<std::string>> broadcast;  // "layer", "channel", "element", "other"
  std::optional<std::vector<int64_t>> pad_axes;  // axes Pad may pad (negative: from the end); others must be 0
  std::optional<std::vector<Case>> cases;
  std::optional<std::string> notes;

  // `over`'s keys replace this one's; a `dim_limits` in `over` (the vendor's per-axis limits for the op)
  // also drops a `max_dim` inherited here (the blanket estimate) unless `over` sets its own.
  void MergeFrom(const Constraint& over);
};

// Parses a constraint object; `where` names it in errors ("rk3588.json: ops.ai.onnx.Conv"). Errors name the
// key and the type expected; unknown keys are refused (a misspelt limit must not be silently ignored).
Result<Constraint> ParseConstraint(const nlohmann::json& j, const std::string& where, bool allow_cases = true);

// Names a JSON value's type for messages: "string", "number", "array", ...
std::string JsonTypeName(const nlohmann::json& j);

}  // namespace edgedecode::scan
