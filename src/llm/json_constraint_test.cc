// The JSON constraint (llm/json_constraint.h): schemas compile or are refused naming the keyword; the
// matcher accepts exactly the valid prefixes; the token mask agrees with feeding each token alone.
#include "llm/json_constraint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace edgedecode::llm {
namespace {

std::shared_ptr<const JsonGrammar> Compile(const std::string& schema) {
  auto g = CompileJsonSchema(schema);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().message();
  return g.ok() ? *g : nullptr;
}

// Whether the whole text is accepted byte by byte, and complete at its end.
bool Accepts(const std::shared_ptr<const JsonGrammar>& g, const std::string& text) {
  JsonMatcher m(g);
  for (char c : text)
    if (!m.Advance(std::string(1, c))) return false;
  return m.Complete();
}

bool PrefixOk(const std::shared_ptr<const JsonGrammar>& g, const std::string& text) { return JsonMatcher(g).Advance(text); }

const char* kPerson = R"({"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b", 3]}},
    "pet": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/pet"}]}, "ok": {"type": "boolean"}, "x": {"type": "number"}},
  "required": ["name", "age"], "additionalProperties": false,
  "$defs": {"pet": {"type": "object", "properties": {"kind": {"const": "cat"}}, "required": ["kind"], "additionalProperties": false}}})";

TEST(JsonConstraint, SchemaAcceptsValidRejectsInvalid) {
  auto g = Compile(kPerson);
  ASSERT_TRUE(g);
  for (const char* ok : {R"({"name":"Al","age":3})", R"( { "age" : -12 , "name" : "\u00e9\n" , "tags" : [ "a" , 3 ] })",
                         R"({"name":"","age":0,"pet":null,"ok":true,"x":-1.5e+3})", R"({"name":"é","age":1,"pet":{"kind":"cat"}})"})
    EXPECT_TRUE(Accepts(g, ok)) << ok;
  for (const char* bad : {R"({"name":"Al"})", R"({"name":"Al","age":3.5})", R"({"name":"Al","age":3,"zz":1})",
                          R"({"name":"Al","age":3,"name":"B"})", R"({"name":"Al","age":3,"tags":["c"]})",
                          R"({"name":"Al","age":3,"pet":{"kind":"dog"}})", R"({"name":"Al","age":3,"ok":1})",
                          R"({"name":"Al","age":01})", R"([1])", R"({"name":"a\x","age":1})", R"({"name":"Al","age":3}x)"})
    EXPECT_FALSE(Accepts(g, bad)) << bad;
  EXPECT_FALSE(Accepts(g, R"({"name":"Al","age":3)"));  // a valid prefix, not complete
  auto two = Compile(R"({"type": "object", "properties": {"a": {"type": "null"}}, "additionalProperties": false})");
  EXPECT_FALSE(PrefixOk(two, R"({"a":null,)"));  // no key could follow the comma
  EXPECT_TRUE(Accepts(two, R"({"a":null})"));
  EXPECT_TRUE(PrefixOk(g, R"({"name":"Al","age":3)"));
  EXPECT_FALSE(Accepts(g, std::string("{\"name\":\"\xC0\xAF\",\"age\":1}")));  // an overlong UTF-8 sequence
  EXPECT_FALSE(Accepts(g, std::string("{\"name\":\"a\x01\",\"age\":1}")));    // a raw control character
}

TEST(JsonConstraint, AnyObjectAndScalars) {
  auto obj = AnyJsonObjectGrammar();
  EXPECT_TRUE(Accepts(obj, R"({"a":[1,{"b":null}],"c":"d","e":true,"f":-0.5E2})"));
  EXPECT_TRUE(Accepts(obj, "{}"));
  EXPECT_FALSE(Accepts(obj, "[]"));
  EXPECT_FALSE(Accepts(obj, "3"));
  auto num = Compile(R"({"type": "number"})");
  EXPECT_TRUE(Accepts(num, "12.5"));
  EXPECT_FALSE(Accepts(num, "12."));
  auto arr = Compile(R"({"type": "array", "items": {"type": ["integer", "null"]}})");
  EXPECT_TRUE(Accepts(arr, "[1, null,-3]"));
  EXPECT_FALSE(Accepts(arr, "[1,]"));
  EXPECT_FALSE(Accepts(arr, "[1.5]"));
}

TEST(JsonConstraint, BoundsWhitespaceAndDepth) {
  auto obj = AnyJsonObjectGrammar();
  EXPECT_TRUE(PrefixOk(obj, "{" + std::string(kMaxWhitespaceRun, ' ')));
  EXPECT_FALSE(PrefixOk(obj, "{" + std::string(kMaxWhitespaceRun + 1, ' ')));
  std::string deep = "{\"a\":" + std::string(kMaxOutputDepth - 1, '[');
  EXPECT_TRUE(PrefixOk(obj, deep));
  EXPECT_FALSE(PrefixOk(obj, deep + "["));
}

TEST(JsonConstraint, EnumPrefixes) {
  auto g = Compile(R"({"enum": ["ab", "a", 12, 1, "abc", null, {"k": [1]}, 1]})");
  ASSERT_TRUE(g);
  for (const char* ok : {R"("a")", R"("ab")", R"("abc")", "1", "12", "null", R"({"k":[1]})"}) EXPECT_TRUE(Accepts(g, ok)) << ok;
  for (const char* bad : {R"("abcd")", R"("b")", "123", "2", R"({"k": [1]})", R"("")", "nul"}) EXPECT_FALSE(Accepts(g, bad)) << bad;
  auto obj = Compile(R"({"type": "object", "properties": {"e": {"enum": [1, 12]}}, "required": ["e"], "additionalProperties": false})");
  EXPECT_TRUE(Accepts(obj, R"({"e":1})"));  // the literal 1 ends at '}' although 12 shares its first byte
  EXPECT_TRUE(Accepts(obj, R"({"e":12 })"));
}

TEST(JsonConstraint, RecursiveRef) {
  auto g = Compile(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "additionalProperties": false,
      "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v", "next"]}}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Accepts(g, R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(Accepts(g, R"({"v":1,"next":{"v":2}})"));
}

// Hostile and unsupported schemas: a 400-style error naming the keyword and where it is.
TEST(JsonConstraint, RefusesNamingTheKeyword) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "string", "pattern": "^a"})", "'pattern'"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "format": "date"}}})", "/properties/a: unsupported keyword 'format'"},
      {R"({"allOf": [{}]})", "'allOf'"},
      {R"({"type": "array", "items": [{"type": "string"}]})", "/items"},
      {R"({"type": "strange"})", "/type"},
      {R"({"enum": []})", "/enum"},
      {R"({"type": "string", "enum": [1, 2]})", "/enum"},
      {R"({"$ref": "http://x/y"})", "$ref"},
      {R"({"$ref": "#/$defs/missing"})", "points at nothing"},
      {R"({"$ref": "#"})", "cycle"},
      {R"({"type": "object", "required": ["a"]})", "/required"},
      {R"({"anyOf": [{"type": "null"}], "type": "object"})", "'type' beside anyOf"},
      {"not json", "not valid JSON"},
      {"false", "false"},
  };
  for (const auto& [schema, want] : cases) {
    auto g = CompileJsonSchema(schema);
    ASSERT_FALSE(g.ok()) << schema;
    EXPECT_NE(g.status().message().find(want), std::string::npos) << schema << " -> " << g.status().message();
  }
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < kMaxSchemaDepth + 1; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  auto g = CompileJsonSchema(deep);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("nested deeper than"), std::string::npos) << g.status().message();
  nlohmann::json chain = {{"$ref", "#/$defs/d0"}, {"$defs", nlohmann::json::object()}};
  for (int i = 0; i < 1000; ++i)  // each definition an array of the next: deep through references alone
    chain["$defs"]["d" + std::to_string(i)] = {{"type", "array"}, {"items", {{"$ref", "#/$defs/d" + std::to_string(i + 1)}}}};
  chain["$defs"]["d1000"] = {{"type", "null"}};
  g = CompileJsonSchema(chain.dump());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("nested deeper than"), std::string::npos) << g.status().message();
  g = CompileJsonSchema(nlohmann::json({{"properties", {{std::string(kMaxNameBytes + 1, 'k'), nlohmann::json::object()}}}}).dump());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("property name longer"), std::string::npos) << g.status().message();
  nlohmann::json many = {{"type", "object"}, {"properties", nlohmann::json::object()}};
  for (int i = 0; i <= kMaxSchemaProperties; ++i) many["properties"]["p" + std::to_string(i)] = {{"type", "null"}};
  g = CompileJsonSchema(many.dump());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("/properties"), std::string::npos) << g.status().message();
  nlohmann::json wide = {{"anyOf", nlohmann::json::array()}};
  for (size_t i = 0; i <= kMaxParses; ++i) wide["anyOf"].push_back({{"const", i}});
  g = CompileJsonSchema(wide.dump());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("anyOf"), std::string::npos) << g.status().message();
}

// The mask (shared prefixes, dead subtrees skipped) equals feeding each token alone, along random walks.
TEST(JsonConstraint, TokenMaskEqualsTokenByToken) {
  std::vector<std::string> pieces = {"", "{", "}", "\"", "\"name", "\"name\"", "\":", ":", ",", " ", "\n", "a", "ab", "abc",
                                     "1", "12", "-", ".", "e", "true", "tr", "null", "[", "]", "\"a\"", "\":\"", "é", "\xC3",
                                     "\xA9", "\\", "\\n", "age", "\"age\":", "pet", "kind", "cat", "\"cat\"}", "3", "0"};
  const TokenBytes vocab(pieces);
  auto g = Compile(kPerson);
  ASSERT_TRUE(g);
  std::mt19937 rng(7);
  for (int walk = 0; walk < 20; ++walk) {
    JsonMatcher m(g);
    for (int step = 0; step < 40; ++step) {
      std::vector<uint8_t> allowed;
      m.AllowedTokens(vocab, &allowed);
      std::vector<int> ok;
      for (size_t i = 0; i < pieces.size(); ++i) {
        const bool alone = !pieces[i].empty() && [&] { JsonMatcher t = m; return t.Advance(pieces[i]); }();
        EXPECT_EQ(allowed[i] != 0, alone) << "token '" << pieces[i] << "' at step " << step;
        if (allowed[i]) ok.push_back(static_cast<int>(i));
      }
      if (ok.empty()) break;
      ASSERT_TRUE(m.Advance(pieces[static_cast<size_t>(ok[rng() % ok.size()])]));
    }
  }
}

}  // namespace
}  // namespace edgedecode::llm
