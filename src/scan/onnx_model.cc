// Loading an ONNX model: read, recognise wrong formats, parse (libonnx's generated protobuf classes),
// validate enough to catch truncation, check external data, fix input shapes, infer shapes.
#include "scan/onnx_model.h"

#include "scan/onnx_checks.h"
#include "scan/onnx_data_prop.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <sys/stat.h>

#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace edgedecode::scan {

namespace {

std::string DomainKey(const std::string& d) { return d == "ai.onnx" ? "" : d; }

void FillFromType(const onnx::TypeProto& t, ValueInfo* v) {
  if (!t.has_tensor_type()) return;
  const auto& tt = t.tensor_type();
  if (tt.elem_type() != 0) v->elem_type = tt.elem_type();
  if (!tt.has_shape()) return;
  v->has_shape = true;
  v->dims.clear();
  for (const auto& d : tt.shape().dim()) {
    Dim dim;
    if (d.has_dim_value() && d.dim_value() >= 0) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.param = d.dim_param();
    v->dims.push_back(dim);
  }
}

void FillFromTensor(const onnx::TensorProto& t, ValueInfo* v) {
  v->elem_type = t.data_type();
  v->has_shape = true;
  v->dims.clear();
  for (int64_t d : t.dims()) v->dims.push_back(Dim{d, ""});
  v->is_const = true;
}

// Ops whose result is fixed when their inputs are (converters fold them); random ops are not.
bool Foldable(const std::string& op, const std::string& domain) {
  if (!domain.empty() && domain != "ai.onnx") return false;
  static const std::set<std::string> kNo = {"RandomNormal", "RandomNormalLike", "RandomUniform",
                                            "RandomUniformLike", "Multinomial", "Bernoulli", "If",
                                            "Loop", "Scan", "Dropout"};
  return !kNo.count(op);
}

std::string Magic(const std::string& data) {
  auto starts = [&](const char* m, size_t off = 0) {
    size_t n = std::strlen(m);
    return data.size() >= off + n && data.compare(off, n, m) == 0;
  };
  if (starts("GGUF")) return "a GGUF file";
  if (starts("TFL3", 4)) return "a TFLite flatbuffer (convert it to ONNX first)";
  if (starts("\x89PNG")) return "a PNG image";
  if (starts("\xff\xd8\xff")) return "a JPEG image";
  if (starts("PK\x03\x04")) return "a zip archive (a PyTorch .pt? export it to ONNX)";
  if (starts("lmgg") || starts("ggml") || starts("ggjt")) return "a legacy ggml file";
  return "";
}

}  // namespace

bool ValueInfo::fully_known() const {
  if (!has_shape) return false;
  for (const Dim& d : dims) if (!d.known()) return false;
  return true;
}

int64_t ValueInfo::elements() const {
  if (!fully_known()) return -1;
  int64_t n = 1;
  for (const Dim& d : dims) {
    if (d.value != 0 && n > INT64_MAX / d.value) return -1;
    n *= d.value;
  }
  return n;
}

int64_t ValueInfo::bytes() const {
  int64_t n = elements();
  int s = ElemSize(elem_type);
  if (n < 0 || s == 0) return -1;
  auto b = CheckedMul(n, s);
  return b ? *b : -1;
}

std::string ValueInfo::ShapeString() const {
  if (!has_shape) return "?";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    if (dims[i].known()) s += std::to_string(dims[i].value);
    else s += dims[i].param.empty() ? "?" : dims[i].param;
  }
  return s + "]";
}

int ElemSize(int32_t t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::FLOAT: case T::INT32: case T::UINT32: return 4;
    case T::UINT8: case T::INT8: case T::BOOL: return 1;
    case T::UINT16: case T::INT16: case T::FLOAT16: case T::BFLOAT16: return 2;
    case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 8;
    case T::COMPLEX128: return 16;
    case 17: case 18: case 19: case 20: return 1;  // float8 variants (IR 9)
    case 21: case 22: case 23: return 1;           // uint4/int4/float4 (rounded up)
    default: return 0;
  }
}

std::string ElemTypeName(int32_t t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::FLOAT: return "float32"; case T::UINT8: return "uint8"; case T::INT8: return "int8";
    case T::UINT16: return "uint16"; case T::INT16: return "int16"; case T::INT32: return "int32";
    case T::INT64: return "int64"; case T::STRING: return "string"; case T::BOOL: return "bool";
    case T::FLOAT16: return "float16"; case T::DOUBLE: return "float64"; case T::UINT32: return "uint32";
    case T::UINT64: return "uint64"; case T::COMPLEX64: return "complex64";
    case T::COMPLEX128: return "complex128"; case T::BFLOAT16: return "bfloat16";
    case 17: return "float8e4m3fn"; case 18: return "float8e4m3fnuz"; case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz"; case 21: return "uint4"; case 22: return "int4";
    case 23: return "float4e2m1";
    default: return "?";
  }
}

int32_t ElemTypeFromName(const std::string& n) {
  if (n == "float" || n == "fp32") return onnx::TensorProto::FLOAT;
  if (n == "double") return onnx::TensorProto::DOUBLE;
  if (n == "fp16" || n == "half") return onnx::TensorProto::FLOAT16;
  for (int32_t t = 1; t <= 23; ++t) if (ElemTypeName(t) == n) return t;
  return 0;
}

Status ParseInputShape(const std::string& spec, InputShapes* shapes) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    return InvalidArgument("--input-shape '" + spec + "': expected NAME=D0,D1,... (e.g. input=1,3,320,320)");
  std::vector<int64_t> dims;
  std::stringstream ss(spec.substr(eq + 1));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || v < 0)
      return InvalidArgument("--input-shape '" + spec + "': '" + tok + "' is not a dimension (a non-negative integer)");
    dims.push_back(v);
  }
  (*shapes)[spec.substr(0, eq)] = dims;
  return Status::Ok();
}

OnnxModel::OnnxModel() : proto_(std::make_unique<onnx::ModelProto>()) {}
OnnxModel::~OnnxModel() = default;

const ValueInfo* OnnxModel::Find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

int64_t OnnxModel::opset(const std::string& domain) const {
  auto it = opsets_.find(DomainKey(domain));
  return it == opsets_.end() ? 0 : it->second;
}

int64_t OnnxModel::ir_version() const { return proto_->ir_version(); }

Result<std::unique_ptr<onnx::ModelProto>> ReadModelProto(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFound(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) return InvalidArgument(path + ": is a directory, not a model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open for reading: " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return IoError(path + ": read failed");
  if (data.empty()) return Corrupt(path + ": empty file (0 bytes), not an ONNX model");
  std::string other = Magic(data);
  if (!other.empty()) return Corrupt(path + ": this is " + other + ", not an ONNX model");
  if (data.size() > static_cast<size_t>(INT32_MAX))
    return Unsupported(path + ": larger than 2 GiB; protobuf cannot hold it (use external data)");
  auto proto = std::make_unique<onnx::ModelProto>();
  if (!proto->ParseFromArray(data.data(), static_cast<int>(data.size())))
    return Corrupt(path + ": not a valid ONNX protobuf (" + std::to_string(data.size()) +
                   " bytes; truncated, damaged or not an ONNX file)");
  return proto;
}

Status FixInputShapes(onnx::ModelProto* model, const InputShapes& shapes) {
  onnx::GraphProto* g = model->mutable_graph();
  std::set<std::string> inits;
  for (const auto& t : g->initializer()) inits.insert(t.name());
  for (const auto& [name, dims] : shapes) {
    onnx::ValueInfoProto* vi = nullptr;
    std::string names;
    for (auto& in : *g->mutable_input()) {
      if (inits.count(in.name())) continue;
      names += (names.empty() ? "" : ", ") + in.name();
      if (in.name() == name) vi = &in;
    }
    if (!vi) return InvalidArgument("--input-shape " + name + ": the model has no input '" + name + "' (inputs: " + names + ")");
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    if (tt->has_shape() && tt->shape().dim_size() != static_cast<int>(dims.size()))
      return InvalidArgument("--input-shape " + name + ": rank " + std::to_string(dims.size()) +
                             " but the model declares rank " + std::to_string(tt->shape().dim_size()));
    tt->clear_shape();
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  if (!shapes.empty()) {
    // Stale intermediate shapes would conflict with the new ones; inference recomputes them.
    g->clear_value_info();
    for (auto& out : *g->mutable_output())
      if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return Status::Ok();
}

namespace {

// One libonnx inference pass. libonnx throws on merge conflicts: the model is restored, and with
// `retry_without_value_info` inferred again without the file's value_info.
void RunInference(onnx::ModelProto* model, bool data_prop, bool retry_without_value_info, const char* what,
                  std::vector<std::string>* warnings) {
  onnx::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0, data_prop);
  onnx::ModelProto backup = *model;
  try {
    onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    warnings->push_back(std::string(what) + " stopped: " + e.what());
    *model = std::move(backup);
    if (!retry_without_value_info) return;
    model->mutable_graph()->clear_value_info();
    try {
      onnx::shape_inference::InferShapes(*model, onnx::OpSchemaRegistry::Instance(), opts);
    } catch (const std::exception& e2) {
      warnings->push_back(std::string(what) + " (retry) stopped: " + e2.what());
    }
  }
}

}  // namespace

// With data propagation (shape values through Shape, Gather, Concat... into Reshape and Expand). Where a
// Shape reads values, or an Add/Sub/Mul may meet an empty shape value, types and shapes are inferred
// first, without it, so that every value a Shape reads can be given a type and those Add/Sub/Mul inputs
// detached before the pass with it (onnx_checks.h and onnx_data_prop.h say why); else one pass.
void InferShapes(onnx::ModelProto* model, std::vector<std::string>* warnings) {
  const bool has_shape_op = ContainsShapeOp(*model);
  if (!has_shape_op && !MayFeedEmptyValueToMath(*model)) {
    RunInference(model, /*data_prop=*/true, /*retry_without_value_info=*/true, "shape inference", warnings);
    return;
  }
  RunInference(model, /*data_prop=*/false, /*retry_without_value_info=*/true, "shape inference", warnings);
  const std::vector<std::string> placeholders = has_shape_op ? AddTypePlaceholders(model) : std::vector<std::string>{};
  const DetachedInputs detached = DetachPossiblyEmptyMathInputs(model);
  RunInference(model, /*data_prop=*/true, /*retry_without_value_info=*/false, "shape value propagation", warnings);
  RestoreDetachedInputs(model, detached);
  RemoveTypePlaceholders(model, placeholders);
}

Result<std::unique_ptr<OnnxModel>> OnnxModel::Load(const std::string& path, const InputShapes& shapes) {
  ED_ASSIGN_OR_RETURN(std::unique_ptr<onnx::ModelProto> proto, ReadModelProto(path));
  return FromProto(std::move(*proto), path, shapes);
}

Result<std::unique_ptr<OnnxModel>> OnnxModel::FromProto(onnx::ModelProto proto, const std::string& path,
                                                         const InputShapes& shapes) {
  std::unique_ptr<OnnxModel> m(new OnnxModel());
  m->path_ = path;
  *m->proto_ = std::move(proto);
  const onnx::ModelProto& mp = *m->proto_;
  if (!mp.has_graph() || mp.ir_version() <= 0)
    return Corrupt(path + ": parses as protobuf but is not an ONNX model (" +
                   std::string(mp.has_graph() ? "no ir_version" : "no graph") + ")");
  if (mp.graph().node_size() == 0)
    return Corrupt(path + ": empty graph '" + mp.graph().name() + "' (no nodes)");
  for (const auto& os : mp.opset_import()) m->opsets_[DomainKey(os.domain())] = os.version();
  if (mp.ir_version() < 3 && !m->opsets_.count("")) m->opsets_[""] = 1;  // IR<3 had no opset_import

  // Before libonnx sees it: attribute values its inference divides by, tensors that hold the data they
  // declare (external data inside the model's folder), dependency order.
  ED_RETURN_IF_ERROR(CheckAttributes(mp, path));
  ED_RETURN_IF_ERROR(CheckTensors(mp, path));
  bool reordered = false;
  ED_RETURN_IF_ERROR(SortNodesTopologically(m->proto_.get(), path, &reordered));
  if (reordered)
    m->warnings_.push_back("the file lists nodes before the nodes they read (ONNX requires topological order); scanned in dependency order");

  // --input-shape: fix the named inputs before inference.
  ED_RETURN_IF_ERROR(FixInputShapes(m->proto_.get(), shapes));
  InferShapes(m->proto_.get(), &m->warnings_);
  ED_RETURN_IF_ERROR(m->Build());
  ED_RETURN_IF_ERROR(m->Validate());
  return m;
}

void OnnxModel::AddGraph(const onnx::GraphProto& g, const std::string& path, int parent_node) {
  int gi = static_cast<int>(graphs_.size());
  graphs_.push_back(Graph{path, parent_node, {}, {}, {}});
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) {
    ValueInfo& v = values_[t.name()];
    v.name = t.name();
    v.graph = gi;
    FillFromTensor(t, &v);
    int64_t b = v.bytes();
    if (b > 0) initializer_bytes_ = CheckedAdd(initializer_bytes_, b).value_or(INT64_MAX);
    const_tensors_[t.name()] = &t;
    inits.insert(t.name());
  }
  for (const auto& t : g.sparse_initializer()) {
    ValueInfo& v = values_[t.values().name()];
    v.name = t.values().name();
    v.graph = gi;
    v.elem_type = t.values().data_type();
    v.has_shape = true;
    for (int64_t d : t.dims()) v.dims.push_back(Dim{d, ""});
    v.is_const = true;
    inits.insert(v.name);
  }
  auto add_vi = [&](const onnx::ValueInfoProto& vi, bool is_input) {
    ValueInfo& v = values_[vi.name()];
    if (v.name.empty()) { v.name = vi.name(); v.graph = gi; }
    if (!v.is_const) FillFromType(vi.type(), &v);
    if (is_input && !inits.count(vi.name()) && parent_node < 0) v.is_graph_input = true;
  };
  for (const auto& vi : g.input()) {
    add_vi(vi, true);
    if (!inits.count(vi.name())) graphs_[gi].inputs.push_back(vi.name());
  }
  for (const auto& vi : g.value_info()) add_vi(vi, false);
  for (const auto& vi : g.output()) { add_vi(vi, false); graphs_[gi].outputs.push_back(vi.name()); }

  for (const auto& np : g.node()) {
    int ni = static_cast<int>(nodes_.size());
    Node n;
    n.index = ni;
    n.graph = gi;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.op_type + "_" + std::to_string(ni) : np.name();
    n.opset = opset(n.domain);
    n.has_schema = onnx::OpSchemaRegistry::Schema(n.op_type, static_cast<int>(n.opset ? n.opset : 1), n.domain) != nullptr;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    n.proto = &np;
    nodes_.push_back(n);
    graphs_[gi].nodes.push_back(ni);
    for (const auto& o : np.output()) {
      if (o.empty()) continue;
      ValueInfo& v = values_[o];
      if (v.name.empty()) { v.name = o; v.graph = gi; }
    }
    if (n.op_type == "Constant" && n.domain.empty() && !np.output().empty()) {
      for (const auto& a : np.attribute()) {
        ValueInfo& v = values_[np.output(0)];
        if (a.name() == "value" && a.has_t()) { FillFromTensor(a.t(), &v); const_tensors_[np.output(0)] = &a.t(); }
        else if (a.name() == "value_float" || a.name() == "value_int") {
          v.elem_type = a.name() == "value_float" ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64;
          v.has_shape = true; v.dims.clear();
        } else if (a.name() == "value_floats" || a.name() == "value_ints") {
          v.elem_type = a.name() == "value_floats" ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64;
          v.has_shape = true;
          v.dims = {Dim{a.name() == "value_floats" ? a.floats_size() : a.ints_size(), ""}};
        }
        if (a.name() == "value_float" || a.name() == "value_int" || a.name() == "value_floats" || a.name() == "value_ints")
          const_attrs_[np.output(0)] = &a;
        v.is_const = true;
      }
      values_[np.output(0)].is_const = true;
    }
    // Subgraphs after their owner, so a body's nodes follow the node that runs them.
    for (const auto& a : np.attribute()) {
      if (a.has_g()) { nodes_[ni].subgraphs.push_back(static_cast<int>(graphs_.size())); AddGraph(a.g(), (path.empty() ? "" : path + "/") + nodes_[ni].name + "/" + a.name(), ni); }
      for (int k = 0; k < a.graphs_size(); ++k) {
        nodes_[ni].subgraphs.push_back(static_cast<int>(graphs_.size()));
        AddGraph(a.graphs(k), (path.empty() ? "" : path + "/") + nodes_[ni].name + "/" + a.name() + "[" + std::to_string(k) + "]", ni);
      }
    }
  }
}

Status OnnxModel::Build() {
  AddGraph(proto_->graph(), "", -1);
  // Constant folding: a deterministic node whose inputs are all constant yields constants; so does
  // Shape/Size of a value whose shape is fully known. Converters (RKNN, Vela, QNN) fold these.
  for (const Node& n : nodes_) {
    if (n.subgraphs.size() || !Foldable(n.op_type, n.domain) || n.op_type == "Constant") continue;
    bool all_const = true, any = false;
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      any = true;
      const ValueInfo* v = Find(in);
      if (!v || !v->is_const) { all_const = false; break; }
    }
    if ((n.op_type == "Shape" || n.op_type == "Size") && !n.inputs.empty()) {
      const ValueInfo* v = Find(n.inputs[0]);
      if (v && v->fully_known()) all_const = any = true;
    }
    if (!all_const || !any) continue;
    for (const auto& o : n.outputs) if (!o.empty()) values_[o].is_const = true;
  }
  CountWeights();
  for (const Node& n : nodes_) used_.insert(n.inputs.begin(), n.inputs.end());
  for (const Graph& g : graphs_) used_.insert(g.outputs.begin(), g.outputs.end());
  return Status::Ok();
}

void OnnxModel::CountWeights() {
  // A Constant's value and a ConstantOfShape of a constant shape are stored like initializers.
  weight_bytes_ = initializer_bytes_;
  for (const Node& n : nodes_) {
    if (!n.domain.empty() || n.outputs.empty() || n.outputs[0].empty()) continue;
    if (n.op_type != "Constant" && !(n.op_type == "ConstantOfShape" && !n.inputs.empty())) continue;
    if (n.op_type == "ConstantOfShape") {
      const ValueInfo* shape = Find(n.inputs[0]);
      if (!shape || !shape->is_const) continue;
    }
    const ValueInfo* v = Find(n.outputs[0]);
    int64_t b = v ? v->bytes() : -1;
    if (b <= 0) continue;
    auto sum = CheckedAdd(weight_bytes_, b);
    if (!sum) {
      warnings_.push_back("the weights' total size overflows 64 bits; reported as " + std::to_string(INT64_MAX) + " bytes");
      weight_bytes_ = INT64_MAX;
      return;
    }
    weight_bytes_ = *sum;
  }
}

std::optional<std::vector<double>> OnnxModel::ConstantValues(const std::string& name, int64_t max_elements) const {
  if (auto t = const_tensors_.find(name); t != const_tensors_.end()) return TensorValues(*t->second, max_elements);
  auto a = const_attrs_.find(name);
  if (a == const_attrs_.end()) return std::nullopt;
  const onnx::AttributeProto& at = *a->second;
  std::vector<double> v;
  if (at.name() == "value_float") v.push_back(at.f());
  else if (at.name() == "value_int") v.push_back(static_cast<double>(at.i()));
  else if (at.name() == "value_floats") v.assign(at.floats().begin(), at.floats().end());
  else for (int64_t x : at.ints()) v.push_back(static_cast<double>(x));
  if (static_cast<int64_t>(v.size()) > max_elements) return std::nullopt;
  return v;
}


Status OnnxModel::Validate() const {
  // Every input must be defined somewhere (a truncated file loses nodes at the end), and every
  // graph output must be produced (linear in the model's size: a graph may have a million nodes).
  std::vector<std::unordered_set<std::string>> produced(graphs_.size());
  for (const Node& n : nodes_) produced[n.graph].insert(n.outputs.begin(), n.outputs.end());
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    const Graph& g = graphs_[gi];
    std::unordered_set<std::string> inputs(g.inputs.begin(), g.inputs.end());
    for (const auto& o : g.outputs) {
      const ValueInfo* v = Find(o);
      bool ok = produced[gi].count(o) || inputs.count(o) || (v && v->is_const);
      ok |= g.parent_node >= 0 && values_.count(o);  // a branch may return an outer value
      if (!ok) return Corrupt(path_ + ": graph output '" + o + "' is produced by no node (truncated file?)");
    }
  }
  for (const Node& n : nodes_)
    for (const auto& in : n.inputs)
      if (!in.empty() && !values_.count(in))
        return Corrupt(path_ + ": node '" + n.name + "' (" + n.op_type + ") reads '" + in + "', which nothing defines (truncated file?)");
  return Status::Ok();
}

}  // namespace edgedecode::scan
