#include "cli/serve_request.h"

#include "base/json_depth.h"

#include <cmath>
#include <random>

namespace edgedecode::cli::serve {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::string Num(double v) { return json(v).dump(); }

bool Present(const json& b, const char* key) { return b.contains(key) && !b[key].is_null(); }

// A number field within [lo, hi]; absent or null keeps *v.
std::optional<ApiError> NumberField(const json& b, const char* key, double lo, double hi, float* v) {
  if (!Present(b, key)) return std::nullopt;
  const json& x = b[key];
  if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < lo || x.get<double>() > hi)
    return BadParam(key, "must be a number in [" + Num(lo) + ", " + Num(hi) + "]");
  *v = x.get<float>();
  return std::nullopt;
}

std::optional<ApiError> IntField(const json& b, const char* key, int64_t lo, int64_t hi, int64_t* v) {
  if (!Present(b, key)) return std::nullopt;
  const json& x = b[key];
  if (!x.is_number_integer() || x.get<int64_t>() < lo || x.get<int64_t>() > hi)
    return BadParam(key, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *v = x.get<int64_t>();
  return std::nullopt;
}

std::optional<ApiError> ParseStops(const json& b, std::vector<std::string>* stops) {
  if (!Present(b, "stop")) return std::nullopt;
  const json& s = b["stop"];
  if (s.is_string()) {
    stops->push_back(s.get<std::string>());
    return std::nullopt;
  }
  if (!s.is_array() || s.size() > 16) return BadParam("stop", "must be a string or an array of at most 16 strings");
  for (const json& x : s) {
    if (!x.is_string()) return BadParam("stop", "must be a string or an array of at most 16 strings");
    stops->push_back(x.get<std::string>());
  }
  return std::nullopt;
}

std::optional<ApiError> ParseStream(const json& b, GenParams* p) {
  if (Present(b, "stream")) {
    if (!b["stream"].is_boolean()) return BadParam("stream", "must be a boolean");
    p->stream = b["stream"].get<bool>();
  }
  if (Present(b, "stream_options")) {
    const json& so = b["stream_options"];
    if (!so.is_object()) return BadParam("stream_options", "must be an object");
    if (Present(so, "include_usage")) {
      if (!so["include_usage"].is_boolean()) return BadParam("stream_options.include_usage", "must be a boolean");
      p->include_usage = so["include_usage"].get<bool>();
    }
  }
  return std::nullopt;
}

}  // namespace

ojson ErrorObject(const ApiError& e) {
  ojson err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return err;
}

ApiError BadParam(const std::string& param, const std::string& message) {
  return ApiError{400, param + ": " + message, param, "invalid_value"};
}

std::optional<ApiError> ParseBody(std::string_view body, json* out) {
  // nlohmann copies and dumps values recursively: a body of a million '[' would exhaust the stack later.
  if (Status st = CheckJsonDepth(body, "request body"); !st.ok()) return ApiError{400, st.message(), "", "invalid_json"};
  *out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded()) return ApiError{400, "the request body is not valid JSON", "", "invalid_json"};
  if (!out->is_object()) return ApiError{400, "the request body must be a JSON object", "", "invalid_json"};
  return std::nullopt;
}

std::optional<ApiError> ParseGenParams(const json& b, GenParams* p) {
  int64_t n = 1;
  if (IntField(b, "n", INT64_MIN, INT64_MAX, &n)) return BadParam("n", "must be an integer");
  if (n != 1) return BadParam("n", "only n = 1 is supported");
  if (auto e = IntField(b, "max_tokens", 1, INT32_MAX, &p->max_tokens)) return e;
  if (auto e = IntField(b, "max_completion_tokens", 1, INT32_MAX, &p->max_tokens)) return e;
  llm::SamplerParams& s = p->sampling;
  // OpenAI's defaults: temperature 1, top_p 1, no top-k, no min-p, no penalty.
  s.temperature = 1.0f, s.top_p = 1.0f, s.top_k = 0, s.min_p = 0.0f, s.repeat_penalty = 1.0f;
  if (auto e = NumberField(b, "temperature", 0, 2, &s.temperature)) return e;
  if (auto e = NumberField(b, "top_p", 0, 1, &s.top_p)) return e;
  if (s.top_p == 0) s.temperature = 0, s.top_p = 1;  // nothing but the most likely token: greedy
  if (auto e = NumberField(b, "min_p", 0, 1, &s.min_p)) return e;
  int64_t top_k = 0;
  if (auto e = IntField(b, "top_k", 0, INT32_MAX, &top_k)) return e;
  s.top_k = static_cast<int>(top_k);
  int64_t seed = -1;
  if (auto e = IntField(b, "seed", INT64_MIN, INT64_MAX, &seed)) return e;
  if (Present(b, "seed")) {
    s.seed = static_cast<uint64_t>(seed);
  } else {
    std::random_device rd;
    s.seed = (static_cast<uint64_t>(rd()) << 32) | rd();
  }
  if (auto e = ParseStops(b, &p->stops)) return e;
  if (Present(b, "ignore_eos")) {
    if (!b["ignore_eos"].is_boolean()) return BadParam("ignore_eos", "must be a boolean");
    p->ignore_eos = b["ignore_eos"].get<bool>();
  }
  return ParseStream(b, p);
}

std::optional<ApiError> ParseLogprobs(const json& b, bool chat, GenParams* p) {
  p->top_logprobs = -1;
  if (!chat) {
    int64_t n = -1;
    if (auto e = IntField(b, "logprobs", 0, 5, &n)) return e;
    p->top_logprobs = static_cast<int>(n);
    return std::nullopt;
  }
  bool on = false;
  if (Present(b, "logprobs")) {
    if (!b["logprobs"].is_boolean()) return BadParam("logprobs", "must be a boolean");
    on = b["logprobs"].get<bool>();
  }
  int64_t top = 0;
  if (auto e = IntField(b, "top_logprobs", 0, 20, &top)) return e;
  if (Present(b, "top_logprobs") && !on) return BadParam("top_logprobs", "needs \"logprobs\": true");
  if (on) p->top_logprobs = static_cast<int>(top);
  return std::nullopt;
}

std::optional<ApiError> ParseResponseFormat(const json& b, GenParams* p) {
  p->grammar.reset();
  if (!Present(b, "response_format")) return std::nullopt;
  const json& rf = b["response_format"];
  const std::string type = rf.is_object() && rf.contains("type") && rf["type"].is_string() ? rf["type"].get<std::string>() : "";
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    p->grammar = llm::AnyJsonObjectGrammar();
    return std::nullopt;
  }
  if (type != "json_schema")
    return BadParam("response_format", "must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or {\"type\": \"json_schema\", ...}");
  const json js = rf.value("json_schema", json());
  if (!js.is_object()) return BadParam("response_format", "json_schema must be an object {name, schema, strict}");
  if (js.contains("name") && !js["name"].is_string()) return BadParam("response_format", "json_schema.name must be a string");
  if (Present(js, "strict") && !js["strict"].is_boolean()) return BadParam("response_format", "json_schema.strict must be a boolean");
  if (!Present(js, "schema")) {  // no schema: any JSON object, as json_object
    p->grammar = llm::AnyJsonObjectGrammar();
    return std::nullopt;
  }
  auto g = llm::CompileJsonSchema(js["schema"].dump());
  if (!g.ok()) return BadParam("response_format", "json_schema." + g.status().message());
  p->grammar = *g;
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const json& b, ojson* out) {
  if (!b.contains("messages") || !b["messages"].is_array() || b["messages"].empty())
    return BadParam("messages", "must be a non-empty array of {role, content} objects");
  *out = ojson::array();
  for (size_t i = 0; i < b["messages"].size(); ++i) {
    const json& m = b["messages"][i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return BadParam(where + ".role", "must be a string");
    std::string content;
    const json c = m.value("content", json());
    if (c.is_string()) {
      content = c.get<std::string>();
    } else if (c.is_array()) {
      for (const json& part : c) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          return BadParam(where + ".content", "only text parts ({\"type\": \"text\", \"text\": ...}) are supported");
        content += part["text"].get<std::string>();
      }
    } else if (!c.is_null()) {
      return BadParam(where + ".content", "must be a string or an array of text parts");
    }
    out->push_back({{"role", m["role"].get<std::string>()}, {"content", content}});
  }
  return std::nullopt;
}

std::optional<ApiError> ParsePrompt(const json& b, int32_t vocab_size, PromptInput* out) {
  static const char* kShape = "must be a string, an array of token ids, or an array of one of those";
  json pr = b.value("prompt", json());
  if (pr.is_array() && pr.size() == 1 && (pr[0].is_string() || pr[0].is_array())) pr = pr[0];
  *out = PromptInput();
  if (pr.is_string()) {
    out->text = pr.get<std::string>();
    return std::nullopt;
  }
  if (!pr.is_array() || pr.empty()) return BadParam("prompt", kShape);
  for (const json& t : pr) {
    if (!t.is_number_integer()) return BadParam("prompt", kShape);
    if (t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab_size)
      return BadParam("prompt", "token id " + t.dump() + " is not in [0, " + std::to_string(vocab_size) + ")");
    out->ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  out->is_ids = true;
  return std::nullopt;
}

std::optional<ApiError> ParseTokenizeRequest(const json& b, TokenizeRequest* out) {
  if (!b.contains("content") || !b["content"].is_string()) return BadParam("content", "must be a string");
  out->content = b["content"].get<std::string>();
  out->add_special = false;
  if (Present(b, "add_special")) {
    if (!b["add_special"].is_boolean()) return BadParam("add_special", "must be a boolean");
    out->add_special = b["add_special"].get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> ParseTokenIds(const json& b, int32_t vocab_size, std::vector<int32_t>* ids) {
  if (!b.contains("tokens") || !b["tokens"].is_array()) return BadParam("tokens", "must be an array of token ids");
  ids->clear();
  for (const json& t : b["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab_size)
      return BadParam("tokens", "must be token ids in [0, " + std::to_string(vocab_size) + ")");
    ids->push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

}  // namespace edgedecode::cli::serve
