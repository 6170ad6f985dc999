// The filters (`x | trim`, `x | tojson(indent=4)`). As in the oracle, a filter written without
// parentheses and one written with them are different code paths (`|default` without arguments
// rejects undefined; `|join` without arguments joins with "").
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "chat/interpreter.h"

namespace edgedecode::chat {
namespace {

[[noreturn]] void CannotApply(const std::string& name, const Value& v) {
  Fail("Cannot apply filter \"" + name + "\" to type: " + v.TypeName());
}

// JavaScript parseInt(s, 10): leading whitespace, sign, digits; nullopt for NaN.
std::optional<double> JsParseInt(const std::string& s) {
  const std::string_view t = TrimJs(s, true, false);
  size_t i = 0;
  const bool negative = i < t.size() && t[i] == '-';
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
  double value = 0;
  const size_t digits_start = i;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) value = value * 10 + (t[i] - '0');
  if (i == digits_start) return std::nullopt;
  return negative ? -value : value;
}

// JavaScript parseFloat: the longest decimal-literal prefix (or Infinity); nullopt for NaN.
std::optional<double> JsParseFloat(const std::string& s) {
  const std::string t(TrimJs(s, true, false));
  size_t i = 0;
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
  if (t.compare(i, 8, "Infinity") == 0) return t[0] == '-' ? -INFINITY : INFINITY;
  size_t digits = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) { ++i; ++digits; }
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) { ++i; ++digits; }
  }
  if (digits == 0) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    size_t j = i + 1;
    if (j < t.size() && (t[j] == '-' || t[j] == '+')) ++j;
    if (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) {
      while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
      i = j;
    }
  }
  return std::strtod(t.substr(0, i).c_str(), nullptr);
}

Value IntFromDouble(double d) {
  if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) Fail("integer out of range");
  return Value::Int(static_cast<int64_t>(std::trunc(d)));
}

// What Array#join makes of an element.
std::string JoinPiece(const Value& v) { return v.is_null() || v.is_undefined() ? "" : ToConcatString(v); }

Value Join(Interpreter& in, const Array& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += JoinPiece(items[i]);
    if (out.size() > (64u << 20)) Fail("join() result too large");
  }
  return in.CheckedString(std::move(out));
}

// `indent(width=4, first=false, blank=false)`: indents every line but the first and blank ones.
std::string Indent(const std::string& s, const std::string& pad, bool first, bool blank) {
  std::string out;
  size_t start = 0, line = 0;
  while (true) {
    const size_t end = s.find('\n', start);
    const std::string_view text = std::string_view(s).substr(start, end == std::string::npos ? end : end - start);
    if (!((!first && line == 0) || (!blank && text.empty()))) out += pad;
    out.append(text);
    if (end == std::string::npos) break;
    out += '\n';
    start = end + 1;
    ++line;
  }
  return out;
}

// A dotted attribute path ("a.b", "items.0") into objects and arrays (sort, map).
Value AttributeValue(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (v.is_mapping_like()) {
      const Value* found = v.Find(part);
      v = found ? *found : Value();
    } else if (v.is_array()) {
      char* end = nullptr;
      const long long index = std::strtoll(part.c_str(), &end, 10);
      if (end == part.c_str() || index < 0 || index >= static_cast<long long>(v.array().size())) return Value();
      v = v.array()[index];
    } else {
      return Value();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value SortArray(const Array& items, bool reverse, bool case_sensitive, const Value& attribute) {
  Array sorted = items;
  auto key = [&](const Value& v) {
    if (attribute.is_null()) return v;
    return AttributeValue(v, attribute.is_int() ? std::to_string(attribute.as_int()) : attribute.as_string());
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Value& a, const Value& b) {
    const int c = CompareValues(key(a), key(b), case_sensitive);
    return reverse ? c > 0 : c < 0;
  });
  return Value::MakeArray(std::move(sorted));
}

// --- Python Jinja2 filters the oracle lacks (it raises "Unknown ... filter" for them): count, round,
// wordcount, select/reject, map('filter'). Offered because real templates use them. ---

// round(precision=0, method='common'|'floor'|'ceil'); Python's round() sends ties to even.
Value RoundNumber(const Value& v, const CallArgs& args) {
  const Value* precision = args.Get(0, "precision");
  const Value* method = args.Get(1, "method");
  if (precision && !precision->is_int()) Fail("round() precision must be an integer");
  if (method && !method->is_string()) Fail("round() method must be a string");
  const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision ? precision->as_int() : 0, -300, 300)));
  const std::string how = method ? method->as_string() : "common";
  const double x = v.as_number() * scale;
  double r;
  if (how == "common") r = std::nearbyint(x);
  else if (how == "floor") r = std::floor(x);
  else if (how == "ceil") r = std::ceil(x);
  else Fail("method must be 'common', 'ceil' or 'floor'");
  return Value::Float(r / scale);
}

// Words as Python's \w+ counts them (any non-ASCII byte counts as a word character).
Value WordCount(const std::string& s) {
  int64_t words = 0;
  bool in_word = false;
  for (const char c : s) {
    const bool word = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
    if (word && !in_word) ++words;
    in_word = word;
  }
  return Value::Int(words);
}

// select/reject: items passing a test (`select('odd')`, `select('equalto', 2)`), or truthy ones.
Value SelectItems(const Value& v, const CallArgs& args, bool keep) {
  Array out;
  for (const Value& item : v.array()) {
    bool result = item.Truthy();
    if (!args.positional.empty()) {
      if (!args.positional[0].is_string()) Fail("select/reject: the test name must be a string");
      bool known = false;
      result = RunTest(args.positional[0].as_string(), item, args.positional.size() > 1 ? &args.positional[1] : nullptr,
                       &known);
      if (!known) Fail("Unknown test: " + args.positional[0].as_string());
    }
    if (result == keep) out.push_back(item);
  }
  return Value::MakeArray(std::move(out));
}

Value PlainFilter(Interpreter& in, const Value& v, const std::string& name);

// map('upper'): a filter (without arguments) applied to every item.
Value MapWithFilter(Interpreter& in, const Value& v, const CallArgs& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string()) {
    Fail("`map` takes attribute= or the name of a filter without arguments");
  }
  Array out;
  for (const Value& item : v.array()) out.push_back(PlainFilter(in, item, args.positional[0].as_string()));
  return Value::MakeArray(std::move(out));
}

Value PlainArrayFilter(Interpreter& in, const Value& v, const std::string& name) {
  const Array& items = v.array();
  if (name == "list") return v;
  if (name == "first") return items.empty() ? Value() : items.front();
  if (name == "last") return items.empty() ? Value() : items.back();
  if (name == "length" || name == "count") return Value::Int(static_cast<int64_t>(items.size()));
  if (name == "select" || name == "reject") return SelectItems(v, CallArgs{}, name == "select");
  if (name == "reverse") return Value::MakeArray(Array(items.rbegin(), items.rend()));
  if (name == "sort") return SortArray(items, false, false, Value::Null());
  if (name == "join") return Join(in, items, "");
  if (name == "string") return Value::String(ToJson(v, JsonFormat{}, /*undefined_as_null=*/false));
  if (name == "unique") {
    Array out;
    for (const Value& item : items) {
      bool seen = false;
      for (const Value& o : out) seen = seen || StrictEquals(o, item);
      if (!seen) out.push_back(item);
    }
    return Value::MakeArray(std::move(out));
  }
  Fail("Unknown ArrayValue filter: " + name);
}

Value PlainStringFilter(Interpreter& in, const Value& v, const std::string& name) {
  const std::string& s = v.as_string();
  if (name == "length" || name == "count") return Value::Int(static_cast<int64_t>(Utf16Length(s)));
  if (name == "wordcount") return WordCount(s);
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    CallArgs none;
    return BuiltinMember(in, v, name).function()(none);
  }
  if (name == "trim") return Value::String(std::string(TrimJs(s, true, true)));
  if (name == "indent") return in.CheckedString(Indent(s, "    ", false, false));
  if (name == "join" || name == "string") return v;
  if (name == "int") {
    const auto d = JsParseInt(s);
    return d ? IntFromDouble(*d) : Value::Int(0);
  }
  if (name == "float") return Value::Float(JsParseFloat(s).value_or(0.0));
  Fail("Unknown StringValue filter: " + name);
}

Value PlainFilter(Interpreter& in, const Value& v, const std::string& name) {
  if (name == "safe") return v;
  if (name == "tojson") return in.CheckedString(ToJson(v, JsonFormat{}));
  if (v.is_array()) return PlainArrayFilter(in, v, name);
  if (v.is_string()) return PlainStringFilter(in, v, name);
  if (v.is_number()) {
    if (name == "abs") return v.is_int() ? (v.as_int() == INT64_MIN ? Value::Float(9.223372036854775808e18)
                                                                     : Value::Int(std::llabs(v.as_int())))
                                         : Value::Float(std::fabs(v.as_float()));
    if (name == "int") return v.is_int() ? v : IntFromDouble(v.as_float());
    if (name == "float") return Value::Float(v.as_number());
    if (name == "string") return Value::String(ToOutputString(v));
    if (name == "round") return RoundNumber(v, CallArgs{});
    Fail("Unknown NumericValue filter: " + name);
  }
  if (v.is_object()) {
    if (name == "length" || name == "count") return Value::Int(static_cast<int64_t>(v.object().size()));
    const Value member = BuiltinMember(in, v, name);  // items, keys, values, dictsort: called bare
    if (member.is_function()) {
      CallArgs none;
      return member.function()(none);
    }
    Fail("Unknown ObjectValue filter: " + name);
  }
  if (v.is_bool()) {
    if (name == "bool") return v;
    if (name == "int") return Value::Int(v.as_bool() ? 1 : 0);
    if (name == "float") return Value::Float(v.as_bool() ? 1.0 : 0.0);
    if (name == "string") return Value::String(v.as_bool() ? "true" : "false");
    Fail("Unknown BooleanValue filter: " + name);
  }
  CannotApply(name, v);
}

Value ToJsonFilter(Interpreter& in, const Value& v, CallArgs& args) {
  JsonFormat format;
  if (const Value* indent = args.Keyword("indent"); indent && !indent->is_null()) {
    if (!indent->is_int()) Fail("If set, indent must be a number");
    format.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), -1, 64));
  }
  if (const Value* ascii = args.Keyword("ensure_ascii")) {
    if (!ascii->is_bool()) Fail("If set, ensure_ascii must be a boolean");
    format.ensure_ascii = ascii->as_bool();
  }
  if (const Value* sort = args.Keyword("sort_keys")) {
    if (!sort->is_bool()) Fail("If set, sort_keys must be a boolean");
    format.sort_keys = sort->as_bool();
  }
  if (const Value* sep = args.Keyword("separators"); sep && !sep->is_null()) {
    if (!sep->is_array()) Fail("If set, separators must be a tuple of two strings");
    const Array& pair = sep->array();
    if (pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
      Fail("separators must be a tuple of two strings");
    }
    format.has_separators = true;
    format.item_separator = pair[0].as_string();
    format.key_separator = pair[1].as_string();
  }
  if (format.indent < 0) format.indent = 0;
  return in.CheckedString(ToJson(v, format));
}

Value NumberFilterWithDefault(const Value& v, const std::string& name, CallArgs& args) {
  const bool to_int = name == "int";
  const Value* given = args.Get(0, "default");
  const Value fallback = given ? *given : to_int ? Value::Int(0) : Value::Float(0.0);
  if (v.is_string()) {
    const auto d = to_int ? JsParseInt(v.as_string()) : JsParseFloat(v.as_string());
    if (!d) return fallback;
    return to_int ? IntFromDouble(*d) : Value::Float(*d);
  }
  if (v.is_number()) return to_int ? (v.is_int() ? v : IntFromDouble(v.as_float())) : Value::Float(v.as_number());
  if (v.is_bool()) return to_int ? Value::Int(v.as_bool()) : Value::Float(v.as_bool() ? 1.0 : 0.0);
  CannotApply(name, v);
}

Value SelectAttr(Interpreter& in, const Value& v, const Node& filter, Scope* scope) {
  const std::string& name = filter.name;
  for (const Value& item : v.array()) {
    if (!item.is_mapping_like()) Fail("`" + name + "` can only be applied to array of objects");
  }
  for (const auto& arg : filter.list) {
    if (arg->kind != NodeKind::kString) Fail("arguments of `" + name + "` must be strings");
  }
  CallArgs args = in.EvalArgs(filter.list, scope);
  if (args.positional.empty()) Fail("`" + name + "` needs an attribute name");
  const std::string attr = args.positional[0].as_string();
  const Value* test = args.positional.size() > 1 ? &args.positional[1] : nullptr;
  const Value* test_arg = args.positional.size() > 2 ? &args.positional[2] : nullptr;
  Array out;
  for (const Value& item : v.array()) {
    const Value* a = item.Find(attr);
    bool result = false;
    if (a && test) {
      bool known = false;
      result = RunTest(test->as_string(), *a, test_arg, &known);
      if (!known) Fail("Unknown test: " + test->as_string());
    } else if (a) {
      result = a->Truthy();
    }
    if (result == (name == "selectattr")) out.push_back(item);
  }
  return Value::MakeArray(std::move(out));
}

Value MapFilter(const Value& v, CallArgs& args) {
  const Value* attr = args.Keyword("attribute");
  if (!attr) Fail("`map` expressions without `attribute` set are not currently supported.");
  if (!attr->is_string()) Fail("attribute must be a string");
  const Value* fallback = args.Keyword("default");
  Array out;
  for (const Value& item : v.array()) {
    if (!item.is_mapping_like()) Fail("items in map must be an object");
    const Value found = AttributeValue(item, attr->as_string());
    out.push_back(found.is_undefined() && fallback ? *fallback : found);
  }
  return Value::MakeArray(std::move(out));
}

Value CallArrayFilter(Interpreter& in, const Value& v, const Node& filter, Scope* scope) {
  const std::string& name = filter.name;
  if (name == "selectattr" || name == "rejectattr") return SelectAttr(in, v, filter, scope);
  CallArgs args = in.EvalArgs(filter.list, scope);
  if (name == "map") return args.Keyword("attribute") ? MapFilter(v, args) : MapWithFilter(in, v, args);
  if (name == "select" || name == "reject") return SelectItems(v, args, name == "select");
  if (name == "sort") {
    const Value* reverse = args.Get(0, "reverse");
    const Value* case_sensitive = args.Get(1, "case_sensitive");
    const Value* attribute = args.Get(2, "attribute");
    if (reverse && !reverse->is_bool()) Fail("reverse must be a boolean");
    if (case_sensitive && !case_sensitive->is_bool()) Fail("case_sensitive must be a boolean");
    if (attribute && !attribute->is_string() && !attribute->is_int() && !attribute->is_null()) {
      Fail("attribute must be a string, integer, or null");
    }
    return SortArray(v.array(), reverse && reverse->as_bool(), case_sensitive && case_sensitive->as_bool(),
                     attribute ? *attribute : Value::Null());
  }
  Fail("Unknown ArrayValue filter: " + name);
}

Value CallStringFilter(Interpreter& in, const Value& v, const Node& filter, Scope* scope) {
  const std::string& name = filter.name;
  CallArgs args = in.EvalArgs(filter.list, scope);
  if (name == "indent") {
    const Value* width = args.Get(0, "width");
    if (width && !width->is_int() && !width->is_string()) Fail("width must be an integer or a string");
    const Value* first = args.Get(1, "first");
    const Value* blank = args.Get(2, "blank");
    std::string pad = "    ";
    if (width) pad = width->is_string() ? width->as_string() : std::string(std::clamp<int64_t>(width->as_int(), 0, 1024), ' ');
    return in.CheckedString(Indent(v.as_string(), pad, first && first->Truthy(), blank && blank->Truthy()));
  }
  if (name == "replace") return ReplaceString(in, v.as_string(), args);
  Fail("Unknown StringValue filter: " + name);
}

Value CallFilter(Interpreter& in, const Value& v, const Node& filter, Scope* scope) {
  const std::string& name = filter.name;
  if (name == "tojson" || name == "join" || name == "int" || name == "float" || name == "default") {
    CallArgs args = in.EvalArgs(filter.list, scope);
    if (name == "tojson") return ToJsonFilter(in, v, args);
    if (name == "int" || name == "float") return NumberFilterWithDefault(v, name, args);
    if (name == "default") {
      const Value fallback = args.positional.empty() ? Value::String("") : args.positional[0];
      const Value* boolean = args.Get(1, "boolean");
      if (boolean && !boolean->is_bool()) Fail("`default` filter flag must be a boolean");
      const bool use_fallback = v.is_undefined() || (boolean && boolean->as_bool() && !v.Truthy());
      return use_fallback ? fallback : v;
    }
    // join
    const Value* sep = args.Get(0, "separator");
    if (!v.is_string() && !v.is_array()) CannotApply(name, v);
    if (sep && !sep->is_string()) Fail("separator must be a string");
    Array items;
    if (v.is_string()) {
      for (std::string_view cp : SplitCodePoints(v.as_string())) items.push_back(Value::String(std::string(cp)));
    }
    return Join(in, v.is_string() ? items : v.array(), sep ? sep->as_string() : "");
  }
  if (v.is_array()) return CallArrayFilter(in, v, filter, scope);
  if (v.is_string()) return CallStringFilter(in, v, filter, scope);
  if (v.is_number() && name == "round") return RoundNumber(v, in.EvalArgs(filter.list, scope));
  if (v.is_object()) {
    const Value member = BuiltinMember(in, v, name);
    if (member.is_function()) {
      CallArgs args = in.EvalArgs(filter.list, scope);
      return member.function()(args);
    }
    Fail("Unknown ObjectValue filter: " + name);
  }
  CannotApply(name, v);
}

}  // namespace

Value ApplyFilter(Interpreter& in, const Value& operand, const Node& filter, Scope* scope) {
  return filter.flag ? CallFilter(in, operand, filter, scope) : PlainFilter(in, operand, filter.name);
}

}  // namespace edgedecode::chat
