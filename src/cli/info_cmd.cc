// `edgedecode info MODEL`: what a GGUF file holds (metadata with long arrays summarized, every tensor with
// type, shape and bytes, the type mix), what decoding it costs (bytes read per token), its chat template,
// and whether this build runs it (and if not, exactly what is missing).
#include <algorithm>
#include <cstdio>
#include <map>

#include "chat/template.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/gguf.h"
#include "llm/memory_plan.h"
#include "llm/model.h"
#include "tok/tokenizer.h"

namespace edgedecode::cli {
namespace {

constexpr size_t kArrayHead = 8;     // array elements shown
constexpr size_t kStringShown = 96;  // characters of a string value shown in the text report

// A string from the file, escaped for the terminal (EscapeForTerminal) and cut at max bytes.
std::string Quote(const std::string& s, size_t max) {
  return "'" + EscapeForTerminal(std::string_view(s).substr(0, max)) +
         (s.size() > max ? "'... (" + std::to_string(s.size()) + " bytes)" : "'");
}

std::string ScalarText(const gguf::Value& v, size_t max) {
  if (v.type == gguf::ValueType::kString) return Quote(v.str, max);
  if (v.type == gguf::ValueType::kBool) return v.u ? "true" : "false";
  if (v.is_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v.f);
    return b;
  }
  return v.type <= gguf::ValueType::kUint64 && v.type != gguf::ValueType::kInt8 && v.type != gguf::ValueType::kInt16 &&
                 v.type != gguf::ValueType::kInt32 && v.type != gguf::ValueType::kInt64
             ? std::to_string(v.u)
             : std::to_string(v.i);
}

nlohmann::json ScalarJson(const gguf::Value& v) {
  if (v.type == gguf::ValueType::kString) return v.str;
  if (v.type == gguf::ValueType::kBool) return v.u != 0;
  if (v.is_float()) return v.f;
  if (v.type == gguf::ValueType::kArray) return nullptr;
  return v.as_int();
}

std::string ValueText(const gguf::Value& v) {
  if (v.type != gguf::ValueType::kArray) return ScalarText(v, kStringShown);
  std::string s = "[" + std::to_string(v.array_size()) + " x " + gguf::ValueTypeName(v.array_type) + "]";
  for (size_t i = 0; i < std::min(v.array_size(), kArrayHead); ++i) s += (i ? ", " : " ") + ScalarText(v.element(i), 24);
  if (v.array_size() > kArrayHead) s += ", ...";
  return s;
}

nlohmann::json ValueJson(const gguf::Value& v) {
  if (v.type != gguf::ValueType::kArray) return ScalarJson(v);
  nlohmann::json head = nlohmann::json::array();
  for (size_t i = 0; i < std::min(v.array_size(), kArrayHead); ++i) head.push_back(ScalarJson(v.element(i)));
  return {{"array_of", gguf::ValueTypeName(v.array_type)}, {"count", v.array_size()}, {"head", head}};
}

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

// KV bytes each token of context adds with an f16 cache: 2 (K and V) x layers x kv_heads x head_dim x 2. A
// per-layer head_count_kv (lfm2: 0 for its short-convolution layers, which keep no cache) is summed instead.
uint64_t KvBytesPerToken(const gguf::File& f, const std::string& arch) {
  const int64_t layers = f.GetIntOr(arch + ".block_count", 0), dim = f.GetIntOr(arch + ".embedding_length", 0);
  const int64_t heads = f.GetIntOr(arch + ".attention.head_count", 0);
  int64_t layer_heads = 0;  // kv heads summed over the layers
  const std::string kv_key = arch + ".attention.head_count_kv";
  if (const gguf::Value* kv = f.Find(kv_key); kv != nullptr && kv->type == gguf::ValueType::kArray) {
    auto per_layer = f.GetIntArray(kv_key);
    if (!per_layer.ok()) return 0;
    for (int64_t h : *per_layer)
      if (h < 0 || __builtin_add_overflow(layer_heads, h, &layer_heads)) return 0;
  } else if (__builtin_mul_overflow(layers, f.GetIntOr(kv_key, heads), &layer_heads)) {
    return 0;
  }
  const int64_t head_dim = f.GetIntOr(arch + ".attention.key_length", heads > 0 ? dim / heads : 0);
  if (layers <= 0 || layer_heads <= 0 || head_dim <= 0) return 0;
  // The values come from the file unchecked: a product beyond 2^63 is shown as 0 (unknown), not overflowed.
  int64_t b = 4;
  for (int64_t f : {layer_heads, head_dim})
    if (__builtin_mul_overflow(b, f, &b)) return 0;
  return static_cast<uint64_t>(b);
}

}  // namespace

int InfoMain(int argc, char** argv) {
  const std::string cmd = "edgedecode info";
  CLI::App app{"What a GGUF model holds and whether this build runs it: metadata, tensors, type mix, bytes read "
               "per token, chat template.", cmd};
  std::string path;
  bool all_tensors = false, no_tensors = false;
  JsonOutput json;
  app.add_option("model", path, "GGUF file")->required();
  app.add_flag("--tensors", all_tensors, "list every tensor in the text report (JSON always has them)");
  app.add_flag("--no-tensors", no_tensors, "leave the tensor list out of the JSON");
  json.Add(app, "everything");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  auto file = gguf::File::Open(path);
  if (!file.ok()) return Fail(cmd, file.status());
  const gguf::File& f = **file;
  const std::string arch = f.GetStringOr("general.architecture", "");

  // What this build runs: the model (architecture, tensors, types) and its tokenizer, each with the reason.
  std::string model_problem, tok_problem;
  if (auto m = llm::Model::Load(path, false); !m.ok()) model_problem = m.status().message();
  if (auto t = tok::Tokenizer::FromGguf(f); !t.ok()) tok_problem = t.status().message();
  const bool supported = model_problem.empty() && tok_problem.empty();

  std::map<std::string, std::pair<int, uint64_t>> mix;  // type -> tensors, bytes
  uint64_t total = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    auto& m = mix[TypeName(t.type)];
    ++m.first;
    m.second += t.nbytes;
    total += t.nbytes;
  }
  const uint64_t per_token = gguf::DecodeBytesPerToken(f), kv_per_token = KvBytesPerToken(f, arch);
  const gguf::Value* tmpl = f.Find("tokenizer.chat_template");
  const bool has_template = tmpl != nullptr && tmpl->type == gguf::ValueType::kString && !tmpl->str.empty();
  std::string template_family, template_problem;
  if (has_template) {
    template_family = chat::ChatTemplateFamily(tmpl->str);
    if (auto t = chat::Template::Parse(tmpl->str); !t.ok()) template_problem = t.status().message();
  }

  FILE* out = json.text();
  std::fprintf(out, "%s: GGUF v%u, %s, %zu metadata keys, %zu tensors, alignment %llu\n", EscapeForTerminal(path).c_str(), f.version(),
               llm::FormatBytes(f.file_size()).c_str(), f.metadata().size(), f.tensors().size(),
               static_cast<unsigned long long>(f.alignment()));
  std::fprintf(out, "architecture: %s   name: %s\n", arch.empty() ? "(none)" : EscapeForTerminal(arch).c_str(),
               EscapeForTerminal(f.GetStringOr("general.name", "(none)")).c_str());
  std::fprintf(out, "supported by this build: %s\n", supported ? "yes" : "no");
  if (!model_problem.empty()) std::fprintf(out, "  model: %s\n", EscapeForTerminal(model_problem).c_str());
  if (!tok_problem.empty()) std::fprintf(out, "  tokenizer: %s\n", EscapeForTerminal(tok_problem).c_str());
  std::fprintf(out, "bytes read per token (decode at depth 0): %s", llm::FormatBytes(per_token).c_str());
  if (kv_per_token > 0) std::fprintf(out, "; each token of context adds %s of f16 KV cache", llm::FormatBytes(kv_per_token).c_str());
  if (has_template)
    std::fprintf(out, "\nchat template: %zu bytes, family %s, %s\n", tmpl->str.size(), template_family.c_str(),
                 template_problem.empty() ? "renders here" : ("does not parse here: " + EscapeForTerminal(template_problem)).c_str());
  else
    std::fprintf(out, "\nchat template: none (chat and run --chat need --chat-template FILE)\n");
  std::fprintf(out, "\ntype mix:\n");
  for (const auto& [type, m] : mix)
    std::fprintf(out, "  %-8s %5d tensors %12s  %5.1f%%\n", type.c_str(), m.first, llm::FormatBytes(m.second).c_str(),
                 total ? 100.0 * static_cast<double>(m.second) / static_cast<double>(total) : 0.0);
  std::fprintf(out, "\nmetadata:\n");
  for (const auto& [key, v] : f.metadata())
    std::fprintf(out, "  %-40s %s\n", EscapeForTerminal(key).c_str(), ValueText(v).c_str());
  std::fprintf(out, "\ntensors:%s\n", all_tensors || f.tensors().size() <= 32 ? "" : " (first 32; --tensors for all)");
  for (size_t i = 0; i < f.tensors().size() && (all_tensors || i < 32); ++i) {
    const gguf::TensorInfo& t = f.tensors()[i];
    std::fprintf(out, "  %-36s %-6s %-22s %12s\n", EscapeForTerminal(t.name).c_str(), TypeName(t.type).c_str(), Shape(t.dims).c_str(),
                 llm::FormatBytes(t.nbytes).c_str());
  }

  if (json.on()) {
    nlohmann::json j;
    j["file"] = path;
    j["gguf_version"] = f.version();
    j["file_bytes"] = f.file_size();
    j["architecture"] = arch;
    j["supported"] = supported;
    j["unsupported_reasons"] = {{"model", model_problem}, {"tokenizer", tok_problem}};
    j["bytes_per_token"] = per_token;
    j["kv_bytes_per_context_token_f16"] = kv_per_token;
    j["chat_template"] = has_template ? nlohmann::json{{"bytes", tmpl->str.size()}, {"family", template_family},
                                                       {"parses", template_problem.empty()}, {"error", template_problem}}
                                      : nlohmann::json();
    nlohmann::json mj = nlohmann::json::object();
    for (const auto& [type, m] : mix) mj[type] = {{"tensors", m.first}, {"bytes", m.second}};
    j["type_mix"] = mj;
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& [key, v] : f.metadata()) meta[key] = ValueJson(v);
    j["metadata"] = meta;
    if (!no_tensors) {
      nlohmann::json ts = nlohmann::json::array();
      for (const gguf::TensorInfo& t : f.tensors())
        ts.push_back({{"name", t.name}, {"type", TypeName(t.type)}, {"shape", t.dims}, {"bytes", t.nbytes}, {"offset", t.offset}});
      j["tensors"] = ts;
    }
    if (Status st = json.Write(j, "info", {path}); !st.ok()) return Fail(cmd, st);
  }
  return supported ? 0 : 1;
}

}  // namespace edgedecode::cli
