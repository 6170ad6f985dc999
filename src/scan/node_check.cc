// Checking one node against its constraint object (docs/profiles.md, "Constraint object").
#include "scan/node_check.h"

#include "scan/onnx_checks.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace edgedecode::scan {

namespace {

const onnx::AttributeProto* Attr(const Node& n, const std::string& name) {
  for (const auto& a : n.proto->attribute()) if (a.name() == name) return &a;
  return nullptr;
}

std::vector<int64_t> Ints(const Node& n, const std::string& name) {
  const onnx::AttributeProto* a = Attr(n, name);
  if (!a) return {};
  if (a->type() == onnx::AttributeProto::INT) return {a->i()};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::string Str(const Node& n, const std::string& name, const std::string& def) {
  const onnx::AttributeProto* a = Attr(n, name);
  return a && a->type() == onnx::AttributeProto::STRING ? a->s() : def;
}

// ONNX defaults for the attributes profiles constrain (only where a default exists).
bool DefaultAttr(const Node& n, const std::string& name, nlohmann::json* v) {
  if (name == "mode") { *v = n.op_type == "Pad" ? "constant" : n.op_type == "RoiAlign" ? "avg" : "nearest"; return true; }
  if (name == "coordinate_transformation_mode") { *v = "half_pixel"; return true; }
  if (name == "nearest_mode") { *v = "round_prefer_floor"; return true; }
  if (name == "auto_pad") { *v = "NOTSET"; return true; }
  if (name == "direction") { *v = "forward"; return true; }
  if (name == "axis" && (n.op_type == "Softmax" || n.op_type == "LogSoftmax")) { *v = n.opset >= 13 ? -1 : 1; return true; }
  static const std::set<std::string> zero = {"ceil_mode", "count_include_pad", "storage_order", "input_forget",
                                             "training_mode", "select_last_index", "layout"};
  if (zero.count(name)) { *v = 0; return true; }
  return false;
}

// The attribute's values as JSON (each int of an ints attribute), or its ONNX default; *present says which.
std::vector<nlohmann::json> AttrValues(const Node& n, const std::string& name, bool* present) {
  std::vector<nlohmann::json> vals;
  const onnx::AttributeProto* a = Attr(n, name);
  *present = a != nullptr;
  if (a) {
    if (a->type() == onnx::AttributeProto::STRING) vals.push_back(a->s());
    else if (a->type() == onnx::AttributeProto::INT) vals.push_back(a->i());
    else if (a->type() == onnx::AttributeProto::INTS) for (int64_t x : a->ints()) vals.push_back(x);
    else if (a->type() == onnx::AttributeProto::FLOAT) vals.push_back(a->f());
    else if (a->type() == onnx::AttributeProto::FLOATS) for (float x : a->floats()) vals.push_back(x);
  } else {
    nlohmann::json d;
    if (DefaultAttr(n, name, &d)) vals.push_back(d);
  }
  return vals;
}

std::string Text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Join(const std::vector<nlohmann::json>& arr) {
  std::string s;
  for (const auto& x : arr) s += (s.empty() ? "" : ", ") + Text(x);
  return "[" + s + "]";
}

template <typename T>
std::string JoinNum(const std::vector<T>& v) {
  std::string s;
  for (const auto& x : v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
    s += (s.empty() ? "" : ", ") + std::string(buf);
  }
  return "[" + s + "]";
}

// Kernel of a Conv/ConvTranspose (attribute, else the weight's spatial dims) or pooling op.
std::vector<int64_t> Kernel(const OnnxModel& m, const Node& n) {
  std::vector<int64_t> k = Ints(n, "kernel_shape");
  if (k.empty() && (n.op_type == "Conv" || n.op_type == "ConvTranspose") && n.inputs.size() > 1) {
    const ValueInfo* w = m.Find(n.inputs[1]);
    if (w && w->fully_known() && w->dims.size() > 2)
      for (size_t i = 2; i < w->dims.size(); ++i) k.push_back(w->dims[i].value);
  }
  return k;
}

const ValueInfo* Input(const OnnxModel& m, const Node& n, size_t i) {
  return i < n.inputs.size() && !n.inputs[i].empty() ? m.Find(n.inputs[i]) : nullptr;
}

// Total padding (begin + end) per spatial axis of a conv/pool node; nullopt when it depends on unknown shapes.
std::optional<std::vector<int64_t>> PadTotals(const OnnxModel& m, const Node& n) {
  std::vector<int64_t> k = Kernel(m, n);
  if (k.empty()) return std::nullopt;
  const size_t r = k.size();
  std::string ap = Str(n, "auto_pad", "NOTSET");
  std::vector<int64_t> totals(r, 0);
  if (ap == "VALID") return totals;
  if (ap == "NOTSET") {
    std::vector<int64_t> pads = Ints(n, "pads");
    if (pads.empty()) return totals;
    if (pads.size() != 2 * r) return std::nullopt;
    for (size_t i = 0; i < r; ++i) totals[i] = pads[i] + pads[i + r];
    return totals;
  }
  const ValueInfo* x = Input(m, n, 0);
  if (!x || !x->fully_known() || x->dims.size() != r + 2) return std::nullopt;
  std::vector<int64_t> s = Ints(n, "strides"), d = Ints(n, "dilations");
  for (size_t i = 0; i < r; ++i) {
    int64_t in = x->dims[i + 2].value, st = i < s.size() ? s[i] : 1, di = i < d.size() ? d[i] : 1;
    int64_t out = (in + st - 1) / st, eff = (k[i] - 1) * di + 1;
    totals[i] = std::max<int64_t>((out - 1) * st + eff - in, 0);
  }
  return totals;
}

bool AllZero(const std::optional<std::vector<int64_t>>& v) {
  return v && std::all_of(v->begin(), v->end(), [](int64_t x) { return x == 0; });
}

// Pad's pads: input 1 (opset >= 11, when constant) or the attribute.
std::optional<std::vector<double>> PadPads(const OnnxModel& m, const Node& n) {
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) return m.ConstantValues(n.inputs[1]);
  std::vector<int64_t> p = Ints(n, "pads");
  return std::vector<double>(p.begin(), p.end());
}

}  // namespace

bool AttributeHasNoEffect(const OnnxModel& m, const Node& n, const std::string& name) {
  const bool pool = n.op_type == "AveragePool" || n.op_type == "MaxPool" || n.op_type == "LpPool";
  if (name == "count_include_pad" && n.op_type == "AveragePool") return AllZero(PadTotals(m, n));
  if (name == "ceil_mode" && pool) {
    // Ceil and floor give the same output size when every window fits exactly.
    auto totals = PadTotals(m, n);
    const ValueInfo* x = Input(m, n, 0);
    std::vector<int64_t> k = Kernel(m, n), s = Ints(n, "strides"), d = Ints(n, "dilations");
    if (!totals || !x || !x->fully_known() || x->dims.size() != k.size() + 2) return false;
    for (size_t i = 0; i < k.size(); ++i) {
      int64_t st = i < s.size() ? s[i] : 1, di = i < d.size() ? d[i] : 1;
      int64_t span = x->dims[i + 2].value + (*totals)[i] - ((k[i] - 1) * di + 1);
      if (span < 0 || span % st != 0) return false;
    }
    return true;
  }
  if (name == "storage_order" && n.op_type == "MaxPool")  // only the Indices output depends on it
    return n.outputs.size() < 2 || n.outputs[1].empty() || !m.IsUsed(n.outputs[1]);
  if (name == "mode" && n.op_type == "Pad") {
    auto pads = PadPads(m, n);
    return pads && std::all_of(pads->begin(), pads->end(), [](double x) { return x == 0; });
  }
  if (n.op_type == "Resize" || n.op_type == "Upsample") {
    const std::string mode = Str(n, "mode", "nearest");
    if (name == "nearest_mode") return mode != "nearest";
    if (name == "cubic_coeff_a" || name == "exclude_outside") return mode != "cubic";
    if (name == "extrapolation_value") return Str(n, "coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize";
  }
  if (name == "select_last_index" && (n.op_type == "ArgMax" || n.op_type == "ArgMin")) {
    // One element along the axis: no ties to break.
    const ValueInfo* x = Input(m, n, 0);
    std::vector<int64_t> axis = Ints(n, "axis");
    if (!x || !x->has_shape || x->dims.empty()) return false;
    int64_t a = axis.empty() ? 0 : axis[0];
    if (a < 0) a += static_cast<int64_t>(x->dims.size());
    return a >= 0 && a < static_cast<int64_t>(x->dims.size()) && x->dims[a].value == 1;
  }
  return false;
}

namespace {

struct Ctx {
  const OnnxModel& m;
  const Node& n;
  const ScanOptions& o;
  std::vector<const ValueInfo*> checked;  // input 0 and every output that is used
};

// An attribute's values that matter: dilations on axes whose kernel is 1 have no effect and are dropped.
std::vector<nlohmann::json> EffectiveValues(const Ctx& x, const std::string& name, bool* present) {
  std::vector<nlohmann::json> vals = AttrValues(x.n, name, present);
  // Reduce*'s axes (an attribute before opset 18) default to every axis.
  if (name == "axes" && !*present && x.n.op_type.rfind("Reduce", 0) == 0 && !x.checked.empty() && x.checked[0] && x.checked[0]->has_shape)
    for (size_t i = 0; i < x.checked[0]->dims.size(); ++i) vals.push_back(static_cast<int64_t>(i));
  if (name == "dilations" && *present) {
    std::vector<int64_t> k = Kernel(x.m, x.n);
    std::vector<nlohmann::json> kept;
    for (size_t i = 0; i < vals.size(); ++i) if (i >= k.size() || k[i] != 1) kept.push_back(vals[i]);
    vals = kept;
  }
  return vals;
}

int AxisIndex(const std::string& axis, size_t rank) {
  if (axis == "batch") return rank >= 1 ? 0 : -1;
  if (axis == "channel") return rank >= 2 ? 1 : -1;
  if (axis == "height") return rank >= 4 ? 2 : -1;
  return rank >= 3 ? static_cast<int>(rank) - 1 : -1;  // width: the last axis
}

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b)); }

// "layer" (B is one element), "element" (same shape), "channel" (only axis 1, equal to A's), else "other".
std::string BroadcastKind(const ValueInfo& a, const ValueInfo& b) {
  const ValueInfo& big = a.elements() >= b.elements() ? a : b;
  const ValueInfo& small = &big == &a ? b : a;
  if (a.dims.size() == b.dims.size()) {
    bool same = true;
    for (size_t i = 0; i < a.dims.size(); ++i) same &= a.dims[i].value == b.dims[i].value;
    if (same) return "element";
  }
  if (small.elements() == 1) return "layer";
  if (small.dims.size() > big.dims.size() || big.dims.size() < 2) return "other";
  std::vector<int64_t> s(big.dims.size() - small.dims.size(), 1);
  for (const Dim& d : small.dims) s.push_back(d.value);
  for (size_t i = 0; i < s.size(); ++i)
    if (i == 1 ? s[i] != big.dims[1].value : s[i] != 1) return "other";
  return "channel";
}

// One alternative of input_values; on failure *why says which value broke it, *computed if it is not constant.
bool ValueRuleHolds(const Ctx& x, const ValueRule& rule, std::string* why, bool* computed) {
  for (const auto& [key, allowed] : rule) {
    std::optional<std::vector<double>> vals;
    bool absent = false;
    std::string label;
    if (!key.empty() && std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      size_t i = std::stoul(key.substr(0, 9));
      label = "input " + key;
      absent = i >= x.n.inputs.size() || x.n.inputs[i].empty();
      if (!absent) {
        vals = x.m.ConstantValues(x.n.inputs[i]);
        if (!vals) { *computed = true; *why = label + " '" + x.n.inputs[i] + "' is computed at run time (its value must be known)"; return false; }
      }
    } else {
      label = "attribute " + key;
      const onnx::AttributeProto* a = Attr(x.n, key);
      absent = a == nullptr;
      if (a) {
        vals.emplace();
        if (a->type() == onnx::AttributeProto::FLOAT) vals->push_back(a->f());
        else if (a->type() == onnx::AttributeProto::INT) vals->push_back(static_cast<double>(a->i()));
        else { for (float f : a->floats()) vals->push_back(f); for (int64_t i : a->ints()) vals->push_back(static_cast<double>(i)); }
      }
    }
    std::vector<double> nums;
    bool null_ok = false;
    for (const auto& v : allowed) { if (v) nums.push_back(*v); else null_ok = true; }
    if (absent) {
      if (!null_ok) { *why = label + " is absent, the device needs one of " + JoinNum(nums); return false; }
      continue;
    }
    for (double v : *vals)
      if (std::none_of(nums.begin(), nums.end(), [&](double a) { return Near(v, a); })) {
        *why = label + " = " + JoinNum(*vals) + ", the device takes " + JoinNum(nums) + (null_ok ? " or none" : "");
        return false;
      }
  }
  return true;
}

NodeCheck CheckConstraint(const Ctx& x, const Constraint& k) {
  using R = FallbackReason;
  if (k.dtypes) {
    std::set<std::string> ok(k.dtypes->begin(), k.dtypes->end());
    for (const ValueInfo* v : x.checked) {
      if (!v || !v->elem_type) continue;
      // Shape arithmetic (int64 vectors) is evaluated by the converter once shapes are static.
      if ((v->elem_type == onnx::TensorProto::INT64 || v->elem_type == onnx::TensorProto::INT32) && v->has_shape && v->dims.size() <= 1) continue;
      std::string t = ElemTypeName(v->elem_type);
      if (x.o.quantized && (t == "float32" || t == "float16") && !ok.count(t)) t = "int8";
      if (!ok.count(t)) {
        std::vector<nlohmann::json> d(k.dtypes->begin(), k.dtypes->end());
        return {R::kDtypeNotSupported, v->name + " is " + t + ", device takes " + Join(d)};
      }
    }
  }
  if (k.static_shapes.value_or(false))
    for (const ValueInfo* v : x.checked)
      if (v && !v->is_const && !v->fully_known())
        return {R::kDynamicShape, v->name + " has shape " + v->ShapeString() + " (fix it with --input-shape)"};
  for (const ValueInfo* v : x.checked) {
    if (!v || !v->has_shape) continue;
    const int64_t rank = static_cast<int64_t>(v->dims.size());
    if (k.max_rank && *k.max_rank && rank > *k.max_rank)
      return {R::kRankLimit, v->name + " has rank " + std::to_string(rank) + " > " + std::to_string(*k.max_rank)};
    if (k.min_rank && rank < *k.min_rank)
      return {R::kRankLimit, v->name + " has rank " + std::to_string(rank) + " < " + std::to_string(*k.min_rank)};
    if (k.max_dim && *k.max_dim)
      for (const Dim& d : v->dims)
        if (d.known() && d.value > *k.max_dim)
          return {R::kDimLimit, v->name + " dimension " + std::to_string(d.value) + " > " + std::to_string(*k.max_dim)};
    if (k.dim_limits)
      for (const auto& [axis, range] : *k.dim_limits) {
        int i = AxisIndex(axis, v->dims.size());
        if (i < 0 || !v->dims[i].known()) continue;
        int64_t d = v->dims[i].value;
        if (d < range.lo || d > range.hi)
          return {R::kDimLimit, v->name + " " + axis + " " + std::to_string(d) + " outside [" + std::to_string(range.lo) + ", " +
                                    std::to_string(range.hi) + "]"};
      }
  }
  if (k.max_spatial_size && !x.checked.empty() && x.checked[0] && x.checked[0]->fully_known() && x.checked[0]->dims.size() >= 3) {
    std::optional<int64_t> prod = 1;
    for (size_t i = 2; i < x.checked[0]->dims.size() && prod; ++i) prod = CheckedMul(*prod, x.checked[0]->dims[i].value);
    if (!prod || *prod > *k.max_spatial_size)
      return {R::kDimLimit, x.checked[0]->name + " spatial size " + (prod ? std::to_string(*prod) : std::string("past 2^63")) + " > " +
                                std::to_string(*k.max_spatial_size)};
  }
  if (k.max_batch && !x.checked.empty() && x.checked[0] && x.checked[0]->has_shape) {
    size_t axis = static_cast<size_t>(k.batch_axis.value_or(0));
    const auto& dims = x.checked[0]->dims;
    if (dims.size() >= 2 && axis < dims.size() && dims[axis].known() && dims[axis].value > *k.max_batch)
      return {R::kBatchLimit, "batch " + std::to_string(dims[axis].value) + " > " + std::to_string(*k.max_batch)};
  }
  if (k.attrs)
    for (const auto& [name, allowed] : *k.attrs) {
      if (AttributeHasNoEffect(x.m, x.n, name)) continue;
      bool present = false;
      std::vector<nlohmann::json> vals = EffectiveValues(x, name, &present);
      // auto_pad VALID / SAME_* that pads nothing is NOTSET with zero pads.
      if (name == "auto_pad" && AllZero(PadTotals(x.m, x.n)))
        for (const char* eq : {"NOTSET", "VALID"})
          if (std::find(allowed.begin(), allowed.end(), nlohmann::json(eq)) != allowed.end()) vals.clear();
      for (auto& v : vals) {
        if ((name == "axis" || name == "axes") && v.is_number_integer() && v.get<int64_t>() < 0 && !x.checked.empty() && x.checked[0] && x.checked[0]->has_shape)
          v = v.get<int64_t>() + static_cast<int64_t>(x.checked[0]->dims.size());
        if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
          return {R::kAttributeNotSupported, name + "=" + Text(v) + (present ? "" : " (default)") + " not in " + Join(allowed)};
      }
    }
  if (k.attr_range)
    for (const auto& [name, range] : *k.attr_range) {
      bool present = false;
      std::vector<nlohmann::json> vals = EffectiveValues(x, name, &present);
      if (!present || AttributeHasNoEffect(x.m, x.n, name)) continue;
      for (const auto& v : vals) {
        if (!v.is_number_integer()) continue;
        int64_t i = v.get<int64_t>();
        if (i < range.lo || i > range.hi)
          return {R::kAttributeNotSupported, name + " value " + std::to_string(i) + " outside [" + std::to_string(range.lo) + ", " +
                                                 std::to_string(range.hi) + "]"};
      }
    }
  if (k.const_inputs)
    for (int64_t idx : *k.const_inputs) {
      size_t i = static_cast<size_t>(idx);
      if (i < x.n.inputs.size() && !x.n.inputs[i].empty()) {
        const ValueInfo* v = x.m.Find(x.n.inputs[i]);
        if (!v || !v->is_const) return {R::kNonConstantInput, "input " + std::to_string(i) + " '" + x.n.inputs[i] + "' must be constant"};
      }
    }
  if (k.input_values && !k.input_values->empty()) {
    std::string why, first_why;
    bool computed = false, any = false;
    for (const ValueRule& rule : *k.input_values) {
      why.clear();
      if (ValueRuleHolds(x, rule, &why, &computed)) { any = true; break; }
      if (first_why.empty()) first_why = why;
    }
    if (!any) {
      std::string d = k.input_values->size() > 1 ? first_why + " (and no other allowed combination holds)" : first_why;
      return {computed ? R::kNonConstantInput : R::kInputValueNotSupported, d};
    }
  }
  if ((k.scale_values || k.scale_range || k.equal_spatial_scales.value_or(false)) && !x.n.outputs.empty()) {
    const ValueInfo* in = Input(x.m, x.n, 0);
    const ValueInfo* out = x.m.Find(x.n.outputs[0]);
    if (in && out && in->fully_known() && out->fully_known() && in->dims.size() == out->dims.size()) {
      std::vector<double> scales;
      for (size_t i = in->dims.size() >= 3 ? 2 : 0; i < in->dims.size(); ++i)
        if (in->dims[i].value > 0) scales.push_back(static_cast<double>(out->dims[i].value) / static_cast<double>(in->dims[i].value));
      for (double s : scales) {
        if (k.scale_range && (s < k.scale_range->first - 1e-9 || s > k.scale_range->second + 1e-9))
          return {R::kScaleNotSupported, "scales " + JoinNum(scales) + " outside " +
                                              JoinNum(std::vector<double>{k.scale_range->first, k.scale_range->second})};
        if (k.scale_values && std::none_of(k.scale_values->begin(), k.scale_values->end(), [&](double a) { return Near(s, a); }))
          return {R::kScaleNotSupported, "scales " + JoinNum(scales) + ", the device takes " + JoinNum(*k.scale_values)};
      }
      if (k.equal_spatial_scales.value_or(false) && std::adjacent_find(scales.begin(), scales.end(), [](double a, double b) { return !Near(a, b); }) != scales.end())
        return {R::kScaleNotSupported, "scales " + JoinNum(scales) + " differ between axes; the device scales them equally"};
    }
  }
  if (k.broadcast && x.n.inputs.size() >= 2) {
    const ValueInfo* a = Input(x.m, x.n, 0);
    const ValueInfo* b = Input(x.m, x.n, 1);
    if (a && b && a->fully_known() && b->fully_known()) {
      std::string kind = BroadcastKind(*a, *b);
      if (std::find(k.broadcast->begin(), k.broadcast->end(), kind) == k.broadcast->end()) {
        std::vector<nlohmann::json> allowed(k.broadcast->begin(), k.broadcast->end());
        return {R::kBroadcastNotSupported, a->name + a->ShapeString() + " with " + b->name + b->ShapeString() + " is per-" + kind +
                                               " broadcasting, the device takes " + Join(allowed)};
      }
    }
  }
  if (k.pad_axes && x.n.op_type == "Pad" && !x.checked.empty() && x.checked[0] && x.checked[0]->has_shape) {
    const int64_t rank = static_cast<int64_t>(x.checked[0]->dims.size());
    std::optional<std::vector<double>> pads = PadPads(x.m, x.n);
    bool from_input = x.n.inputs.size() > 1 && !x.n.inputs[1].empty();
    if (!pads && from_input) return {R::kNonConstantInput, "input 1 (pads) '" + x.n.inputs[1] + "' is computed at run time (its value must be known)"};
    if (pads && static_cast<int64_t>(pads->size()) == 2 * rank)
      for (int64_t a = 0; a < rank; ++a) {
        bool allowed = std::any_of(k.pad_axes->begin(), k.pad_axes->end(), [&](int64_t p) { return (p < 0 ? p + rank : p) == a; });
        if (!allowed && ((*pads)[a] != 0 || (*pads)[a + rank] != 0))
          return {from_input ? R::kInputValueNotSupported : R::kAttributeNotSupported,
                  "pads " + JoinNum(*pads) + " pad axis " + std::to_string(a) + ", the device pads only axes " + JoinNum(*k.pad_axes)};
      }
  }
  if (k.cases)
    for (const Case& c : *k.cases) {
      bool match = true;
      for (const auto& [name, values] : c.when) {
        bool present = false;
        std::vector<nlohmann::json> v = AttrValues(x.n, name, &present);
        match &= v.size() == 1 && std::find(values.begin(), values.end(), v[0]) != values.end();
      }
      if (!match) continue;
      NodeCheck r = CheckConstraint(x, *c.then);  // a case holds no cases: one level deep
      if (r.reason) return r;
    }
  return {};
}

}  // namespace

NodeCheck CheckNode(const OnnxModel& m, const Node& n, const Profile& p, const ScanOptions& o) {
  std::string dkey = n.domain.empty() ? "ai.onnx" : n.domain;
  const std::map<std::string, Constraint>* dmap = nullptr;
  if (auto it = p.op_constraints.find(dkey); it != p.op_constraints.end()) dmap = &it->second;
  else if (auto star = p.op_constraints.find("*"); star != p.op_constraints.end()) dmap = &star->second;  // every other domain
  const Constraint* c = nullptr;
  if (dmap) {
    if (auto it = dmap->find(n.op_type); it != dmap->end()) c = &it->second;
    else if (auto star = dmap->find("*"); star != dmap->end()) c = &star->second;
  }
  if (!c) {
    if (!n.domain.empty() && n.domain != "ai.onnx.ml" && !dmap) return {FallbackReason::kCustomDomain, "domain '" + n.domain + "' is not on the device"};
    if (!n.has_schema) return {FallbackReason::kUnknownOp, n.op_type + " is not an ONNX op known to the scanner (libonnx 1.12) nor listed by the profile"};
    return {FallbackReason::kOpNotSupported, n.op_type + " is not in the profile's op list"};
  }
  Constraint k = p.default_constraint;
  k.MergeFrom(*c);
  if (k.not_supported.value_or(false)) return {FallbackReason::kOpNotSupported, k.notes.value_or("listed as not supported")};
  Ctx x{m, n, o, {}};
  if (!n.inputs.empty() && !n.inputs[0].empty()) x.checked.push_back(m.Find(n.inputs[0]));
  bool any_used = std::any_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& out) { return !out.empty() && m.IsUsed(out); });
  for (const auto& out : n.outputs)  // an output nobody reads (Dropout's mask) cannot matter
    if (!out.empty() && (m.IsUsed(out) || !any_used)) x.checked.push_back(m.Find(out));
  return CheckConstraint(x, k);
}

}  // namespace edgedecode::scan
