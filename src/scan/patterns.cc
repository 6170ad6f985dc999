// Structural matching of decomposed LayerNorm and GELU. Constants are read from initializers and Constant
// nodes; a pattern must have exactly the published constants (2, 1, 0.5, sqrt 2) so that fusing it is exact.
#include "scan/patterns.h"

#include <onnx/defs/tensor_proto_util.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <map>

namespace edgedecode::scan {

namespace {

class Matcher {
 public:
  explicit Matcher(const OnnxModel& m) : m_(m) {
    for (const Node& n : m.nodes()) {
      for (const auto& o : n.outputs) if (!o.empty()) producer_[o] = n.index;
      for (const auto& in : n.inputs) if (!in.empty()) readers_[in].push_back(n.index);
    }
    for (const auto& t : m.proto().graph().initializer()) inits_[t.name()] = &t;
  }

  // The only reader of `value` with op `op`, or nullptr.
  const Node* Reader(const std::string& value, const char* op) const {
    auto it = readers_.find(value);
    if (it == readers_.end()) return nullptr;
    const Node* found = nullptr;
    for (int i : it->second)
      if (m_.nodes()[i].op_type == op && m_.nodes()[i].domain.empty()) {
        if (found) return nullptr;
        found = &m_.nodes()[i];
      }
    return found;
  }
  const Node* Producer(const std::string& value) const {
    auto it = producer_.find(value);
    return it == producer_.end() ? nullptr : &m_.nodes()[it->second];
  }
  int Readers(const std::string& value) const {
    auto it = readers_.find(value);
    return it == readers_.end() ? 0 : static_cast<int>(it->second.size());
  }

  // A constant scalar (or one-element tensor) of a float or integer type.
  bool Scalar(const std::string& name, double* v) const {
    const onnx::TensorProto* t = nullptr;
    auto it = inits_.find(name);
    if (it != inits_.end()) t = it->second;
    else if (const Node* p = Producer(name); p && p->op_type == "Constant")
      for (const auto& a : p->proto->attribute())
        if (a.name() == "value" && a.has_t()) t = &a.t();
    if (!t) return false;
    int64_t n = 1;
    for (int64_t d : t->dims()) n *= d;
    if (n != 1) return false;
    switch (t->data_type()) {
      case onnx::TensorProto::FLOAT: *v = onnx::ParseData<float>(t)[0]; return true;
      case onnx::TensorProto::DOUBLE: *v = onnx::ParseData<double>(t)[0]; return true;
      case onnx::TensorProto::INT64: *v = static_cast<double>(onnx::ParseData<int64_t>(t)[0]); return true;
      case onnx::TensorProto::INT32: *v = onnx::ParseData<int32_t>(t)[0]; return true;
      default: return false;
    }
  }
  bool ScalarIs(const std::string& name, double want, double tol = 1e-4) const {
    double v;
    return Scalar(name, &v) && std::abs(v - want) <= tol * std::max(1.0, std::abs(want));
  }
  bool IsConst(const std::string& name) const {
    const ValueInfo* v = m_.Find(name);
    return v && v->is_const;
  }
  // The input of a two-input node that is not `one` ("" when neither or both are).
  static std::string Other(const Node& n, const std::string& one) {
    if (n.inputs.size() != 2) return "";
    if (n.inputs[0] == one && n.inputs[1] != one) return n.inputs[1];
    if (n.inputs[1] == one && n.inputs[0] != one) return n.inputs[0];
    return "";
  }

 private:
  const OnnxModel& m_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> readers_;
  std::map<std::string, const onnx::TensorProto*> inits_;
};

void Add(OpPattern* p, const Node* n) {
  p->nodes.push_back(n->name);
  p->ops.push_back(n->op_type);
}

// ReduceMean(x) -> Sub(x, mean) -> Pow(d, 2) | Mul(d, d) -> ReduceMean -> Add(eps) -> Sqrt -> Div(d, .)
// [-> Mul(gamma) -> Add(beta)].
bool MatchLayerNorm(const Matcher& mt, const Node& r1, OpPattern* p) {
  if (r1.inputs.empty() || r1.outputs.empty()) return false;
  const std::string& x = r1.inputs[0];
  const Node* sub = mt.Reader(r1.outputs[0], "Sub");
  if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != r1.outputs[0]) return false;
  const std::string& d = sub->outputs[0];
  const Node* sq = mt.Reader(d, "Pow");
  if (sq && !(sq->inputs[0] == d && sq->inputs.size() == 2 && mt.ScalarIs(sq->inputs[1], 2))) sq = nullptr;
  if (!sq) {
    sq = mt.Reader(d, "Mul");
    if (sq && !(sq->inputs.size() == 2 && sq->inputs[0] == d && sq->inputs[1] == d)) sq = nullptr;
  }
  if (!sq) return false;
  const Node* r2 = mt.Reader(sq->outputs[0], "ReduceMean");
  if (!r2) return false;
  const Node* add = mt.Reader(r2->outputs[0], "Add");
  if (!add || !mt.IsConst(Matcher::Other(*add, r2->outputs[0]))) return false;
  const Node* sqrt = mt.Reader(add->outputs[0], "Sqrt");
  if (!sqrt) return false;
  const Node* div = mt.Reader(sqrt->outputs[0], "Div");
  if (!div || div->inputs.size() != 2 || div->inputs[0] != d) return false;
  p->kind = "layernorm";
  for (const Node* n : {&r1, sub, sq, r2, add, sqrt, div}) Add(p, n);
  // The affine part, when it reads only constants.
  if (mt.Readers(div->outputs[0]) == 1)
    if (const Node* mul = mt.Reader(div->outputs[0], "Mul"); mul && mt.IsConst(Matcher::Other(*mul, div->outputs[0]))) {
      Add(p, mul);
      if (mt.Readers(mul->outputs[0]) == 1)
        if (const Node* bias = mt.Reader(mul->outputs[0], "Add"); bias && mt.IsConst(Matcher::Other(*bias, mul->outputs[0])))
          Add(p, bias);
    }
  return true;
}

// Exact GELU around an Erf: Div(x, sqrt2) | Mul(x, 1/sqrt2) -> Erf -> Add(1) -> then either
// Mul(x) -> Mul(0.5) (PyTorch), or Mul(Mul(x, 0.5)) (TensorFlow).
bool MatchGelu(const Matcher& mt, const Node& erf, OpPattern* p) {
  if (erf.inputs.empty() || erf.outputs.empty()) return false;
  const Node* pre = mt.Producer(erf.inputs[0]);
  if (!pre || pre->inputs.size() != 2) return false;
  std::string x;
  if (pre->op_type == "Div" && mt.ScalarIs(pre->inputs[1], std::sqrt(2.0))) x = pre->inputs[0];
  else if (pre->op_type == "Mul") {
    for (int i = 0; i < 2; ++i)
      if (mt.ScalarIs(pre->inputs[i], 1 / std::sqrt(2.0))) x = pre->inputs[1 - i];
  }
  if (x.empty()) return false;
  const Node* one = mt.Reader(erf.outputs[0], "Add");
  if (!one || !mt.ScalarIs(Matcher::Other(*one, erf.outputs[0]), 1)) return false;
  const Node* mul = mt.Reader(one->outputs[0], "Mul");
  if (!mul) return false;
  std::string other = Matcher::Other(*mul, one->outputs[0]);
  const Node* last = nullptr;
  const Node* half = nullptr;
  if (other == x) {
    last = mt.Reader(mul->outputs[0], "Mul");
    if (!last || !mt.ScalarIs(Matcher::Other(*last, mul->outputs[0]), 0.5)) return false;
  } else {
    half = mt.Producer(other);
    if (!half || half->op_type != "Mul" || !mt.ScalarIs(Matcher::Other(*half, x), 0.5)) return false;
  }
  p->kind = "gelu";
  if (half) Add(p, half);
  for (const Node* n : {pre, &erf, one, mul}) Add(p, n);
  if (last) Add(p, last);
  return true;
}

}  // namespace

std::vector<OpPattern> FindOpPatterns(const OnnxModel& m) {
  Matcher mt(m);
  std::vector<OpPattern> out;
  for (const Node& n : m.nodes()) {
    OpPattern p;
    bool ms = n.domain.empty() || n.domain == "com.microsoft";
    if (n.op_type == "ReduceMean" && n.domain.empty() && MatchLayerNorm(mt, n, &p)) out.push_back(p);
    else if (n.op_type == "Erf" && n.domain.empty() && MatchGelu(mt, n, &p)) out.push_back(p);
    else if (ms && (n.op_type == "LayerNormalization" || n.op_type == "Gelu")) {
      p.kind = n.op_type == "Gelu" ? "gelu" : "layernorm";
      p.fused = true;
      Add(&p, &n);
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace edgedecode::scan
