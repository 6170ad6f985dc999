// Methods of strings and objects (`s.strip()`, `d.items()`), the tests (`is defined`) and the value
// comparisons, as @huggingface/jinja has them. Case mapping is ASCII-only (see docs/chat-templates.md).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "chat/interpreter.h"

namespace edgedecode::chat {
namespace {

Value Bound(Function fn) { return Value::MakeFunction(std::move(fn)); }

// Python's str.title() as the oracle approximates it: /\b\w/ upper-cased, nothing lower-cased.
std::string TitleCase(std::string s) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < s.size(); ++i) {
    if (word(s[i]) && (i == 0 || !word(s[i - 1]))) s[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[i])));
  }
  return s;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// startswith/endswith: a string or a tuple/list of strings.
Value AffixTest(const std::string& self, CallArgs& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  if (args.positional.empty()) Fail(std::string(name) + "() requires at least one argument");
  const Value& pattern = args.positional[0];
  auto test = [&](const std::string& p) { return prefix ? StartsWith(self, p) : EndsWith(self, p); };
  if (pattern.is_string()) return Value::Bool(test(pattern.as_string()));
  if (!pattern.is_array()) Fail(std::string(name) + "() argument must be a string or tuple of strings");
  for (const Value& item : pattern.array()) {
    if (!item.is_string()) Fail(std::string(name) + "() tuple elements must be strings");
    if (test(item.as_string())) return Value::Bool(true);
  }
  return Value::Bool(false);
}

// Python's str.split(sep=None, maxsplit=-1).
Value Split(Interpreter& in, const std::string& self, CallArgs& args) {
  const Value sep = args.positional.size() > 0 ? args.positional[0] : Value::Null();
  if (!sep.is_string() && !sep.is_null()) Fail("sep argument must be a string or null");
  const Value maxsplit_v = args.positional.size() > 1 ? args.positional[1] : Value::Int(-1);
  if (!maxsplit_v.is_int()) Fail("maxsplit argument must be a number");
  const int64_t maxsplit = maxsplit_v.as_int();
  Array parts;
  if (sep.is_null()) {  // runs of whitespace separate; no empty strings at the ends
    std::string_view rest = TrimJs(self, true, false);
    while (!rest.empty()) {
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.push_back(Value::String(std::string(rest)));
        break;
      }
      size_t end = 0;
      while (end < rest.size() && !JsSpaceAt(rest, end)) ++end;
      parts.push_back(Value::String(std::string(rest.substr(0, end))));
      rest = TrimJs(rest.substr(end), true, false);
    }
    return in.CheckedArray(std::move(parts));
  }
  const std::string& s = sep.as_string();
  if (s.empty()) Fail("empty separator");
  size_t start = 0;
  while (true) {
    const size_t at = self.find(s, start);
    if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) break;
    parts.push_back(Value::String(self.substr(start, at - start)));
    if (parts.size() > in.max_items()) Fail("split() result exceeds the length limit");
    start = at + s.size();
  }
  parts.push_back(Value::String(self.substr(start)));
  return in.CheckedArray(std::move(parts));
}

}  // namespace

std::string AsciiLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string AsciiUpper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Python's str.replace(old, new[, count]); an empty `old` inserts between code points.
Value ReplaceString(Interpreter& in, const std::string& self, CallArgs& args) {
  if (args.positional.size() < 2) Fail("replace() requires at least two arguments");
  const Value& from = args.positional[0];
  const Value& to = args.positional[1];
  if (!from.is_string() || !to.is_string()) Fail("replace() arguments must be strings");
  const Value* count_v = args.Get(2, "count");
  if (count_v && !count_v->is_int() && !count_v->is_null()) Fail("replace() count argument must be a number or null");
  int64_t remaining = count_v && count_v->is_int() && count_v->as_int() >= 0 ? count_v->as_int() : INT64_MAX;
  const std::string& f = from.as_string();
  std::string out;
  if (f.empty()) {
    for (std::string_view cp : SplitCodePoints(self)) {
      if (remaining > 0) { out += to.as_string(); --remaining; }
      out.append(cp);
      if (out.size() > (16u << 20) * 2) Fail("replace() result too large");
    }
    if (remaining > 0) out += to.as_string();
    return in.CheckedString(std::move(out));
  }
  size_t start = 0;
  while (remaining > 0) {
    const size_t at = self.find(f, start);
    if (at == std::string::npos) break;
    out.append(self, start, at - start);
    out += to.as_string();
    if (out.size() > (16u << 20) * 2) Fail("replace() result too large");
    start = at + f.size();
    --remaining;
  }
  out.append(self, start);
  return in.CheckedString(std::move(out));
}

Value StringMember(Interpreter& in, const Value& object, const std::string& name) {
  const std::string s = object.as_string();
  if (name == "length") return Value::Int(static_cast<int64_t>(Utf16Length(s)));
  if (name == "upper") return Bound([s](CallArgs&) { return Value::String(AsciiUpper(s)); });
  if (name == "lower") return Bound([s](CallArgs&) { return Value::String(AsciiLower(s)); });
  // Python's strip(chars) is not what the oracle does: it always strips whitespace.
  if (name == "strip") return Bound([s](CallArgs&) { return Value::String(std::string(TrimJs(s, true, true))); });
  if (name == "lstrip") return Bound([s](CallArgs&) { return Value::String(std::string(TrimJs(s, true, false))); });
  if (name == "rstrip") return Bound([s](CallArgs&) { return Value::String(std::string(TrimJs(s, false, true))); });
  if (name == "title") return Bound([s](CallArgs&) { return Value::String(TitleCase(s)); });
  if (name == "capitalize") {
    return Bound([s](CallArgs&) { return Value::String(s.empty() ? s : AsciiUpper(s.substr(0, 1)) + s.substr(1)); });
  }
  if (name == "startswith") return Bound([s](CallArgs& a) { return AffixTest(s, a, true); });
  if (name == "endswith") return Bound([s](CallArgs& a) { return AffixTest(s, a, false); });
  if (name == "split") return Bound([&in, s](CallArgs& a) { return Split(in, s, a); });
  if (name == "replace") return Bound([&in, s](CallArgs& a) { return ReplaceString(in, s, a); });
  return Value();
}

Value ItemsOf(const Value& object) {
  Array items;
  for (const auto& [k, v] : object.object()) items.push_back(Value::MakeArray({Value::String(k), v}));
  return Value::MakeArray(std::move(items));
}

Value DictSort(const Value& object, CallArgs& args) {
  const Value case_sensitive = args.positional.size() > 0 ? args.positional[0]
                               : args.Keyword("case_sensitive") ? *args.Keyword("case_sensitive") : Value::Bool(false);
  if (!case_sensitive.is_bool()) Fail("case_sensitive must be a boolean");
  const Value by = args.positional.size() > 1 ? args.positional[1]
                   : args.Keyword("by") ? *args.Keyword("by") : Value::String("key");
  if (!by.is_string()) Fail("by must be a string");
  if (by.as_string() != "key" && by.as_string() != "value") Fail("by must be either 'key' or 'value'");
  const Value reverse = args.positional.size() > 2 ? args.positional[2]
                        : args.Keyword("reverse") ? *args.Keyword("reverse") : Value::Bool(false);
  if (!reverse.is_bool()) Fail("reverse must be a boolean");
  Array items = ItemsOf(object).array();
  const size_t index = by.as_string() == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    const int c = CompareValues(a.array()[index], b.array()[index], case_sensitive.as_bool());
    return reverse.as_bool() ? c > 0 : c < 0;
  });
  return Value::MakeArray(std::move(items));
}

Value ObjectMember(const Value& object, const std::string& name) {
  if (name == "get") {
    return Bound([object](CallArgs& a) {
      const Value key = a.positional.empty() ? Value() : a.positional[0];
      if (!key.is_string()) Fail(std::string("Object key must be a string: got ") + key.TypeName());
      if (const Value* v = object.Find(key.as_string())) return *v;
      return a.positional.size() > 1 ? a.positional[1] : Value::Null();
    });
  }
  if (name == "items") return Bound([object](CallArgs&) { return ItemsOf(object); });
  if (name == "keys") {
    return Bound([object](CallArgs&) {
      Array keys;
      for (const auto& [k, v] : object.object()) keys.push_back(Value::String(k));
      return Value::MakeArray(std::move(keys));
    });
  }
  if (name == "values") {
    return Bound([object](CallArgs&) {
      Array values;
      for (const auto& [k, v] : object.object()) values.push_back(v);
      return Value::MakeArray(std::move(values));
    });
  }
  if (name == "dictsort") return Bound([object](CallArgs& a) { return DictSort(object, a); });
  return Value();
}

Value BuiltinMember(Interpreter& in, const Value& object, const std::string& name) {
  if (object.is_string()) return StringMember(in, object, name);
  if (object.is_array()) return name == "length" ? Value::Int(static_cast<int64_t>(object.array().size())) : Value();
  if (object.is_object()) return ObjectMember(object, name);
  return Value();
}

bool RunTest(const std::string& name, const Value& v, const Value* arg, bool* known) {
  *known = true;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_null();
  if (name == "string") return v.is_string();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "callable") return v.is_function();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return (v.is_array() && !v.is_tuple()) || v.is_string();  // the oracle's type check
  if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
  if (name == "lower") return v.is_string() && AsciiLower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && AsciiUpper(v.as_string()) == v.as_string();
  if (name == "odd" || name == "even") {
    if (!v.is_int()) Fail("cannot " + name + " on " + v.TypeName());
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "equalto" || name == "eq") return StrictEquals(v, arg ? *arg : Value());
  *known = false;
  return false;
}

namespace {
// JavaScript's ToNumber for a string: trimmed decimal literal, "" -> 0, otherwise NaN.
double JsStringToNumber(const std::string& s) {
  const std::string t(TrimJs(s, true, true));
  if (t.empty()) return 0;
  if (t == "Infinity" || t == "+Infinity") return INFINITY;
  if (t == "-Infinity") return -INFINITY;
  if (t.find_first_not_of("0123456789+-.eE") != std::string::npos) return NAN;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() ? d : NAN;
}
double JsToNumber(const Value& v) {
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_string()) return JsStringToNumber(v.as_string());
  return v.as_number();
}
bool IsPrimitiveNumberLike(const Value& v) { return v.is_number() || v.is_bool() || v.is_string(); }
}  // namespace

bool StrictEquals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number() && (!a.is_int() || !b.is_int() || a.as_int() == b.as_int());
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNull: return true;
    case Value::Kind::kBool: return a.as_bool() == b.as_bool();
    case Value::Kind::kString: return a.as_string() == b.as_string();
    default: return a.SameReference(b);
  }
}

bool LooseEquals(const Value& a, const Value& b) {
  const bool a_nullish = a.is_null() || a.is_undefined(), b_nullish = b.is_null() || b.is_undefined();
  if (a_nullish || b_nullish) return a_nullish && b_nullish;
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  if (IsPrimitiveNumberLike(a) && IsPrimitiveNumberLike(b)) return JsToNumber(a) == JsToNumber(b);
  return StrictEquals(a, b);
}

int CompareValues(const Value& a, const Value& b, bool case_sensitive) {
  if (a.is_null() && b.is_null()) return 0;
  if (a.is_null() || b.is_null()) Fail(std::string("Cannot compare ") + a.TypeName() + " with " + b.TypeName());
  if (a.is_undefined() && b.is_undefined()) return 0;
  if (a.is_undefined() || b.is_undefined()) Fail(std::string("Cannot compare ") + a.TypeName() + " with " + b.TypeName());
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    const double x = JsToNumber(a), y = JsToNumber(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind() != b.kind() || a.is_tuple() != b.is_tuple()) {
    Fail(std::string("Cannot compare different types: ") + a.TypeName() + " and " + b.TypeName());
  }
  if (!a.is_string()) Fail(std::string("Cannot compare type: ") + a.TypeName());
  const std::string x = case_sensitive ? a.as_string() : AsciiLower(a.as_string());
  const std::string y = case_sensitive ? b.as_string() : AsciiLower(b.as_string());
  return x < y ? -1 : x > y ? 1 : 0;
}

}  // namespace edgedecode::chat
