// The request bodies of `edgedecode serve`'s routes, parsed and validated without a model: JSON text to the
// request's parameters, or the OpenAI error (HTTP 400) that names the field. serve_http.cc answers with
// these; fuzz/serve_request_fuzz.cc feeds them hostile bodies. Pure functions, thread-safe.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/json_constraint.h"
#include "llm/sampler.h"

namespace edgedecode::cli::serve {

// An OpenAI error: the HTTP status and the fields of {"error": {...}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string param;  // "" -> null
  std::string code;   // "" -> null
  std::string type = "invalid_request_error";
};

// {"message", "type", "param", "code"}: the object under "error" in the reply body.
nlohmann::ordered_json ErrorObject(const ApiError& e);

// 400 invalid_value naming `param`: "param: message".
ApiError BadParam(const std::string& param, const std::string& message);

// The request fields both generation routes share.
struct GenParams {
  int64_t max_tokens = -1;  // -1: until the context is full
  llm::SamplerParams sampling;
  std::vector<std::string> stops;
  bool stream = false, include_usage = false, ignore_eos = false;
  // Alternatives listed beside each generated token's log-probability; -1: no logprobs at all.
  int top_logprobs = -1;
  // response_format json_object / json_schema: the grammar the output is constrained to; null: free text.
  std::shared_ptr<const llm::JsonGrammar> grammar;
};

// A JSON object body; a 400 naming the problem otherwise.
std::optional<ApiError> ParseBody(std::string_view body, nlohmann::json* out);
// n, max_tokens, sampling (OpenAI's defaults; a random seed when none is given), stop, ignore_eos, stream.
std::optional<ApiError> ParseGenParams(const nlohmann::json& b, GenParams* p);
// logprobs: chat's `logprobs` (a boolean) and `top_logprobs` (0..20, only with logprobs true), or the
// legacy completions' `logprobs` (an integer 0..5, the alternatives per token), into p->top_logprobs.
std::optional<ApiError> ParseLogprobs(const nlohmann::json& b, bool chat, GenParams* p);
// response_format: {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema":
// {"name", "schema", "strict", "description"}} into p->grammar; an unsupported schema keyword is a 400
// (param response_format) naming it and where it is.
std::optional<ApiError> ParseResponseFormat(const nlohmann::json& b, GenParams* p);
// /v1/chat/completions: OpenAI messages to the {role, content} array the chat template reads; content
// parts of type "text" are joined.
std::optional<ApiError> ParseMessages(const nlohmann::json& b, nlohmann::ordered_json* out);
// /v1/completions: "prompt" as the OpenAI API allows it for one prompt: a string, an array of one string,
// an array of token ids, or an array of one array of token ids (ids in [0, vocab_size)). Text goes to
// *text; ids go to *ids unchanged (no BOS is added to them) and *is_ids is set.
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};
std::optional<ApiError> ParsePrompt(const nlohmann::json& b, int32_t vocab_size, PromptInput* out);

// /tokenize: {"content": string, "add_special": bool}.
struct TokenizeRequest {
  std::string content;
  bool add_special = false;
};
std::optional<ApiError> ParseTokenizeRequest(const nlohmann::json& b, TokenizeRequest* out);
// /detokenize: {"tokens": [ids]}, every id in [0, vocab_size).
std::optional<ApiError> ParseTokenIds(const nlohmann::json& b, int32_t vocab_size, std::vector<int32_t>* ids);

}  // namespace edgedecode::cli::serve
