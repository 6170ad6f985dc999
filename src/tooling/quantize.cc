#include "tooling/quantize.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "base/thread_pool.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "tooling/convert_util.h"
#include "tooling/gguf_stream.h"
#include "tooling/model_spec.h"

namespace edgedecode::tooling {

Status ParseQuantizeType(const std::string& name, QuantizeOptions* opts) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  struct Mix {
    const char* name;
    GgmlType type;
    bool m;
  };
  static const Mix kMixes[] = {{"q3_k_m", GgmlType::kQ3_K, true}, {"q4_k_m", GgmlType::kQ4_K, true},
                               {"q5_k_m", GgmlType::kQ5_K, true}, {"q4_k_s", GgmlType::kQ4_K, false},
                               {"q5_k_s", GgmlType::kQ5_K, false}};
  for (const Mix& m : kMixes) {
    if (lower == m.name) {
      opts->type = m.type;
      opts->mix_m = m.m;
      return Status::Ok();
    }
  }
  GgmlType t;
  if (!ParseGgmlType(lower, &t) || !IsWritableType(t))
    return InvalidArgument("unknown or unwritable type '" + name + "' (types: " + WritableTypeList() +
                           "; mixes: q3_k_m, q4_k_m, q5_k_m, q4_k_s, q5_k_s)");
  opts->type = t;
  opts->mix_m = false;
  return Status::Ok();
}

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<std::vector<GgmlType>> PlanQuantize(const gguf::File& in, const QuantizeOptions& opts, QuantizeStats* stats) {
  if (!IsWritableType(opts.type))
    return InvalidArgument(std::string("cannot write type ") + TypeTraits(opts.type).name);
  std::vector<std::pair<std::regex, GgmlType>> overrides;
  for (const auto& [pattern, type] : opts.overrides) {
    if (!IsWritableType(type))
      return InvalidArgument("--tensor-type " + pattern + ": cannot write type " + TypeTraits(type).name);
    try {
      overrides.emplace_back(std::regex(pattern, std::regex::ECMAScript), type);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--tensor-type: bad pattern '" + pattern + "': " + e.what());
    }
  }
  auto log = [&](const std::string& s) {
    if (opts.log) opts.log(s);
  };
  const std::string& in_path = in.path();
  QuantizeStats st;
  std::vector<GgmlType> types;
  for (const gguf::TensorInfo& t : in.tensors()) {
    if (!quant::CanDequantize(t.ggml_type()))
      return Unsupported(in_path + ": tensor '" + t.name + "' has type " + TypeName(t.type) +
                         ", which cannot be read for re-quantization");
    GgmlType want = opts.type;
    std::string why = "type";
    for (size_t o = 0; o < overrides.size(); ++o) {
      if (std::regex_match(t.name, overrides[o].first)) {
        want = overrides[o].second;
        why = "override " + opts.overrides[o].first;
        break;
      }
    }
    const bool is_matrix = t.dims.size() >= 2;
    if (why == "type" && opts.mix_m &&
        (t.name == "output.weight" || EndsWith(t.name, "attn_v.weight") || EndsWith(t.name, "ffn_down.weight"))) {
      want = GgmlType::kQ6_K;
      why = "mix";
    }
    GgmlType ty = want;
    if (!is_matrix) {
      ty = GgmlType::kF32;  // norms and biases stay f32 (llama.cpp convention)
      why = "1-D tensors are f32";
    } else if (EndsWith(t.name, ".shortconv.conv.weight")) {
      // lfm2's conv kernel (3 taps per channel): f32 as the converter writes it; llama.cpp's ggml_ssm_conv
      // reads f32 weights only.
      ty = GgmlType::kF32;
      why = "the short-convolution kernel is f32";
    } else {
      ty = FitType(want, t.dims[0]);
      if (ty != want) {
        ++st.fallbacks;
        why = std::string("fallback: rows of ") + std::to_string(t.dims[0]) + " do not fit " + TypeTraits(want).name;
        log(t.name + ": row length " + std::to_string(t.dims[0]) + " does not fit " + TypeTraits(want).name +
            ", using " + TypeTraits(ty).name);
      }
    }
    const GgmlType src = t.ggml_type();
    const bool src_quantized = src != GgmlType::kF32 && src != GgmlType::kF16 && src != GgmlType::kBF16;
    if (is_matrix && src_quantized && ty != src && !opts.allow_requantize)
      return InvalidArgument(in_path + ": tensor '" + t.name + "' is already " + TypeName(t.type) + "; re-encoding it as " +
                             TypeTraits(ty).name + " compounds the rounding (quantize from the f16/f32 model, or pass "
                             "--allow-requantize)");
    if (ty != src) st.changes.push_back({t.name, src, ty, why});
    types.push_back(ty);
    st.in_bytes += t.nbytes;
    st.out_bytes += RowBytes(ty, t.dims.empty() ? 0 : t.dims[0]) * static_cast<uint64_t>(t.rows());
    ++st.tensors;
  }
  if (stats) *stats = st;
  return types;
}

Status QuantizeModel(const std::string& in_path, const std::string& out_path, const QuantizeOptions& opts,
                     QuantizeStats* stats) {
  ED_ASSIGN_OR_RETURN(auto in, gguf::File::Open(in_path));
  QuantizeStats st;
  ED_ASSIGN_OR_RETURN(const std::vector<GgmlType> types, PlanQuantize(*in, opts, &st));
  st.tensors = 0;
  st.out_bytes = 0;
  StreamWriter w(in->alignment());
  for (const auto& kv : in->metadata()) w.Set(kv.first, kv.second);
  uint32_t ftype = FileTypeFor(opts.type);
  if (opts.type == GgmlType::kQ4_K) ftype = opts.mix_m ? 15 : 14;
  if (opts.type == GgmlType::kQ5_K) ftype = opts.mix_m ? 17 : 16;
  if (opts.type == GgmlType::kQ3_K) ftype = opts.mix_m ? 12 : 11;
  w.Set("general.file_type", gguf::Value::U32(ftype));
  w.Set("general.quantization_version", gguf::Value::U32(2));
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const gguf::TensorInfo& t = in->tensors()[i];
    ED_RETURN_IF_ERROR(w.Declare(t.name, t.dims, types[i]));
  }
  ED_RETURN_IF_ERROR(w.Begin(out_path));
  ThreadPool pool(std::max(1, opts.threads));
  std::vector<float> f32;
  std::vector<uint8_t> packed;
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const gguf::TensorInfo& t = in->tensors()[i];
    const GgmlType src_t = t.ggml_type(), dst_t = types[i];
    const int64_t n = t.dims[0], rows = t.rows();
    if (src_t == dst_t) {  // no re-encoding: copy the bytes (exact, and fast)
      ED_RETURN_IF_ERROR(w.Write(t.data, t.nbytes));
    } else {
      const size_t in_row = RowBytes(src_t, n), out_row = RowBytes(dst_t, n);
      const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 22) / n);
      f32.resize(static_cast<size_t>(std::min(chunk, rows) * n));
      packed.resize(static_cast<size_t>(std::min(chunk, rows)) * out_row);
      for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t nr = std::min(chunk, rows - r0);
        auto work = [&](int64_t a, int64_t b, int) {
          for (int64_t r = a; r < b; ++r) {
            float* row = f32.data() + r * n;
            quant::DequantizeRow(src_t, t.data + (r0 + r) * in_row, row, n);
            if (dst_t != GgmlType::kF32) quant::QuantizeRow(dst_t, row, packed.data() + r * out_row, n);
          }
        };
        if (nr > 1 && pool.size() > 1) pool.ParallelFor(nr, 1, work);
        else work(0, nr, 0);
        const void* src = dst_t == GgmlType::kF32 ? static_cast<const void*>(f32.data()) : packed.data();
        ED_RETURN_IF_ERROR(w.Write(src, static_cast<size_t>(nr) * out_row));
      }
    }
    st.out_bytes += w.TensorBytes(i);
    ++st.tensors;
  }
  ED_RETURN_IF_ERROR(w.Finish());
  if (stats) *stats = st;
  return Status::Ok();
}

}  // namespace edgedecode::tooling
