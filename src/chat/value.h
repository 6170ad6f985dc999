// The runtime values of the template engine, modelled on @huggingface/jinja's (the oracle this engine is
// proven against): undefined, none, booleans, integers, floats, strings, arrays (and tuples), objects
// (insertion-ordered maps), namespaces and callables. Arrays, objects and namespaces are shared by
// reference, as in the oracle, so that `ns.x = ...` through any alias is seen everywhere.
// Internal to src/chat; not thread-safe (one render owns its values).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgedecode::chat {

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion order; small, searched linearly

// The arguments of a call: positional ones, then keyword ones (name = value) in call order.
struct CallArgs {
  std::vector<Value> positional;
  Object keyword;
  const Value* Keyword(std::string_view name) const;
  // The i-th positional argument, else the keyword `name`, else nullptr.
  const Value* Get(size_t i, std::string_view name) const;
};

using Function = std::function<Value(CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNull, kBool, kInt, kFloat, kString, kArray, kObject, kNamespace, kFunction };

  Value() = default;  // undefined
  static Value Null() { Value v; v.kind_ = Kind::kNull; return v; }
  static Value Bool(bool b) { Value v; v.kind_ = Kind::kBool; v.int_ = b; return v; }
  static Value Int(int64_t i) { Value v; v.kind_ = Kind::kInt; v.int_ = i; return v; }
  static Value Float(double f) { Value v; v.kind_ = Kind::kFloat; v.float_ = f; return v; }
  static Value String(std::string s);
  static Value MakeArray(Array items = {}, bool tuple = false);
  static Value MakeObject(Object entries = {});
  static Value MakeNamespace(Object entries = {});
  static Value MakeFunction(Function fn);
  static Value FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_tuple() const { return kind_ == Kind::kArray && tuple_; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_mapping_like() const { return kind_ == Kind::kObject || kind_ == Kind::kNamespace; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_float() const { return float_; }
  double as_number() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return *string_; }
  Array& array() const { return *array_; }
  Object& object() const { return *object_; }  // objects and namespaces
  const Function& function() const { return *function_; }

  // Entry of an object/namespace, or nullptr.
  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value v) const;  // objects and namespaces: replaces or appends

  // Same underlying array/object/namespace/function (JS reference equality).
  bool SameReference(const Value& other) const;

  // Python/Jinja truthiness as the oracle has it (empty array/object false, namespace always true).
  bool Truthy() const;
  // The oracle's type name for error messages: "UndefinedValue", "StringValue", ...
  const char* TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<Array> array_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<Function> function_;
};

// A render-time error (the message is what the user sees). Thrown inside src/chat only: the public
// entry points catch it and return a Status, so no exception crosses the library boundary.
struct TemplateError {
  std::string message;
};
[[noreturn]] void Fail(std::string message);

// Text forms, each as the oracle produces it:
std::string JsNumber(double v);           // JavaScript Number#toString (shortest round trip)
std::string ToOutputString(const Value&); // what {{ v }} prints (floats keep ".0", arrays as JSON)
std::string ToConcatString(const Value&); // what `~` and string `+` use (JS value.toString())

struct JsonFormat {
  int indent = 0;  // 0 = single line
  bool ensure_ascii = false;
  bool sort_keys = false;
  bool has_separators = false;
  std::string item_separator, key_separator;
};
// tojson; undefined_as_null=false prints undefined as `undefined` (how arrays print in output).
std::string ToJson(const Value& v, const JsonFormat& format, bool undefined_as_null = true, int depth = 0);

// JavaScript's String#trim family (its whitespace set, which includes Unicode spaces).
std::string_view TrimJs(std::string_view s, bool left, bool right);
// Byte length of the JS whitespace character at s[i], or 0.
size_t JsSpaceAt(std::string_view s, size_t i);

// UTF-8 helpers: code point boundaries (malformed bytes count as one code point each).
std::vector<std::string_view> SplitCodePoints(std::string_view s);
size_t Utf16Length(std::string_view s);  // JS String#length

}  // namespace edgedecode::chat
