// `edgedecode rewrite`: graph rewrites that move CPU fallbacks of a device profile onto its accelerator,
// each checked numerically against the original model by ONNX Runtime before it is kept.
//
//   fix-input-shape          --input-shape dims written into the graph inputs; shapes re-inferred
//   static-shapes            computed constants (Shape/Slice/Concat/... of static tensors) folded into
//                            initializers, values read from ONNX Runtime, so every shape becomes static
//   resize-to-convtranspose  Resize linear, integer scale s -> (edge padding +) depthwise ConvTranspose,
//                            stride s, fixed bilinear kernel
//   resize-to-nearest-conv   Resize linear, integer scale s -> (edge padding +) Resize nearest + depthwise
//                            box Conv + crop, for profiles without a usable ConvTranspose
//   resize-nearest-to-convtranspose  Resize nearest, integer scale s -> depthwise ConvTranspose with a box
//                            of ones (bit-exact), for profiles without nearest Resize
//
// Ownership: RewriteModel reads the input file, writes only the output file (atomically, via a temporary
// file beside it) and its own temporary directory; the report is a plain value. Not reentrant with the same
// output path; otherwise independent calls may run concurrently.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgedecode/status.h"
#include "scan/onnx_model.h"
#include "scan/ort_oracle.h"
#include "scan/scanner.h"

namespace edgedecode::scan {

struct RewriteInfo {
  const char* name;
  const char* summary;
};
// The rewrites, in the order they are tried.
const std::vector<RewriteInfo>& Rewrites();

struct RewriteOptions {
  InputShapes input_shapes;        // --input-shape: always applies fix-input-shape
  std::vector<std::string> only;   // empty: every rewrite that moves a fallback onto the accelerator;
                                   // else these, also where the node already runs there
  bool dry_run = false;            // verify everything, write nothing
  double tolerance = 1e-4;         // max abs diff allowed on every output
  OracleOptions oracle;
  std::string break_rewrite;       // tests only: this rewrite builds a wrong kernel (must fail verification)
};

struct RewriteStep {
  std::string rewrite;  // name from Rewrites()
  std::string node;     // node concerned, "" for model-wide rewrites
  std::string status;   // "applied", "failed" (did not verify; not written), "refused" (not applicable),
                        // "skipped" (would not help on this target, or nothing to change)
  std::string what;     // the change
  std::string reason;   // for failed / refused / skipped
  bool verified = false;          // an ONNX Runtime comparison ran
  OracleComparison check;         // the model outputs, then (local) the tensors the rewrite recomputes
  double noise = -1;              // when a check fails: how much ORT's own graph optimizations change the
                                  // original's outputs on the same inputs (-1: not measured)
  std::string CheckText() const;  // "outputs: max abs diff ...; rewritten tensors: ..."
};

struct RewriteReport {
  std::string input, output, target;
  std::vector<RewriteStep> steps;
  ScanReport before, after;  // `after` is the model as written (or as it would be, with dry_run)
  bool written = false;
  double tolerance = 1e-4;
  int Count(const std::string& status) const;
  // Failed steps for which no other rewrite of the same node was applied (what exit code 1 reports).
  int Unresolved() const;
  std::string ToText() const;
  nlohmann::json ToJson() const;
};

// `oracle` is OrtOracle::Find()'s result; it is looked at only once the input model has loaded, so a bad
// model is reported as such even where ONNX Runtime is missing.
// Errors: kInvalidArgument (options: -o equal to the input, unknown --only name, bad --input-shape),
// kNotFound / kIoError / kCorrupt / kUnsupported (the input model, named), kInternal (the ONNX Runtime
// oracle is missing, misbehaved, or cannot run the original model). Rewrites that do not verify are
// steps of the report, not errors.
Result<RewriteReport> RewriteModel(const std::string& input, const std::string& output, const Profile& profile,
                                   const RewriteOptions& opts, const Result<OrtOracle>& oracle);

}  // namespace edgedecode::scan
