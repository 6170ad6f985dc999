#include "llm/json_constraint.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace edgedecode::llm {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------------------
// The compiled schema: nodes; node 0 is "any value".

namespace {

enum TypeBit : uint8_t { kNull = 1, kBool = 2, kInt = 4, kNum = 8, kStr = 16, kArr = 32, kObj = 64, kAllTypes = 127 };
constexpr int kNone = -1;  // additionalProperties false

struct Node {
  uint8_t types = kAllTypes;
  bool has_literals = false;
  std::vector<std::string> literals;  // enum / const, compact JSON text
  std::vector<std::pair<std::string, int>> props;  // name as it appears between the quotes, node
  uint64_t required = 0;  // bits of props
  int additional = 0;     // node of undeclared properties' values, or kNone
  int items = 0;
  std::vector<int> any_of;  // not empty: this node is the union of these
  int ref = -1;             // >= 0: this node is that node ($ref)
  std::vector<int> alts;    // the concrete nodes (no anyOf, no $ref) a value of this node may be
};

// Literal candidates are sorted (byte order): those sharing a prefix are one range.
const std::vector<std::string> kBoolLiterals = {"false", "true"};
const std::vector<std::string> kNullLiterals = {"null"};

}  // namespace

struct JsonGrammar {
  std::vector<Node> nodes;
  int root = 0;
};

namespace {

bool IsAnnotation(const std::string& k) {
  static const std::set<std::string> kAnnotations = {"title", "description", "$comment", "$schema", "$id", "examples", "default"};
  return kAnnotations.count(k) > 0;
}

uint8_t TypeOf(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return kNull;
    case json::value_t::boolean: return kBool;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return kInt | kNum;
    case json::value_t::number_float: return kNum;
    case json::value_t::string: return kStr;
    case json::value_t::array: return kArr;
    default: return kObj;
  }
}

std::string PointerEscape(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return o;
}

class Compiler {
 public:
  explicit Compiler(const json& root) : root_(root) { g_.nodes.emplace_back(); }  // node 0: any value

  Result<std::shared_ptr<const JsonGrammar>> Run() {
    auto r = Compile(root_, "", 0);
    if (!r.ok()) return r.status();
    g_.root = *r;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      std::vector<int> alts;
      if (Status st = Flatten(static_cast<int>(i), 0, &alts); !st.ok()) return st;
      std::sort(alts.begin(), alts.end());
      alts.erase(std::unique(alts.begin(), alts.end()), alts.end());
      g_.nodes[i].alts = std::move(alts);
    }
    return std::make_shared<const JsonGrammar>(std::move(g_));
  }

 private:
  static Status Bad(const std::string& where, const std::string& what) {
    return InvalidArgument("schema" + (where.empty() ? std::string() : " at " + where) + ": " + what);
  }

  Result<int> NewNode(const std::string& where) {
    if (static_cast<int>(g_.nodes.size()) >= kMaxSchemaNodes)
      return Bad(where, "more than " + std::to_string(kMaxSchemaNodes) + " schema objects");
    g_.nodes.emplace_back();
    return static_cast<int>(g_.nodes.size()) - 1;
  }

  // The concrete nodes behind anyOf and $ref (a cycle of $ref or anyOf alone is refused).
  Status Flatten(int id, int hops, std::vector<int>* out) const {
    if (hops > kMaxSchemaDepth) return Bad("", "$ref / anyOf chain deeper than " + std::to_string(kMaxSchemaDepth) + " (a cycle?)");
    const Node& n = g_.nodes[static_cast<size_t>(id)];
    if (n.ref >= 0) return Flatten(n.ref, hops + 1, out);
    if (n.any_of.empty()) {
      out->push_back(id);
      return Status::Ok();
    }
    for (int a : n.any_of)
      if (Status st = Flatten(a, hops + 1, out); !st.ok()) return st;
    if (out->size() > kMaxParses) return Bad("", "anyOf with more than " + std::to_string(kMaxParses) + " alternatives");
    return Status::Ok();
  }

  Result<int> Ref(const std::string& ref, const std::string& where, int depth) {
    if (auto it = refs_.find(ref); it != refs_.end()) return it->second;
    if (ref.empty() || ref[0] != '#') return Bad(where, "$ref '" + ref + "': only local references (#/$defs/NAME) are supported");
    json::json_pointer ptr;
    try {
      ptr = json::json_pointer(ref.substr(1));
    } catch (const json::exception&) {
      return Bad(where, "$ref '" + ref + "' is not a JSON pointer");
    }
    if (!root_.contains(ptr)) return Bad(where, "$ref '" + ref + "' points at nothing");
    auto id = NewNode(where);
    if (!id.ok()) return id;
    refs_[ref] = *id;  // before compiling the target: a recursive reference finds it
    auto target = Compile(root_.at(ptr), ref.substr(1), depth + 1);  // references count toward the depth
    if (!target.ok()) return target;
    g_.nodes[static_cast<size_t>(*id)].ref = *target;
    return *id;
  }

  Status Types(const json& t, const std::string& where, Node* n) {
    static const std::map<std::string, uint8_t> kTypes = {{"null", kNull}, {"boolean", kBool}, {"integer", kInt},
                                                          {"number", kNum | kInt}, {"string", kStr}, {"array", kArr},
                                                          {"object", kObj}};
    n->types = 0;
    for (const json& x : t.is_array() ? t : json::array({t})) {
      if (!x.is_string() || kTypes.count(x.get<std::string>()) == 0)
        return Bad(where + "/type", "must be one of object, array, string, number, integer, boolean, null (or an array of them)");
      n->types |= kTypes.at(x.get<std::string>());
    }
    if (n->types == 0) return Bad(where + "/type", "is an empty array");
    return Status::Ok();
  }

  Status Literals(const json& s, const std::string& where, Node* n) {
    if (s.contains("enum") && s.contains("const")) return Bad(where, "enum and const together are not supported");
    const bool is_enum = s.contains("enum");
    const json values = is_enum ? s["enum"] : json::array({s["const"]});
    if (!values.is_array()) return Bad(where + "/enum", "must be an array");
    n->has_literals = true;
    for (const json& v : values)
      if ((TypeOf(v) & n->types) != 0) n->literals.push_back(v.dump());
    if (n->literals.empty()) return Bad(where + (is_enum ? "/enum" : "/const"), "no value of the allowed types");
    std::sort(n->literals.begin(), n->literals.end());
    n->literals.erase(std::unique(n->literals.begin(), n->literals.end()), n->literals.end());
    n->types = kAllTypes;  // the literals decide
    return Status::Ok();
  }

  Status Properties(const json& s, const std::string& where, int id) {
    const json& props = s.value("properties", json::object());
    if (!props.is_object()) return Bad(where + "/properties", "must be an object");
    if (props.size() > static_cast<size_t>(kMaxSchemaProperties))
      return Bad(where + "/properties", "more than " + std::to_string(kMaxSchemaProperties) + " properties");
    for (const auto& [name, sub] : props.items()) {
      if (name.size() > kMaxNameBytes)
        return Bad(where + "/properties", "a property name longer than " + std::to_string(kMaxNameBytes) + " bytes");
      auto c = Compile(sub, where + "/properties/" + PointerEscape(name), depth_ + 1);
      if (!c.ok()) return c.status();
      const std::string quoted = json(name).dump();
      g_.nodes[static_cast<size_t>(id)].props.push_back({quoted.substr(1, quoted.size() - 2), *c});
    }
    if (s.contains("required")) {
      if (!s["required"].is_array()) return Bad(where + "/required", "must be an array of property names");
      for (const json& r : s["required"]) {
        const std::string name = r.is_string() ? r.get<std::string>() : std::string();
        if (!r.is_string() || !props.contains(name))
          return Bad(where + "/required", "names " + r.dump() + ", which is not in properties (not supported)");
        const size_t i = static_cast<size_t>(std::distance(props.begin(), props.find(name)));
        g_.nodes[static_cast<size_t>(id)].required |= uint64_t{1} << i;
      }
    }
    if (s.contains("additionalProperties")) {
      const json& a = s["additionalProperties"];
      int add = 0;
      if (a.is_boolean()) {
        add = a.get<bool>() ? 0 : kNone;
      } else {
        auto c = Compile(a, where + "/additionalProperties", depth_ + 1);
        if (!c.ok()) return c.status();
        add = *c;
      }
      g_.nodes[static_cast<size_t>(id)].additional = add;
    }
    return Status::Ok();
  }

  Result<int> Compile(const json& s, const std::string& where, int depth) {
    if (depth > kMaxSchemaDepth) return Bad(where, "nested deeper than " + std::to_string(kMaxSchemaDepth));
    if (s.is_boolean()) {
      if (s.get<bool>()) return 0;
      return Bad(where, "the schema false (nothing validates) is not supported");
    }
    if (!s.is_object()) return Bad(where, "a schema must be an object");
    static const std::set<std::string> kKeywords = {"type", "properties", "required", "additionalProperties", "items", "enum",
                                                    "const", "anyOf", "$ref", "$defs", "definitions"};
    for (const auto& [k, v] : s.items())
      if (!kKeywords.count(k) && !IsAnnotation(k)) return Bad(where, "unsupported keyword '" + k + "'");
    for (const char* k : {"$defs", "definitions"})
      if (s.contains(k) && !s[k].is_object()) return Bad(where + "/" + k, "must be an object");
    const bool has_ref = s.contains("$ref"), has_any = s.contains("anyOf");
    if (has_ref || has_any) {
      for (const auto& [k, v] : s.items())
        if (k != "$ref" && k != "anyOf" && k != "$defs" && k != "definitions" && !IsAnnotation(k))
          return Bad(where, "'" + k + "' beside " + (has_ref ? "$ref" : "anyOf") + " is not supported");
      if (has_ref && has_any) return Bad(where, "$ref beside anyOf is not supported");
    }
    if (has_ref) {
      if (!s["$ref"].is_string()) return Bad(where + "/$ref", "must be a string");
      return Ref(s["$ref"].get<std::string>(), where + "/$ref", depth);
    }
    auto id = NewNode(where);
    if (!id.ok()) return id;
    const int saved = depth_;
    depth_ = depth;
    Status st = Fill(s, where, *id);
    depth_ = saved;
    if (!st.ok()) return st;
    return *id;
  }

  Status Fill(const json& s, const std::string& where, int id) {
    if (s.contains("anyOf")) {
      const json& a = s["anyOf"];
      if (!a.is_array() || a.empty()) return Bad(where + "/anyOf", "must be a non-empty array of schemas");
      for (size_t i = 0; i < a.size(); ++i) {
        auto c = Compile(a[i], where + "/anyOf/" + std::to_string(i), depth_ + 1);
        if (!c.ok()) return c.status();
        g_.nodes[static_cast<size_t>(id)].any_of.push_back(*c);
      }
      return Status::Ok();
    }
    Node n;
    if (s.contains("type"))
      if (Status st = Types(s["type"], where, &n); !st.ok()) return st;
    if (s.contains("enum") || s.contains("const"))
      if (Status st = Literals(s, where, &n); !st.ok()) return st;
    g_.nodes[static_cast<size_t>(id)] = std::move(n);
    if (Status st = Properties(s, where, id); !st.ok()) return st;
    if (s.contains("items")) {
      if (!s["items"].is_object() && !s["items"].is_boolean())
        return Bad(where + "/items", "must be one schema (tuple items are not supported)");
      auto c = Compile(s["items"], where + "/items", depth_ + 1);
      if (!c.ok()) return c.status();
      g_.nodes[static_cast<size_t>(id)].items = *c;
    }
    return Status::Ok();
  }

  const json& root_;
  JsonGrammar g_;
  std::map<std::string, int> refs_;
  int depth_ = 0;
};

}  // namespace

Result<std::shared_ptr<const JsonGrammar>> CompileJsonSchema(std::string_view schema_json) {
  const json s = json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (s.is_discarded()) return InvalidArgument("schema: not valid JSON");
  return Compiler(s).Run();
}

std::shared_ptr<const JsonGrammar> AnyJsonObjectGrammar() {
  auto g = std::make_shared<JsonGrammar>();
  g->nodes.resize(2);
  g->nodes[0].alts = {0};
  g->nodes[1].types = kObj;
  g->nodes[1].alts = {1};
  g->root = 1;
  return g;
}

// ---------------------------------------------------------------------------------------------------------
// The matcher: each parse is a stack of frames; a byte maps a parse to zero, one or (anyOf) several.

namespace {

enum class Kind : uint8_t { kValue, kObject, kKey, kArray, kString, kNumber, kLiteral };
enum Phase : uint8_t { kOpen, kAfterKey, kAfterValue, kNeedKey };

struct Frame {
  Kind kind = Kind::kValue;
  uint8_t phase = 0;
  uint8_t utf8_need = 0, utf8_lead = 0;  // a UTF-8 sequence in progress (strings, keys)
  bool int_only = false;
  int32_t node = 0;     // the schema node (Object: the object's; Key: the object's)
  int32_t pending = -1;  // Object: the node of the value after the key just read
  uint32_t count = 0;    // Number: bytes so far
  uint64_t seen = 0;     // Object: declared properties present
  const std::vector<std::string>* lits = nullptr;  // Literal: the sorted candidates
  uint32_t lo = 0, hi = 0;  // Literal: the candidates that begin with the `count` bytes read
  std::string buf;       // Key: bytes so far
  bool operator==(const Frame& o) const {
    return kind == o.kind && phase == o.phase && utf8_need == o.utf8_need && utf8_lead == o.utf8_lead &&
           int_only == o.int_only && node == o.node && pending == o.pending && count == o.count && seen == o.seen &&
           lits == o.lits && lo == o.lo && hi == o.hi && buf == o.buf;
  }
};

bool IsWs(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }
bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool IsHex(uint8_t b) { return IsDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

// One byte of UTF-8 inside a string: well-formed sequences only (no overlongs, surrogates, > U+10FFFF).
bool Utf8Byte(Frame& f, uint8_t b) {
  if (f.utf8_need > 0) {
    uint8_t lo = 0x80, hi = 0xBF;
    if (f.utf8_lead != 0) {  // the second byte of a sequence whose lead restricts it
      if (f.utf8_lead == 0xE0) lo = 0xA0;
      if (f.utf8_lead == 0xED) hi = 0x9F;
      if (f.utf8_lead == 0xF0) lo = 0x90;
      if (f.utf8_lead == 0xF4) hi = 0x8F;
    }
    if (b < lo || b > hi) return false;
    --f.utf8_need;
    f.utf8_lead = 0;
    return true;
  }
  if (b < 0x80) return b >= 0x20;
  if (b >= 0xC2 && b <= 0xDF) f.utf8_need = 1;
  else if (b >= 0xE0 && b <= 0xEF) f.utf8_need = 2;
  else if (b >= 0xF0 && b <= 0xF4) f.utf8_need = 3;
  else return false;
  f.utf8_lead = b;
  return true;
}

// A string's content byte (after the opening quote): escapes, UTF-8. phase: 0 plain, 1 after '\\',
// 2..5 the hex digits of \\u.
bool StringByte(Frame& f, uint8_t b) {
  if (f.phase == 1) {
    if (b == 'u') return f.phase = 2, true;
    if (std::string_view("\"\\/bfnrt").find(static_cast<char>(b)) == std::string_view::npos) return false;
    return f.phase = 0, true;
  }
  if (f.phase >= 2) {
    if (!IsHex(b)) return false;
    f.phase = f.phase == 5 ? 0 : f.phase + 1;
    return true;
  }
  if (b == '\\' && f.utf8_need == 0) return f.phase = 1, true;
  return Utf8Byte(f, b);
}

// A number byte. phase: 0 start, 1 '-', 2 a leading 0, 3 integer digits, 4 '.', 5 fraction digits, 6 'e',
// 7 exponent sign, 8 exponent digits.
bool NumberByte(Frame& f, uint8_t b) {
  if (static_cast<int>(f.count) >= kMaxNumberBytes) return false;
  uint8_t next = 255;
  const bool e = b == 'e' || b == 'E';
  switch (f.phase) {
    case 0: next = b == '-' ? 1 : b == '0' ? 2 : IsDigit(b) ? 3 : 255; break;
    case 1: next = b == '0' ? 2 : IsDigit(b) ? 3 : 255; break;
    case 2: next = f.int_only ? 255 : b == '.' ? 4 : e ? 6 : 255; break;
    case 3: next = IsDigit(b) ? 3 : f.int_only ? 255 : b == '.' ? 4 : e ? 6 : 255; break;
    case 4: next = IsDigit(b) ? 5 : 255; break;
    case 5: next = IsDigit(b) ? 5 : e && !f.int_only ? 6 : 255; break;
    case 6: next = b == '+' || b == '-' ? 7 : IsDigit(b) ? 8 : 255; break;
    case 7:
    case 8: next = IsDigit(b) ? 8 : 255; break;
  }
  if (next == 255) return false;
  f.phase = next;
  ++f.count;
  return true;
}

bool NumberDone(const Frame& f) { return f.phase == 2 || f.phase == 3 || f.phase == 5 || f.phase == 8; }

// The candidates in [lo, hi) share their first `count` bytes; a complete one sorts first.
bool LiteralDone(const Frame& f) { return f.lo < f.hi && (*f.lits)[f.lo].size() == f.count; }

// Narrows a literal's candidates to those whose next byte is b (a range again: they are sorted).
bool LiteralByte(Frame& f, uint8_t b) {
  const std::vector<std::string>& v = *f.lits;
  const size_t at = f.count;
  auto key = [at](const std::string& s) { return s.size() > at ? static_cast<int>(static_cast<uint8_t>(s[at])) : -1; };
  const auto first = v.begin() + f.lo, last = v.begin() + f.hi;
  const auto lo = std::lower_bound(first, last, static_cast<int>(b), [&](const std::string& s, int x) { return key(s) < x; });
  const auto hi = std::upper_bound(lo, last, static_cast<int>(b), [&](int x, const std::string& s) { return x < key(s); });
  if (lo == hi) return false;
  f.lo = static_cast<uint32_t>(lo - v.begin());
  f.hi = static_cast<uint32_t>(hi - v.begin());
  ++f.count;
  return true;
}

}  // namespace

struct JsonMatcher::State {
  std::vector<Frame> stack;  // empty: the value is complete
  uint16_t ws = 0;           // whitespace bytes in a row
  uint8_t depth = 0;         // objects and arrays open
  bool operator==(const State& o) const { return ws == o.ws && depth == o.depth && stack == o.stack; }
};

namespace {

using State = JsonMatcher::State;

class Stepper {
 public:
  explicit Stepper(const JsonGrammar& g) : g_(g) {}

  // The parses `st` becomes after byte b, appended to *out.
  void Feed(State st, uint8_t b, std::vector<State>* out) const {
    for (;;) {
      if (st.stack.empty()) return;  // nothing may follow a complete value
      Frame& f = st.stack.back();
      if (IsWs(b) && f.kind != Kind::kString && f.kind != Kind::kKey && f.kind != Kind::kNumber && f.kind != Kind::kLiteral) {
        if (++st.ws > kMaxWhitespaceRun) return;
        out->push_back(std::move(st));
        return;
      }
      switch (f.kind) {
        case Kind::kValue: return ValueStart(std::move(st), b, out);
        case Kind::kObject: return ObjectByte(std::move(st), b, out);
        case Kind::kKey: return KeyByte(std::move(st), b, out);
        case Kind::kArray: return ArrayByte(std::move(st), b, out);
        case Kind::kString:
          if (f.phase == 0 && f.utf8_need == 0 && b == '"') st.stack.pop_back();
          else if (!StringByte(f, b)) return;
          return Accept(std::move(st), out);
        case Kind::kNumber:
          if (NumberByte(f, b)) return Accept(std::move(st), out);
          if (!NumberDone(f)) return;
          st.stack.pop_back();  // the byte ends the number: the container reads it
          continue;
        case Kind::kLiteral:
          if (LiteralByte(f, b)) return Accept(std::move(st), out);
          if (!LiteralDone(f)) return;
          st.stack.pop_back();
          continue;
      }
    }
  }

  // The parses of a value of `node` about to start (one per anyOf alternative).
  void Expect(const State& st, int node, std::vector<State>* out) const {
    for (int alt : g_.nodes[static_cast<size_t>(node)].alts) {
      State s = st;
      Frame f;
      f.kind = Kind::kValue;
      f.node = alt;
      s.stack.push_back(std::move(f));
      out->push_back(std::move(s));
    }
  }

  bool Complete(const State& st) const {
    if (st.stack.empty()) return true;
    if (st.stack.size() != 1) return false;
    const Frame& f = st.stack.back();
    return (f.kind == Kind::kNumber && NumberDone(f)) || (f.kind == Kind::kLiteral && LiteralDone(f));
  }

 private:
  static void Accept(State st, std::vector<State>* out) {
    st.ws = 0;
    out->push_back(std::move(st));
  }

  void ValueStart(State st, uint8_t b, std::vector<State>* out) const {
    const Node& n = g_.nodes[static_cast<size_t>(st.stack.back().node)];
    st.stack.pop_back();
    Frame f;
    if (n.has_literals || ((b == 't' || b == 'f') && (n.types & kBool)) || (b == 'n' && (n.types & kNull))) {
      f.kind = Kind::kLiteral;
      f.lits = n.has_literals ? &n.literals : b == 'n' ? &kNullLiterals : &kBoolLiterals;
      f.hi = static_cast<uint32_t>(f.lits->size());
      if (!LiteralByte(f, b)) return;
    } else if (b == '{' && (n.types & kObj)) {
      if (st.depth >= kMaxOutputDepth) return;
      ++st.depth;
      f.kind = Kind::kObject;
      f.phase = kOpen;
    } else if (b == '[' && (n.types & kArr)) {
      if (st.depth >= kMaxOutputDepth) return;
      ++st.depth;
      f.kind = Kind::kArray;
      f.phase = kOpen;
    } else if (b == '"' && (n.types & kStr)) {
      f.kind = Kind::kString;
    } else if ((b == '-' || IsDigit(b)) && (n.types & (kInt | kNum))) {
      f.kind = Kind::kNumber;
      f.int_only = (n.types & kNum) == 0;
      if (!NumberByte(f, b)) return;
    } else {
      return;
    }
    f.node = static_cast<int32_t>(&n - g_.nodes.data());
    st.stack.push_back(std::move(f));
    Accept(std::move(st), out);
  }

  bool RequiredSeen(const Frame& f) const {
    const uint64_t req = g_.nodes[static_cast<size_t>(f.node)].required;
    return (f.seen & req) == req;
  }

  // Whether another key may come: an undeclared one, or a declared property not yet present.
  bool MoreKeys(const Frame& f) const {
    const Node& n = g_.nodes[static_cast<size_t>(f.node)];
    return n.additional != kNone || f.seen != (n.props.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << n.props.size()) - 1);
  }

  void Close(State st, std::vector<State>* out) const {
    st.stack.pop_back();
    --st.depth;
    Accept(std::move(st), out);
  }

  void ObjectByte(State st, uint8_t b, std::vector<State>* out) const {
    Frame& f = st.stack.back();
    if ((f.phase == kOpen || f.phase == kNeedKey) && b == '"' && MoreKeys(f)) {
      Frame k;
      k.kind = Kind::kKey;
      k.node = f.node;
      st.stack.push_back(std::move(k));
      return Accept(std::move(st), out);
    }
    if ((f.phase == kOpen || f.phase == kAfterValue) && b == '}') {
      if (RequiredSeen(f)) Close(std::move(st), out);
      return;
    }
    if (f.phase == kAfterValue && b == ',') {
      if (!MoreKeys(f)) return;  // a comma that no key could follow
      f.phase = kNeedKey;
      return Accept(std::move(st), out);
    }
    if (f.phase == kAfterKey && b == ':') {
      f.phase = kAfterValue;  // once the value is read
      const int value = f.pending;
      st.ws = 0;
      Expect(st, value, out);
    }
  }

  void KeyByte(State st, uint8_t b, std::vector<State>* out) const {
    Frame& k = st.stack.back();
    Frame& obj = st.stack[st.stack.size() - 2];
    const Node& n = g_.nodes[static_cast<size_t>(k.node)];
    k.buf.push_back(static_cast<char>(b));
    bool declared = false;  // the key so far begins a declared property not yet present
    for (size_t i = 0; i < n.props.size() && !declared; ++i)
      declared = !(obj.seen >> i & 1) && n.props[i].first.compare(0, k.buf.size(), k.buf) == 0;
    if (declared) {
      Frame probe = k;  // keep the UTF-8 state consistent for the free-key check
      Utf8Byte(probe, b);
      k.utf8_need = probe.utf8_need, k.utf8_lead = probe.utf8_lead;
      return Accept(std::move(st), out);
    }
    const bool free_ok = n.additional != kNone && b != '\\' && b != '"' &&
                         static_cast<int>(k.buf.size()) <= kMaxFreeKeyBytes && Utf8Byte(k, b);
    if (free_ok) return Accept(std::move(st), out);
    k.buf.pop_back();
    if (b != '"' || k.utf8_need != 0) return;
    int value = kNone;
    for (size_t i = 0; i < n.props.size(); ++i) {
      if (n.props[i].first != k.buf) continue;
      if (obj.seen >> i & 1) return;  // a duplicate key
      obj.seen |= uint64_t{1} << i;
      value = n.props[i].second;
    }
    if (value == kNone) value = n.additional;
    if (value == kNone) return;
    obj.pending = value;
    obj.phase = kAfterKey;
    st.stack.pop_back();
    Accept(std::move(st), out);
  }

  void ArrayByte(State st, uint8_t b, std::vector<State>* out) const {
    Frame& f = st.stack.back();
    if ((f.phase == kOpen || f.phase == kAfterValue) && b == ']') return Close(std::move(st), out);
    if (f.phase == kAfterValue && b == ',') {
      const int items = g_.nodes[static_cast<size_t>(f.node)].items;
      st.ws = 0;
      return Expect(st, items, out);
    }
    if (f.phase != kOpen) return;
    f.phase = kAfterValue;
    std::vector<State> starts;
    Expect(st, g_.nodes[static_cast<size_t>(f.node)].items, &starts);
    for (State& s : starts) Feed(std::move(s), b, out);
  }

  const JsonGrammar& g_;
};

// Feeds one byte to every parse; identical parses merge, at most kMaxParses are kept.
void FeedAll(const Stepper& stepper, const std::vector<State>& in, uint8_t b, std::vector<State>* out) {
  out->clear();
  for (const State& s : in) {
    const size_t before = out->size();
    stepper.Feed(s, b, out);
    for (size_t i = before; i < out->size();) {
      if (std::find(out->begin(), out->begin() + static_cast<std::ptrdiff_t>(i), (*out)[i]) != out->begin() + static_cast<std::ptrdiff_t>(i))
        out->erase(out->begin() + static_cast<std::ptrdiff_t>(i));
      else
        ++i;
    }
  }
  if (out->size() > kMaxParses) out->resize(kMaxParses);
}

}  // namespace

TokenBytes::TokenBytes(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
  for (size_t i = 0; i < pieces_.size(); ++i)
    if (!pieces_[i].empty()) order_.push_back(static_cast<int32_t>(i));
  std::sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
  });
  lcp_.assign(order_.size(), 0);
  for (size_t i = 1; i < order_.size(); ++i) {
    const std::string& a = pieces_[static_cast<size_t>(order_[i - 1])];
    const std::string& b = pieces_[static_cast<size_t>(order_[i])];
    uint32_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    lcp_[i] = n;
  }
  plain_.assign(pieces_.size(), 0);
  for (size_t i = 0; i < pieces_.size(); ++i) {
    Frame f;
    f.kind = Kind::kString;
    bool ok = !pieces_[i].empty();
    for (char c : pieces_[i]) ok = ok && c != '"' && c != '\\' && Utf8Byte(f, static_cast<uint8_t>(c));
    plain_[i] = ok && f.utf8_need == 0;
  }
}

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonGrammar> g) : g_(std::move(g)) {
  Stepper(*g_).Expect(State{}, g_->root, &states_);
}
JsonMatcher::~JsonMatcher() = default;
JsonMatcher::JsonMatcher(const JsonMatcher&) = default;
JsonMatcher& JsonMatcher::operator=(const JsonMatcher&) = default;
JsonMatcher::JsonMatcher(JsonMatcher&&) noexcept = default;
JsonMatcher& JsonMatcher::operator=(JsonMatcher&&) noexcept = default;

bool JsonMatcher::Advance(std::string_view bytes) {
  const Stepper stepper(*g_);
  std::vector<State> cur = states_, next;
  for (char c : bytes) {
    FeedAll(stepper, cur, static_cast<uint8_t>(c), &next);
    if (next.empty()) return false;
    cur.swap(next);
  }
  states_ = std::move(cur);
  return true;
}

bool JsonMatcher::Complete() const {
  const Stepper stepper(*g_);
  return std::any_of(states_.begin(), states_.end(), [&](const State& s) { return stepper.Complete(s); });
}

void JsonMatcher::AllowedTokens(const TokenBytes& vocab, std::vector<uint8_t>* allowed) const {
  allowed->assign(vocab.pieces_.size(), 0);
  const Stepper stepper(*g_);
  // Tokens in byte order: levels[d] holds the parses after the first d bytes of the current token, shared
  // with the next token as far as their common prefix; a prefix that died rules out every token under it.
  std::vector<std::vector<State>> levels(1, states_);  // a pool: levels past `top` keep their capacity
  size_t top = 0;  // levels[0..top] are valid for the last token walked
  size_t dead_at = SIZE_MAX;
  // Inside a string every parse stays as it is through plain string bytes: those tokens need no walk.
  const bool in_string = std::all_of(states_.begin(), states_.end(), [](const State& st) {
    const Frame& f = st.stack.empty() ? Frame{} : st.stack.back();
    return !st.stack.empty() && f.kind == Kind::kString && f.phase == 0 && f.utf8_need == 0;
  });
  size_t shared = 0;  // bytes the current token shares with the last token walked
  for (size_t k = 0; k < vocab.order_.size(); ++k) {
    const int32_t id = vocab.order_[k];
    const std::string& p = vocab.pieces_[static_cast<size_t>(id)];
    shared = std::min(shared, static_cast<size_t>(vocab.lcp_[k]));
    if (in_string && vocab.plain_[static_cast<size_t>(id)]) {
      (*allowed)[static_cast<size_t>(id)] = 1;
      continue;
    }
    const size_t common = shared;
    shared = SIZE_MAX;
    if (dead_at <= common) continue;
    dead_at = SIZE_MAX;
    top = std::min(top, common);
    for (size_t d = top; d < p.size(); ++d) {
      if (levels.size() <= d + 1) levels.resize(d + 2);
      FeedAll(stepper, levels[d], static_cast<uint8_t>(p[d]), &levels[d + 1]);
      if (levels[d + 1].empty()) {
        dead_at = d + 1;
        break;
      }
      top = d + 1;
    }
    if (dead_at == SIZE_MAX) (*allowed)[static_cast<size_t>(id)] = 1;
  }
}

}  // namespace edgedecode::llm
