// Graph editing for `edgedecode rewrite` (internal): fresh names, tensors, node replacement and removal of
// what a replacement left unused, and the Resize -> (ConvTranspose | nearest + Conv) constructions with their
// bilinear kernels.
//
// Ownership: every function edits the onnx::ModelProto / GraphProto it is handed and keeps no pointer into
// it. Not thread-safe on the same proto (nothing here is shared otherwise).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "edgedecode/status.h"
#include "scan/onnx_model.h"

namespace onnx {
class AttributeProto;
class TensorProto;
}  // namespace onnx

namespace edgedecode::scan::rw {

// Unique value / node names: every name the model already uses is taken.
class NameGen {
 public:
  explicit NameGen(const onnx::GraphProto& g);
  std::string Make(const std::string& base);

 private:
  std::set<std::string> used_;
};

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v);
onnx::TensorProto Int64Tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v);
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name);
int64_t Opset(const onnx::ModelProto& m, const std::string& domain = "");

// Every value name read by a node of g or of its subgraphs (outer-scope reads), plus g's outputs.
std::set<std::string> UsedNames(const onnx::GraphProto& g);
// Removes the main-graph nodes at `positions`, then, repeatedly, nodes none of whose outputs is used any more
// and initializers nothing reads (graph inputs stay). Returns how many nodes were removed in all.
int RemoveNodes(onnx::GraphProto* g, std::set<int> positions);
// Drops value_info entries of names that no node, input or initializer defines any more.
void PruneValueInfo(onnx::GraphProto* g);
// Position in g.node() of the node whose first output is `output`, -1 if none.
int NodePosition(const onnx::GraphProto& g, const std::string& output);

// Bilinear (Resize mode=linear) by an integer factor s along one axis, as a fixed 1-D kernel.
//   transpose=true : for ConvTranspose(stride s) over the input edge-padded by edge_begin/edge_end rows;
//                    pad_begin/pad_end are the ConvTranspose pads (they crop its output to s*W).
//   transpose=false: for Conv(stride 1, no pads) over Resize-nearest(s) of the edge-padded input; the
//                    result is then cropped to [crop_begin, crop_begin + s*W).
// half_pixel covers half_pixel and pytorch_half_pixel (equal when the output is longer than 1); otherwise
// asymmetric. Edge padding replicates the border, which is what Resize's clamped sample positions do.
struct Kernel1D {
  std::vector<float> w;
  int64_t edge_begin = 0, edge_end = 0;
  int64_t pad_begin = 0, pad_end = 0;  // ConvTranspose pads (transpose=true)
  int64_t crop_begin = 0;              // Conv crop start (transpose=false)
};
Kernel1D BilinearKernel(int64_t s, bool half_pixel, bool transpose);

// A Resize that one of the rewrites can replace: NCHW float32, mode=linear (or nearest in a mode that picks
// x[floor(o/s)]), integer scales on H and W.
struct ResizePlan {
  std::string node, x, y;            // node name, input and output values
  int position = -1;                 // in the main graph
  int32_t elem_type = 0;
  int64_t n = 0, c = 0, h = 0, w = 0, sh = 1, sw = 1;
  bool half_pixel = true;            // linear: half_pixel / pytorch_half_pixel (else asymmetric)
  bool nearest = false;              // mode=nearest
  std::string mode_text;             // coordinate_transformation_mode (and nearest_mode)
};
// kUnsupported (with the reason) when the node cannot be rewritten.
Result<ResizePlan> PlanResize(const OnnxModel& m, const Node& n);

enum class EdgeMethod { kPadEdge, kSliceConcat };
struct Replacement {
  std::vector<std::string> nodes;  // names of the new nodes
  std::string what;                // one line: what replaced what
};
// Replace the Resize in `model` (which must be the model PlanResize looked at). `break_kernel` (tests only)
// perturbs one weight so that verification must fail.
Replacement ResizeToConvTranspose(onnx::ModelProto* model, const ResizePlan& p, EdgeMethod edge, bool break_kernel);
Replacement ResizeToNearestConv(onnx::ModelProto* model, const ResizePlan& p, EdgeMethod edge, bool break_kernel);
// Resize nearest (p.nearest) -> depthwise ConvTranspose with a box of ones: bit-exact.
Replacement NearestToConvTranspose(onnx::ModelProto* model, const ResizePlan& p, bool break_kernel);

}  // namespace edgedecode::scan::rw
