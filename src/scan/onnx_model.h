// An ONNX model loaded for scanning: the protobuf (libonnx's onnx_proto), shapes inferred by libonnx's
// shape inference (with data propagation, so Shape->Gather->Concat->Reshape chains resolve), and a flat
// view of every node of the main graph and of every subgraph (If/Loop/Scan bodies), with the type and
// shape of every value.
//
// Ownership: OnnxModel owns the ModelProto; Node::proto points into it. Immutable after Load/FromProto, so it may
// be read from many threads; Load itself is not reentrant-safe only in that libonnx's schema registry
// is initialised on first use (libonnx guards that).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "edgedecode/status.h"

namespace onnx {
class ModelProto;
class NodeProto;
class GraphProto;
class TensorProto;
class AttributeProto;
}  // namespace onnx

namespace edgedecode::scan {

// One dimension: value >= 0 when known; otherwise -1 and param holds the symbol ("" = no name at all).
struct Dim {
  int64_t value = -1;
  std::string param;
  bool known() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  int32_t elem_type = 0;      // onnx::TensorProto::DataType, 0 = unknown
  bool has_shape = false;     // rank known
  std::vector<Dim> dims;      // [rank] when has_shape
  bool is_const = false;      // initializer, Constant output, or output of a constant-folded node
  bool is_graph_input = false;// non-initializer input of the main graph
  int graph = -1;             // graph that defines it

  bool fully_known() const;   // rank and every dim known
  int64_t elements() const;   // -1 when not fully known
  int64_t bytes() const;      // -1 when unknown (size or dtype)
  std::string ShapeString() const;  // "[1,3,?,320]" / "[N,3]" / "?"
};

struct Node {
  int index = 0;               // position in OnnxModel::nodes()
  int graph = 0;               // index into graphs()
  std::string name;            // node name, or "<op>_<index>" when the file has none
  std::string op_type;
  std::string domain;          // "" for ai.onnx
  int64_t opset = 0;           // opset imported for the domain
  bool has_schema = false;     // libonnx 1.12 knows this op at this opset
  std::vector<std::string> inputs;   // "" = optional input left out
  std::vector<std::string> outputs;
  std::vector<int> subgraphs;  // graphs owned by this node (If branches, Loop/Scan bodies)
  const onnx::NodeProto* proto = nullptr;
};

struct Graph {
  std::string path;            // "" for the main graph, "node/attr" for a body
  int parent_node = -1;        // node that owns it (-1 for the main graph)
  std::vector<int> nodes;      // topological (file) order
  std::vector<std::string> inputs;   // non-initializer inputs
  std::vector<std::string> outputs;
};

// Fixes the size of named graph inputs: name -> dims (e.g. "input" -> {1,3,320,320}).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

class OnnxModel {
 public:
  // Reads, parses and validates the file, checks external-data files, fixes input shapes and runs
  // shape inference. Errors (kCorrupt / kNotFound / kIoError / kInvalidArgument for a bad
  // --input-shape) name the file and what is wrong.
  static Result<std::unique_ptr<OnnxModel>> Load(const std::string& path, const InputShapes& shapes = {});
  // The same from a parsed proto (e.g. a rewritten one); `path` names it in messages and locates its
  // external data.
  static Result<std::unique_ptr<OnnxModel>> FromProto(onnx::ModelProto proto, const std::string& path,
                                                      const InputShapes& shapes = {});
  ~OnnxModel();

  const std::string& path() const { return path_; }
  const onnx::ModelProto& proto() const { return *proto_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Graph>& graphs() const { return graphs_; }
  // Every value by name (names are unique across a model and its subgraphs in valid ONNX).
  const ValueInfo* Find(const std::string& name) const;
  int64_t opset(const std::string& domain) const;  // 0 when not imported
  int64_t ir_version() const;
  int64_t initializer_bytes() const { return initializer_bytes_; }
  // What the device stores as weights: initializers, Constant values, and ConstantOfShape outputs whose
  // shape is constant (converters materialise them). Saturates at INT64_MAX (see warnings()).
  int64_t weight_bytes() const { return weight_bytes_; }
  // Whether a value is read by some node (of any graph) or is an output of its graph: an output nobody
  // reads (Dropout's mask) cannot affect placement.
  bool IsUsed(const std::string& name) const { return used_.count(name) > 0; }
  // The values of a small constant (an initializer or a Constant's output) of at most `max_elements`
  // numbers; nullopt when the value is not such a constant.
  std::optional<std::vector<double>> ConstantValues(const std::string& name, int64_t max_elements = 64) const;
  // Non-fatal problems met while loading (shape inference errors, ...).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Mutable access for rewrites (the caller re-serialises it).
  onnx::ModelProto& mutable_proto() { return *proto_; }

 private:
  OnnxModel();
  Status Build();
  void CountWeights();
  void AddGraph(const onnx::GraphProto& g, const std::string& path, int parent_node);
  Status Validate() const;

  std::string path_;
  std::unique_ptr<onnx::ModelProto> proto_;
  std::vector<Node> nodes_;
  std::vector<Graph> graphs_;
  std::unordered_map<std::string, ValueInfo> values_;
  std::map<std::string, int64_t> opsets_;
  int64_t initializer_bytes_ = 0;
  int64_t weight_bytes_ = 0;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, const onnx::TensorProto*> const_tensors_;
  std::unordered_map<std::string, const onnx::AttributeProto*> const_attrs_;  // value_float(s) / value_int(s)
  std::vector<std::string> warnings_;
};

// Element size in bytes of an ONNX data type (0 for unknown / strings); 4-bit types count as 1.
int ElemSize(int32_t elem_type);
// "float32", "int64", ...; "?" for 0.
std::string ElemTypeName(int32_t elem_type);
// Inverse of ElemTypeName (also accepts "float", "double", "fp16"); 0 when unknown.
int32_t ElemTypeFromName(const std::string& name);

// Reads and parses an ONNX file without further checks (wrong formats are named); errors name the file.
Result<std::unique_ptr<onnx::ModelProto>> ReadModelProto(const std::string& path);
// Writes `shapes` into the named graph inputs (replacing their dims), then drops the
// value_info and graph-output shapes that would be stale. kInvalidArgument names the input.
Status FixInputShapes(onnx::ModelProto* model, const InputShapes& shapes);
// libonnx shape inference, in place: types and shapes, then shape values (data propagation); the first
// pass is retried without value_info on a conflict.
// Non-fatal problems are appended to `warnings`.
void InferShapes(onnx::ModelProto* model, std::vector<std::string>* warnings);

// Parses "NAME=1,3,320,320" into shapes; kInvalidArgument on a bad spec.
Status ParseInputShape(const std::string& spec, InputShapes* shapes);

}  // namespace edgedecode::scan
