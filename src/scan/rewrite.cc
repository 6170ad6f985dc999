// The rewrite driver: for each rewrite, build a candidate model, scan it against the profile, keep it only
// when it moves work onto the accelerator (or was asked for by --only) and ONNX Runtime finds it equal to
// the ORIGINAL model within the tolerance. Candidates are cumulative, but always checked against the input
// file, so errors cannot pile up unnoticed.
#include "scan/rewrite.h"

#include "base/temp_path.h"

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "scan/rewrite_graph.h"

namespace edgedecode::scan {

namespace fs = std::filesystem;

const std::vector<RewriteInfo>& Rewrites() {
  static const std::vector<RewriteInfo> k = {
      {"fix-input-shape", "write the --input-shape dims into the graph inputs, drop stale value_info, re-infer shapes"},
      {"static-shapes", "fold shape computations of static tensors (Shape, Slice, Concat, ... -> Resize sizes, Pad pads) into initializers, values read from ONNX Runtime, so downstream shapes become static"},
      {"resize-to-convtranspose", "Resize linear (bilinear) with integer scale s on NCHW (half_pixel, pytorch_half_pixel, asymmetric) -> border repeat (Pad edge or Slice+Concat) + depthwise ConvTranspose, stride s, fixed bilinear kernel"},
      {"resize-to-nearest-conv", "Resize linear with integer scale s -> border repeat + Resize nearest + depthwise box Conv + crop, for profiles without a usable ConvTranspose"},
      {"resize-nearest-to-convtranspose", "Resize nearest with integer scale s (modes that pick x[floor(o/s)]) -> depthwise ConvTranspose, stride s, kernel of ones (bit-exact), for profiles without nearest Resize"},
  };
  return k;
}

namespace {

constexpr int kMaxFoldRounds = 8;
constexpr int64_t kMaxFoldElements = 1 << 16;

struct Candidate {
  std::unique_ptr<OnnxModel> model;  // owns the (inferred) proto
  ScanReport scan;
  std::string file;                  // serialized copy in the work directory (what ORT reads)
};

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) { if (i) s += ","; s += std::to_string(d[i]); }
  return s + "]";
}

int UnknownShapes(const OnnxModel& m) {
  int n = 0;
  for (int ni : m.graphs()[0].nodes)
    for (const auto& o : m.nodes()[ni].outputs) {
      const ValueInfo* v = o.empty() ? nullptr : m.Find(o);
      if (v && !v->is_const && !v->fully_known()) ++n;
    }
  return n;
}

const NodeResult* ScanNode(const ScanReport& r, const std::string& name) {
  for (const auto& n : r.nodes) if (n.name == name) return &n;
  return nullptr;
}

Status WriteProto(const onnx::ModelProto& m, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  if (!m.SerializeToOstream(&out)) return IoError(path + ": write failed");
  out.close();
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

// A tensor from ort_compare's eval JSON; false when the type is not handled or a value is missing.
bool JsonToTensor(const std::string& name, const nlohmann::json& o, onnx::TensorProto* t) {
  if (!o.contains("data") || !o["data"].is_array()) return false;
  std::string type = o.value("type", std::string());
  int32_t et = ElemTypeFromName(type);
  if (!et) return false;
  t->Clear();
  t->set_name(name);
  t->set_data_type(et);
  for (const auto& d : o["dims"]) t->add_dims(d.get<int64_t>());
  for (const auto& v : o["data"]) {
    if (v.is_null()) return false;  // NaN / infinity do not survive JSON
    switch (et) {
      case onnx::TensorProto::FLOAT: t->add_float_data(v.get<float>()); break;
      case onnx::TensorProto::DOUBLE: t->add_double_data(v.get<double>()); break;
      case onnx::TensorProto::INT64: t->add_int64_data(std::strtoll(v.get<std::string>().c_str(), nullptr, 10)); break;
      case onnx::TensorProto::UINT64: t->add_uint64_data(std::strtoull(v.get<std::string>().c_str(), nullptr, 10)); break;
      case onnx::TensorProto::INT32: case onnx::TensorProto::INT16: case onnx::TensorProto::INT8:
      case onnx::TensorProto::UINT16: case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL:
        t->add_int32_data(v.get<int32_t>()); break;
      case onnx::TensorProto::UINT32: t->add_uint64_data(v.get<uint32_t>()); break;
      default: return false;
    }
  }
  return true;
}

class Session {
 public:
  Session(const std::string& input, const Profile& p, const RewriteOptions& o, const OrtOracle& oracle)
      : input_(input), profile_(p), opts_(o), oracle_(oracle) {}
  ~Session() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  Status Init() {
    std::string tmpl = (fs::temp_directory_path() / "edgedecode-rewrite-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return IoError("cannot create a temporary directory in " + fs::temp_directory_path().string());
    dir_ = tmpl;
    oracle_.set_work_dir(dir_);
    return Status::Ok();
  }

  // Re-infers shapes of `proto` (dropping value_info of values that no longer exist), scans it, writes it.
  Result<Candidate> Make(onnx::ModelProto proto) {
    rw::PruneValueInfo(proto.mutable_graph());
    Candidate c;
    std::string file = dir_ + "/candidate_" + std::to_string(counter_++) + ".onnx";
    ED_ASSIGN_OR_RETURN(c.model, OnnxModel::FromProto(std::move(proto), file));
    c.scan = Scan(*c.model, profile_);
    c.file = file;
    ED_RETURN_IF_ERROR(WriteProto(c.model->proto(), file));
    return c;
  }

  // The inputs ORT feeds: the candidate's graph inputs, which must be static by now.
  Result<std::vector<OracleInput>> Inputs(const OnnxModel& m) const {
    std::vector<OracleInput> in;
    for (const auto& name : m.graphs()[0].inputs) {
      const ValueInfo* v = m.Find(name);
      if (!v || !v->fully_known())
        return Unsupported("input '" + name + "' has shape " + (v ? v->ShapeString() : "?") +
                           "; ONNX Runtime needs fixed shapes to check a rewrite: pass --input-shape " + name + "=D0,D1,...");
      OracleInput oi{name, ElemTypeName(v->elem_type), {}};
      for (const Dim& d : v->dims) oi.dims.push_back(d.value);
      in.push_back(oi);
    }
    return in;
  }

  // Runs original vs candidate, exposing `locals` (tensors the rewrite recomputes under their old names) as
  // extra outputs of both, so a rewrite is checked where it acts and not only where downstream ops (ReLU,
  // max pooling) could hide an error. ORT failing on the original is an error (nothing can be checked);
  // failing on the candidate is a failed check.
  Result<OracleComparison> Verify(const Candidate& c, const std::vector<std::string>& locals) {
    ED_ASSIGN_OR_RETURN(std::vector<OracleInput> in, Inputs(*c.model));
    std::string a = input_, b = c.file;
    std::set<std::string> added;
    if (!locals.empty()) {
      onnx::ModelProto pa = orig_->proto(), pb = c.model->proto();
      std::set<std::string> outs;
      for (const auto& o : pa.graph().output()) outs.insert(o.name());
      for (const auto& name : locals) {
        const ValueInfo* va = orig_->Find(name);
        const ValueInfo* vb = c.model->Find(name);
        if (outs.count(name) || !va || !vb || !vb->elem_type) continue;
        for (onnx::ModelProto* p : {&pa, &pb}) {
          auto* o = p->mutable_graph()->add_output();
          o->set_name(name);
          o->mutable_type()->mutable_tensor_type()->set_elem_type(vb->elem_type);
        }
        added.insert(name);
      }
      if (!added.empty()) {
        a = dir_ + "/probe_original_" + std::to_string(counter_) + ".onnx";
        b = dir_ + "/probe_candidate_" + std::to_string(counter_++) + ".onnx";
        ED_RETURN_IF_ERROR(WriteProto(pa, a));
        ED_RETURN_IF_ERROR(WriteProto(pb, b));
      }
    }
    ED_ASSIGN_OR_RETURN(OracleComparison r, oracle_.Compare(a, b, in, opts_.oracle));
    if (!r.ran && r.failed_model == "a")
      return Unavailable("ONNX Runtime cannot run the original model " + input_ + " (so no rewrite can be checked): " + r.error);
    for (auto& o : r.outputs) o.local = added.count(o.name) > 0;
    return r;
  }

  // ORT's optimized vs unoptimized run of the original on the same inputs: its own float-rounding noise.
  Result<double> Noise(const Candidate& c) {
    if (noise_ != -2) return noise_;
    ED_ASSIGN_OR_RETURN(std::vector<OracleInput> in, Inputs(*c.model));
    OracleOptions o = opts_.oracle;
    o.b_opt_level = "disabled";
    ED_ASSIGN_OR_RETURN(OracleComparison r, oracle_.Compare(input_, input_, in, o));
    noise_ = r.ran ? r.MaxDiff(false) : -1;
    return noise_;
  }

  void set_original(const OnnxModel* m) { orig_ = m; }

  Result<nlohmann::json> Eval(const onnx::ModelProto& m, const std::vector<OracleInput>& in) {
    std::string file = dir_ + "/eval_" + std::to_string(counter_++) + ".onnx";
    ED_RETURN_IF_ERROR(WriteProto(m, file));
    return oracle_.Eval(file, in, kMaxFoldElements, opts_.oracle);
  }

  bool Selected(const std::string& name) const {
    return opts_.only.empty() || std::find(opts_.only.begin(), opts_.only.end(), name) != opts_.only.end();
  }
  bool Explicit(const std::string& name) const {
    return std::find(opts_.only.begin(), opts_.only.end(), name) != opts_.only.end();
  }
  const RewriteOptions& opts() const { return opts_; }
  const Profile& profile() const { return profile_; }

 private:
  std::string input_;
  const Profile& profile_;
  const RewriteOptions& opts_;
  OrtOracle oracle_;
  const OnnxModel* orig_ = nullptr;
  std::string dir_;
  int counter_ = 0;
  double noise_ = -2;  // -2: not measured yet
};

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2g", v);
  return b;
}

// Verifies `cand` (its model outputs and the `locals` it recomputes) and fills `step`; true when kept.
Result<bool> Check(Session& s, const Candidate& cand, RewriteStep* step, const std::vector<std::string>& locals = {}) {
  ED_ASSIGN_OR_RETURN(step->check, s.Verify(cand, locals));
  step->verified = true;
  double tol = s.opts().tolerance;
  double out = step->check.MaxDiff(false), local = step->check.MaxDiff(true);
  if (step->check.ran && out >= 0 && local >= 0 && out <= tol && local <= tol) {
    step->status = "applied";
    return true;
  }
  step->status = "failed";
  if (!step->check.ran) {
    step->reason = step->check.Summary() + "; not written";
    return false;
  }
  step->reason = "does not verify (" + step->CheckText() + ") > " + Num(tol) + "; not written";
  bool has_local = std::any_of(step->check.outputs.begin(), step->check.outputs.end(), [](const OracleOutputDiff& o) { return o.local; });
  if (has_local && local >= 0 && local <= tol && out > tol) {
    // The rewrite itself matches; the model amplifies rounding differences. Say how much ORT's own
    // optimizations move the same outputs, so the user can judge a --tolerance.
    ED_ASSIGN_OR_RETURN(step->noise, s.Noise(cand));
    step->reason += "\n      the rewritten tensors agree to " + Num(local) + ", so this is float rounding amplified downstream";
    if (step->noise >= 0)
      step->reason += "; ONNX Runtime's own graph optimizations change these outputs by " + Num(step->noise) +
                      " (optimized vs unoptimized, same inputs); --tolerance " + Num(std::pow(10.0, std::ceil(std::log10(out * 1.01)))) +
                      " would accept this one";
  }
  return false;
}

// static-shapes, one round: main-graph nodes whose outputs are all constant (OnnxModel's folding: Shape of a
// static tensor, deterministic ops of constants) and read by a node that is not. Their outputs become
// initializers. Only integer tensors (shapes, pads, sizes, indices) and tiny float ones (Resize scales):
// folding big float tensors would, e.g., dequantize QDQ weights, which a converter must see as they are.
std::vector<int> FoldFrontier(const OnnxModel& m, std::vector<std::string>* fetch) {
  const Graph& g = m.graphs()[0];
  std::map<std::string, std::vector<int>> readers;
  for (const Node& n : m.nodes())
    for (const auto& in : n.inputs) if (!in.empty()) readers[in].push_back(n.index);
  auto folded = [&](const Node& n) {
    if (n.outputs.empty() || !n.subgraphs.empty()) return false;
    for (const auto& o : n.outputs) {
      const ValueInfo* v = o.empty() ? nullptr : m.Find(o);
      if (!o.empty() && (!v || !v->is_const)) return false;
    }
    return true;
  };
  std::vector<int> positions;
  for (size_t pos = 0; pos < g.nodes.size(); ++pos) {
    const Node& n = m.nodes()[g.nodes[pos]];
    if (n.op_type == "Constant" || !folded(n)) continue;
    bool live_reader = false, ok = true;
    std::vector<std::string> outs;
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      auto it = readers.find(o);
      if (it == readers.end()) continue;
      outs.push_back(o);
      for (int r : it->second) {
        const Node& rn = m.nodes()[r];
        live_reader |= rn.graph != 0 || (rn.op_type != "Constant" && !folded(rn));
      }
      const ValueInfo* v = m.Find(o);
      bool integer = v->elem_type == onnx::TensorProto::INT64 || v->elem_type == onnx::TensorProto::INT32 ||
                     v->elem_type == onnx::TensorProto::BOOL;
      int64_t e = v->elements();
      if (!v->elem_type || (!integer && (e < 0 || e > 64))) ok = false;
    }
    if (!live_reader || !ok || outs.empty()) continue;
    positions.push_back(static_cast<int>(pos));
    fetch->insert(fetch->end(), outs.begin(), outs.end());
  }
  return positions;
}

Status StaticShapes(Session& s, std::unique_ptr<Candidate>& cur, RewriteReport* report) {
  RewriteStep step{"static-shapes", "", "", "", "", false, {}};
  int before_unknown = UnknownShapes(*cur->model);
  int folded = 0, removed = 0, rounds = 0;
  std::unique_ptr<Candidate> cand;
  const Candidate* at = cur.get();
  for (; rounds < kMaxFoldRounds; ++rounds) {
    std::vector<std::string> fetch;
    std::vector<int> positions = FoldFrontier(*at->model, &fetch);
    if (positions.empty()) break;
    auto in = s.Inputs(*at->model);
    if (!in.ok()) { step.status = "refused"; step.reason = in.status().message(); report->steps.push_back(step); return Status::Ok(); }
    onnx::ModelProto probe = at->model->proto();
    probe.mutable_graph()->clear_output();
    for (const auto& name : fetch) {
      auto* o = probe.mutable_graph()->add_output();
      o->set_name(name);
      o->mutable_type()->mutable_tensor_type()->set_elem_type(at->model->Find(name)->elem_type);
    }
    auto values = s.Eval(probe, in.value());
    if (!values.ok()) {
      if (values.status().code() == StatusCode::kUnavailable) return values.status();
      step.status = "failed";
      step.reason = "ONNX Runtime could not evaluate the shape computations: " + values.status().message();
      report->steps.push_back(step);
      return Status::Ok();
    }
    std::map<std::string, const nlohmann::json*> by_name;
    for (const auto& o : values.value()["outputs"]) by_name[o.value("name", std::string())] = &o;
    onnx::ModelProto next = at->model->proto();
    onnx::GraphProto* g = next.mutable_graph();
    std::set<int> drop;
    const Graph& mg = at->model->graphs()[0];
    for (int pos : positions) {
      const Node& n = at->model->nodes()[mg.nodes[pos]];
      std::vector<onnx::TensorProto> tensors;
      bool all = true;
      for (const auto& o : n.outputs) {
        if (o.empty() || !by_name.count(o)) continue;
        onnx::TensorProto t;
        if (!JsonToTensor(o, *by_name[o], &t)) { all = false; break; }
        tensors.push_back(t);
      }
      if (!all) continue;
      for (auto& t : tensors) *g->add_initializer() = t;
      folded += static_cast<int>(tensors.size());
      drop.insert(pos);
    }
    if (drop.empty()) break;
    removed += rw::RemoveNodes(g, drop);
    ED_ASSIGN_OR_RETURN(Candidate c, s.Make(std::move(next)));
    cand = std::make_unique<Candidate>(std::move(c));
    at = cand.get();
  }
  if (!cand) {
    if (s.Explicit("static-shapes")) {
      step.status = "refused";
      step.reason = "no shape computation to fold (" + std::to_string(before_unknown) + " tensors without a static shape)";
      report->steps.push_back(step);
    }
    return Status::Ok();
  }
  int after_unknown = UnknownShapes(*cand->model);
  step.what = "folded " + std::to_string(folded) + " computed constant" + (folded == 1 ? "" : "s") + " in " +
              std::to_string(rounds) + " round" + (rounds == 1 ? "" : "s") + ", removed " + std::to_string(removed) +
              " node" + (removed == 1 ? "" : "s") + "; tensors without a static shape: " + std::to_string(before_unknown) +
              " -> " + std::to_string(after_unknown);
  if (!s.Explicit("static-shapes") && cand->scan.n_cpu >= cur->scan.n_cpu) {
    step.status = "skipped";
    step.reason = "moves no node onto the " + s.profile().accelerator + " (" + std::to_string(cur->scan.n_cpu) + " -> " +
                  std::to_string(cand->scan.n_cpu) + " CPU nodes); ask for it with --only static-shapes";
    report->steps.push_back(step);
    return Status::Ok();
  }
  ED_ASSIGN_OR_RETURN(bool keep, Check(s, *cand, &step));
  report->steps.push_back(step);
  if (keep) cur = std::move(cand);
  return Status::Ok();
}

Status FixInputShape(Session& s, std::unique_ptr<Candidate>& cur, RewriteReport* report) {
  RewriteStep step{"fix-input-shape", "", "", "", "", false, {}};
  const OnnxModel& m = *cur->model;
  std::string what;
  bool changes = false;
  for (const auto& [name, dims] : s.opts().input_shapes) {
    const ValueInfo* v = m.Find(name);
    std::string was = v ? v->ShapeString() : "?";
    changes |= was != Dims(dims);
    what += (what.empty() ? "" : "; ") + name + " " + was + " -> " + Dims(dims);
  }
  onnx::ModelProto next = m.proto();
  ED_RETURN_IF_ERROR(FixInputShapes(&next, s.opts().input_shapes));
  step.what = what;
  if (!changes) {
    step.status = "skipped";
    step.reason = "the inputs already have these shapes";
    report->steps.push_back(step);
    return Status::Ok();
  }
  ED_ASSIGN_OR_RETURN(Candidate c, s.Make(std::move(next)));
  step.what += "; tensors without a static shape: " + std::to_string(UnknownShapes(m)) + " -> " + std::to_string(UnknownShapes(*c.model));
  ED_ASSIGN_OR_RETURN(bool keep, Check(s, c, &step));
  report->steps.push_back(step);
  if (keep) cur = std::make_unique<Candidate>(std::move(c));
  return Status::Ok();
}

Status ResizeRewrites(Session& s, std::unique_ptr<Candidate>& cur, RewriteReport* report) {
  const char* kConvT = "resize-to-convtranspose";
  const char* kNearest = "resize-to-nearest-conv";
  const char* kBox = "resize-nearest-to-convtranspose";
  std::vector<std::string> resizes;  // by output name: node positions move as the graph changes
  for (int ni : cur->model->graphs()[0].nodes) {
    const Node& n = cur->model->nodes()[ni];
    if (n.op_type == "Resize" && n.domain.empty() && !n.outputs.empty()) resizes.push_back(n.outputs[0]);
  }
  for (const auto& out : resizes) {
    const Node* node = nullptr;
    for (const Node& n : cur->model->nodes()) if (n.graph == 0 && !n.outputs.empty() && n.outputs[0] == out) node = &n;
    if (!node) continue;
    const onnx::AttributeProto* mode = rw::FindAttr(*node->proto, "mode");
    bool nearest = !mode || mode->s() == "nearest";
    std::vector<const char*> names;  // the rewrites for this Resize, in order of preference
    for (const char* r : nearest ? std::vector<const char*>{kBox} : std::vector<const char*>{kConvT, kNearest})
      if (s.Selected(r)) names.push_back(r);
    if (names.empty()) continue;
    bool asked = std::any_of(names.begin(), names.end(), [&](const char* r) { return s.Explicit(r); });
    const NodeResult* placed = ScanNode(cur->scan, node->name);
    bool fallback = placed && placed->placement == Placement::kCpu;
    if (!fallback && !asked) continue;  // already on the accelerator: nothing to gain
    auto plan = rw::PlanResize(*cur->model, *node);
    if (!plan.ok()) {
      report->steps.push_back({names[0], node->name, "refused", "", plan.status().message(), false, {}});
      continue;
    }
    std::string unplaced;
    bool done = false, verified_any = false;
    for (const char* rewrite : names) {
      if (done) break;
      bool tried_one = false;
      for (rw::EdgeMethod edge : {rw::EdgeMethod::kPadEdge, rw::EdgeMethod::kSliceConcat}) {
        if (tried_one || (nearest && edge == rw::EdgeMethod::kSliceConcat)) break;  // the box needs no border
        onnx::ModelProto next = cur->model->proto();
        bool brk = s.opts().break_rewrite == rewrite;
        std::string r = rewrite;
        rw::Replacement rep = r == kBox     ? rw::NearestToConvTranspose(&next, plan.value(), brk)
                              : r == kConvT ? rw::ResizeToConvTranspose(&next, plan.value(), edge, brk)
                                            : rw::ResizeToNearestConv(&next, plan.value(), edge, brk);
        ED_ASSIGN_OR_RETURN(Candidate c, s.Make(std::move(next)));
        // Every new node must run on the accelerator, else the rewrite only moves the fallback.
        std::string off;
        for (const auto& name : rep.nodes) {
          const NodeResult* nr = ScanNode(c.scan, name);
          if (nr && nr->placement == Placement::kCpu) { off = nr->op_type + " " + nr->detail; break; }
        }
        if (!off.empty()) {
          unplaced += (unplaced.empty() ? "" : "; ") + r +
                      (nearest ? "" : edge == rw::EdgeMethod::kPadEdge ? " (Pad edge)" : " (Slice+Concat)") + ": " + off;
          continue;
        }
        tried_one = verified_any = true;
        RewriteStep step{r, node->name, "", rep.what, "", false, {}};
        ED_ASSIGN_OR_RETURN(bool keep, Check(s, c, &step, {plan.value().y}));
        report->steps.push_back(step);
        if (keep) {
          cur = std::make_unique<Candidate>(std::move(c));
          done = true;
        }
      }
    }
    if (!done && !verified_any && !unplaced.empty())
      report->steps.push_back({names[0], node->name, asked ? "refused" : "skipped", "",
                               "on " + s.profile().name + " the replacement would fall back to the CPU: " + unplaced, false, {}});
  }
  return Status::Ok();
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

std::string RewriteStep::CheckText() const {
  std::string s = "outputs " + check.Summary(false);
  bool local = std::any_of(check.outputs.begin(), check.outputs.end(), [](const OracleOutputDiff& o) { return o.local; });
  if (local) s += "; rewritten tensor " + check.Summary(true);
  return s;
}

int RewriteReport::Count(const std::string& status) const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [&](const RewriteStep& s) { return s.status == status; }));
}

int RewriteReport::Unresolved() const {
  int n = 0;
  for (const auto& st : steps) {
    if (st.status != "failed") continue;
    bool fixed = !st.node.empty() && std::any_of(steps.begin(), steps.end(), [&](const RewriteStep& o) {
      return o.node == st.node && o.status == "applied";
    });
    n += !fixed;
  }
  return n;
}

std::string RewriteReport::ToText() const {
  std::string s = "rewrite " + input + " for " + target + ":\n";
  for (const auto& st : steps) {
    s += "  " + st.status + std::string(st.status.size() < 8 ? 8 - st.status.size() : 0, ' ') + " " + st.rewrite +
         (st.node.empty() ? "" : " " + st.node) + "\n";
    if (!st.what.empty()) s += "      " + st.what + "\n";
    if (st.verified && st.status == "applied") s += "      ONNX Runtime: " + st.CheckText() + "\n";
    if (!st.reason.empty()) s += "      " + st.reason + "\n";
  }
  if (steps.empty()) s += "  nothing to rewrite: no rewrite moves a fallback of this model onto the " + before.accelerator + "\n";
  s += "before: " + before.SummaryLine() + "\n";
  if (Count("applied")) s += "after:  " + after.SummaryLine() + "\n";
  if (written) s += "wrote " + output + "\n";
  else if (Count("applied")) s += "dry run: " + output + " not written\n";
  return s;
}

nlohmann::json RewriteReport::ToJson() const {
  nlohmann::json j;
  j["input"] = input; j["output"] = output; j["target"] = target; j["written"] = written; j["tolerance"] = tolerance;
  j["applied"] = Count("applied"); j["failed"] = Count("failed"); j["unresolved"] = Unresolved();
  j["before"] = {{"summary", before.SummaryLine()}, {"verdict", before.verdict}, {"accel", before.n_accel}, {"cpu", before.n_cpu}};
  j["after"] = {{"summary", after.SummaryLine()}, {"verdict", after.verdict}, {"accel", after.n_accel}, {"cpu", after.n_cpu}};
  j["steps"] = nlohmann::json::array();
  for (const auto& st : steps) {
    nlohmann::json x = {{"rewrite", st.rewrite}, {"node", st.node}, {"status", st.status}, {"what", st.what}, {"reason", st.reason}};
    if (st.verified) {
      nlohmann::json outs = nlohmann::json::array();
      for (const auto& o : st.check.outputs)
        outs.push_back({{"name", o.name}, {"max_abs_diff", o.max_abs_diff >= 0 ? nlohmann::json(o.max_abs_diff) : nlohmann::json()},
                        {"max_abs", o.max_abs}, {"error", o.error}, {"local", o.local}});
      auto num = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(); };
      x["check"] = {{"ran", st.check.ran}, {"max_abs_diff", num(st.check.MaxDiff(false))}, {"local_max_abs_diff", num(st.check.MaxDiff(true))},
                    {"error", st.check.error}, {"outputs", outs}, {"seconds", st.check.seconds}};
      if (st.noise >= 0) x["check"]["ort_optimization_noise"] = st.noise;
    }
    j["steps"].push_back(x);
  }
  return j;
}

Result<RewriteReport> RewriteModel(const std::string& input, const std::string& output, const Profile& profile,
                                   const RewriteOptions& opts, const Result<OrtOracle>& oracle) {
  for (const auto& name : opts.only) {
    bool known = false;
    std::string list;
    for (const auto& r : Rewrites()) { known |= name == r.name; list += (list.empty() ? "" : ", ") + std::string(r.name); }
    if (!known) return InvalidArgument("--only " + name + ": no such rewrite (known: " + list + ")");
  }
  if (output.empty()) return InvalidArgument("no output file (-o OUT.onnx)");
  if (SameFile(input, output))
    return InvalidArgument("-o " + output + " is the input file; rewrite never modifies its input, name another output");
  {
    std::error_code ec;
    fs::path dir = fs::path(output).parent_path();
    if (fs::is_directory(output, ec)) return InvalidArgument("-o " + output + " is a directory; name the output file");
    if (!dir.empty() && !fs::is_directory(dir, ec)) return InvalidArgument("-o " + output + ": directory " + dir.string() + " does not exist");
  }
  ED_ASSIGN_OR_RETURN(std::unique_ptr<onnx::ModelProto> raw, ReadModelProto(input));
  for (const auto& t : raw->graph().initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return Unsupported(input + ": tensor '" + t.name() + "' has external data, which rewrite does not handle yet");
  ED_ASSIGN_OR_RETURN(std::unique_ptr<OnnxModel> orig, OnnxModel::FromProto(std::move(*raw), input));

  if (!oracle.ok()) return Unavailable(oracle.status().message());
  RewriteReport report;
  report.input = input;
  report.output = output;
  report.target = profile.name;
  report.tolerance = opts.tolerance;
  report.before = Scan(*orig, profile);
  Session s(input, profile, opts, oracle.value());
  ED_RETURN_IF_ERROR(s.Init());
  s.set_original(orig.get());
  ED_ASSIGN_OR_RETURN(Candidate first, s.Make(orig->proto()));
  auto cur = std::make_unique<Candidate>(std::move(first));

  if (!opts.input_shapes.empty()) ED_RETURN_IF_ERROR(FixInputShape(s, cur, &report));
  if (s.Selected("static-shapes")) ED_RETURN_IF_ERROR(StaticShapes(s, cur, &report));
  ED_RETURN_IF_ERROR(ResizeRewrites(s, cur, &report));

  report.after = cur->scan;
  report.after.model = output;
  if (report.Count("applied") && !opts.dry_run) {
    // Say in the file what was done to it (metadata does not change what the model computes).
    std::string done;
    for (const auto& st : report.steps)
      if (st.status == "applied")
        done += (done.empty() ? "" : "; ") + st.rewrite + (st.node.empty() ? "" : " " + st.node) + " (max abs diff " +
                Num(std::max(st.check.MaxDiff(false), st.check.MaxDiff(true))) + ")";
    onnx::ModelProto& out = cur->model->mutable_proto();
    onnx::StringStringEntryProto* meta = nullptr;
    for (auto& kv : *out.mutable_metadata_props()) if (kv.key() == "edgedecode_rewrite") meta = &kv;
    if (!meta) { meta = out.add_metadata_props(); meta->set_key("edgedecode_rewrite"); }
    meta->set_value((meta->value().empty() ? "" : meta->value() + "; ") + done + "; checked by ONNX Runtime against " +
                    fs::path(input).filename().string() + ", tolerance " + Num(opts.tolerance));
    // Write beside the target and rename, so a failure never leaves half a model under the output name.
    const std::string tmp = TempPathFor(output);
    ED_RETURN_IF_ERROR(WriteProto(cur->model->proto(), tmp).WithContext("writing the rewritten model"));
    std::error_code ec;
    fs::rename(tmp, output, ec);
    if (ec) {
      fs::remove(tmp, ec);
      return IoError(output + ": cannot write: " + ec.message());
    }
    report.written = true;
  }
  return report;
}

}  // namespace edgedecode::scan
