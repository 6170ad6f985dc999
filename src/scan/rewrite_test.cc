// `edgedecode rewrite`: the bilinear kernels against a reference Resize, each rewrite on small models built
// here (scale 2 and 3, every coordinate mode, sizes vs scales, opset 10, a dynamic input) and on M-LSD, all
// checked by ONNX Runtime; refusals, a rewrite that must fail verification, bad inputs, exit codes, and that
// the input file is never touched. ONNX Runtime (tools/oracle, `make setup`) is required: without it the
// tests fail, they do not skip.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "scan/onnx_model.h"
#include "scan/ort_oracle.h"
#include "scan/rewrite.h"
#include "scan/rewrite_graph.h"
#include "scan/scanner.h"

namespace fs = std::filesystem;
using namespace edgedecode;
using namespace edgedecode::scan;

namespace {

const std::string kData = EDGEDECODE_TESTDATA;
const std::string kTargets = std::string(EDGEDECODE_SOURCE_DIR) + "/targets";
const std::string kMlsd = kData + "/models/onnx/mlsd_320x320_tiny.onnx";

std::string TmpDir() {
  static std::string d = [] {
    fs::path p = fs::temp_directory_path() / ("ed_rewrite_test_" + std::to_string(::getpid()));
    fs::create_directories(p);
    return p.string();
  }();
  return d;
}

// Removes the scratch directory when the tests are done.
class CleanUp : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(TmpDir(), ec);
  }
};
testing::Environment* const kCleanUp = testing::AddGlobalTestEnvironment(new CleanUp);

std::string ReadAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Profile P(const std::string& name) {
  auto p = Profile::Load(kTargets + "/" + name + ".json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.value();
}

// rk3588-npu with Resize limited to nearest: linear Resize falls back, so the rewrites apply by default.
Profile NoLinear(bool with_convtranspose) {
  Profile base = P("rk3588-npu");
  nlohmann::json j = base.raw;
  j["name"] = with_convtranspose ? "rk3588-no-linear" : "rk3588-no-linear-no-convtranspose";
  j["ops"]["ai.onnx"]["Resize"] = {{"attrs", {{"mode", {"nearest"}}}}};
  if (!with_convtranspose) j["ops"]["ai.onnx"].erase("ConvTranspose");
  auto p = Profile::FromJson(j, "test profile");
  EXPECT_TRUE(p.ok());
  return p.value();
}

OrtOracle Oracle() {
  auto o = OrtOracle::Find();
  // Not a skip: setup installs ONNX Runtime, and a rewrite that cannot be checked must not pass.
  EXPECT_TRUE(o.ok()) << o.status().message();
  if (!o.ok()) std::abort();
  return o.value();
}

struct ResizeSpec {
  int opset = 13;
  std::vector<int64_t> dims = {1, 3, 5, 7};  // -1: symbolic
  int64_t sh = 2, sw = 2;
  std::string ct = "half_pixel";
  bool sizes = false;  // give sizes instead of scales
  std::string mode = "linear";
  std::string nearest_mode;  // "" = attribute absent
};

// X -> Resize(linear) -> R -> Sigmoid -> Y: R is a tensor inside the model, checked locally by rewrite.
std::string ResizeModel(const std::string& name, const ResizeSpec& s) {
  onnx::ModelProto m;
  m.set_ir_version(s.opset >= 13 ? 7 : 6);
  m.add_opset_import()->set_version(s.opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("resize_test");
  auto* x = g->add_input();
  x->set_name("X");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  const char* sym[] = {"N", "C", "H", "W"};
  for (size_t i = 0; i < s.dims.size(); ++i) {
    auto* d = x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim();
    if (s.dims[i] >= 0) d->set_dim_value(s.dims[i]); else d->set_dim_param(sym[i]);
  }
  auto* y = g->add_output();
  y->set_name("Y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::NodeProto* r = g->add_node();
  r->set_op_type("Resize");
  r->set_name("resize");
  r->add_input("X");
  if (s.opset >= 11) {
    *g->add_initializer() = rw::FloatTensor("roi", {0}, {});
    r->add_input("roi");
  }
  if (s.sizes) {
    *g->add_initializer() = rw::FloatTensor("scales", {0}, {});
    *g->add_initializer() = rw::Int64Tensor("sizes", {4}, {s.dims[0], s.dims[1], s.dims[2] * s.sh, s.dims[3] * s.sw});
    r->add_input("scales");
    r->add_input("sizes");
  } else {
    *g->add_initializer() = rw::FloatTensor("scales", {4}, {1.f, 1.f, float(s.sh), float(s.sw)});
    r->add_input("scales");
  }
  r->add_output("R");
  auto attr = [&](const char* k, const std::string& v) {
    auto* a = r->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  };
  attr("mode", s.mode);
  if (s.opset >= 11) attr("coordinate_transformation_mode", s.ct);
  if (!s.nearest_mode.empty()) attr("nearest_mode", s.nearest_mode);
  onnx::NodeProto* sg = g->add_node();
  sg->set_op_type("Sigmoid");
  sg->set_name("sigmoid");
  sg->add_input("R");
  sg->add_output("Y");
  std::string path = TmpDir() + "/" + name;
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

RewriteReport Rewrite(const std::string& in, const std::string& out, const Profile& p, RewriteOptions o = {}) {
  auto r = RewriteModel(in, out, p, o, OrtOracle::Find());
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return r.value();
}

int Ops(const std::string& path, const std::string& op) {
  auto m = OnnxModel::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().message();
  int n = 0;
  if (m.ok()) for (const auto& node : m.value()->nodes()) n += node.op_type == op;
  return n;
}

int RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "rewrite");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cli::RewriteMain(static_cast<int>(argv.size()), argv.data());
}

// Resize linear on one axis as ONNX defines it (clamped sample positions), in double.
std::vector<double> RefResize(const std::vector<double>& x, int64_t s, bool half_pixel) {
  std::vector<double> y;
  int64_t W = static_cast<int64_t>(x.size());
  for (int64_t o = 0; o < s * W; ++o) {
    double c = half_pixel ? (o + 0.5) / s - 0.5 : double(o) / s;
    c = std::min(std::max(c, 0.0), double(W - 1));
    int64_t i = static_cast<int64_t>(std::floor(c));
    int64_t j = std::min(i + 1, W - 1);
    y.push_back((1 - (c - i)) * x[i] + (c - i) * x[j]);
  }
  return y;
}

// The kernel applied the way the graph applies it (ConvTranspose, or nearest + Conv + crop), in double.
std::vector<double> ApplyKernel(const std::vector<double>& x, int64_t s, bool half_pixel, bool transpose) {
  rw::Kernel1D k = rw::BilinearKernel(s, half_pixel, transpose);
  std::vector<double> xp(k.edge_begin, x.front());
  xp.insert(xp.end(), x.begin(), x.end());
  xp.insert(xp.end(), k.edge_end, x.back());
  int64_t K = static_cast<int64_t>(k.w.size()), n = static_cast<int64_t>(xp.size());
  if (transpose) {
    std::vector<double> y((n - 1) * s + K - k.pad_begin - k.pad_end, 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t t = 0; t < K; ++t) {
        int64_t q = s * j + t - k.pad_begin;
        if (q >= 0 && q < static_cast<int64_t>(y.size())) y[q] += xp[j] * k.w[t];
      }
    return y;
  }
  std::vector<double> u;
  for (int64_t m = 0; m < n * s; ++m) u.push_back(xp[m / s]);
  std::vector<double> y;
  for (int64_t q = k.crop_begin; q < k.crop_begin + s * static_cast<int64_t>(x.size()); ++q) {
    double acc = 0;
    for (int64_t t = 0; t < K; ++t) acc += k.w[t] * u[q + t];
    y.push_back(acc);
  }
  return y;
}

}  // namespace

TEST(RewriteKernels, BilinearKernelsEqualResizeForEveryScaleAndMode) {
  for (int64_t s = 1; s <= 8; ++s)
    for (bool hp : {false, true})
      for (bool tr : {false, true})
        for (int64_t W : {1, 2, 3, 7}) {
          std::vector<double> x;
          for (int64_t i = 0; i < W; ++i) x.push_back(std::sin(1.7 * i + s) * 3);
          auto want = RefResize(x, s, hp), got = ApplyKernel(x, s, hp, tr);
          ASSERT_EQ(got.size(), want.size()) << s << hp << tr << W;
          for (size_t i = 0; i < want.size(); ++i)
            EXPECT_NEAR(got[i], want[i], 1e-6) << "s=" << s << " half_pixel=" << hp << " transpose=" << tr << " W=" << W << " i=" << i;
        }
  // rk3588 ConvTranspose limits: kernel <= 31 and pads <= 15 up to scale 8.
  rw::Kernel1D k8 = rw::BilinearKernel(8, true, true);
  EXPECT_EQ(k8.w.size(), 16u);
  EXPECT_EQ(k8.pad_begin, 12);
}

TEST(RewriteOracle, OnnxRuntimeIsInstalledAndComparesModels) {
  OrtOracle o = Oracle();
  auto c = o.Compare(kMlsd, kMlsd, {{"input_image_with_alpha:0", "float32", {1, 320, 320, 4}}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->ran);
  EXPECT_EQ(c->max_abs_diff, 0.0);
  EXPECT_EQ(c->outputs.size(), 2u);
}

TEST(RewriteResize, EachRewriteScaleAndCoordinateModeVerifies) {
  for (const char* rewrite : {"resize-to-convtranspose", "resize-to-nearest-conv"})
    for (int64_t s : {2, 3})
      for (const char* ct : {"half_pixel", "pytorch_half_pixel", "asymmetric"}) {
        // pytorch_half_pixel builds the same kernels as half_pixel: once per rewrite is enough.
        if (std::string(ct) == "pytorch_half_pixel" && (s == 3) != (std::string(rewrite) == "resize-to-nearest-conv")) continue;
        ResizeSpec spec;
        spec.sh = spec.sw = s;
        spec.ct = ct;
        std::string tag = std::string(rewrite) + "_" + std::to_string(s) + "_" + ct;
        std::string in = ResizeModel(tag + ".onnx", spec), out = TmpDir() + "/" + tag + ".out.onnx";
        RewriteOptions o;
        o.only = {rewrite};
        RewriteReport r = Rewrite(in, out, P("cpu"), o);
        ASSERT_EQ(r.steps.size(), 1u) << tag << "\n" << r.ToText();
        EXPECT_EQ(r.steps[0].status, "applied") << tag << "\n" << r.ToText();
        EXPECT_TRUE(r.written) << tag;
        EXPECT_GE(r.steps[0].check.MaxDiff(false), 0) << tag;
        EXPECT_LE(r.steps[0].check.MaxDiff(false), 1e-5) << tag;
        EXPECT_LE(r.steps[0].check.MaxDiff(true), 1e-5) << tag;  // R itself
        EXPECT_EQ(Ops(out, "Resize"), std::string(rewrite) == "resize-to-nearest-conv" ? 1 : 0) << tag;
        EXPECT_EQ(Ops(out, std::string(rewrite) == "resize-to-nearest-conv" ? "Conv" : "ConvTranspose"), 1) << tag;
      }
}

TEST(RewriteResize, NearestBecomesABoxConvTransposeBitExactly) {
  struct Case { int64_t s; const char* ct; const char* nm; };
  for (const Case& k : {Case{2, "asymmetric", "floor"}, Case{3, "asymmetric", "floor"}, Case{2, "half_pixel", ""},
                        Case{3, "pytorch_half_pixel", "round_prefer_ceil"}, Case{2, "tf_half_pixel_for_nn", "floor"}}) {
    ResizeSpec spec;
    spec.mode = "nearest";
    spec.sh = spec.sw = k.s;
    spec.ct = k.ct;
    spec.nearest_mode = k.nm;  // "" = the default, round_prefer_floor
    std::string tag = std::string("nearest_") + std::to_string(k.s) + "_" + k.ct + "_" + k.nm;
    std::string in = ResizeModel(tag + ".onnx", spec), out = TmpDir() + "/" + tag + ".out.onnx";
    RewriteOptions o;
    o.only = {"resize-nearest-to-convtranspose"};
    RewriteReport r = Rewrite(in, out, P("cpu"), o);
    ASSERT_EQ(r.steps.size(), 1u) << tag << "\n" << r.ToText();
    EXPECT_EQ(r.steps[0].status, "applied") << tag << "\n" << r.ToText();
    EXPECT_EQ(r.steps[0].check.MaxDiff(false), 0.0) << tag;  // one product 1*x per output
    EXPECT_EQ(r.steps[0].check.MaxDiff(true), 0.0) << tag;
    EXPECT_EQ(Ops(out, "ConvTranspose"), 1) << tag;
    EXPECT_EQ(Ops(out, "Resize"), 0) << tag;
  }
  // asymmetric with rounding picks floor(o/s + 1/2) for some outputs: not a box, refused.
  ResizeSpec round;
  round.mode = "nearest";
  round.ct = "asymmetric";
  round.nearest_mode = "round_prefer_floor";
  RewriteOptions o;
  o.only = {"resize-nearest-to-convtranspose"};
  RewriteReport r = Rewrite(ResizeModel("nearest_round.onnx", round), TmpDir() + "/nearest_round.out.onnx", P("cpu"), o);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].status, "refused");
  EXPECT_NE(r.steps[0].reason.find("no box upsampling"), std::string::npos) << r.steps[0].reason;
  // FastestDet's nearest upsample on the TFLite GPU delegate (bilinear only): chosen without --only.
  std::string fd = kData + "/models/onnx/ortx/ppp_vision__FastestDet.onnx";
  RewriteReport f = Rewrite(fd, TmpDir() + "/fastestdet.gpu.onnx", P("mobile-gpu-tflite"));
  ASSERT_EQ(f.Count("applied"), 1) << f.ToText();
  EXPECT_EQ(f.steps.back().rewrite, "resize-nearest-to-convtranspose");
  EXPECT_EQ(f.steps.back().check.MaxDiff(false), 0.0);
  EXPECT_EQ(f.after.n_cpu, f.before.n_cpu - 1);
}

TEST(RewriteResize, UnequalScalesSizesInputAndOpset10) {
  struct Case { const char* tag; ResizeSpec spec; };
  ResizeSpec a; a.sh = 2; a.sw = 3;
  ResizeSpec b; b.sizes = true; b.sh = 4; b.sw = 4; b.dims = {2, 4, 3, 5};
  ResizeSpec c; c.opset = 10; c.sh = c.sw = 2;
  ResizeSpec d; d.opset = 11; d.sh = 1; d.sw = 2; d.ct = "asymmetric";
  for (const Case& k : {Case{"h2w3", a}, Case{"sizes4", b}, Case{"opset10", c}, Case{"w_only", d}}) {
    std::string in = ResizeModel(std::string(k.tag) + ".onnx", k.spec), out = TmpDir() + "/" + k.tag + ".out.onnx";
    RewriteOptions o;
    o.only = {"resize-to-convtranspose"};
    RewriteReport r = Rewrite(in, out, P("cpu"), o);
    ASSERT_EQ(r.steps.size(), 1u) << k.tag << "\n" << r.ToText();
    EXPECT_EQ(r.steps[0].status, "applied") << k.tag << "\n" << r.ToText();
    EXPECT_LE(r.steps[0].check.MaxDiff(false), 1e-5) << k.tag;
    EXPECT_EQ(Ops(out, "ConvTranspose"), 1) << k.tag;
  }
}

TEST(RewriteResize, ChosenFromTheProfile) {
  std::string in = ResizeModel("profile.onnx", ResizeSpec{});
  // rk3588-npu runs Resize linear itself: nothing to do by default.
  RewriteReport none = Rewrite(in, TmpDir() + "/profile.none.onnx", P("rk3588-npu"));
  EXPECT_EQ(none.Count("applied"), 0) << none.ToText();
  EXPECT_FALSE(none.written);
  EXPECT_FALSE(fs::exists(TmpDir() + "/profile.none.onnx"));
  // Without linear Resize: ConvTranspose (with Slice+Concat borders, Pad edge is not on the device).
  RewriteReport ct = Rewrite(in, TmpDir() + "/profile.ct.onnx", NoLinear(true));
  ASSERT_EQ(ct.Count("applied"), 1) << ct.ToText();
  EXPECT_EQ(ct.steps.back().rewrite, "resize-to-convtranspose");
  EXPECT_EQ(ct.before.n_cpu, 1);
  EXPECT_EQ(ct.after.n_cpu, 0) << ct.ToText();
  EXPECT_EQ(Ops(TmpDir() + "/profile.ct.onnx", "Pad"), 0);
  // Without ConvTranspose either: nearest + depthwise Conv.
  RewriteReport nc = Rewrite(in, TmpDir() + "/profile.nc.onnx", NoLinear(false));
  ASSERT_EQ(nc.Count("applied"), 1) << nc.ToText();
  EXPECT_EQ(nc.steps.back().rewrite, "resize-to-nearest-conv");
  EXPECT_EQ(nc.after.n_cpu, 0) << nc.ToText();
  // Scale 3 is not a ConvTranspose stride rk3588 takes ([2, 4, 8]): nearest + Conv instead.
  ResizeSpec s3;
  s3.sh = s3.sw = 3;
  RewriteReport r3 = Rewrite(ResizeModel("profile3.onnx", s3), TmpDir() + "/profile3.out.onnx", NoLinear(true));
  ASSERT_EQ(r3.Count("applied"), 1) << r3.ToText();
  EXPECT_EQ(r3.steps.back().rewrite, "resize-to-nearest-conv");
}

TEST(RewriteResize, AlignCornersAndNonIntegerScalesAreRefusedWithAReason) {
  ResizeSpec ac;
  ac.ct = "align_corners";
  RewriteOptions o;
  o.only = {"resize-to-convtranspose"};
  RewriteReport r = Rewrite(ResizeModel("ac.onnx", ac), TmpDir() + "/ac.out.onnx", P("cpu"), o);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].status, "refused");
  EXPECT_NE(r.steps[0].reason.find("align_corners"), std::string::npos) << r.steps[0].reason;
  EXPECT_FALSE(fs::exists(TmpDir() + "/ac.out.onnx"));
  ResizeSpec frac;
  frac.dims = {1, 3, 4, 4};
  frac.sh = frac.sw = 2;
  std::string in = ResizeModel("frac.onnx", frac);
  // 4 -> 10 is 2.5x: rewrite the sizes by hand.
  auto proto = ReadModelProto(in);
  ASSERT_TRUE(proto.ok());
  auto* sc = proto.value()->mutable_graph()->mutable_initializer(1);
  sc->clear_float_data();
  for (float v : {1.f, 1.f, 2.5f, 2.5f}) sc->add_float_data(v);
  std::ofstream(in, std::ios::binary | std::ios::trunc) << proto.value()->SerializeAsString();
  RewriteReport f = Rewrite(in, TmpDir() + "/frac.out.onnx", P("cpu"), o);
  ASSERT_EQ(f.steps.size(), 1u);
  EXPECT_EQ(f.steps[0].status, "refused");
  EXPECT_NE(f.steps[0].reason.find("integer"), std::string::npos) << f.steps[0].reason;
}

TEST(RewriteResize, ABrokenKernelFailsVerificationAndIsNotWritten) {
  std::string in = ResizeModel("broken.onnx", ResizeSpec{}), out = TmpDir() + "/broken.out.onnx";
  std::string before = ReadAll(in);
  RewriteOptions o;
  o.only = {"resize-to-convtranspose"};
  o.break_rewrite = "resize-to-convtranspose";
  RewriteReport r = Rewrite(in, out, P("cpu"), o);
  ASSERT_EQ(r.steps.size(), 1u) << r.ToText();
  EXPECT_EQ(r.steps[0].status, "failed");
  EXPECT_GT(r.steps[0].check.MaxDiff(true), 1e-3);
  EXPECT_NE(r.steps[0].reason.find("not written"), std::string::npos);
  EXPECT_EQ(r.Unresolved(), 1);
  EXPECT_FALSE(r.written);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(ReadAll(in), before);
  // With the nearest-conv alternative allowed, the node still gets rewritten.
  o.only = {"resize-to-convtranspose", "resize-to-nearest-conv"};
  RewriteReport alt = Rewrite(in, out, P("cpu"), o);
  EXPECT_EQ(alt.Count("failed"), 1) << alt.ToText();
  EXPECT_EQ(alt.Count("applied"), 1) << alt.ToText();
  EXPECT_EQ(alt.Unresolved(), 0);
  EXPECT_TRUE(fs::exists(out));
}

TEST(RewriteShapes, DynamicInputIsFixedThenTheResizeRewritten) {
  ResizeSpec dyn;
  dyn.dims = {-1, 3, -1, -1};
  std::string in = ResizeModel("dynamic.onnx", dyn), out = TmpDir() + "/dynamic.out.onnx";
  RewriteOptions o;
  ASSERT_TRUE(ParseInputShape("X=1,3,6,8", &o.input_shapes).ok());
  RewriteReport r = Rewrite(in, out, NoLinear(true), o);
  ASSERT_GE(r.steps.size(), 2u) << r.ToText();
  EXPECT_EQ(r.steps[0].rewrite, "fix-input-shape");
  EXPECT_EQ(r.steps[0].status, "applied") << r.ToText();
  EXPECT_NE(r.steps[0].what.find("[N,3,H,W] -> [1,3,6,8]"), std::string::npos) << r.steps[0].what;
  EXPECT_EQ(r.steps.back().rewrite, "resize-to-convtranspose");
  EXPECT_EQ(r.steps.back().status, "applied") << r.ToText();
  EXPECT_EQ(r.after.n_cpu, 0);
  EXPECT_TRUE(r.after.dynamic_inputs.empty());
  auto m = OnnxModel::Load(out);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.value()->Find("X")->ShapeString(), "[1,3,6,8]");
  EXPECT_EQ(m.value()->Find("Y")->ShapeString(), "[1,3,12,16]");
  // Without --input-shape the Resize cannot be rewritten: a reason, not a guess.
  RewriteReport no = Rewrite(in, TmpDir() + "/dynamic.no.onnx", NoLinear(true));
  ASSERT_EQ(no.steps.size(), 1u) << no.ToText();
  EXPECT_EQ(no.steps[0].status, "refused");
  EXPECT_NE(no.steps[0].reason.find("--input-shape"), std::string::npos) << no.steps[0].reason;
}

TEST(RewriteShapes, Float16InputsAreGeneratedAndCompared) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("fp16");
  auto declare = [](onnx::ValueInfoProto* v, const char* name) {  // float16 [N,4]
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT16);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  declare(g->add_input(), "X");
  declare(g->add_output(), "Y");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Relu");
  n->set_name("relu");
  n->add_input("X");
  n->add_output("Y");
  std::string in = TmpDir() + "/fp16.onnx", out = TmpDir() + "/fp16.out.onnx";
  std::ofstream(in, std::ios::binary) << m.SerializeAsString();
  RewriteOptions o;
  ASSERT_TRUE(ParseInputShape("X=3,4", &o.input_shapes).ok());
  RewriteReport r = Rewrite(in, out, P("cpu"), o);
  ASSERT_EQ(r.steps.size(), 1u) << r.ToText();
  EXPECT_EQ(r.steps[0].status, "applied") << r.ToText();
  ASSERT_EQ(r.steps[0].check.outputs.size(), 1u);
  EXPECT_EQ(r.steps[0].check.outputs[0].max_abs_diff, 0.0);
  EXPECT_GT(r.steps[0].check.outputs[0].max_abs, 0.1);  // decoded from float16 bits, within [0, 1)
  EXPECT_LT(r.steps[0].check.outputs[0].max_abs, 1.0);
}

TEST(RewriteMlsd, StaticShapesMakeItGoodOnRk3588AndResizesBecomeConvTranspose) {
  std::string before = ReadAll(kMlsd);
  std::string out = TmpDir() + "/mlsd.rk3588.onnx", out2 = TmpDir() + "/mlsd.rk3588.ct.onnx";
  RewriteReport r = Rewrite(kMlsd, out, P("rk3588-npu"));
  EXPECT_EQ(r.before.n_accel, 19) << r.before.SummaryLine();
  EXPECT_EQ(r.before.verdict, "MAYBE");
  bool suggested = false;  // scan points at this rewrite
  for (const auto& x : r.before.suggestions) suggested |= x.find("static-shapes") != std::string::npos;
  EXPECT_TRUE(suggested);
  ASSERT_EQ(r.steps.size(), 1u) << r.ToText();
  EXPECT_EQ(r.steps[0].rewrite, "static-shapes");
  EXPECT_EQ(r.steps[0].status, "applied");
  EXPECT_EQ(r.steps[0].check.MaxDiff(false), 0.0);  // folding constants changes no arithmetic
  EXPECT_EQ(r.after.n_cpu, 0) << r.after.SummaryLine();
  EXPECT_EQ(r.after.verdict, "GOOD");
  // The three bilinear Resizes as ConvTranspose (rk3588 would run them either way; --only asks for it).
  // Tolerance 1e-3: the rewritten tensors agree to ~1 ulp, but M-LSD's offsets (|x| ~ 100) amplify that to
  // ~1e-4, the edge of the default (ONNX Runtime's own optimizations move them by ~5e-2).
  RewriteOptions o;
  o.only = {"resize-to-convtranspose"};
  o.tolerance = 1e-3;
  RewriteReport c = Rewrite(out, out2, P("rk3588-npu"), o);
  EXPECT_EQ(c.Count("applied"), 3) << c.ToText();
  for (const auto& st : c.steps) EXPECT_LE(st.check.MaxDiff(true), 1e-3) << c.ToText();
  EXPECT_EQ(c.after.n_cpu, 0) << c.after.SummaryLine();
  EXPECT_EQ(c.after.verdict, "GOOD");
  EXPECT_EQ(Ops(out2, "ConvTranspose"), 3);
  EXPECT_EQ(Ops(out2, "Resize"), 0);
  EXPECT_EQ(ReadAll(kMlsd), before);
}

TEST(RewriteCli, ExitCodesAndTheInputIsNeverModified) {
  std::string in = ResizeModel("cli.onnx", ResizeSpec{});
  std::string before = ReadAll(in);
  std::string prof = TmpDir() + "/no-linear.json";
  std::ofstream(prof) << NoLinear(true).raw.dump();
  std::string out = TmpDir() + "/cli.out.onnx";
  EXPECT_EQ(RunCli({in, "-o", out, "--target", prof, "--json", TmpDir() + "/cli.json"}), 0);
  EXPECT_TRUE(fs::exists(out));
  nlohmann::json j = nlohmann::json::parse(ReadAll(TmpDir() + "/cli.json"));
  EXPECT_EQ(j["applied"], 1);
  EXPECT_TRUE(j["written"].get<bool>());
  EXPECT_TRUE(j["steps"][0]["check"]["max_abs_diff"].is_number());
  // Nothing applicable: 1, nothing written.
  EXPECT_EQ(RunCli({in, "-o", TmpDir() + "/cli.none.onnx", "--target", "rk3588-npu"}), 1);
  EXPECT_FALSE(fs::exists(TmpDir() + "/cli.none.onnx"));
  // -o naming the input (also spelled differently) is refused.
  EXPECT_EQ(RunCli({in, "-o", in, "--target", prof}), 2);
  EXPECT_EQ(RunCli({in, "-o", TmpDir() + "/../" + fs::path(TmpDir()).filename().string() + "/cli.onnx", "--target", prof}), 2);
  // Usage.
  EXPECT_EQ(RunCli({in, "--target", prof}), 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", prof, "--only", "no-such-rewrite"}), 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", "no-such-device"}), 2);
  EXPECT_EQ(RunCli({in, "-o", out, "--target", prof, "--input-shape", "nope=1,2"}), 2);
  EXPECT_EQ(RunCli({"--list"}), 0);
  // Bad models: 3, with the file named.
  std::string png = TmpDir() + "/image.onnx";
  std::ofstream(png, std::ios::binary) << "\x89PNG\r\n\x1a\n0000";
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunCli({png, "-o", TmpDir() + "/x.onnx", "--target", prof}), 3);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(png), std::string::npos) << err;
  EXPECT_NE(err.find("PNG"), std::string::npos) << err;
  std::string trunc = TmpDir() + "/truncated.onnx";
  std::ofstream(trunc, std::ios::binary) << before.substr(0, before.size() / 2);
  EXPECT_EQ(RunCli({trunc, "-o", TmpDir() + "/x.onnx", "--target", prof}), 3);
  EXPECT_EQ(RunCli({TmpDir() + "/missing.onnx", "-o", TmpDir() + "/x.onnx", "--target", prof}), 3);
  EXPECT_FALSE(fs::exists(TmpDir() + "/x.onnx"));
  // ONNX Runtime missing: 4 (and the model is checked first: a bad one is still 3).
  ASSERT_EQ(::setenv("EDGEDECODE_ORACLE_DIR", TmpDir().c_str(), 1), 0);
  std::ofstream(TmpDir() + "/ort_compare.mjs") << "// not the oracle\n";
  EXPECT_EQ(RunCli({in, "-o", TmpDir() + "/x.onnx", "--target", prof}), 4);
  EXPECT_EQ(RunCli({png, "-o", TmpDir() + "/x.onnx", "--target", prof}), 3);
  ::unsetenv("EDGEDECODE_ORACLE_DIR");
  EXPECT_FALSE(fs::exists(TmpDir() + "/x.onnx"));
  EXPECT_EQ(ReadAll(in), before);
}
