// serve's request-body validation (cli/serve_request.h) without a model: every bad field is a 400 that names
// it, good bodies give their parameters.
#include "cli/serve_request.h"

#include <gtest/gtest.h>

#include <tuple>

namespace edgedecode::cli::serve {
namespace {

using nlohmann::json;

json Body(const std::string& text) {
  json b;
  EXPECT_FALSE(ParseBody(text, &b)) << text;
  return b;
}

TEST(ServeRequest, BodyMustBeAJsonObject) {
  json b;
  auto e = ParseBody("{\"messages\": [", &b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->code, "invalid_json");
  e = ParseBody("[1, 2]", &b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "the request body must be a JSON object");
  e = ParseBody("{\"messages\": " + std::string(100000, '[') + std::string(100000, ']') + "}", &b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "invalid_json");
  EXPECT_NE(e->message.find("nested deeper than"), std::string::npos) << e->message;
}

TEST(ServeRequest, GenerationParameters) {
  GenParams p;
  ASSERT_FALSE(ParseGenParams(Body(R"({"max_tokens": 7, "temperature": 0.5, "top_p": 0, "top_k": 3, "seed": 9,
                                       "stop": ["a", "b"], "stream": true, "stream_options": {"include_usage": true}})"), &p));
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_EQ(p.sampling.temperature, 0.0f);  // top_p 0: greedy
  EXPECT_EQ(p.sampling.top_k, 3);
  EXPECT_EQ(p.sampling.seed, 9u);
  EXPECT_EQ(p.stops, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(p.stream && p.include_usage);
}

TEST(ServeRequest, EachBadFieldIsNamed) {
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"n": 2})", "n"},
           {R"({"max_tokens": 0})", "max_tokens"},
           {R"({"temperature": "hot"})", "temperature"},
           {R"({"top_p": 1.5})", "top_p"},
           {R"({"top_k": -1})", "top_k"},
           {R"({"stop": [1]})", "stop"},
           {R"({"stream": 1})", "stream"},
           {R"({"stream_options": {"include_usage": "yes"}})", "stream_options.include_usage"},
           {R"({"ignore_eos": null, "seed": 1.5})", "seed"}}) {
    GenParams p;
    auto e = ParseGenParams(Body(body), &p);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->param, param) << body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(ErrorObject(*e)["param"], param);
  }
}

TEST(ServeRequest, MessagesPromptAndTokens) {
  nlohmann::ordered_json m;
  ASSERT_FALSE(ParseMessages(Body(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                                 {"type": "text", "text": "b"}]}]})"), &m));
  EXPECT_EQ(m[0]["content"], "ab");
  auto e = ParseMessages(Body(R"({"messages": [{"role": "user", "content": 5}]})"), &m);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[0].content");
  PromptInput prompt;
  ASSERT_FALSE(ParsePrompt(Body(R"({"prompt": ["once"]})"), 512, &prompt));
  EXPECT_EQ(prompt.text, "once");
  EXPECT_FALSE(prompt.is_ids);
  EXPECT_TRUE(ParsePrompt(Body(R"({"prompt": ["a", "b"]})"), 512, &prompt));
  ASSERT_FALSE(ParsePrompt(Body(R"({"prompt": [1, 2, 511]})"), 512, &prompt));
  EXPECT_TRUE(prompt.is_ids);
  EXPECT_EQ(prompt.ids, (std::vector<int32_t>{1, 2, 511}));
  ASSERT_FALSE(ParsePrompt(Body(R"({"prompt": [[7, 8]]})"), 512, &prompt));
  EXPECT_EQ(prompt.ids, (std::vector<int32_t>{7, 8}));
  e = ParsePrompt(Body(R"({"prompt": [1, 512]})"), 512, &prompt);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "prompt: token id 512 is not in [0, 512)");
  EXPECT_TRUE(ParsePrompt(Body(R"({"prompt": [1, "a"]})"), 512, &prompt));
  EXPECT_TRUE(ParsePrompt(Body(R"({"prompt": [[1], [2]]})"), 512, &prompt));
  EXPECT_TRUE(ParsePrompt(Body(R"({"prompt": []})"), 512, &prompt));
  EXPECT_TRUE(ParsePrompt(Body(R"({"prompt": [-1]})"), 512, &prompt));
  std::vector<int32_t> ids;
  ASSERT_FALSE(ParseTokenIds(Body(R"({"tokens": [0, 511]})"), 512, &ids));
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 511}));
  e = ParseTokenIds(Body(R"({"tokens": [512]})"), 512, &ids);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "tokens: must be token ids in [0, 512)");
  TokenizeRequest t;
  e = ParseTokenizeRequest(Body(R"({"content": "x", "add_special": 1})"), &t);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "add_special");
}

TEST(ServeRequest, ResponseFormat) {
  GenParams p;
  ASSERT_FALSE(ParseResponseFormat(Body(R"({"response_format": {"type": "text"}})"), &p));
  EXPECT_FALSE(p.grammar);
  ASSERT_FALSE(ParseResponseFormat(Body(R"({"response_format": {"type": "json_object"}})"), &p));
  EXPECT_TRUE(p.grammar);
  ASSERT_FALSE(ParseResponseFormat(Body(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
      "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false}}}})"), &p));
  ASSERT_TRUE(p.grammar);
  llm::JsonMatcher m(p.grammar);
  EXPECT_TRUE(m.Advance(R"({"a": 12})") && m.Complete());
  for (const auto& [body, want] : std::vector<std::pair<std::string, std::string>>{
           {R"({"response_format": {"type": "yaml"}})", "json_schema"},
           {R"({"response_format": "json"})", "json_object"},
           {R"({"response_format": {"type": "json_schema"}})", "json_schema must be an object"},
           {R"({"response_format": {"type": "json_schema", "json_schema": {"name": 1, "schema": {}}}})", "name"},
           {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string", "minLength": 2}}}})", "'minLength'"},
           {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"properties": {"a b": {"not": {}}}}}}})",
            "/properties/a b: unsupported keyword 'not'"}}) {
    auto e = ParseResponseFormat(Body(body), &p);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, "response_format");
    EXPECT_NE(e->message.find(want), std::string::npos) << e->message;
  }
}

TEST(ServeRequest, Logprobs) {
  GenParams p;
  ASSERT_FALSE(ParseLogprobs(Body(R"({"logprobs": true, "top_logprobs": 20})"), true, &p));
  EXPECT_EQ(p.top_logprobs, 20);
  ASSERT_FALSE(ParseLogprobs(Body(R"({"logprobs": true})"), true, &p));
  EXPECT_EQ(p.top_logprobs, 0);
  ASSERT_FALSE(ParseLogprobs(Body(R"({"logprobs": false})"), true, &p));
  EXPECT_EQ(p.top_logprobs, -1);
  ASSERT_FALSE(ParseLogprobs(Body(R"({"logprobs": 3})"), false, &p));
  EXPECT_EQ(p.top_logprobs, 3);
  ASSERT_FALSE(ParseLogprobs(Body(R"({"logprobs": null})"), false, &p));
  EXPECT_EQ(p.top_logprobs, -1);
  for (const auto& [body, chat, param] : std::vector<std::tuple<std::string, bool, std::string>>{
           {R"({"logprobs": true, "top_logprobs": 21})", true, "top_logprobs"},
           {R"({"logprobs": true, "top_logprobs": -1})", true, "top_logprobs"},
           {R"({"top_logprobs": 2})", true, "top_logprobs"},
           {R"({"logprobs": 1})", true, "logprobs"},
           {R"({"logprobs": 6})", false, "logprobs"},
           {R"({"logprobs": true})", false, "logprobs"}}) {
    auto e = ParseLogprobs(Body(body), chat, &p);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, param) << body;
    EXPECT_NE(e->message.find(param), std::string::npos) << e->message;
  }
}

}  // namespace
}  // namespace edgedecode::cli::serve
