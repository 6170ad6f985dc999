#include "scan/onnx_data_prop.h"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

namespace edgedecode::scan {
namespace {

// What libonnx's data propagation may hold for a value: nothing, a value with at least one element, or a
// value that may have none.
enum class ShapeValue { kNone, kNonEmpty, kMaybeEmpty };

bool IsDefaultDomain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool IsMathWithPropagation(const onnx::NodeProto& n) {
  return IsDefaultDomain(n) && n.input_size() >= 2 &&
         (n.op_type() == "Add" || n.op_type() == "Sub" || n.op_type() == "Mul");
}

// libonnx takes values from integer tensors of rank 0 or 1 only.
ShapeValue TensorValue(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::INT64 && t.data_type() != onnx::TensorProto::INT32) return ShapeValue::kNone;
  if (t.dims_size() > 1) return ShapeValue::kNone;
  return t.dims_size() == 0 || t.dims(0) > 0 ? ShapeValue::kNonEmpty : ShapeValue::kMaybeEmpty;
}

ShapeValue ConstantValue(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "value" && a.has_t()) return TensorValue(a.t());
    if (a.name() == "value_int") return ShapeValue::kNonEmpty;
    if (a.name() == "value_ints") return a.ints_size() > 0 ? ShapeValue::kNonEmpty : ShapeValue::kMaybeEmpty;
  }
  return ShapeValue::kNone;
}

// One graph while it is walked: its enclosing scope, the values its nodes and initializers may carry, and
// (after an inference pass) the types it declares or inferred.
struct Scope {
  onnx::GraphProto* graph;
  int parent;  // index in the scope list; -1: the main graph
  std::unordered_map<std::string, ShapeValue> values;
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  std::unordered_map<std::string, const onnx::TensorProto*> initializers;
};

// A node input to detach: where it is, and the scope whose graph gets the fresh name's value_info.
struct Detach {
  onnx::NodeProto* node;
  int input;
  int scope;
};

class Walker {
 public:
  // typed: an inference pass ran (Shape outputs have inferred lengths, value_info holds the types).
  Walker(onnx::ModelProto* model, bool typed) : typed_(typed) {
    std::vector<std::pair<onnx::GraphProto*, int>> stack = {{model->mutable_graph(), -1}};
    while (!stack.empty()) {
      auto [g, parent] = stack.back();
      stack.pop_back();
      WalkGraph(g, parent, &stack);
    }
  }
  const std::vector<Detach>& detaches() const { return detaches_; }
  std::vector<Scope>& scopes() { return scopes_; }

 private:
  void WalkGraph(onnx::GraphProto* g, int parent, std::vector<std::pair<onnx::GraphProto*, int>>* stack) {
    const int self = static_cast<int>(scopes_.size());
    scopes_.push_back(Scope{g, parent, {}, {}, {}});
    Scope& s = scopes_.back();
    for (const auto& t : g->initializer()) {
      s.values[t.name()] = TensorValue(t);
      s.initializers[t.name()] = &t;
    }
    if (typed_)
      for (const auto* list : {&g->input(), &g->output(), &g->value_info()})
        for (const auto& vi : *list)
          if (vi.has_type()) s.types.emplace(vi.name(), &vi.type());
    for (int i = 0; i < g->node_size(); ++i) {
      onnx::NodeProto& n = *g->mutable_node(i);
      const ShapeValue out = NodeValue(n, self);
      for (const auto& o : n.output())
        if (!o.empty()) scopes_[self].values[o] = out;
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) stack->push_back({a.mutable_g(), self});
        for (auto& sub : *a.mutable_graphs()) stack->push_back({&sub, self});
      }
    }
  }

  ShapeValue Lookup(const std::string& name, int scope) const {
    if (name.empty()) return ShapeValue::kNone;
    for (int s = scope; s >= 0; s = scopes_[s].parent) {
      auto it = scopes_[s].values.find(name);
      if (it != scopes_[s].values.end()) return it->second;
    }
    return ShapeValue::kNone;  // a graph input without initializer: no value
  }
  ShapeValue In(const onnx::NodeProto& n, int k, int scope) const {
    return k < n.input_size() ? Lookup(n.input(k), scope) : ShapeValue::kNone;
  }

  ShapeValue ShapeOutput(const onnx::NodeProto& n, int scope) const {
    if (!typed_ || n.output_size() == 0) return ShapeValue::kMaybeEmpty;
    auto it = scopes_[scope].types.find(n.output(0));
    if (it == scopes_[scope].types.end() || !it->second->has_tensor_type()) return ShapeValue::kMaybeEmpty;
    const auto& tt = it->second->tensor_type();
    if (!tt.has_shape() || tt.shape().dim_size() != 1) return ShapeValue::kMaybeEmpty;
    const auto& d = tt.shape().dim(0);
    return d.has_dim_value() && d.dim_value() > 0 ? ShapeValue::kNonEmpty : ShapeValue::kMaybeEmpty;
  }

  ShapeValue NodeValue(onnx::NodeProto& n, int scope) {
    using V = ShapeValue;
    if (!IsDefaultDomain(n)) return V::kNone;
    const std::string& op = n.op_type();
    if (op == "Constant") return ConstantValue(n);
    if (op == "Shape") return ShapeOutput(n, scope);
    if (op == "Size") return V::kNonEmpty;
    if (op == "Cast" || op == "Squeeze" || op == "Unsqueeze") return In(n, 0, scope);
    if (op == "Gather") return In(n, 0, scope) == V::kNone || In(n, 1, scope) == V::kNone ? V::kNone : V::kNonEmpty;
    if (op == "Slice") return In(n, 0, scope) == V::kNone ? V::kNone : V::kMaybeEmpty;
    if (op == "Concat") {
      bool any_non_empty = false;
      for (int k = 0; k < n.input_size(); ++k) {
        const V v = In(n, k, scope);
        if (v == V::kNone) return V::kNone;  // propagation needs every input's value
        any_non_empty = any_non_empty || v == V::kNonEmpty;
      }
      return n.input_size() == 0 ? V::kNone : any_non_empty ? V::kNonEmpty : V::kMaybeEmpty;
    }
    if (IsMathWithPropagation(n)) {
      const V a = In(n, 0, scope), b = In(n, 1, scope);
      if (a == V::kNone || b == V::kNone) return V::kNone;
      if (a == V::kNonEmpty && b == V::kNonEmpty) return V::kNonEmpty;
      for (int k = 0; k < 2; ++k)
        if ((k == 0 ? a : b) == V::kMaybeEmpty) detaches_.push_back({&n, k, scope});
      return V::kNone;  // detached: the node carries no value
    }
    return V::kNone;
  }

  bool typed_;
  std::vector<Scope> scopes_;
  std::vector<Detach> detaches_;
};

const onnx::TypeProto* FindType(std::vector<Scope>& scopes, int scope, const std::string& name, onnx::TypeProto* from_tensor) {
  for (int s = scope; s >= 0; s = scopes[s].parent) {
    if (auto it = scopes[s].types.find(name); it != scopes[s].types.end()) return it->second;
    if (auto it = scopes[s].initializers.find(name); it != scopes[s].initializers.end()) {
      auto* tt = from_tensor->mutable_tensor_type();
      tt->set_elem_type(it->second->data_type());
      for (int64_t d : it->second->dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
      return from_tensor;
    }
  }
  return nullptr;
}

template <class Fn>
void ForEachGraphOf(onnx::ModelProto* model, Fn&& fn) {
  std::vector<onnx::GraphProto*> stack = {model->mutable_graph()};
  while (!stack.empty()) {
    onnx::GraphProto* g = stack.back();
    stack.pop_back();
    fn(g);
    for (auto& n : *g->mutable_node())
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) stack.push_back(a.mutable_g());
        for (auto& sub : *a.mutable_graphs()) stack.push_back(&sub);
      }
  }
}

}  // namespace

bool MayFeedEmptyValueToMath(const onnx::ModelProto& model) {
  // The walker only reads the model in this mode (no detaching, no types).
  Walker w(const_cast<onnx::ModelProto*>(&model), /*typed=*/false);
  return !w.detaches().empty();
}

DetachedInputs DetachPossiblyEmptyMathInputs(onnx::ModelProto* model) {
  Walker w(model, /*typed=*/true);
  DetachedInputs detached;
  if (w.detaches().empty()) return detached;
  std::unordered_set<std::string> names;  // every name in the model, so that a fresh one is new
  ForEachGraphOf(model, [&](onnx::GraphProto* g) {
    for (const auto* list : {&g->input(), &g->output(), &g->value_info()})
      for (const auto& vi : *list) names.insert(vi.name());
    for (const auto& t : g->initializer()) names.insert(t.name());
    for (const auto& n : g->node()) {
      names.insert(n.input().begin(), n.input().end());
      names.insert(n.output().begin(), n.output().end());
    }
  });
  int counter = 0;
  for (const Detach& d : w.detaches()) {
    const std::string original = d.node->input(d.input);
    std::string fresh;
    do {
      fresh = original + "/detached-from-shape-values." + std::to_string(counter++);
    } while (names.count(fresh));
    names.insert(fresh);
    onnx::TypeProto from_tensor;
    const onnx::TypeProto* type = FindType(w.scopes(), d.scope, original, &from_tensor);
    onnx::ValueInfoProto vi;
    vi.set_name(fresh);
    if (type != nullptr) *vi.mutable_type() = *type;
    *w.scopes()[d.scope].graph->add_value_info() = std::move(vi);
    d.node->set_input(d.input, fresh);
    detached.emplace(fresh, original);
  }
  return detached;
}

void RestoreDetachedInputs(onnx::ModelProto* model, const DetachedInputs& detached) {
  if (detached.empty()) return;
  ForEachGraphOf(model, [&](onnx::GraphProto* g) {
    for (auto& n : *g->mutable_node())
      for (int k = 0; k < n.input_size(); ++k)
        if (auto it = detached.find(n.input(k)); it != detached.end()) n.set_input(k, it->second);
    auto* vis = g->mutable_value_info();
    vis->erase(std::remove_if(vis->begin(), vis->end(), [&](const onnx::ValueInfoProto& vi) { return detached.count(vi.name()) > 0; }),
               vis->end());
  });
}

}  // namespace edgedecode::scan
