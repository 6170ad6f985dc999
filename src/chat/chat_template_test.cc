// chat_template_test: every rendering in testdata/chat-templates/expected (27 real templates x 11
// conversations x add_generation_prompt, made with @huggingface/jinja 0.5.13) must come out byte for
// byte, and every `.err` case must fail with the same message; plus unit tests of the language and of
// hostile templates.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

#include "chat/template.h"

namespace edgedecode::chat {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kDir = fs::path(EDGEDECODE_TESTDATA) / "chat-templates";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The oracle's frozen clock: Sunday 2025-01-05 14:07:09 local time.
std::tm FrozenNow() {
  std::tm t{};
  t.tm_year = 125;
  t.tm_mon = 0;
  t.tm_mday = 5;
  t.tm_hour = 14;
  t.tm_min = 7;
  t.tm_sec = 9;
  t.tm_wday = 0;
  return t;
}

// Where two strings first differ, with some context, for a readable failure.
std::string FirstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  want: " + Json(want.substr(from, 100)).dump() +
         "\n  got:  " + Json(got.substr(from, 100)).dump();
}

TEST(ChatTemplateOracle, AllExpectedRenderingsMatch) {
  ASSERT_TRUE(fs::exists(kDir / "manifest.json")) << kDir;
  const Json manifest = Json::parse(ReadFile(kDir / "manifest.json"));
  const Json conversations = Json::parse(ReadFile(kDir / "conversations.json"))["conversations"];
  int total = 0, passed = 0;
  for (const Json& t : manifest["templates"]) {
    const std::string file = t["file"];
    const std::string stem = fs::path(file).stem().string();
    const std::string text = ReadFile(kDir / file);
    const auto parsed = Template::Parse(text);
    for (const Json& conv : conversations) {
      for (const bool gen : {true, false}) {
        const std::string name = stem + "__" + conv["id"].get<std::string>() + (gen ? "__gen" : "__nogen");
        const fs::path txt = kDir / "expected" / (name + ".txt"), err = kDir / "expected" / (name + ".err");
        ++total;
        ChatRenderOptions opts;
        opts.add_generation_prompt = gen;
        if (t["bos_token"].is_string()) opts.bos_token = t["bos_token"].get<std::string>();
        if (t["eos_token"].is_string()) opts.eos_token = t["eos_token"].get<std::string>();
        if (conv.contains("extra_context")) opts.extra_context = conv["extra_context"];
        opts.now = FrozenNow();
        ASSERT_TRUE(parsed.ok()) << file << ": " << parsed.status().message();
        const auto got = RenderChat(*parsed, conv["messages"], opts);
        if (fs::exists(txt)) {
          const std::string want = ReadFile(txt);
          if (!got.ok()) {
            ADD_FAILURE() << name << ": expected a rendering, got error: " << got.status().message();
          } else if (*got != want) {
            ADD_FAILURE() << name << ": " << FirstDifference(want, *got);
          } else {
            ++passed;
          }
        } else {
          ASSERT_TRUE(fs::exists(err)) << "no expected output for " << name;
          const std::string want = ReadFile(err);
          if (got.ok()) {
            ADD_FAILURE() << name << ": expected error \"" << want << "\", got a rendering";
          } else if (got.status().message() != want) {
            ADD_FAILURE() << name << ": expected error \"" << want << "\", got \"" << got.status().message() << "\"";
          } else {
            ++passed;
          }
        }
      }
    }
  }
  std::printf("chat-templates oracle: %d of %d cases match\n", passed, total);
  EXPECT_EQ(total, 594);
  EXPECT_EQ(passed, total);
}

// --- Language features (expected values are what @huggingface/jinja 0.5.13 renders) ---

std::string Render(const std::string& text, const Json& context = Json::object()) {
  const auto parsed = Template::Parse(text);
  if (!parsed.ok()) return "PARSE ERROR: " + parsed.status().message();
  const auto out = parsed->Render(context, FrozenNow());
  return out.ok() ? *out : "ERROR: " + out.status().message();
}

TEST(ChatTemplateLanguage, LiteralsAndOutputForms) {
  EXPECT_EQ(Render("{{ 1 }}|{{ 1.0 }}|{{ 1.5 }}|{{ -0.0 }}|{{ true }}|{{ none }}|{{ x }}|{{ 'a' 'b' }}"),
            "1|1.0|1.5|-0.0|true|||ab");
  EXPECT_EQ(Render("{{ [1, 'a', none, true, 1.0, {'k': [1,2]}] }}|{{ {'a': 1, 'b': {'c': none}} }}"),
            "[1, \"a\", null, true, 1, {\"k\": [1, 2]}]|{\"a\": 1, \"b\": {\"c\": null}}");
  EXPECT_EQ(Render("{{ 10000000000000000000000 }}|{{ 0.000001 }}|{{ 0.0000001 }}|{{ 2.0 ** 100 }}"),
            "1e+22|0.000001|1e-7|1.2676506002282294e+30");
  // \u escapes are UTF-16 as in JavaScript: a surrogate pair is one character, a lone one U+FFFD.
  EXPECT_EQ(Render("{{ '\\ud83d\\ude00|\\ud83d|\\u00e9\\x41' }}"), "\xf0\x9f\x98\x80|\xef\xbf\xbd|\xc3\xa9" "A");
}

TEST(ChatTemplateLanguage, Arithmetic) {
  EXPECT_EQ(Render("{{ 7 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|"
                   "{{ 2 ** 3 ** 2 }}|{{ 7.5 // 2 }}|{{ 1 / 3 }}|{{ 0.1 + 0.2 }}"),
            "3.5|3|-4|-1|1|1024|0.5|64|3.0|0.3333333333333333|0.30000000000000004");
  EXPECT_EQ(Render("{{ [1,2] + [3] }}|{{ 3 * 2.5 }}|{{ 10 - 2.5 }}|{{ - 2|abs }}"), "[1, 2, 3]|7.5|7.5|2");
  EXPECT_EQ(Render("{{ 'a' ~ 1 ~ 1.0 ~ true ~ x ~ [1,2] }}"), "a11true1,2");
  EXPECT_EQ(Render("{{ x + 1 }}"), "ERROR: Cannot perform operation + on undefined values");
  EXPECT_EQ(Render("{{ none + 1 }}"), "ERROR: Cannot perform operation on null values");
  EXPECT_EQ(Render("{{ 'a' < 'b' }}"), "ERROR: Unknown operator \"<\" between StringValue and StringValue");
  EXPECT_EQ(Render("{{ 9223372036854775807 + 1 }}"), "ERROR: integer overflow in '+'");
}

TEST(ChatTemplateLanguage, ComparisonsAndLogic) {
  EXPECT_EQ(Render("{{ 1 == 1.0 }}|{{ 1 == true }}|{{ '1' == 1 }}|{{ none == x }}|{{ [1] == [1] }}|{{ 0 == '' }}|"
                   "{{ none == false }}"),
            "true|true|true|true|false|true|false");
  EXPECT_EQ(Render("{{ 1 in [1,2] }}|{{ 'a' in 'cat' }}|{{ 'k' in {'k':1} }}|{{ 3 not in [1,2] }}|{{ 'z' in x }}"),
            "true|true|true|true|false");
  EXPECT_EQ(Render("{{ not 1 }}|{{ 1 and 2 }}|{{ 0 or 'y' }}|{{ [] or {} }}|{{ x or 'd' }}"), "false|2|y|{}|d");
  EXPECT_EQ(Render("{{ 'yes' if 1 else 'no' }}|{{ 'yes' if 0 }}|{{ 'a' if false else 'b' if true else 'c' }}"),
            "yes||b");
}

TEST(ChatTemplateLanguage, StringMethodsAndSlices) {
  EXPECT_EQ(Render("{{ '  Hi  '.strip() }}|{{ 'xx'.upper() }}|{{ 'hello world-foo_bar'.title() }}|"
                   "{{ 'hELLO'.capitalize() }}|{{ '  a'.lstrip() }}|{{ 'a  '.rstrip() }}|{{ 'abc'.length }}"),
            "Hi|XX|Hello World-Foo_bar|HELLO|a|a|3");
  EXPECT_EQ(Render("{{ 'a,b,,c'.split(',') }}|{{ '  a  b c '.split() }}|{{ 'a,b,c'.split(',', 1) }}|"
                   "{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x','c')) }}"),
            "[\"a\", \"b\", \"\", \"c\"]|[\"a\", \"b\", \"c\"]|[\"a\", \"b,c\"]|true|true");
  EXPECT_EQ(Render("{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'abc'.replace('', '-') }}|{{ 'aXbX'|replace('X', 'y') }}"),
            "bba|-a-b-c-|ayby");
  EXPECT_EQ(Render("{{ 'hello'[1] }}|{{ 'hello'[-1] }}|{{ 'hello'[1:3] }}|{{ 'hello'[::-1] }}|{{ 'h\xc3\xa9llo'[:2] }}"),
            "e|o|el|olleh|h\xc3\xa9");
  EXPECT_EQ(Render("{{ [1,2,3,4,5][1:4] }}|{{ [1,2,3,4,5][::2] }}|{{ [1,2,3,4,5][-2:] }}|{{ [1,2,3,4,5][::-2] }}"),
            "[2, 3, 4]|[1, 3, 5]|[4, 5]|[5, 3, 1]");
}

TEST(ChatTemplateLanguage, Filters) {
  EXPECT_EQ(Render("{{ [3,1,2]|sort }}|{{ ['b','A','c']|sort }}|{{ [3,1,2]|sort(reverse=true) }}|{{ [1,2,2,1]|unique }}|"
                   "{{ [1,'a']|join(', ') }}|{{ 'abc'|join('-') }}|{{ [1,2]|length }}"),
            "[1, 2, 3]|[\"A\", \"b\", \"c\"]|[3, 2, 1]|[1, 2]|1, a|a-b-c|2");
  EXPECT_EQ(Render("{{ ' 42abc'|int }}|{{ 'x'|int(7) }}|{{ '3.5'|float }}|{{ -3.9|int }}|{{ 1.0|string }}|{{ true|string }}"),
            "42|7|3.5|-3|1.0|true");
  EXPECT_EQ(Render("{{ x|default('d') }}|{{ ''|default('d') }}|{{ ''|default('d', true) }}|{{ none|default('d') }}"),
            "d||d|");
  EXPECT_EQ(Render("{{ x|default }}"), "ERROR: Cannot apply filter \"default\" to type: UndefinedValue");
  EXPECT_EQ(Render("{{ x|trim }}"), "ERROR: Cannot apply filter \"trim\" to type: UndefinedValue");
  EXPECT_EQ(Render("{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb\n\nc'|indent('> ', first=true, blank=true) }}"),
            "a\n    b\n\n    c|> a\n> b\n> \n> c");
  const Json items = {{"items", Json::parse(R"([{"k": 2}, {"k": 0}, {"j": 1}, {"k": 1}])")}};
  EXPECT_EQ(Render("{{ items|selectattr('k')|list }}|{{ items|rejectattr('k')|list }}|"
                   "{{ items|selectattr('k', 'odd')|list }}|{{ items|map(attribute='z', default='-')|list }}",
                   items),
            "[{\"k\": 2}, {\"k\": 1}]|[{\"k\": 0}, {\"j\": 1}]|[{\"k\": 1}]|[\"-\", \"-\", \"-\", \"-\"]");
  EXPECT_EQ(Render("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
}

TEST(ChatTemplateLanguage, FiltersBeyondTheOracle) {
  // Python Jinja2 filters that @huggingface/jinja 0.5.13 rejects as unknown.
  EXPECT_EQ(Render("{{ [1,2,3]|count }}|{{ 'abc'|count }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.567|round(2) }}|"
                   "{{ 2.1|round(method='ceil') }}|{{ -2.5|round(0, 'floor') }}|{{ 'two words, three'|wordcount }}"),
            "3|3|2.0|4.0|2.57|3.0|-3.0|3");
  EXPECT_EQ(Render("{{ [0,1,2,3]|select|list }}|{{ [0,1,2,3]|select('odd')|list }}|{{ [1,2,2]|reject('equalto', 2)|list }}|"
                   "{{ ['a','b']|map('upper')|join }}"),
            "[1, 2, 3]|[1, 3]|[1]|AB");
  EXPECT_EQ(Render("{{ [1]|select('nope')|list }}"), "ERROR: Unknown test: nope");
}

TEST(ChatTemplateLanguage, ToJsonMatchesTheOracle) {
  const Json d = Json::parse(R"({"d": {"b": 1.5, "a": [1, {"x": null}], "u": "\u00e9\ud83d\ude00", "e": []}})");
  EXPECT_EQ(Render("{{ d|tojson }}", d), R"({"b": 1.5, "a": [1, {"x": null}], "u": "é😀", "e": []})");
  EXPECT_EQ(Render("{{ d|tojson(indent=2) }}", d),
            "{\n  \"b\": 1.5,\n  \"a\": [\n    1,\n    {\n      \"x\": null\n    }\n  ],\n  \"u\": \"é😀\",\n"
            "  \"e\": []\n}");
  EXPECT_EQ(Render("{{ d|tojson(separators=(',', ':'), sort_keys=true, ensure_ascii=true) }}", d),
            R"({"a":[1,{"x":null}],"b":1.5,"e":[],"u":"\u00e9\ud83d\ude00"})");
  EXPECT_EQ(Render("{{ 'a\"b\\\\c\\n\\u0001'|tojson }}|{{ x|tojson }}|{{ 1.0|tojson }}"), R"("a\"b\\c\n\u0001"|null|1)");
}

TEST(ChatTemplateLanguage, Tests) {
  EXPECT_EQ(Render("{{ x is defined }}|{{ x is undefined }}|{{ none is none }}|{{ 1.5 is integer }}|{{ {} is mapping }}|"
                   "{{ 'a' is iterable }}|{{ 3 is odd }}|{{ 4 is even }}|{{ false is false }}|{{ 1 is true }}|"
                   "{{ x is not defined }}|{{ range is callable }}"),
            "false|true|true|false|true|true|true|true|true|false|true|true");
  EXPECT_EQ(Render("{{ 1 is foo }}"), "ERROR: Unknown test: foo");
}

TEST(ChatTemplateLanguage, Loops) {
  EXPECT_EQ(Render("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
            "1032truefalse3;2121falsefalse3;3210falsetrue3;");
  EXPECT_EQ(Render("{% for x in [] %}a{% else %}empty{% endfor %}|{% for x in [1,2,3,4] if x is even %}{{ x }}"
                   "{{ loop.index }}{% endfor %}|{% for k, v in {'a':1,'b':2}.items() %}{{ k }}={{ v }}{% endfor %}"),
            "empty|2142|a=1b=2");
  // break/continue drop what the interrupted iteration had rendered, as the oracle does.
  EXPECT_EQ(Render("{% for x in [1,2,3,4] %}a{% if x == 2 %}{% continue %}{% endif %}b{{ x }}"
                   "{% if x == 3 %}{% break %}{% endif %}c{% endfor %}"),
            "ab1c");
  EXPECT_EQ(Render("{% for x in 'abc' %}{{ x }}{% endfor %}"),
            "ERROR: Expected iterable or object type in for loop: got StringValue");
  EXPECT_EQ(Render("{% for x in y %}{% endfor %}"), "ERROR: Expected iterable or object type in for loop: got UndefinedValue");
}

TEST(ChatTemplateLanguage, SetNamespaceAndScopes) {
  EXPECT_EQ(Render("{% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}|"
                   "{% set ns = namespace(t=0) %}{% for i in [1,2] %}{% set ns.t = ns.t + i %}{% endfor %}{{ ns.t }}|"
                   "{% if true %}{% set y = 5 %}{% endif %}{{ y }}"),
            "241|3|5");
  EXPECT_EQ(Render("{% set a, b = [1, 2] %}{{ a }}{{ b }}|{% set s %}block {{ 1 }}{% endset %}[{{ s }}]"), "12|[block 1]");
  EXPECT_EQ(Render("{% set x = 1 %}{% set x.y = 2 %}"), "ERROR: cannot assign attribute on non-namespace object");
}

TEST(ChatTemplateLanguage, Macros) {
  EXPECT_EQ(Render("{% macro m(a, b=2, c='c') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|"
                   "{{ m(1, c=4) }}|{{ m() }}"),
            "12c|13c|124|2c");
  EXPECT_EQ(Render("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}"),
            "1[2, 3]{\"k\": 4}");
  EXPECT_EQ(Render("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
            "ERROR: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(Render("{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}inner{% endcall %}|"
                   "{% macro n(x) %}{{ caller(x + 1) }}{% endmacro %}{% call(v) n(1) %}v={{ v }}{% endcall %}"),
            "[inner]|v=2");
  EXPECT_EQ(Render("{% set g = 'outer' %}{% macro m() %}{{ g }}{% endmacro %}{% set g = 'late' %}{{ m() }}"), "late");
  EXPECT_EQ(Render("{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}"
                   "{{ fact(5) }}"),
            "120");
}

TEST(ChatTemplateLanguage, Globals) {
  EXPECT_EQ(Render("{{ range(3) }}|{{ range(1, 4) }}|{{ range(10, 0, -3) }}|{{ strftime_now('%Y-%m-%d %H:%M %b %B %S %%') }}"),
            "[0, 1, 2]|[1, 2, 3]|[10, 7, 4, 1]|2025-01-05 14:07 Jan January %S %");
  EXPECT_EQ(Render("{{ raise_exception('Boom: ' ~ 1) }}"), "ERROR: Boom: 1");
  EXPECT_EQ(Render("{{ range(1, 2, 0) }}"), "ERROR: range() step must not be zero");
  EXPECT_EQ(Render("{{ namespace({'b': 2}, a=1).b }}|{{ True }}{{ False }}{{ None }}"), "2|truefalse");
}

TEST(ChatTemplateLanguage, WhitespaceControl) {
  // trim_blocks + lstrip_blocks, `-` on either side, comments, one trailing newline dropped, HF generation tags.
  EXPECT_EQ(Render("a  {{- 1 -}}  b\n  {%- if true %}  c  {% endif -%}\n  d {#- comment -#} e {# c2 #} f"),
            "a1b  c  de  f");
  EXPECT_EQ(Render("line\n    {% if true %}\n    x\n    {% endif %}\nend\n"), "line\n    x\nend");
  EXPECT_EQ(Render("  {{ 1 }}\n{# c #}\nz\n{%- generation -%}  gen  {% endgeneration %}\n"), "  1\nzgen  ");
}

TEST(ChatTemplateLanguage, MemberAccess) {
  const Json d = {{"d", Json::parse(R"({"a": {"b": 7}, "l": [5]})")}};
  EXPECT_EQ(Render("{{ d.a.b }}|{{ d['a']['b'] }}|{{ d.x.y }}|{{ d.l[0] }}|{{ d.l.0 }}|{{ d.l.length }}", d), "7|7||5|5|1");
  EXPECT_EQ(Render("{{ x[0] }}"), "ERROR: Cannot access property with non-string: got IntegerValue");
  EXPECT_EQ(Render("{{ f() }}", {{"f", 1}}), "ERROR: Cannot call something that is not a function: got IntegerValue");
}

// --- Errors name the place; hostile templates fail cleanly ---

Status ParseStatus(const std::string& text) {
  const auto parsed = Template::Parse(text);
  return parsed.ok() ? Status::Ok() : parsed.status();
}

Status RenderStatus(const std::string& text, const RenderLimits& limits = {}) {
  const auto parsed = Template::Parse(text);
  if (!parsed.ok()) return parsed.status();
  const auto out = parsed->Render(Json::object(), FrozenNow(), limits);
  return out.ok() ? Status::Ok() : out.status();
}

void ExpectError(const Status& s, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "'" << fragment << "' not in: " << s.message();
}

TEST(ChatTemplateErrors, SyntaxErrorsNameLineAndColumn) {
  ExpectError(ParseStatus("a\nb\n  {{ 1 +* 2 }}"), StatusCode::kInvalidArgument, "line 3, column 9: unexpected '*'");
  ExpectError(ParseStatus("x\n{% if true %}unterminated"), StatusCode::kInvalidArgument,
              "line 2, column 4: unterminated 'if' block");
  ExpectError(ParseStatus("{% for x in y %}"), StatusCode::kInvalidArgument, "unterminated 'for' block");
  ExpectError(ParseStatus("{{ 'abc }}"), StatusCode::kInvalidArgument, "line 1, column 4: Unexpected end of input");
  ExpectError(ParseStatus("ok\n{# never closed"), StatusCode::kInvalidArgument, "line 2, column 1: Missing end of comment");
  ExpectError(ParseStatus("{% endif %}"), StatusCode::kInvalidArgument, "unknown statement 'endif'");
  ExpectError(ParseStatus("{{ a }"), StatusCode::kInvalidArgument, "expected '}}'");
  ExpectError(ParseStatus("{{ a | }}"), StatusCode::kInvalidArgument, "expected the name of a filter");
  ExpectError(ParseStatus("{{ 1 if true else }}"), StatusCode::kInvalidArgument, "unexpected '}}'");
  ExpectError(ParseStatus("{{"), StatusCode::kInvalidArgument, "unexpected end of template");
  ExpectError(ParseStatus("{{ x "), StatusCode::kInvalidArgument, "Unexpected end of input");
  ExpectError(ParseStatus("{{ 'a\\qb' }}"), StatusCode::kInvalidArgument, "Unexpected escaped character: q");
  // A message never cuts a UTF-8 character in half.
  ExpectError(ParseStatus("{{ \xc3\xa9 }}"), StatusCode::kInvalidArgument, "Unexpected character: \xc3\xa9");
}

TEST(ChatTemplateErrors, DeepNestingIsAnErrorNotACrash) {
  const int n = 20000;
  const std::string parens = "{{ " + std::string(n, '(') + "1" + std::string(n, ')') + " }}";
  ExpectError(ParseStatus(parens), StatusCode::kInvalidArgument, "nested too deeply");
  ExpectError(ParseStatus("{{ " + std::string(n, '[') + " }}"), StatusCode::kInvalidArgument, "nested too deeply");
  std::string nots = "{{ ", minus = "{{ ", chain = "{{ 1", members = "{{ x", ifs;
  for (int i = 0; i < n; ++i) {
    nots += "not ";
    minus += "- ";
    chain += " + 1";
    members += ".a";
    ifs += "{% if true %}";
  }
  ExpectError(ParseStatus(nots + "1 }}"), StatusCode::kInvalidArgument, "nested too deeply");
  ExpectError(ParseStatus(minus + "1 }}"), StatusCode::kInvalidArgument, "nested too deeply");
  ExpectError(ParseStatus(chain + " }}"), StatusCode::kInvalidArgument, "nested too deeply");
  ExpectError(ParseStatus(members + " }}"), StatusCode::kInvalidArgument, "nested too deeply");
  ExpectError(ParseStatus(ifs), StatusCode::kInvalidArgument, "nested too deeply");
  // Within the limits, deep but legal templates still work.
  EXPECT_EQ(Render("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}"), "1");
}

TEST(ChatTemplateErrors, RunawayRendersHitLimits) {
  ExpectError(RenderStatus("{% for i in range(10000000000) %}{% endfor %}"), StatusCode::kResourceExhausted,
              "range() too long");
  RenderLimits fast;  // the default limits, scaled down so that the test takes milliseconds
  fast.max_steps = 200000;
  fast.max_output_bytes = 4096;
  fast.max_items = 10000;
  ExpectError(RenderStatus("{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}"
                           "{% endfor %}{% endfor %}{% endfor %}",
                           fast),
              StatusCode::kResourceExhausted, "work limit");
  ExpectError(RenderStatus("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
                           "{% endfor %}",
                           fast),
              StatusCode::kResourceExhausted, "size limit");
  ExpectError(RenderStatus("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
                           "{% endfor %}",
                           fast),
              StatusCode::kResourceExhausted, "length limit");
  ExpectError(RenderStatus("{% for i in range(5000) %}0123456789abcdef0123456789{% endfor %}", fast),
              StatusCode::kResourceExhausted, "size limit");
  ExpectError(RenderStatus("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), StatusCode::kResourceExhausted,
              "nested too deeply");
  ExpectError(RenderStatus("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) ~ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}", fast),
              StatusCode::kResourceExhausted, "work limit");
  ExpectError(RenderStatus("{% break %}"), StatusCode::kInvalidArgument, "outside a loop");
}

TEST(ChatTemplateErrors, DeepAndCyclicValuesAreSafe) {
  // A 100,000-deep chain of lists is built, then destroyed without recursion (and not printable).
  const std::string chain = "{% set ns = namespace(x=none) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
                            "{% endfor %}";
  EXPECT_TRUE(RenderStatus(chain).ok());
  ExpectError(RenderStatus(chain + "{{ ns.x }}"), StatusCode::kResourceExhausted, "nested too deeply");
  // A namespace holding itself: printing fails cleanly, and the cycle is broken when the render ends
  // (the ASan build's leak checker would report it otherwise).
  ExpectError(RenderStatus("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}"), StatusCode::kResourceExhausted,
              "nested too deeply");
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns.self.self is defined }}"), "true");
}

// --- The chat API ---

TEST(ChatRender, ContextAsTheOraclePassesIt) {
  const std::string t =
      "{{ bos_token is defined }}{{ eos_token }}{{ add_generation_prompt }}{{ tools is defined }}"
      "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{{ enable_thinking }}";
  const Json messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  ChatRenderOptions opts;
  opts.eos_token = "</s>";
  opts.extra_context = {{"enable_thinking", false}};
  auto out = RenderChat(t, messages, opts);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out, "false</s>truefalse[user:hi]false");
  opts.tools = Json::array({{{"type", "function"}}});
  opts.add_generation_prompt = false;
  out = RenderChat(t, messages, opts);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "false</s>falsetrue[user:hi]false");
  const auto bad = RenderChat("{% if %}", messages, opts);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(ChatRender, TemplateFamilies) {
  const std::map<std::string, std::string> want = {
      {"chatml-llava-v1.6-34b", "chatml"}, {"Qwen2.5-7B-Instruct", "chatml"},  {"Meta-Llama-3-8B-Instruct", "llama3"},
      {"Llama-3.2-3B-Instruct", "llama3"}, {"gemma-2-2b-it", "gemma"},         {"gemma-3-270m-it", "gemma"},
      {"Phi-3-mini-4k-instruct", "phi3"},  {"phi-4", "phi4"},                  {"Mistral-Nemo-Instruct-2407", "mistral"},
      {"DeepSeek-R1-Distill-Qwen-32B", "deepseek"}, {"granite-3.3-2b-instruct", "granite"},
      {"gpt-oss-120b", "gpt-oss"},         {"EXAONE-3.5-7.8B-Instruct", "exaone"}, {"TinyLlama-1.1B-Chat-v1.0", "zephyr"},
      {"Mistral-Small-24B-Instruct-2501", "mistral"},
  };
  for (const auto& [stem, family] : want) {
    EXPECT_EQ(ChatTemplateFamily(ReadFile(kDir / "templates" / (stem + ".jinja"))), family) << stem;
  }
  EXPECT_EQ(ChatTemplateFamily("{{ messages }}"), "unknown");
}

}  // namespace
}  // namespace edgedecode::chat
