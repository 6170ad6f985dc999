// Checks a parsed ONNX model before anything trusts it: libonnx's shape inference divides by strides and
// block sizes and multiplies dims without checking, so hostile attribute values and shapes are refused
// here first; tensors must hold the data their dims and type declare; external data must stay inside
// the model's folder; nodes are put in dependency order without recursion (ONNX requires topological
// order, and every later pass walks the list once).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edgedecode/status.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace edgedecode::scan {

// Every attribute of an ai.onnx node in every graph: strides, kernel_shape, dilations, group and blocksize
// in [1, 2^31-1], pads / output_padding / output_shape within +-(2^31-1). kCorrupt names the node.
Status CheckAttributes(const onnx::ModelProto& model, const std::string& path);

// Every initializer and Constant tensor: a data type, non-negative dims whose byte size fits in int64,
// and data (raw, typed or external) of the size the dims declare; every declared value shape's size
// fits in int64. External data: a relative location inside `path`'s folder (no "..", absolute paths or
// symlinks leading out), offset and length non-negative integers, the file long enough.
Status CheckTensors(const onnx::ModelProto& model, const std::string& path);

// Puts the nodes of every graph in dependency order (a stable Kahn sort with an explicit queue) when the
// file lists a consumer before its producer; sets *reordered. kCorrupt on a cycle, naming a node in it.
Status SortNodesTopologically(onnx::ModelProto* model, const std::string& path, bool* reordered);

// libonnx 1.12's data propagation for Shape (opset 15 and later) reads its input's type without checking
// that there is one, and crashes on a Shape that reads a value of unknown type: a custom operator's
// output, a graph input declared without a type, a name nothing defines. AddTypePlaceholders gives each
// such value an empty type ("unknown") in the graph of the Shape that reads it, for the inference pass
// with data propagation, and returns their names; RemoveTypePlaceholders takes out those still empty
// after it (one the pass filled in stays), so that nothing of them reaches a rewritten model.
bool ContainsShapeOp(const onnx::ModelProto& model);
std::vector<std::string> AddTypePlaceholders(onnx::ModelProto* model);
void RemoveTypePlaceholders(onnx::ModelProto* model, const std::vector<std::string>& names);

// n * m, a + b without overflow; nullopt when the result does not fit in int64.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b);

// The values of a small constant tensor as doubles (at most `max_elements`), nullopt when the data is
// external, of a type without numeric values, or larger.
std::optional<std::vector<double>> TensorValues(const onnx::TensorProto& t, int64_t max_elements);

}  // namespace edgedecode::scan
