// Runtime values and their text forms. The formatting rules follow the oracle (@huggingface/jinja on
// node): numbers print as JavaScript prints them, tojson is JSON.stringify with Python's separators.
#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>

namespace edgedecode::chat {
namespace {

constexpr int kMaxValueDepth = 256;  // nesting of arrays/objects that tojson / FromJson will walk

// Decodes the UTF-8 sequence at s[i]; returns its length (1 for a malformed byte) and the code point.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (len == 0 || i + len > s.size()) { *cp = b; return 1; }
  uint32_t c = len == 1 ? b : b & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto cont = static_cast<unsigned char>(s[i + k]);
    if ((cont & 0xc0) != 0x80) { *cp = b; return 1; }
    c = (c << 6) | (cont & 0x3f);
  }
  *cp = c;
  return len;
}

bool IsJsSpace(uint32_t c) {
  return c == 32 || (c >= 9 && c <= 13) || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
         c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000 || c == 0xfeff;
}

void AppendJsonString(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    char buf[16];
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (cp < 0x20) {
          std::snprintf(buf, sizeof buf, "\\u%04x", cp);
          out += buf;
        } else if (ensure_ascii && cp >= 0x7f) {  // the oracle escapes UTF-16 units from 0x7f up
          if (cp >= 0x10000) {
            const uint32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
          }
          out += buf;
        } else {
          out.append(s.substr(i, len));
        }
    }
    i += len;
  }
  out += '"';
}

std::string JsonNumber(const Value& v) {
  if (v.is_int()) return std::to_string(v.as_int());
  if (!std::isfinite(v.as_float())) return "null";
  return JsNumber(v.as_float());
}

// Arrays and objects nest, and a render can build a chain of them a million deep (a loop doing
// `set x = [x]`). Destroying such a chain through nested destructors would overflow the stack, so
// containers are deleted through this queue: a deletion that starts while another one runs is queued
// and done by the outermost one, in a loop.
class DeferredDeleter {
 public:
  template <typename T>
  static void Delete(T* p) {
    thread_local Queue queue;
    queue.pending.emplace_back(p, [](void* q) { delete static_cast<T*>(q); });
    if (queue.draining) return;
    queue.draining = true;
    while (!queue.pending.empty()) {
      const auto [ptr, del] = queue.pending.back();
      queue.pending.pop_back();
      del(ptr);  // may queue more
    }
    queue.draining = false;
  }

 private:
  struct Queue {
    bool draining = false;
    std::vector<std::pair<void*, void (*)(void*)>> pending;
  };
};

template <typename T>
std::shared_ptr<T> MakeShared(T value) {
  return std::shared_ptr<T>(new T(std::move(value)), [](T* p) { DeferredDeleter::Delete(p); });
}

}  // namespace

const Value* CallArgs::Keyword(std::string_view name) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value* CallArgs::Get(size_t i, std::string_view name) const {
  if (i < positional.size()) return &positional[i];
  return Keyword(name);
}

void Fail(std::string message) { throw TemplateError{std::move(message)}; }

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.string_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::MakeArray(Array items, bool tuple) {
  Value v;
  v.kind_ = Kind::kArray;
  v.tuple_ = tuple;
  v.array_ = MakeShared(std::move(items));
  return v;
}

Value Value::MakeObject(Object entries) {
  Value v;
  v.kind_ = Kind::kObject;
  v.object_ = MakeShared(std::move(entries));
  return v;
}

Value Value::MakeNamespace(Object entries) {
  Value v = MakeObject(std::move(entries));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::MakeFunction(Function fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.function_ = std::make_shared<Function>(std::move(fn));
  return v;
}

namespace {
// "0", "1", "42": keys that JavaScript treats as array indices (canonical, below 2^32 - 1).
std::optional<uint32_t> ArrayIndexKey(const std::string& k) {
  if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v >= 0xffffffffu) return std::nullopt;
  return static_cast<uint32_t>(v);
}

// The oracle receives input objects through JavaScript, whose property order puts array-index keys
// first, ascending, then the other keys in insertion order (what Object.entries returns).
Object InJsPropertyOrder(Object entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto ia = ArrayIndexKey(a.first), ib = ArrayIndexKey(b.first);
    if (ia && ib) return *ia < *ib;
    return ia.has_value() && !ib.has_value();
  });
  return entries;
}

Value FromJsonAt(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxValueDepth) Fail("input data nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::Null();
    case nlohmann::ordered_json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u <= static_cast<uint64_t>(INT64_MAX) ? Value::Int(static_cast<int64_t>(u))
                                                   : Value::Float(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: {
      // JavaScript has one number type: an integral float (1.0) arrives in the oracle as an integer.
      const double d = j.get<double>();
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9007199254740992.0) {
        return Value::Int(static_cast<int64_t>(d));
      }
      return Value::Float(d);
    }
    case nlohmann::ordered_json::value_t::string: return Value::String(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(FromJsonAt(e, depth + 1));
      return Value::MakeArray(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object entries;
      for (const auto& [k, e] : j.items()) entries.emplace_back(k, FromJsonAt(e, depth + 1));
      return Value::MakeObject(InJsPropertyOrder(std::move(entries)));
    }
    default: return Value();  // binary / discarded: nothing a template can use
  }
}
}  // namespace

Value Value::FromJson(const nlohmann::ordered_json& j) { return FromJsonAt(j, 0); }

const Value* Value::Find(std::string_view key) const {
  if (!is_mapping_like()) return nullptr;
  for (const auto& [k, v] : *object_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::Set(const std::string& key, Value v) const {
  for (auto& [k, existing] : *object_) {
    if (k == key) { existing = std::move(v); return; }
  }
  object_->emplace_back(key, std::move(v));
}

bool Value::SameReference(const Value& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kArray: return array_ == other.array_;
    case Kind::kObject:
    case Kind::kNamespace: return object_ == other.object_;
    case Kind::kFunction: return function_ == other.function_;
    default: return false;
  }
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNull: return false;
    case Kind::kBool:
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0 && !std::isnan(float_);
    case Kind::kString: return !string_->empty();
    case Kind::kArray: return !array_->empty();
    case Kind::kObject: return !object_->empty();
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "UndefinedValue";
    case Kind::kNull: return "NullValue";
    case Kind::kBool: return "BooleanValue";
    case Kind::kInt: return "IntegerValue";
    case Kind::kFloat: return "FloatValue";
    case Kind::kString: return "StringValue";
    case Kind::kArray: return tuple_ ? "TupleValue" : "ArrayValue";
    case Kind::kObject: return "ObjectValue";
    case Kind::kNamespace: return "NamespaceValue";
    case Kind::kFunction: return "FunctionValue";
  }
  return "?";
}

std::string JsNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  if (v == 0) return "0";
  // Shortest round-trip digits, then JavaScript's layout rules (ECMA-262 Number::toString).
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int n = std::stoi(sci.substr(e_pos + 1)) + 1;  // decimal point position
  const int k = static_cast<int>(digits.size());
  std::string out = v < 0 ? "-" : "";
  if (k <= n && n <= 21) {
    out += digits + std::string(n - k, '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, n) + "." + digits.substr(n);
  } else if (-6 < n && n <= 0) {
    out += "0." + std::string(-n, '0') + digits;
  } else {
    out += digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += (n - 1 >= 0 ? "e+" : "e-") + std::to_string(std::abs(n - 1));
  }
  return out;
}

std::string ToOutputString(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "undefined";
    case Value::Kind::kNull: return "null";
    case Value::Kind::kBool: return v.as_bool() ? "true" : "false";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: {
      const double f = v.as_float();
      if (f == 0 && std::signbit(f)) return "-0.0";
      // The oracle prints integral floats with toFixed(1): "2.0", and never in exponent form below 1e21.
      if (std::isfinite(f) && f == std::trunc(f) && std::fabs(f) < 1e21) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1f", f);
        return buf;
      }
      return JsNumber(f);
    }
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray:
    case Value::Kind::kObject:
    case Value::Kind::kNamespace: return ToJson(v, JsonFormat{}, /*undefined_as_null=*/false);
    case Value::Kind::kFunction: return "[function]";
  }
  return "";
}

std::string ToConcatString(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kFloat: return JsNumber(v.as_float());
    case Value::Kind::kArray: {  // Array#toString: the elements' own toString joined by ","
      std::string out;
      const Array& items = v.array();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ',';
        if (!items[i].is_undefined() && !items[i].is_null()) out += ToOutputString(items[i]);
      }
      return out;
    }
    case Value::Kind::kObject:
    case Value::Kind::kNamespace: return "[object Map]";
    default: return ToOutputString(v);
  }
}

std::string ToJson(const Value& v, const JsonFormat& format, bool undefined_as_null, int depth) {
  if (depth > kMaxValueDepth) Fail("value nested too deeply for tojson");
  // Python's json.dumps separators: ", " / ": ", and "," before a newline when indenting.
  const std::string item_sep = format.has_separators ? format.item_separator : format.indent ? "," : ", ";
  const std::string ksep = format.has_separators ? format.key_separator : ": ";
  switch (v.kind()) {
    case Value::Kind::kNull: return "null";
    case Value::Kind::kUndefined: return undefined_as_null ? "null" : "undefined";
    case Value::Kind::kBool: return v.as_bool() ? "true" : "false";
    case Value::Kind::kInt:
    case Value::Kind::kFloat: return JsonNumber(v);
    case Value::Kind::kString: {
      std::string out;
      AppendJsonString(out, v.as_string(), format.ensure_ascii);
      return out;
    }
    case Value::Kind::kFunction: Fail("Cannot convert to JSON: FunctionValue");
    default: break;
  }
  // The oracle has no JSON form for tuples (nor a printed one): it fails, and so do we.
  if (v.is_tuple()) Fail("Cannot convert to JSON: TupleValue");
  const std::string indent_unit(static_cast<size_t>(std::max(format.indent, 0)), ' ');
  std::string base_pad = "\n";
  for (int i = 0; i < depth; ++i) base_pad += indent_unit;
  const std::string child_pad = base_pad + indent_unit;
  std::vector<std::string> parts;
  if (v.is_array()) {
    for (const Value& e : v.array()) parts.push_back(ToJson(e, format, undefined_as_null, depth + 1));
  } else {
    Object entries = v.object();
    if (format.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    for (const auto& [k, e] : entries) {
      std::string part = format.indent ? child_pad : "";
      AppendJsonString(part, k, format.ensure_ascii);
      part += ksep + ToJson(e, format, undefined_as_null, depth + 1);
      parts.push_back(std::move(part));
    }
  }
  const bool pretty = format.indent > 0 && !parts.empty();
  std::string out = v.is_array() ? "[" : "{";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += item_sep;
    if (pretty && v.is_array()) out += child_pad;
    out += parts[i];
  }
  if (pretty) out += base_pad;
  out += v.is_array() ? "]" : "}";
  return out;
}

size_t JsSpaceAt(std::string_view s, size_t i) {
  uint32_t cp;
  const size_t len = DecodeUtf8(s, i, &cp);
  return IsJsSpace(cp) ? len : 0;
}

std::string_view TrimJs(std::string_view s, bool left, bool right) {
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      const size_t len = JsSpaceAt(s, begin);
      if (!len) break;
      begin += len;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;  // back up to the first byte of the last code point
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80 && end - start < 4) --start;
      const size_t len = JsSpaceAt(s.substr(0, end), start);
      if (!len || start + len != end) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

std::vector<std::string_view> SplitCodePoints(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

size_t Utf16Length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    i += DecodeUtf8(s, i, &cp);
    n += cp >= 0x10000 ? 2 : 1;
  }
  return n;
}

}  // namespace edgedecode::chat
