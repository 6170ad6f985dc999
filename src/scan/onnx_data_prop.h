// Guards around libonnx 1.12's data propagation (the inference pass that carries shape values through
// Shape, Gather, Concat, Add... into Reshape and Expand) for inputs it reads unchecked.
//
// Its propagator for Add, Sub and Mul broadcasts the two inputs' values and reads element 0 of an input
// with one element and element i of the other, so an input whose value has no elements against one with
// one element reads past the end and crashes. Valid models do this: Add of an empty int64 constant and a
// one-element one (the result is empty), or Sub of an empty Shape slice. DetachPossiblyEmptyMathInputs
// finds every Add/Sub/Mul whose inputs both may carry a value and one may carry an empty one, and feeds
// that input under a fresh name that has the same type but no value, so that libonnx skips the node's
// propagation (types and shapes are inferred as before; only this node's shape value is lost).
// RestoreDetachedInputs puts the names back after the pass.
//
// Which values may be empty is decided without running libonnx, from the producers: an integer constant
// of rank <= 1 has a value of its own size; Shape's has the size of its output's inferred shape; Size's
// and Gather's are never empty; Cast, Squeeze and Unsqueeze copy their input's; Concat's is empty only
// if all its inputs' may be; Slice's may be empty; every other operator carries none. Not thread-safe;
// the model is modified in place.
#pragma once

#include <string>
#include <unordered_map>

#include "onnx/onnx_pb.h"

namespace edgedecode::scan {

// Fresh name -> the name it stands for.
using DetachedInputs = std::unordered_map<std::string, std::string>;

// Whether some Add/Sub/Mul may meet an empty value, judged from the producers alone (Shape's value
// counted as possibly empty): the model needs an inference pass without data propagation first, so that
// DetachPossiblyEmptyMathInputs can copy types and read Shape output lengths.
bool MayFeedEmptyValueToMath(const onnx::ModelProto& model);

// After an inference pass without data propagation (types and shapes of the values are in value_info):
// detaches the inputs described above and returns them.
DetachedInputs DetachPossiblyEmptyMathInputs(onnx::ModelProto* model);

// Undoes DetachPossiblyEmptyMathInputs: every node input reads its own name again, and the fresh names'
// value_info entries are removed.
void RestoreDetachedInputs(onnx::ModelProto* model, const DetachedInputs& detached);

}  // namespace edgedecode::scan
