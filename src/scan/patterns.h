// Normalisation / activation subgraphs found by structure, for scan's suggestions: decomposed LayerNorm
// (ReduceMean-Sub-Pow-ReduceMean-Add-Sqrt-Div, optionally -Mul-Add) and decomposed exact GELU
// (x/sqrt2 -> Erf -> +1 -> *x -> *0.5, in PyTorch's and TensorFlow's orders), and the fused LayerNormalization
// and Gelu nodes, so a suggestion can say "fuse" where the device has the fused op and "decompose" where not.
//
// Ownership: patterns hold node names only (no pointers into the model); plain values.
#pragma once

#include <string>
#include <vector>

#include "scan/onnx_model.h"

namespace edgedecode::scan {

struct OpPattern {
  std::string kind;                // "layernorm" or "gelu"
  bool fused = false;              // a LayerNormalization / Gelu node, not its decomposition
  std::vector<std::string> nodes;  // names of the nodes it spans (first: its input side), Constants excluded
  std::vector<std::string> ops;    // their op types, in the same order
};

std::vector<OpPattern> FindOpPatterns(const OnnxModel& m);

}  // namespace edgedecode::scan
