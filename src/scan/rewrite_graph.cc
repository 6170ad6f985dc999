// Graph edits and the Resize replacements. The kernels are derived in BilinearKernel's comments; the
// rewrite is only kept when ONNX Runtime agrees (rewrite.cc), so the derivation is checked on every use.
#include "scan/rewrite_graph.h"

#include <onnx/defs/tensor_proto_util.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>

namespace edgedecode::scan::rw {

NameGen::NameGen(const onnx::GraphProto& g) {
  std::vector<const onnx::GraphProto*> stack = {&g};
  while (!stack.empty()) {
    const onnx::GraphProto* x = stack.back();
    stack.pop_back();
    for (const auto& v : x->input()) used_.insert(v.name());
    for (const auto& v : x->output()) used_.insert(v.name());
    for (const auto& v : x->value_info()) used_.insert(v.name());
    for (const auto& t : x->initializer()) used_.insert(t.name());
    for (const auto& n : x->node()) {
      used_.insert(n.name());
      for (const auto& o : n.output()) used_.insert(o);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) stack.push_back(&a.g());
        for (const auto& sg : a.graphs()) stack.push_back(&sg);
      }
    }
  }
}

std::string NameGen::Make(const std::string& base) {
  std::string name = base;
  for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float x : v) t.add_float_data(x);
  return t;
}

onnx::TensorProto Int64Tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t x : v) t.add_int64_data(x);
  return t;
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) if (a.name() == name) return &a;
  return nullptr;
}

int64_t Opset(const onnx::ModelProto& m, const std::string& domain) {
  for (const auto& o : m.opset_import())
    if (o.domain() == domain || (domain.empty() && o.domain() == "ai.onnx")) return o.version();
  return 0;
}

namespace {

void CollectReads(const onnx::GraphProto& g, std::set<std::string>* used) {
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) if (!in.empty()) used->insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectReads(a.g(), used);
      for (const auto& sg : a.graphs()) CollectReads(sg, used);
    }
  }
}

}  // namespace

std::set<std::string> UsedNames(const onnx::GraphProto& g) {
  std::set<std::string> used;
  CollectReads(g, &used);
  for (const auto& o : g.output()) used.insert(o.name());
  return used;
}

int RemoveNodes(onnx::GraphProto* g, std::set<int> removed) {
  // Names whose producers may have become dead: inputs of removed nodes, growing as producers go.
  std::set<std::string> orphan;
  for (int i : removed) for (const auto& in : g->node(i).input()) orphan.insert(in);
  auto used_now = [&]() {
    std::set<std::string> used;
    for (int i = 0; i < g->node_size(); ++i) {
      if (removed.count(i)) continue;
      onnx::GraphProto one;  // reads of node i, including its subgraphs
      *one.add_node() = g->node(i);
      CollectReads(one, &used);
    }
    for (const auto& o : g->output()) used.insert(o.name());
    return used;
  };
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> used = used_now();
    for (int i = 0; i < g->node_size(); ++i) {
      if (removed.count(i)) continue;
      const auto& n = g->node(i);
      bool feeds_orphan = false, any_used = false;
      for (const auto& o : n.output()) {
        if (o.empty()) continue;
        feeds_orphan |= orphan.count(o) > 0;
        any_used |= used.count(o) > 0;
      }
      if (feeds_orphan && !any_used) {
        removed.insert(i);
        for (const auto& in : n.input()) orphan.insert(in);
        changed = true;
      }
    }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (int i = 0; i < g->node_size(); ++i)
    if (!removed.count(i)) *kept.Add() = std::move(*g->mutable_node(i));
  g->mutable_node()->Swap(&kept);
  // Initializers only the removed nodes read (graph inputs keep theirs: they are part of the signature).
  std::set<std::string> used = UsedNames(*g), inputs;
  for (const auto& in : g->input()) inputs.insert(in.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  for (auto& t : *g->mutable_initializer())
    if (!orphan.count(t.name()) || used.count(t.name()) || inputs.count(t.name())) *inits.Add() = std::move(t);
  g->mutable_initializer()->Swap(&inits);
  return static_cast<int>(removed.size());
}

void PruneValueInfo(onnx::GraphProto* g) {
  std::set<std::string> defined;
  for (const auto& n : g->node()) for (const auto& o : n.output()) defined.insert(o);
  for (const auto& v : g->input()) defined.insert(v.name());
  for (const auto& t : g->initializer()) defined.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (auto& v : *g->mutable_value_info()) if (defined.count(v.name())) *kept.Add() = std::move(v);
  g->mutable_value_info()->Swap(&kept);
}

int NodePosition(const onnx::GraphProto& g, const std::string& output) {
  for (int i = 0; i < g.node_size(); ++i)
    if (g.node(i).output_size() > 0 && g.node(i).output(0) == output) return i;
  return -1;
}

Kernel1D BilinearKernel(int64_t s, bool half_pixel, bool transpose) {
  Kernel1D k;
  if (s <= 1) { k.w = {1.f}; return k; }
  const double sd = static_cast<double>(s);
  if (transpose) {
    if (!half_pixel) {
      // asymmetric: y[s*i + r] = (1 - r/s) x[i] + (r/s) x[i+1], so x[j] reaches o = s*j + d with weight
      // 1 - |d|/s for |d| < s: a triangle of 2s-1 taps starting at d = -(s-1) (pad_begin). The last input
      // column is repeated once on the right (Resize clamps there), pad_end crops to s*W.
      for (int64_t t = 0; t < 2 * s - 1; ++t) k.w.push_back(static_cast<float>(1 - std::abs(double(t - (s - 1))) / sd));
      k.edge_end = 1;
      k.pad_begin = s - 1;
      k.pad_end = s;
    } else {
      // half_pixel: sample position (o + 0.5)/s - 0.5, so x[j] reaches o = s*j + d with weight
      // 1 - |2d + 1 - s| / (2s): taps d = -floor(s/2) ... (2s taps for even s, 2s-1 for odd). Both borders are
      // clamped, so one column is repeated on each side; the pads (s + floor(s/2) each) undo that shift.
      int64_t f = s / 2, taps = s % 2 == 0 ? 2 * s : 2 * s - 1;
      for (int64_t t = 0; t < taps; ++t)
        k.w.push_back(static_cast<float>(1 - std::abs(double(2 * (t - f) + 1 - s)) / (2 * sd)));
      k.edge_begin = k.edge_end = 1;
      k.pad_begin = k.pad_end = s + f;
    }
    return k;
  }
  // Nearest upsampling repeats each input s times; a box (or half-weighted box) filter over it gives the
  // same weights as above: asymmetric y[o] = mean(u[o .. o+s-1]); half_pixel, odd s: mean of the s values
  // centred on o; even s: s+1 values centred on o with half weight at both ends.
  if (!half_pixel) {
    k.w.assign(s, static_cast<float>(1 / sd));
    k.edge_end = 1;
    k.crop_begin = 0;
  } else if (s % 2 == 1) {
    k.w.assign(s, static_cast<float>(1 / sd));
    k.edge_begin = k.edge_end = 1;
    k.crop_begin = s - (s - 1) / 2;
  } else {
    k.w.assign(s + 1, static_cast<float>(1 / sd));
    k.w.front() = k.w.back() = static_cast<float>(1 / (2 * sd));
    k.edge_begin = k.edge_end = 1;
    k.crop_begin = s - s / 2;
  }
  return k;
}

namespace {

bool ConstFloats(const onnx::GraphProto& g, const std::string& name, std::vector<float>* out) {
  for (const auto& t : g.initializer())
    if (t.name() == name && t.data_type() == onnx::TensorProto::FLOAT) { *out = onnx::ParseData<float>(&t); return true; }
  for (const auto& n : g.node())
    if (n.op_type() == "Constant" && n.output_size() == 1 && n.output(0) == name)
      for (const auto& a : n.attribute())
        if (a.name() == "value" && a.has_t() && a.t().data_type() == onnx::TensorProto::FLOAT) {
          *out = onnx::ParseData<float>(&a.t());
          return true;
        }
  return false;
}

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) { if (i) s += ","; s += std::to_string(d[i]); }
  return s + "]";
}

}  // namespace

Result<ResizePlan> PlanResize(const OnnxModel& m, const Node& n) {
  if (n.op_type != "Resize" || !n.domain.empty()) return Unsupported(n.op_type + " is not a Resize");
  if (n.graph != 0) return Unsupported("inside a subgraph (only the main graph is rewritten)");
  if (n.opset < 10) return Unsupported("Resize at opset " + std::to_string(n.opset));
  const onnx::NodeProto& np = *n.proto;
  auto str_attr = [&](const char* name, const std::string& dflt) {
    const onnx::AttributeProto* a = FindAttr(np, name);
    return a ? a->s() : dflt;
  };
  std::string mode = str_attr("mode", "nearest");
  std::string ct = n.opset >= 11 ? str_attr("coordinate_transformation_mode", "half_pixel") : "asymmetric";
  ResizePlan p;
  p.node = n.name;
  p.mode_text = ct;
  p.nearest = mode == "nearest";
  if (p.nearest) {
    // For an integer s, these pick x[floor(o/s)]: asymmetric o/s floored, tf_half_pixel_for_nn (o+0.5)/s
    // floored, and half_pixel's (o+0.5)/s-0.5 rounded (it stays within half a pixel of floor(o/s), no ties).
    std::string nm = str_attr("nearest_mode", "round_prefer_floor");
    bool round = nm == "round_prefer_floor" || nm == "round_prefer_ceil";
    if (n.opset < 11) return Unsupported("nearest Resize at opset 10 is not rewritten");
    if (!((ct == "asymmetric" && nm == "floor") || (ct == "tf_half_pixel_for_nn" && nm == "floor") ||
          ((ct == "half_pixel" || ct == "pytorch_half_pixel") && round)))
      return Unsupported("mode=nearest with coordinate_transformation_mode=" + ct + ", nearest_mode=" + nm +
                         " does not pick input floor(o/s) for every output o, so it is no box upsampling");
    p.mode_text = ct + ", " + nm;
  } else if (mode != "linear") {
    return Unsupported("mode=" + mode + " (only linear and nearest are rewritten)");
  } else if (ct == "half_pixel" || ct == "pytorch_half_pixel") {
    p.half_pixel = true;
  } else if (ct == "asymmetric") {
    p.half_pixel = false;
  } else if (ct == "align_corners") {
    return Unsupported("coordinate_transformation_mode=align_corners: its sample grid (W-1)/(sW-1) is not periodic, so no fixed stride-s kernel reproduces it");
  } else {
    return Unsupported("coordinate_transformation_mode=" + ct + " is not rewritten");
  }
  if (FindAttr(np, "axes")) return Unsupported("the axes attribute (opset 18) is not rewritten");
  if (n.inputs.empty() || n.outputs.empty()) return Unsupported("no input or output");
  p.x = n.inputs[0];
  p.y = n.outputs[0];
  const ValueInfo* x = m.Find(p.x);
  const ValueInfo* y = m.Find(p.y);
  if (!x || !x->fully_known() || x->dims.size() != 4 || !y || !y->fully_known() || y->dims.size() != 4)
    return Unsupported("needs static 4-D input and output shapes (input " + (x ? x->ShapeString() : "?") + ", output " +
                       (y ? y->ShapeString() : "?") + "); fix the input shapes (--input-shape) and fold shape computations first (static-shapes: --only static-shapes,...)");
  if (x->elem_type != onnx::TensorProto::FLOAT) return Unsupported("input is " + ElemTypeName(x->elem_type) + ", only float32 is rewritten");
  p.elem_type = x->elem_type;
  p.n = x->dims[0].value; p.c = x->dims[1].value; p.h = x->dims[2].value; p.w = x->dims[3].value;
  int64_t oh = y->dims[2].value, ow = y->dims[3].value;
  if (y->dims[0].value != p.n || y->dims[1].value != p.c)
    return Unsupported("resizes the batch or channel axis (" + x->ShapeString() + " -> " + y->ShapeString() + ")");
  if (p.h == 0 || p.w == 0 || oh % p.h || ow % p.w || oh < p.h || ow < p.w)
    return Unsupported("scale is not an integer upsampling factor (" + x->ShapeString() + " -> " + y->ShapeString() + ")");
  p.sh = oh / p.h;
  p.sw = ow / p.w;
  if (p.sh == 1 && p.sw == 1) return Unsupported("scale 1 (nothing to upsample)");
  // Given scales (not sizes), Resize maps coordinates with the float scale itself: it must be the integer.
  int scales_idx = n.opset == 10 ? 1 : 2;
  if (static_cast<int>(n.inputs.size()) > scales_idx && !n.inputs[scales_idx].empty()) {
    std::vector<float> sc;
    if (ConstFloats(m.proto().graph(), n.inputs[scales_idx], &sc) && sc.size() == 4 &&
        (sc[2] != static_cast<float>(p.sh) || sc[3] != static_cast<float>(p.sw) || sc[0] != 1.f || sc[1] != 1.f)) {
      char b[192];
      std::snprintf(b, sizeof b, "scales [%g,%g,%g,%g] are not integers on H/W and 1 on N/C", sc[0], sc[1], sc[2], sc[3]);
      return Unsupported(b);
    }
  }
  p.position = rw::NodePosition(m.proto().graph(), p.y);
  if (p.position < 0) return Unsupported("node not found in the main graph");
  return p;
}

namespace {

// Builds the nodes of one replacement and splices them in where the Resize was.
class Builder {
 public:
  Builder(onnx::ModelProto* m, const ResizePlan& p) : g_(m->mutable_graph()), p_(p), names_(*g_), opset_(Opset(*m)) {}

  std::string Init(const onnx::TensorProto& t) {
    onnx::TensorProto c = t;
    c.set_name(names_.Make(p_.node + "/rewrite/" + t.name()));
    *g_->add_initializer() = c;
    return c.name();
  }
  onnx::NodeProto* Add(const std::string& op, const std::string& tag, std::vector<std::string> in, const std::string& out_name = "") {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(names_.Make(p_.node + "/rewrite/" + tag));
    for (auto& i : in) n.add_input(i);
    n.add_output(out_name.empty() ? names_.Make(n.name() + ":0") : out_name);
    nodes_.push_back(n);
    created_.push_back(n.name());
    return &nodes_.back();
  }
  static void Ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void Int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void Str(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  // Repeats the border rows/columns (what Resize's clamping does): Pad(mode=edge) or Slice+Concat.
  std::string EdgePad(const std::string& x, const Kernel1D& kh, const Kernel1D& kw, EdgeMethod how, std::string* what) {
    int64_t bh = kh.edge_begin, eh = kh.edge_end, bw = kw.edge_begin, ew = kw.edge_end;
    if (!bh && !eh && !bw && !ew) return x;
    if (how == EdgeMethod::kPadEdge) {
      std::vector<int64_t> pads = {0, 0, bh, bw, 0, 0, eh, ew};
      onnx::NodeProto* n;
      if (opset_ >= 11) n = Add("Pad", "edge_pad", {x, Init(Int64Tensor("pads", {8}, pads))});
      else { n = Add("Pad", "edge_pad", {x}); Ints(n, "pads", pads); }
      Str(n, "mode", "edge");
      *what += "Pad(edge) + ";
      return n->output(0);
    }
    std::string cur = x;
    int64_t len[2] = {p_.h, p_.w};
    const int64_t begin[2] = {bh, bw}, end[2] = {eh, ew};
    for (int axis = 0; axis < 2; ++axis) {
      if (!begin[axis] && !end[axis]) continue;
      std::string ax = Init(Int64Tensor(axis ? "axis_w" : "axis_h", {1}, {axis + 2}));
      std::vector<std::string> parts;
      const char* tag = axis ? "w" : "h";
      if (begin[axis])
        parts.push_back(Add("Slice", std::string("first_") + tag, {cur, Init(Int64Tensor("zero", {1}, {0})), Init(Int64Tensor("one", {1}, {1})), ax})->output(0));
      parts.push_back(cur);
      if (end[axis])
        parts.push_back(Add("Slice", std::string("last_") + tag, {cur, Init(Int64Tensor("start", {1}, {len[axis] - 1})), Init(Int64Tensor("end", {1}, {len[axis]})), ax})->output(0));
      onnx::NodeProto* c = Add("Concat", std::string("edge_") + tag, parts);
      Int(c, "axis", axis + 2);
      cur = c->output(0);
    }
    *what += "Slice+Concat edge padding + ";
    return cur;
  }

  std::string Weights(const Kernel1D& kh, const Kernel1D& kw, bool break_kernel) {
    std::vector<float> w;
    size_t KH = kh.w.size(), KW = kw.w.size();
    for (int64_t c = 0; c < p_.c; ++c)
      for (size_t i = 0; i < KH; ++i)
        for (size_t j = 0; j < KW; ++j) w.push_back(kh.w[i] * kw.w[j]);
    if (break_kernel) w[(KH / 2) * KW + KW / 2] *= 1.05f;  // tests: a kernel that must fail verification
    return Init(FloatTensor("bilinear_kernel", {p_.c, 1, static_cast<int64_t>(KH), static_cast<int64_t>(KW)}, w));
  }

  Replacement Finish(const std::string& what) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (int i = 0; i < g_->node_size(); ++i) {
      if (i == p_.position) { for (auto& n : nodes_) *out.Add() = n; continue; }
      *out.Add() = std::move(*g_->mutable_node(i));
    }
    // Append the Resize last so RemoveNodes can drop it and whatever computed only its roi/scales/sizes.
    onnx::NodeProto resize = g_->node(p_.position);
    g_->mutable_node()->Swap(&out);
    resize.set_output(0, names_.Make(p_.y + "/replaced"));
    *g_->add_node() = resize;
    RemoveNodes(g_, {g_->node_size() - 1});
    PruneValueInfo(g_);
    return Replacement{created_, what};
  }

  int64_t opset() const { return opset_; }

 private:
  onnx::GraphProto* g_;
  const ResizePlan& p_;
  NameGen names_;
  int64_t opset_;
  std::vector<onnx::NodeProto> nodes_;
  std::vector<std::string> created_;
};

std::string Describe(const ResizePlan& p) {
  return std::string(p.nearest ? "Resize nearest " : "Resize linear ") + p.mode_text + " x" + std::to_string(p.sh) + (p.sh == p.sw ? "" : "/x" + std::to_string(p.sw)) +
         " on " + Dims({p.n, p.c, p.h, p.w});
}

std::string KernelText(const Kernel1D& kh, const Kernel1D& kw) {
  return std::to_string(kh.w.size()) + "x" + std::to_string(kw.w.size());
}

}  // namespace

Replacement ResizeToConvTranspose(onnx::ModelProto* model, const ResizePlan& p, EdgeMethod edge, bool break_kernel) {
  Builder b(model, p);
  Kernel1D kh = BilinearKernel(p.sh, p.half_pixel, true), kw = BilinearKernel(p.sw, p.half_pixel, true);
  std::string what = Describe(p) + " -> ";
  std::string x = b.EdgePad(p.x, kh, kw, edge, &what);
  onnx::NodeProto* ct = b.Add("ConvTranspose", "bilinear_convtranspose", {x, b.Weights(kh, kw, break_kernel)}, p.y);
  Builder::Int(ct, "group", p.c);
  Builder::Ints(ct, "kernel_shape", {static_cast<int64_t>(kh.w.size()), static_cast<int64_t>(kw.w.size())});
  Builder::Ints(ct, "strides", {p.sh, p.sw});
  Builder::Ints(ct, "pads", {kh.pad_begin, kw.pad_begin, kh.pad_end, kw.pad_end});
  what += "depthwise ConvTranspose (group " + std::to_string(p.c) + ", kernel " + KernelText(kh, kw) + ", stride " +
          std::to_string(p.sh) + "x" + std::to_string(p.sw) + ", pads " + std::to_string(kh.pad_begin) + "/" +
          std::to_string(kw.pad_begin) + ", fixed bilinear weights)";
  return b.Finish(what);
}

Replacement NearestToConvTranspose(onnx::ModelProto* model, const ResizePlan& p, bool break_kernel) {
  // y[o] = x[floor(o/s)]: stride s, an s x s kernel of ones, no pads; each output gets exactly one product
  // 1*x, so the result is bit-identical to the Resize.
  Builder b(model, p);
  Kernel1D kh, kw;
  kh.w.assign(p.sh, 1.f);
  kw.w.assign(p.sw, 1.f);
  onnx::NodeProto* ct = b.Add("ConvTranspose", "box_convtranspose", {p.x, b.Weights(kh, kw, break_kernel)}, p.y);
  Builder::Int(ct, "group", p.c);
  Builder::Ints(ct, "kernel_shape", {p.sh, p.sw});
  Builder::Ints(ct, "strides", {p.sh, p.sw});
  return b.Finish(Describe(p) + " -> depthwise ConvTranspose (group " + std::to_string(p.c) + ", kernel " + KernelText(kh, kw) +
                  " of ones, stride " + std::to_string(p.sh) + "x" + std::to_string(p.sw) + ")");
}

Replacement ResizeToNearestConv(onnx::ModelProto* model, const ResizePlan& p, EdgeMethod edge, bool break_kernel) {
  Builder b(model, p);
  Kernel1D kh = BilinearKernel(p.sh, p.half_pixel, false), kw = BilinearKernel(p.sw, p.half_pixel, false);
  std::string what = Describe(p) + " -> ";
  std::string x = b.EdgePad(p.x, kh, kw, edge, &what);
  std::vector<float> scales = {1.f, 1.f, static_cast<float>(p.sh), static_cast<float>(p.sw)};
  onnx::NodeProto* up;
  if (b.opset() == 10) {
    up = b.Add("Resize", "nearest", {x, b.Init(FloatTensor("scales", {4}, scales))});
  } else {
    up = b.Add("Resize", "nearest", {x, b.Init(FloatTensor("roi", {0}, {})), b.Init(FloatTensor("scales", {4}, scales))});
    Builder::Str(up, "coordinate_transformation_mode", "asymmetric");
    Builder::Str(up, "nearest_mode", "floor");
  }
  Builder::Str(up, "mode", "nearest");
  int64_t KH = static_cast<int64_t>(kh.w.size()), KW = static_cast<int64_t>(kw.w.size());
  // Valid convolution over the upsampled, edge-padded tensor; then crop to the Resize's output.
  int64_t ch = (p.h + kh.edge_begin + kh.edge_end) * p.sh - KH + 1, cw = (p.w + kw.edge_begin + kw.edge_end) * p.sw - KW + 1;
  bool crop = ch != p.h * p.sh || cw != p.w * p.sw || kh.crop_begin || kw.crop_begin;
  onnx::NodeProto* conv = b.Add("Conv", "box_conv", {up->output(0), b.Weights(kh, kw, break_kernel)}, crop ? "" : p.y);
  Builder::Int(conv, "group", p.c);
  Builder::Ints(conv, "kernel_shape", {KH, KW});
  what += "Resize nearest x" + std::to_string(p.sh) + "/x" + std::to_string(p.sw) + " + depthwise Conv (kernel " + KernelText(kh, kw) + ")";
  if (crop) {
    b.Add("Slice", "crop", {conv->output(0), b.Init(Int64Tensor("crop_starts", {2}, {kh.crop_begin, kw.crop_begin})),
                            b.Init(Int64Tensor("crop_ends", {2}, {kh.crop_begin + p.h * p.sh, kw.crop_begin + p.w * p.sw})),
                            b.Init(Int64Tensor("crop_axes", {2}, {2, 3}))}, p.y);
    what += " + Slice (crop)";
  }
  return b.Finish(what);
}

}  // namespace edgedecode::scan::rw
