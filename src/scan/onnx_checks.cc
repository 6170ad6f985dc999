// Pre-inference checks of an ONNX model (see onnx_checks.h for why each exists).
#include "scan/onnx_checks.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "scan/onnx_model.h"

namespace edgedecode::scan {

namespace fs = std::filesystem;

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

namespace {

constexpr int64_t kMaxAttr = INT32_MAX;  // no real kernel, stride or pad comes near; keeps libonnx's arithmetic in range

// Every graph of the model (main graph first, then bodies), found with an explicit stack.
template <typename Graph, typename Fn>
void ForEachGraph(Graph* main, Fn&& fn) {
  std::vector<Graph*> stack = {main};
  while (!stack.empty()) {
    Graph* g = stack.back();
    stack.pop_back();
    fn(g);
    for (int i = 0; i < g->node_size(); ++i) {
      auto& n = *g->mutable_node(i);
      for (int k = 0; k < n.attribute_size(); ++k) {
        auto& a = *n.mutable_attribute(k);
        if (a.has_g()) stack.push_back(a.mutable_g());
        for (int j = 0; j < a.graphs_size(); ++j) stack.push_back(a.mutable_graphs(j));
      }
    }
  }
}

// The same for a const model (the protobuf accessors differ only in constness).
template <typename Fn>
void ForEachGraphConst(const onnx::ModelProto& m, Fn&& fn) {
  std::vector<const onnx::GraphProto*> stack = {&m.graph()};
  while (!stack.empty()) {
    const onnx::GraphProto* g = stack.back();
    stack.pop_back();
    fn(*g);
    for (const auto& n : g->node())
      for (const auto& a : n.attribute()) {
        if (a.has_g()) stack.push_back(&a.g());
        for (const auto& sg : a.graphs()) stack.push_back(&sg);
      }
  }
}

std::string NodeLabel(const onnx::NodeProto& n, int index) {
  return "node " + std::to_string(index) + (n.name().empty() ? "" : " '" + n.name() + "'") + " (" + n.op_type() + ")";
}

Status CheckNodeAttributes(const onnx::NodeProto& n, int index, const std::string& path) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return Status::Ok();
  static const char* kPositive[] = {"strides", "kernel_shape", "dilations", "group", "blocksize"};
  static const char* kBounded[] = {"pads", "output_padding", "output_shape"};
  for (const auto& a : n.attribute()) {
    bool positive = false, bounded = false;
    for (const char* name : kPositive) positive |= a.name() == name;
    for (const char* name : kBounded) bounded |= a.name() == name;
    if (!positive && !bounded) continue;
    std::vector<int64_t> vals(a.ints().begin(), a.ints().end());
    if (a.type() == onnx::AttributeProto::INT || a.has_i()) vals.push_back(a.i());
    for (int64_t v : vals) {
      bool ok = positive ? v >= 1 && v <= kMaxAttr : v >= -kMaxAttr && v <= kMaxAttr;
      if (!ok)
        return Corrupt(path + ": " + NodeLabel(n, index) + ": attribute " + a.name() + " = " + std::to_string(v) +
                       (positive ? " is not in [1, " : " is not in [-" + std::to_string(kMaxAttr) + ", ") + std::to_string(kMaxAttr) + "]");
    }
  }
  return Status::Ok();
}

// Elements a tensor's dims declare; nullopt on a negative dim or overflow (of the byte size too).
std::optional<int64_t> DeclaredElements(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return std::nullopt;
    auto r = CheckedMul(n, d);
    if (!r) return std::nullopt;
    n = *r;
  }
  if (!CheckedMul(n, std::max(1, ElemSize(t.data_type())))) return std::nullopt;  // the byte size fits too
  return n;
}

// How many typed-field entries `n` elements take, and that field's size in `t`.
std::pair<int64_t, int64_t> TypedCount(const onnx::TensorProto& t, int64_t n) {
  using T = onnx::TensorProto;
  switch (t.data_type()) {
    case T::FLOAT: return {n, t.float_data_size()};
    case T::COMPLEX64: return {2 * n, t.float_data_size()};
    case T::DOUBLE: return {n, t.double_data_size()};
    case T::COMPLEX128: return {2 * n, t.double_data_size()};
    case T::INT64: return {n, t.int64_data_size()};
    case T::UINT32: case T::UINT64: return {n, t.uint64_data_size()};
    case T::STRING: return {n, t.string_data_size()};
    case 21: case 22: case 23: return {(n + 1) / 2, t.int32_data_size()};
    default: return {n, t.int32_data_size()};  // 8/16-bit ints, bool, float16, bfloat16, float8
  }
}

int64_t RawBytes(int32_t type, int64_t n) {
  if (type == 21 || type == 22 || type == 23) return (n + 1) / 2;  // 4-bit types, two per byte
  return n * ElemSize(type);
}

Result<int64_t> ParseNonNegative(const std::string& s, const std::string& what) {
  int64_t v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    return Corrupt(what + " '" + s + "' is not a non-negative 64-bit integer");
  return v;
}

// True when `inner` (canonical) lies in `dir` (canonical).
bool Inside(const fs::path& dir, const fs::path& inner) {
  auto d = dir.begin(), i = inner.begin();
  for (; d != dir.end(); ++d, ++i)
    if (i == inner.end() || *d != *i) return false;
  return i != inner.end();
}

Status CheckExternal(const onnx::TensorProto& t, int64_t expected, const std::string& where, const std::string& path) {
  std::string loc;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") loc = kv.value();
    else if (kv.key() == "offset") { ED_ASSIGN_OR_RETURN(offset, ParseNonNegative(kv.value(), where + ": external data offset")); }
    else if (kv.key() == "length") { ED_ASSIGN_OR_RETURN(length, ParseNonNegative(kv.value(), where + ": external data length")); }
  }
  if (loc.empty()) return Corrupt(where + " has external data without a location");
  fs::path rel(loc);
  bool escapes = loc.find('\0') != std::string::npos || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory();
  for (const auto& part : rel) escapes |= part == "..";
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (escapes)
    return Corrupt(where + ": external data location '" + loc + "' is not a relative path inside the model's folder " + dir.string() + " (refused)");
  fs::path file = dir / rel;
  std::error_code ec;
  fs::path real = fs::canonical(file, ec);
  if (ec) return NotFound(where + ": external data file '" + file.string() + "' is missing");
  fs::path real_dir = fs::canonical(dir, ec);
  if (ec || !Inside(real_dir, real))
    return Corrupt(where + ": external data file '" + file.string() + "' resolves to " + real.string() +
                   ", outside the model's folder (refused)");
  auto size = fs::file_size(real, ec);
  if (ec) return Corrupt(where + ": external data file '" + file.string() + "' is not a readable regular file");
  if (length >= 0 && length != expected)
    return Corrupt(where + ": external data length " + std::to_string(length) + " does not match the " +
                   std::to_string(expected) + " bytes its dims and type declare");
  auto end = CheckedAdd(offset, expected);
  if (!end || static_cast<uint64_t>(*end) > size)
    return Corrupt(where + ": external data file '" + file.string() + "' has " + std::to_string(size) + " bytes, needs " +
                   (end ? std::to_string(*end) : "offset " + std::to_string(offset) + " + " + std::to_string(expected)) + " (truncated?)");
  return Status::Ok();
}

Status CheckTensor(const onnx::TensorProto& t, const std::string& where, const std::string& path) {
  if (t.data_type() == 0 || ElemTypeName(t.data_type()) == "?")
    return Corrupt(where + " has no valid data type (" + std::to_string(t.data_type()) + ")");
  auto n = DeclaredElements(t);
  if (!n) return Corrupt(where + ": dims negative or their size overflows 64 bits");
  if (t.data_type() == onnx::TensorProto::STRING) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.has_raw_data())
      return Corrupt(where + ": a string tensor must hold string_data");
  }
  int64_t bytes = RawBytes(t.data_type(), *n);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return CheckExternal(t, bytes, where, path);
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != bytes)
      return Corrupt(where + ": raw_data has " + std::to_string(t.raw_data().size()) + " bytes, its dims and type declare " +
                     std::to_string(bytes));
    return Status::Ok();
  }
  auto [need, have] = TypedCount(t, *n);
  if (need == have) return Status::Ok();
  if (have == 0)
    return Corrupt(where + " holds no data (no raw_data, typed data or external data) for its " + std::to_string(*n) + " elements");
  return Corrupt(where + " holds " + std::to_string(have) + " values, its dims declare " + std::to_string(need));
}

Status CheckValueShape(const onnx::ValueInfoProto& vi, const std::string& path) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return Status::Ok();
  int64_t n = std::max(1, ElemSize(vi.type().tensor_type().elem_type()));  // bytes
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) continue;
    auto r = CheckedMul(n, d.dim_value());
    if (!r) return Corrupt(path + ": value '" + vi.name() + "' declares a shape whose size overflows 64 bits");
    n = *r;
  }
  return Status::Ok();
}

// libonnx's inference functions read some required attributes without checking that they are there
// (Scan's num_scan_inputs: a null read): a node without one of its schema's required attributes is refused.
Status CheckRequiredAttributes(const onnx::NodeProto& n, int index, int64_t opset, const std::string& path) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return Status::Ok();
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min<int64_t>(opset, INT32_MAX)), "");
  if (!schema) return Status::Ok();
  for (const auto& [name, attr] : schema->attributes()) {
    if (!attr.required) continue;
    bool present = false;
    for (const auto& a : n.attribute()) present = present || a.name() == name;
    if (!present)
      return Corrupt(path + ": " + NodeLabel(n, index) + ": required attribute '" + name + "' is missing");
  }
  return Status::Ok();
}

}  // namespace

Status CheckAttributes(const onnx::ModelProto& model, const std::string& path) {
  int64_t opset = model.ir_version() < 3 ? 1 : 0;  // IR < 3 had no opset_import
  for (const auto& os : model.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") opset = os.version();
  Status st;
  ForEachGraphConst(model, [&](const onnx::GraphProto& g) {
    for (int i = 0; i < g.node_size() && st.ok(); ++i) {
      st = CheckNodeAttributes(g.node(i), i, path);
      if (st.ok() && opset > 0) st = CheckRequiredAttributes(g.node(i), i, opset, path);
    }
  });
  return st;
}

Status CheckTensors(const onnx::ModelProto& model, const std::string& path) {
  Status st;
  ForEachGraphConst(model, [&](const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) {
      if (!st.ok()) return;
      st = CheckTensor(t, path + ": initializer '" + t.name() + "'", path);
    }
    for (int i = 0; i < g.node_size() && st.ok(); ++i)
      for (const auto& a : g.node(i).attribute())
        if (st.ok() && a.has_t()) st = CheckTensor(a.t(), path + ": " + NodeLabel(g.node(i), i) + " attribute " + a.name(), path);
    for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
      for (const auto& vi : *list)
        if (st.ok()) st = CheckValueShape(vi, path);
  });
  return st;
}

namespace {

// Names a node reads, including those its subgraphs read from the enclosing scope.
std::vector<std::string> NodeReads(const onnx::NodeProto& n) {
  std::vector<std::string> reads(n.input().begin(), n.input().end());
  std::vector<const onnx::GraphProto*> stack;
  for (const auto& a : n.attribute()) {
    if (a.has_g()) stack.push_back(&a.g());
    for (const auto& sg : a.graphs()) stack.push_back(&sg);
  }
  while (!stack.empty()) {
    const onnx::GraphProto* g = stack.back();
    stack.pop_back();
    for (const auto& sn : g->node()) {
      reads.insert(reads.end(), sn.input().begin(), sn.input().end());
      for (const auto& a : sn.attribute()) {
        if (a.has_g()) stack.push_back(&a.g());
        for (const auto& sg : a.graphs()) stack.push_back(&sg);
      }
    }
  }
  return reads;
}

Status SortGraph(onnx::GraphProto* g, const std::string& path, bool* reordered) {
  const int n = g->node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : g->node(i).output())
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> indegree(n, 0);
  bool sorted = true;
  for (int i = 0; i < n; ++i) {
    std::unordered_set<int> deps;
    for (const auto& in : NodeReads(g->node(i))) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it != producer.end()) deps.insert(it->second);
    }
    for (int p : deps) {
      consumers[p].push_back(i);
      ++indegree[i];
      sorted &= p < i;
    }
  }
  if (sorted) return Status::Ok();
  // Kahn's algorithm; the min-heap keeps file order wherever dependencies allow.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) if (indegree[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i]) if (--indegree[c] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) < n) {
    for (int i = 0; i < n; ++i)
      if (indegree[i] > 0)
        return Corrupt(path + ": graph '" + g->name() + "' has a cycle: " + NodeLabel(g->node(i), i) + " depends on its own output");
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Reserve(n);
  for (int i : order) nodes.Add()->Swap(g->mutable_node(i));
  g->mutable_node()->Swap(&nodes);
  *reordered = true;
  return Status::Ok();
}

}  // namespace

Status SortNodesTopologically(onnx::ModelProto* model, const std::string& path, bool* reordered) {
  Status st;
  ForEachGraph(model->mutable_graph(), [&](onnx::GraphProto* g) {
    if (st.ok()) st = SortGraph(g, path, reordered);
  });
  return st;
}

namespace {

// The names that have a type in one graph's own scope: its inputs and outputs declared with a type, its
// value_info entries with a type, its initializers.
std::unordered_set<std::string> TypedNames(const onnx::GraphProto& g) {
  std::unordered_set<std::string> typed;
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& vi : *list)
      if (vi.has_type()) typed.insert(vi.name());
  for (const auto& t : g.initializer()) typed.insert(t.name());
  for (const auto& t : g.sparse_initializer()) typed.insert(t.values().name());
  return typed;
}

bool IsShapeOp(const onnx::NodeProto& n) {
  return n.op_type() == "Shape" && (n.domain().empty() || n.domain() == "ai.onnx");
}

}  // namespace

bool ContainsShapeOp(const onnx::ModelProto& model) {
  bool found = false;
  ForEachGraphConst(model, [&](const onnx::GraphProto& g) {
    for (const auto& n : g.node()) found = found || IsShapeOp(n);
  });
  return found;
}

std::vector<std::string> AddTypePlaceholders(onnx::ModelProto* model) {
  // Graphs with the index of their enclosing scope (-1: the main graph); a name is typed when its own
  // graph or an enclosing one types it. Explicit stack: bodies nest as deep as the file says.
  struct Scope {
    onnx::GraphProto* graph;
    int parent;
    std::unordered_set<std::string> typed;
  };
  std::vector<Scope> scopes;
  std::vector<std::pair<onnx::GraphProto*, int>> stack = {{model->mutable_graph(), -1}};
  std::vector<std::string> added;
  while (!stack.empty()) {
    auto [g, parent] = stack.back();
    stack.pop_back();
    const int self = static_cast<int>(scopes.size());
    scopes.push_back(Scope{g, parent, TypedNames(*g)});
    auto typed_here = [&](const std::string& name) {
      for (int s = self; s >= 0; s = scopes[s].parent)
        if (scopes[s].typed.count(name)) return true;
      return false;
    };
    for (int i = 0; i < g->node_size(); ++i) {
      auto& n = *g->mutable_node(i);
      if (IsShapeOp(n) && n.input_size() > 0 && !n.input(0).empty() && !typed_here(n.input(0))) {
        onnx::ValueInfoProto* vi = g->add_value_info();
        vi->set_name(n.input(0));
        vi->mutable_type();  // present and empty: "a value of unknown type"
        scopes[self].typed.insert(n.input(0));
        added.push_back(n.input(0));
      }
      for (int k = 0; k < n.attribute_size(); ++k) {
        auto& a = *n.mutable_attribute(k);
        if (a.has_g()) stack.push_back({a.mutable_g(), self});
        for (int j = 0; j < a.graphs_size(); ++j) stack.push_back({a.mutable_graphs(j), self});
      }
    }
  }
  return added;
}

void RemoveTypePlaceholders(onnx::ModelProto* model, const std::vector<std::string>& names) {
  if (names.empty()) return;
  const std::unordered_set<std::string> placeholders(names.begin(), names.end());
  ForEachGraph(model->mutable_graph(), [&](onnx::GraphProto* g) {
    auto* vis = g->mutable_value_info();
    auto still_empty = [&](const onnx::ValueInfoProto& vi) {
      return placeholders.count(vi.name()) && vi.type().value_case() == onnx::TypeProto::VALUE_NOT_SET;
    };
    vis->erase(std::remove_if(vis->begin(), vis->end(), still_empty), vis->end());
  });
}

std::optional<std::vector<double>> TensorValues(const onnx::TensorProto& t, int64_t max_elements) {
  using T = onnx::TensorProto;
  if (t.data_location() == T::EXTERNAL) return std::nullopt;
  auto n = DeclaredElements(t);
  if (!n || *n > max_elements) return std::nullopt;
  std::vector<double> v;
  const std::string& raw = t.raw_data();
  auto from_raw = [&](auto type_tag) -> bool {
    using V = decltype(type_tag);
    if (raw.size() != static_cast<size_t>(*n) * sizeof(V)) return false;
    for (int64_t i = 0; i < *n; ++i) {
      V x;
      std::memcpy(&x, raw.data() + i * sizeof(V), sizeof(V));
      v.push_back(static_cast<double>(x));
    }
    return true;
  };
  bool raw_ok = t.has_raw_data();
  switch (t.data_type()) {
    case T::FLOAT:
      if (raw_ok) { if (!from_raw(float{})) return std::nullopt; }
      else v.assign(t.float_data().begin(), t.float_data().end());
      break;
    case T::DOUBLE:
      if (raw_ok) { if (!from_raw(double{})) return std::nullopt; }
      else v.assign(t.double_data().begin(), t.double_data().end());
      break;
    case T::INT64:
      if (raw_ok) { if (!from_raw(int64_t{})) return std::nullopt; }
      else v.assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case T::INT32: case T::INT16: case T::INT8: case T::UINT8: case T::UINT16: case T::BOOL:
      if (raw_ok) {
        bool ok = t.data_type() == T::INT32 ? from_raw(int32_t{}) : t.data_type() == T::INT16 ? from_raw(int16_t{})
                : t.data_type() == T::INT8 ? from_raw(int8_t{}) : t.data_type() == T::UINT16 ? from_raw(uint16_t{})
                                                                 : from_raw(uint8_t{});
        if (!ok) return std::nullopt;
      } else {
        v.assign(t.int32_data().begin(), t.int32_data().end());
      }
      break;
    default:
      return std::nullopt;
  }
  if (static_cast<int64_t>(v.size()) != *n) return std::nullopt;
  return v;
}

}  // namespace edgedecode::scan
