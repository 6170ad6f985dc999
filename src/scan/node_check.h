// One node against a profile: the op's constraint object merged over `defaults`, checked in the order
// docs/profiles.md ("Fallback reasons") gives; the first check that fails gives the reason.
#pragma once

#include <optional>
#include <string>

#include "scan/onnx_model.h"
#include "scan/scanner.h"

namespace edgedecode::scan {

struct NodeCheck {
  std::optional<FallbackReason> reason;  // empty: the accelerator runs it
  std::string detail;
};

NodeCheck CheckNode(const OnnxModel& m, const Node& n, const Profile& p, const ScanOptions& o);

// Whether attribute `name` of `n` cannot change the node's result given its other attributes and the known
// shapes (count_include_pad without padding, ...; docs/profiles.md "Attributes without effect").
bool AttributeHasNoEffect(const OnnxModel& m, const Node& n, const std::string& name);

}  // namespace edgedecode::scan
