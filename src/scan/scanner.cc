// Placement scan: profile constraints per node, partitions, transitions, verdict, suggestions.
#include "scan/scanner.h"

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <set>

#include "scan/patterns.h"

namespace edgedecode::scan {

namespace fs = std::filesystem;

namespace {

// The one table of fallback reasons: code (as printed in the reports) and one line of text, in the order
// of the enum. docs/profiles.md "Fallback reasons" documents each row with what triggers it.
struct ReasonRow {
  FallbackReason reason;
  const char* code;
  const char* text;
};
constexpr ReasonRow kReasons[] = {
    {FallbackReason::kOpNotSupported, "op_not_supported",
     "the op is not in the profile's op list, or is listed with not_supported (GGUF: not in llm.ops)"},
    {FallbackReason::kCustomDomain, "custom_domain", "the op's domain is neither ai.onnx, ai.onnx.ml nor a domain the profile lists"},
    {FallbackReason::kUnknownOp, "unknown_op", "the op has no ONNX schema known to the scanner (libonnx 1.12) and the profile does not list it"},
    {FallbackReason::kDtypeNotSupported, "dtype_not_supported",
     "input 0 or an output has an element type not in dtypes (GGUF: a weight type not in llm.matmul_types)"},
    {FallbackReason::kDynamicShape, "dynamic_shape", "static_shapes is set and input 0 or an output has a dimension shape inference left unknown"},
    {FallbackReason::kRankLimit, "rank_limit", "input 0 or an output has more dimensions than max_rank"},
    {FallbackReason::kDimLimit, "dim_limit", "a dimension of input 0 or an output is larger than max_dim"},
    {FallbackReason::kBatchLimit, "batch_limit", "dimension 0 of input 0 is larger than max_batch"},
    {FallbackReason::kAttributeNotSupported, "attribute_not_supported",
     "an attribute value (or its ONNX default) is not in attrs, or an integer of it is outside attr_range"},
    {FallbackReason::kNonConstantInput, "non_constant_input", "an input named in const_inputs is computed at run time, not an initializer or Constant"},
    {FallbackReason::kConstant, "constant", "every output is constant: folded at conversion, so the node runs nowhere (placement folded)"},
};
constexpr FallbackReason kAllReasons[] = {
    FallbackReason::kOpNotSupported, FallbackReason::kCustomDomain,     FallbackReason::kUnknownOp,
    FallbackReason::kDtypeNotSupported, FallbackReason::kDynamicShape,  FallbackReason::kRankLimit,
    FallbackReason::kDimLimit,       FallbackReason::kBatchLimit,       FallbackReason::kAttributeNotSupported,
    FallbackReason::kNonConstantInput, FallbackReason::kConstant,
};
constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < std::size(kReasons); ++i)
    if (static_cast<size_t>(kReasons[i].reason) != i || kAllReasons[i] != kReasons[i].reason) return false;
  return std::size(kReasons) == std::size(kAllReasons) &&
         std::size(kReasons) == static_cast<size_t>(FallbackReason::kConstant) + 1;
}
static_assert(RowsInEnumOrder(), "kReasons: one row per FallbackReason, in declaration order (kConstant last)");

// "" when every key of a constraint object (docs/profiles.md, "Constraint object") has the type the scan reads it
// as, else the first that does not, by its path: a profile is refused at load, not half-used by a scan.
std::string ConstraintTypeError(const nlohmann::json& rule, const std::string& at) {
  auto array_of = [](const nlohmann::json& a, bool (nlohmann::json::*is)() const noexcept) {
    if (!a.is_array()) return false;
    for (const auto& x : a)
      if (!(x.*is)()) return false;
    return true;
  };
  for (auto it = rule.begin(); it != rule.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    const std::string here = at + "." + k;
    if (k == "dtypes" && !array_of(v, &nlohmann::json::is_string)) return here + " must be an array of type names";
    if ((k == "max_rank" || k == "max_dim" || k == "max_batch") && !v.is_number_integer()) return here + " must be an integer";
    if ((k == "static_shapes" || k == "not_supported") && !v.is_boolean()) return here + " must be true or false";
    if (k == "notes" && !v.is_string()) return here + " must be a string";
    if (k == "const_inputs" && (!array_of(v, &nlohmann::json::is_number_integer) ||
                                std::any_of(v.begin(), v.end(), [](const auto& x) { return x.template get<int64_t>() < 0; })))
      return here + " must be an array of input indices";
    if (k == "attrs" || k == "attr_range") {
      if (!v.is_object()) return here + " must be an object of attribute names";
      for (auto a = v.begin(); a != v.end(); ++a) {
        if (!a.value().is_array()) return here + "." + a.key() + " must be an array";
        if (k == "attr_range" && (a.value().size() != 2 || !array_of(a.value(), &nlohmann::json::is_number_integer)))
          return here + "." + a.key() + " must be [min, max] integers";
      }
    }
  }
  return "";
}

// The same for every constraint object of a profile and its "llm" section.
std::string ProfileTypeError(const Profile& p) {
  if (p.defaults.is_object())
    if (std::string e = ConstraintTypeError(p.defaults, "defaults"); !e.empty()) return e;
  for (auto d = p.ops.begin(); d != p.ops.end(); ++d) {
    if (!d.value().is_object()) continue;
    for (auto op = d.value().begin(); op != d.value().end(); ++op)
      if (op.value().is_object())
        if (std::string e = ConstraintTypeError(op.value(), "ops." + d.key() + "." + op.key()); !e.empty()) return e;
  }
  if (p.llm.is_object())
    for (const char* k : {"matmul_types", "ops"})
      if (p.llm.contains(k) && (!p.llm[k].is_array() || std::any_of(p.llm[k].begin(), p.llm[k].end(), [](const auto& x) { return !x.is_string(); })))
        return std::string("llm.") + k + " must be an array of strings";
  return "";
}

}  // namespace

const char* FallbackReasonCode(FallbackReason r) { return kReasons[static_cast<size_t>(r)].code; }
const char* FallbackReasonText(FallbackReason r) { return kReasons[static_cast<size_t>(r)].text; }
std::span<const FallbackReason> AllFallbackReasons() { return kAllReasons; }

const char* PlacementName(Placement p) {
  switch (p) {
    case Placement::kAccel: return "accel";
    case Placement::kCpu: return "cpu";
    default: return "folded";
  }
}

Result<Profile> Profile::FromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return Corrupt(where + ": a profile must be a JSON object");
  Profile p;
  p.raw = j;
  try {
    p.name = j.value("name", fs::path(where).stem().string());
    p.accelerator = j.value("accelerator", std::string("NPU"));
    p.estimate = j.value("estimate", false);
    p.memory_bytes = j.value("memory_bytes", int64_t{0});
    p.bandwidth = j.value("bandwidth_bytes_per_s", 1e9);
    p.transition_latency = j.value("transition_latency_s", 0.0);
    if (j.contains("defaults")) p.defaults = j["defaults"];
    if (!j.contains("ops") || !j["ops"].is_object()) return Corrupt(where + ": no \"ops\" object");
    p.ops = j["ops"];
    if (j.contains("llm")) p.llm = j["llm"];
    const auto& src = j.contains("source") ? (j["source"].is_array() && !j["source"].empty() ? j["source"][0] : j["source"]) : nlohmann::json();
    if (src.is_object()) p.source = src.value("document", std::string()) + ", " + src.value("version", std::string());
  } catch (const std::exception& e) {
    return Corrupt(where + ": bad profile field: " + e.what());
  }
  if (p.bandwidth <= 0) return Corrupt(where + ": bandwidth_bytes_per_s must be > 0");
  if (std::string e = ProfileTypeError(p); !e.empty()) return Corrupt(where + ": " + e);
  return p;
}

Result<Profile> Profile::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open profile");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Corrupt(path + ": not valid JSON");
  return FromJson(j, path);
}

namespace {

const onnx::AttributeProto* Attr(const Node& n, const std::string& name) {
  for (const auto& a : n.proto->attribute()) if (a.name() == name) return &a;
  return nullptr;
}

// ONNX defaults for the attributes profiles constrain (only where a default exists).
bool DefaultAttr(const Node& n, const std::string& name, nlohmann::json* v) {
  if (name == "mode") { *v = n.op_type == "Pad" ? "constant" : n.op_type == "RoiAlign" ? "avg" : "nearest"; return true; }
  if (name == "coordinate_transformation_mode") { *v = "half_pixel"; return true; }
  if (name == "auto_pad") { *v = "NOTSET"; return true; }
  if (name == "axis" && (n.op_type == "Softmax" || n.op_type == "LogSoftmax")) { *v = n.opset >= 13 ? -1 : 1; return true; }
  static const std::set<std::string> zero = {"ceil_mode", "count_include_pad", "storage_order", "input_forget",
                                             "training_mode", "select_last_index"};
  if (zero.count(name)) { *v = 0; return true; }
  return false;
}

std::string Join(const nlohmann::json& arr) {
  std::string s;
  for (const auto& x : arr) s += (s.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
  return "[" + s + "]";
}

std::string Desc(const OnnxModel& m, const std::string& name) {
  const ValueInfo* v = m.Find(name);
  if (!v) return name + " ?";
  return name + " " + ElemTypeName(v->elem_type) + v->ShapeString() + (v->is_const ? " const" : "");
}

struct Check {
  std::optional<FallbackReason> reason;  // empty: the accelerator runs it
  std::string detail;
};

Check CheckNode(const OnnxModel& m, const Node& n, const Profile& p, const ScanOptions& o) {
  std::string dkey = n.domain.empty() ? "ai.onnx" : n.domain;
  const nlohmann::json* dmap = nullptr;
  if (p.ops.contains(dkey)) dmap = &p.ops[dkey];
  else if (p.ops.contains("*")) dmap = &p.ops["*"];  // "*" as a domain: every domain the profile does not name
  const nlohmann::json* c = nullptr;
  if (dmap && dmap->is_object()) {
    if (dmap->contains(n.op_type)) c = &(*dmap)[n.op_type];
    else if (dmap->contains("*")) c = &(*dmap)["*"];
  }
  if (!c) {
    if (!n.domain.empty() && n.domain != "ai.onnx.ml" && !dmap) return {FallbackReason::kCustomDomain, "domain '" + n.domain + "' is not on the device"};
    if (!n.has_schema) return {FallbackReason::kUnknownOp, n.op_type + " is not an ONNX op known to the scanner (libonnx 1.12) nor listed by the profile"};
    return {FallbackReason::kOpNotSupported, n.op_type + " is not in the profile's op list"};
  }
  nlohmann::json k = p.defaults.is_object() ? p.defaults : nlohmann::json::object();
  if (c->is_object()) for (auto it = c->begin(); it != c->end(); ++it) k[it.key()] = it.value();
  if (k.value("not_supported", false)) return {FallbackReason::kOpNotSupported, k.value("notes", std::string("listed as not supported"))};

  std::vector<const ValueInfo*> checked;  // input 0 and every output
  if (!n.inputs.empty() && !n.inputs[0].empty()) checked.push_back(m.Find(n.inputs[0]));
  for (const auto& out : n.outputs) if (!out.empty()) checked.push_back(m.Find(out));
  if (k.contains("dtypes")) {
    std::set<std::string> ok;
    for (const auto& t : k["dtypes"]) ok.insert(t.get<std::string>());
    for (const ValueInfo* v : checked) {
      if (!v || !v->elem_type) continue;
      // Shape arithmetic (int64 vectors) is evaluated by the converter once shapes are static.
      if ((v->elem_type == onnx::TensorProto::INT64 || v->elem_type == onnx::TensorProto::INT32) && v->has_shape && v->dims.size() <= 1) continue;
      std::string t = ElemTypeName(v->elem_type);
      if (o.quantized && (t == "float32" || t == "float16") && !ok.count(t)) t = "int8";
      if (!ok.count(t)) return {FallbackReason::kDtypeNotSupported, v->name + " is " + t + ", device takes " + Join(k["dtypes"])};
    }
  }
  if (k.value("static_shapes", false))
    for (const ValueInfo* v : checked)
      if (v && !v->is_const && !v->fully_known())
        return {FallbackReason::kDynamicShape, v->name + " has shape " + v->ShapeString() + " (fix it with --input-shape)"};
  int64_t max_rank = k.value("max_rank", int64_t{0}), max_dim = k.value("max_dim", int64_t{0});
  for (const ValueInfo* v : checked) {
    if (!v || !v->has_shape) continue;
    if (max_rank && static_cast<int64_t>(v->dims.size()) > max_rank)
      return {FallbackReason::kRankLimit, v->name + " has rank " + std::to_string(v->dims.size()) + " > " + std::to_string(max_rank)};
    if (max_dim)
      for (const Dim& d : v->dims)
        if (d.known() && d.value > max_dim)
          return {FallbackReason::kDimLimit, v->name + " dimension " + std::to_string(d.value) + " > " + std::to_string(max_dim)};
  }
  if (k.contains("max_batch") && !checked.empty() && checked[0] && checked[0]->has_shape && checked[0]->dims.size() >= 2) {
    const Dim& b = checked[0]->dims[0];
    if (b.known() && b.value > k["max_batch"].get<int64_t>())
      return {FallbackReason::kBatchLimit, "batch " + std::to_string(b.value) + " > " + k["max_batch"].dump()};
  }
  if (k.contains("attrs") && k["attrs"].is_object())
    for (auto it = k["attrs"].begin(); it != k["attrs"].end(); ++it) {
      const onnx::AttributeProto* a = Attr(n, it.key());
      std::vector<nlohmann::json> vals;
      if (a) {
        if (a->type() == onnx::AttributeProto::STRING) vals.push_back(a->s());
        else if (a->type() == onnx::AttributeProto::INT) vals.push_back(a->i());
        else if (a->type() == onnx::AttributeProto::INTS) for (int64_t x : a->ints()) vals.push_back(x);
        else if (a->type() == onnx::AttributeProto::FLOAT) vals.push_back(a->f());
      } else {
        nlohmann::json d;
        if (DefaultAttr(n, it.key(), &d)) vals.push_back(d);
      }
      for (auto& v : vals) {
        if (it.key() == "axis" && v.is_number_integer() && v.get<int64_t>() < 0 && !checked.empty() && checked[0] && checked[0]->has_shape)
          v = v.get<int64_t>() + static_cast<int64_t>(checked[0]->dims.size());
        bool found = false;
        for (const auto& allowed : it.value()) found |= allowed == v;
        if (!found)
          return {FallbackReason::kAttributeNotSupported, it.key() + "=" + (v.is_string() ? v.get<std::string>() : v.dump()) +
                                                 (a ? "" : " (default)") + " not in " + Join(it.value())};
      }
    }
  if (k.contains("attr_range") && k["attr_range"].is_object())
    for (auto it = k["attr_range"].begin(); it != k["attr_range"].end(); ++it) {
      const onnx::AttributeProto* a = Attr(n, it.key());
      if (!a || it.value().size() != 2) continue;
      int64_t lo = it.value()[0], hi = it.value()[1];
      std::vector<int64_t> vals(a->ints().begin(), a->ints().end());
      if (a->type() == onnx::AttributeProto::INT) vals = {a->i()};
      for (int64_t v : vals)
        if (v < lo || v > hi)
          return {FallbackReason::kAttributeNotSupported, it.key() + " value " + std::to_string(v) + " outside [" +
                                                 std::to_string(lo) + ", " + std::to_string(hi) + "]"};
    }
  if (k.contains("const_inputs"))
    for (const auto& idx : k["const_inputs"]) {
      size_t i = idx.get<size_t>();
      if (i < n.inputs.size() && !n.inputs[i].empty()) {
        const ValueInfo* v = m.Find(n.inputs[i]);
        if (!v || !v->is_const) return {FallbackReason::kNonConstantInput, "input " + std::to_string(i) + " '" + n.inputs[i] + "' must be constant"};
      }
    }
  return {};
}

std::string Mib(int64_t b) {
  char buf[64];
  if (b < 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  return buf;
}

int Find(std::vector<int>& p, int x) { return p[x] == x ? x : p[x] = Find(p, p[x]); }

std::string JoinSet(const std::set<std::string>& s) {
  std::string o;
  for (const auto& x : s) o += (o.empty() ? "" : ", ") + x;
  return o;
}

// Decomposed LayerNorm / GELU -> the fused op where the device has it; fused op -> its decomposition (or,
// for GELU without Erf, an approximation) where it has not. One suggestion per kind, naming where.
template <typename AddFn, typename HasFn>
void SuggestPatterns(const OnnxModel& m, const Profile& p, ScanReport* r, AddFn& add, HasFn& has_op) {
  std::map<std::string, const NodeResult*> by_name;
  for (const auto& n : r->nodes) by_name[n.name] = &n;
  struct Group {
    std::vector<const OpPattern*> list;
    std::set<std::string> cpu_ops;  // op types of pattern nodes the device does not have
    bool affine = false;
  };
  std::vector<OpPattern> patterns = FindOpPatterns(m);
  std::map<std::pair<std::string, bool>, Group> groups;
  for (const auto& pt : patterns) {
    Group& g = groups[{pt.kind, pt.fused}];
    g.list.push_back(&pt);
    g.affine |= pt.nodes.size() == 9;
    for (size_t i = 0; i < pt.nodes.size(); ++i) {
      auto it = by_name.find(pt.nodes[i]);
      // Only ops the device does not have: dtype or shape fallbacks have their own suggestions.
      std::optional<FallbackReason> why = it == by_name.end() ? std::nullopt : it->second->reason;
      if (why == FallbackReason::kOpNotSupported || why == FallbackReason::kUnknownOp || why == FallbackReason::kCustomDomain) g.cpu_ops.insert(pt.ops[i]);
    }
  }
  bool ms_gelu = p.ops.contains("com.microsoft") && p.ops["com.microsoft"].contains("Gelu");
  std::string gelu_approx;
  if (has_op("Tanh") && has_op("Mul") && has_op("Add"))
    gelu_approx += "; 0.5x(1+tanh(0.79788(x+0.044715x^3))) uses Tanh, Mul and Add, which it runs, and is within 4.7e-4 of exact GELU";
  if (has_op("Sigmoid") && has_op("Mul"))
    gelu_approx += "; x*sigmoid(1.702x) (Sigmoid, Mul) is within 2.0e-2";
  gelu_approx += gelu_approx.empty() ? "; keep it on the CPU" : " (either changes the model's function: re-check its accuracy)";
  for (const auto& [key, g] : groups) {
    const auto& [kind, fused] = key;
    std::string at;
    for (size_t i = 0; i < g.list.size() && i < 3; ++i) at += (i ? ", " : "") + g.list[i]->nodes[0];
    if (g.list.size() > 3) at += ", ...";
    std::string count = std::to_string(g.list.size()) + " ";
    if (kind == "layernorm" && !fused) {
      std::string shape = std::string("ReduceMean-Sub-Pow-ReduceMean-Add-Sqrt-Div") + (g.affine ? "-Mul-Add" : "");
      if (has_op("LayerNormalization")) {
        int64_t opset = m.opset("");
        add(count + "decomposed LayerNorm (" + shape + " from " + at + "): fuse each into one LayerNormalization, which the device has" +
            (opset < 17 ? "; ai.onnx has it from opset 17 and the model imports opset " + std::to_string(opset) + ", so export at opset >= 17" : ""));
      } else if (!g.cpu_ops.empty()) {
        std::string alt;
        if (g.cpu_ops.count("ReduceMean") && has_op("MatMul")) alt += "; a mean over the last axis is a MatMul by a constant column of 1/N";
        if (g.cpu_ops.count("Pow") && has_op("Mul")) alt += "; Pow(d, 2) is Mul(d, d)";
        if (g.cpu_ops.count("Sqrt") || g.cpu_ops.count("Div"))
          alt += has_op("Pow") && has_op("Mul") ? "; 1/sqrt(v + eps) is Pow(v + eps, -0.5) and a Mul"
                                                : "; without Sqrt/Div (or Pow) the device cannot normalise: keep each norm on the CPU, at a partition boundary";
        add(count + "decomposed LayerNorm (" + shape + " from " + at + "): the device lacks LayerNormalization and " + JoinSet(g.cpu_ops) + alt);
      }
    } else if (kind == "layernorm" && !g.cpu_ops.empty()) {
      std::set<std::string> missing;
      for (const char* op : {"ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Div"}) if (!has_op(op)) missing.insert(op);
      add(count + "LayerNormalization (" + at + ") not on the device: " +
          (missing.empty() ? std::string("decompose it into ReduceMean-Sub-Mul-ReduceMean-Add-Sqrt-Div-Mul-Add, which it runs (exact up to rounding)")
                           : "its decomposition needs " + JoinSet(missing) + ", which the device lacks too: keep it on the CPU"));
    } else if (kind == "gelu" && !fused) {
      if (has_op("Gelu") || ms_gelu)
        add(count + "decomposed GELU (x/sqrt2-Erf-Add-Mul-Mul from " + at + "): fuse each into one Gelu (" +
            (ms_gelu ? "com.microsoft Gelu" : "ai.onnx Gelu, opset 20") + "), which the device has");
      else if (!g.cpu_ops.empty())
        add(count + "decomposed GELU (x/sqrt2-Erf-Add-Mul-Mul from " + at + "): the device lacks " + JoinSet(g.cpu_ops) + gelu_approx);
    } else if (kind == "gelu" && !g.cpu_ops.empty()) {
      if (has_op("Erf") && has_op("Div") && has_op("Add") && has_op("Mul"))
        add(count + "Gelu (" + at + ") not on the device: decompose it into x*0.5*(1+erf(x/sqrt2)) (Div, Erf, Add, Mul), which it runs (exact up to rounding)");
      else
        add(count + "Gelu (" + at + ") not on the device, nor Erf for its exact decomposition" + gelu_approx);
    }
  }
}

void Suggest(const OnnxModel& m, const Profile& p, ScanReport* r) {
  std::set<std::string> seen;
  auto add = [&](const std::string& s) { if (seen.insert(s).second) r->suggestions.push_back(s); };
  auto has_op = [&](const std::string& op) {
    return p.ops.contains("*") || (p.ops.contains("ai.onnx") && (p.ops["ai.onnx"].contains(op) || p.ops["ai.onnx"].contains("*")));
  };
  if (!r->dynamic_inputs.empty()) {
    std::string ex;
    for (const auto& d : r->dynamic_inputs) ex += (ex.empty() ? "" : "; ") + d;
    add("fix dynamic input shapes (" + ex + "): rerun with --input-shape NAME=D0,D1,...; `edgedecode rewrite --input-shape` writes them into the model so every shape becomes static");
  }
  int dynamic = 0;
  for (const NodeResult& n : r->nodes) dynamic += n.reason == FallbackReason::kDynamicShape;
  if (dynamic && r->dynamic_inputs.empty())
    add(std::to_string(dynamic) + " nodes have dynamic shapes although every input is static: a shape computation that "
        "inference does not follow (e.g. Pad pads or Resize sizes from Shape/Slice/Concat); `edgedecode rewrite` "
        "(static-shapes) folds those computations into constants, checked with ONNX Runtime");
  for (const NodeResult& n : r->nodes) {
    if (n.placement != Placement::kCpu) continue;
    if (n.op_type == "Resize" && n.reason == FallbackReason::kAttributeNotSupported && n.detail.rfind("mode=linear", 0) == 0) {
      if (has_op("ConvTranspose"))
        add("Resize mode=linear (" + n.name + ", ...): with an integer scale s it equals a depthwise ConvTranspose (group=C, stride s, kernel 2s or 2s-1, fixed bilinear weights) after repeating the border; `edgedecode rewrite` applies it (resize-to-convtranspose) and verifies with ONNX Runtime");
      else
        add("Resize mode=linear (" + n.name + "): the profile has no ConvTranspose; with an integer scale it equals Resize nearest + a depthwise box Conv (and a crop); `edgedecode rewrite` applies it (resize-to-nearest-conv) and verifies with ONNX Runtime");
    }
    if (n.op_type == "Resize" && n.reason == FallbackReason::kAttributeNotSupported && n.detail.rfind("mode=nearest", 0) == 0)
      add("Resize mode=nearest (" + n.name + "): this device has only bilinear resize; a nearest upsample by integer s is a depthwise ConvTranspose with a box kernel of ones (bit-exact); `edgedecode rewrite` applies it (resize-nearest-to-convtranspose)");
    if (n.reason == FallbackReason::kDtypeNotSupported && n.detail.find("float") != std::string::npos)
      add("float tensors on an integer-only device: quantize the model to int8 (post-training quantization), or rescan with --quantized to see the placement after quantization");
    if (n.reason == FallbackReason::kCustomDomain)
      add("custom-domain op " + n.op_type + " (" + n.domain + "): runs on the CPU only; pre/post-processing ops are best moved out of the model");
    if (n.op_type == "Softmax" && n.reason == FallbackReason::kAttributeNotSupported)
      add("Softmax on an unsupported axis (" + n.name + "): Transpose the axis to 1 around it, or move the Softmax to the end of the model on the CPU");
    if (n.reason == FallbackReason::kNonConstantInput)
      add(n.op_type + " with a computed " + n.detail + " (" + n.name + "): fix input shapes so shape computations fold to constants");
  }
  SuggestPatterns(m, p, r, add, has_op);
  if (p.memory_bytes && r->weight_bytes > p.memory_bytes)
    add("weights (" + Mib(r->weight_bytes) + ") exceed the device memory (" + Mib(p.memory_bytes) + "): quantize or pick a smaller model");
}

}  // namespace

ScanReport Scan(const OnnxModel& m, const Profile& p, const ScanOptions& o) {
  ScanReport r;
  r.model = m.path();
  r.target = p.name;
  r.accelerator = p.accelerator;
  r.bandwidth = p.bandwidth;
  r.memory_bytes = p.memory_bytes;
  r.weight_bytes = m.initializer_bytes();
  r.warnings = m.warnings();
  const auto& nodes = m.nodes();
  bool cpu_profile = p.accelerator == "CPU";
  for (const Node& n : nodes) {
    NodeResult nr;
    nr.name = n.name; nr.op_type = n.op_type; nr.domain = n.domain; nr.opset = n.opset;
    nr.graph = m.graphs()[n.graph].path;
    for (const auto& in : n.inputs) if (!in.empty()) nr.in_desc.push_back(Desc(m, in));
    for (const auto& out : n.outputs) if (!out.empty()) nr.out_desc.push_back(Desc(m, out));
    bool folded = !n.outputs.empty() && n.subgraphs.empty();
    for (const auto& out : n.outputs) {
      const ValueInfo* v = out.empty() ? nullptr : m.Find(out);
      if (!out.empty() && (!v || !v->is_const)) folded = false;
    }
    if (folded) {
      nr.placement = Placement::kFolded;
      nr.reason = FallbackReason::kConstant;
      nr.detail = "constant-folded at conversion";
    } else {
      Check c = CheckNode(m, n, p, o);
      nr.placement = c.reason ? Placement::kCpu : Placement::kAccel;
      nr.reason = c.reason;
      nr.detail = c.detail;
    }
    r.nodes.push_back(nr);
  }
  // Producer of each value.
  std::map<std::string, int> producer;
  for (const Node& n : nodes) for (const auto& out : n.outputs) if (!out.empty()) producer[out] = n.index;
  // Partitions: accelerator nodes joined by accelerator->accelerator edges.
  std::vector<int> parent(nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::pair<std::string, Placement>, bool> copied;
  auto where = [&](Placement pl) { return pl == Placement::kAccel ? p.accelerator : std::string("CPU"); };
  for (const Node& n : nodes) {
    const NodeResult& cn = r.nodes[n.index];
    if (cn.placement == Placement::kFolded) continue;
    for (const auto& in : n.inputs) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end()) continue;
      const NodeResult& pn = r.nodes[it->second];
      if (pn.placement == Placement::kFolded) continue;
      if (pn.placement == Placement::kAccel && cn.placement == Placement::kAccel)
        parent[Find(parent, n.index)] = Find(parent, it->second);
      if (pn.placement != cn.placement && !cpu_profile && !copied[{in, cn.placement}]) {
        copied[{in, cn.placement}] = true;
        const ValueInfo* v = m.Find(in);
        Transition t{in, where(pn.placement), where(cn.placement), v ? v->bytes() : -1};
        if (t.bytes < 0) ++r.unknown_transitions;
        else r.bytes = t.bytes > INT64_MAX - r.bytes ? INT64_MAX : r.bytes + t.bytes;  // saturates (hostile shapes)
        r.transitions.push_back(t);
      }
    }
  }
  std::set<int> roots;
  for (const NodeResult& nr : r.nodes) {
    if (nr.placement == Placement::kAccel) ++r.n_accel;
    else if (nr.placement == Placement::kCpu) ++r.n_cpu;
    else ++r.n_folded;
  }
  for (size_t i = 0; i < nodes.size(); ++i) if (r.nodes[i].placement == Placement::kAccel) roots.insert(Find(parent, static_cast<int>(i)));
  r.partitions = static_cast<int>(roots.size());
  r.seconds = r.bytes / p.bandwidth + p.transition_latency * static_cast<double>(r.transitions.size());
  for (const auto& in : m.graphs()[0].inputs) {
    const ValueInfo* v = m.Find(in);
    if (v && !v->fully_known()) r.dynamic_inputs.push_back(in + " " + v->ShapeString());
  }
  bool too_big = p.memory_bytes && r.weight_bytes > p.memory_bytes;
  if (r.n_cpu == 0 && !too_big) r.verdict = "GOOD";
  else if (r.n_accel == 0 || too_big || r.seconds >= 0.005 || r.unknown_transitions > 0) r.verdict = "BAD";
  else if (r.seconds < 0.0005 && r.transitions.size() <= 2) r.verdict = "OK";
  else r.verdict = "MAYBE";
  Suggest(m, p, &r);
  return r;
}

std::string ScanReport::SummaryLine() const {
  char buf[512];
  int compute = n_accel + n_cpu;
  const std::string& where = accelerator;  // "CPU" for the cpu profile
  std::string unknown = unknown_transitions ? " (+" + std::to_string(unknown_transitions) + " of unknown size)" : "";
  std::snprintf(buf, sizeof buf, "%s: %d/%d nodes on %s in %d partition%s (+%d constant-folded), %zu CPU<->%s transition%s copying %s per %s%s (~%.2f ms at %.1f GB/s); verdict: %s",
                target.c_str(), n_accel, compute, where.c_str(), partitions, partitions == 1 ? "" : "s", n_folded,
                transitions.size(), where.c_str(), transitions.size() == 1 ? "" : "s", Mib(bytes).c_str(), per.c_str(), unknown.c_str(),
                seconds * 1e3, bandwidth / 1e9, verdict.c_str());
  return buf;
}

nlohmann::json ScanReport::ToJson() const {
  nlohmann::json j;
  j["model"] = model; j["target"] = target; j["accelerator"] = accelerator; j["summary"] = SummaryLine();
  j["verdict"] = verdict;
  j["counts"] = {{"accel", n_accel}, {"cpu", n_cpu}, {"folded", n_folded}, {"total", static_cast<int>(nodes.size())}, {"partitions", partitions}};
  j["transfer"] = {{"transitions", transitions.size()}, {"bytes", bytes}, {"unknown_size", unknown_transitions},
                   {"seconds", seconds}, {"bandwidth_bytes_per_s", bandwidth}};
  j["weights_bytes"] = weight_bytes; j["memory_bytes"] = memory_bytes;
  j["dynamic_inputs"] = dynamic_inputs; j["suggestions"] = suggestions; j["warnings"] = warnings;
  j["transitions"] = nlohmann::json::array();
  for (const auto& t : transitions) j["transitions"].push_back({{"tensor", t.tensor}, {"from", t.from}, {"to", t.to}, {"bytes", t.bytes}});
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : nodes)
    j["nodes"].push_back({{"name", n.name}, {"op", n.op_type}, {"domain", n.domain.empty() ? "ai.onnx" : n.domain}, {"opset", n.opset},
                          {"graph", n.graph}, {"placement", PlacementName(n.placement)}, {"reason", n.ReasonCode()}, {"detail", n.detail},
                          {"inputs", n.in_desc}, {"outputs", n.out_desc}});
  return j;
}

namespace {
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) { if (c == '"') o += '"'; o += c; }
  return o + "\"";
}
std::string JoinSemi(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}
}  // namespace

std::string ScanReport::ToCsv() const {
  std::string s = "name,op,domain,opset,graph,placement,reason,detail,inputs,outputs\n";
  for (const auto& n : nodes)
    s += CsvField(n.name) + "," + n.op_type + "," + (n.domain.empty() ? "ai.onnx" : n.domain) + "," + std::to_string(n.opset) + "," +
         CsvField(n.graph) + "," + PlacementName(n.placement) + "," + n.ReasonCode() + "," + CsvField(n.detail) + "," +
         CsvField(JoinSemi(n.in_desc)) + "," + CsvField(JoinSemi(n.out_desc)) + "\n";
  return s;
}

namespace {
std::string Short(const std::string& s, size_t n = 64) {
  return s.size() <= n ? s : s.substr(0, n / 2 - 2) + "..." + s.substr(s.size() - (n / 2 - 1));
}
}  // namespace

std::string ScanReport::ToText(bool all_nodes) const {
  std::string s = SummaryLine() + "\n";
  if (weight_bytes) s += "weights: " + Mib(weight_bytes) + (memory_bytes ? " of " + Mib(memory_bytes) + " device memory" : "") + "\n";
  for (const auto& d : dynamic_inputs) s += "dynamic input: " + d + "\n";
  std::map<std::string, std::vector<const NodeResult*>> by_reason;
  for (const auto& n : nodes) if (n.placement == Placement::kCpu) by_reason[n.ReasonCode()].push_back(&n);  // sorted by code, as printed
  if (!by_reason.empty()) {
    s += "\nfallbacks to CPU (" + std::to_string(n_cpu) + " nodes), by reason:\n";
    for (const auto& [reason, list] : by_reason) {
      s += "  " + reason + " (" + std::to_string(list.size()) + "):\n";
      size_t shown = 0;
      for (const NodeResult* n : list) {
        if (++shown > 25 && !all_nodes) { s += "    ... " + std::to_string(list.size() - 25) + " more (use --all or --csv)\n"; break; }
        std::string outs = n->out_desc.empty() ? "" : n->out_desc[0];
        s += "    " + n->op_type + (n->domain.empty() ? "" : "(" + n->domain + ")") + "-" + std::to_string(n->opset) + "  " +
             Short((n->graph.empty() ? "" : n->graph + "/") + n->name) + "  " + (all_nodes ? n->detail : Short(n->detail, 110)) + "  -> " + Short(outs, 90) + "\n";
      }
    }
  }
  if (!transitions.empty()) {
    s += "\ntransitions:\n";
    size_t shown = 0;
    for (const auto& t : transitions) {
      if (++shown > 20 && !all_nodes) { s += "  ... " + std::to_string(transitions.size() - 20) + " more\n"; break; }
      s += "  " + t.from + " -> " + t.to + "  " + Short(t.tensor) + "  " + (t.bytes < 0 ? std::string("unknown size") : Mib(t.bytes)) + "\n";
    }
  }
  if (all_nodes) {
    s += "\nnodes:\n";
    for (const auto& n : nodes)
      s += std::string("  ") + PlacementName(n.placement) + "  " + n.op_type + "  " + (n.graph.empty() ? "" : n.graph + "/") + n.name +
           (n.reason ? "  [" + n.ReasonCode() + "] " + n.detail : "") + "\n";
  }
  if (!suggestions.empty()) {
    s += "\nsuggestions:\n";
    for (const auto& x : suggestions) s += "  - " + x + "\n";
  }
  for (const auto& w : warnings) s += "note: " + w.substr(0, 300) + "\n";
  return s;
}

}  // namespace edgedecode::scan
