// Statements, scopes, macros and operators. Filters, tests and methods are in filters.cc / methods.cc.
#include "chat/interpreter.h"

#include "chat/lexer.h"

#include <cmath>
#include <cstdint>
#include <optional>

namespace edgedecode::chat {
namespace {

const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                         "July",    "August",   "September", "October", "November", "December"};

std::string Pad2(int n) {
  std::string s = std::to_string(n);
  if (n >= 0 && n < 10) s.insert(s.begin(), '0');
  return s;
}

// The oracle's strftime: only %Y %m %d %b %B %H %M %% are converted; anything else stays as written.
std::string Strftime(const std::tm& t, const std::string& format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 == format.size()) { out += format[i]; continue; }
    const int month = t.tm_mon >= 0 && t.tm_mon < 12 ? t.tm_mon : 0;
    switch (format[i + 1]) {
      case 'Y': out += std::to_string(t.tm_year + 1900); break;
      case 'm': out += Pad2(t.tm_mon + 1); break;
      case 'd': out += Pad2(t.tm_mday); break;
      case 'b': out += std::string(kMonths[month]).substr(0, 3); break;
      case 'B': out += kMonths[month]; break;
      case 'H': out += Pad2(t.tm_hour); break;
      case 'M': out += Pad2(t.tm_min); break;
      case '%': out += '%'; break;
      default: out += format.substr(i, 2);
    }
    ++i;
  }
  return out;
}

void FindSpecialNames(const Node& n, SpecialNames* found) {
  if (n.kind == NodeKind::kIdentifier) {
    if (n.name == "caller") found->caller = true;
    if (n.name == "kwargs") found->kwargs = true;
    if (n.name == "varargs") found->varargs = true;
  }
  for (const NodePtr* child : {&n.a, &n.b, &n.c}) {
    if (*child) FindSpecialNames(**child, found);
  }
  for (const auto* list : {&n.list, &n.body, &n.alternate}) {
    for (const auto& child : *list) FindSpecialNames(*child, found);
  }
}
bool CheckedAdd(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }
bool CheckedSub(int64_t a, int64_t b, int64_t* r) { return !__builtin_sub_overflow(a, b, r); }
bool CheckedMul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

std::optional<Value> IntArithmetic(const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  bool ok = true;
  if (op == "+") ok = CheckedAdd(a, b, &r);
  else if (op == "-") ok = CheckedSub(a, b, &r);
  else if (op == "*") ok = CheckedMul(a, b, &r);
  else if (op == "/") return Value::Float(static_cast<double>(a) / static_cast<double>(b));
  else if (op == "//" || op == "%") {
    if (b == 0) {  // JavaScript arithmetic, as the oracle: Infinity / NaN rather than an error
      if (op == "%" || a == 0) return Value::Float(NAN);
      return Value::Float(a > 0 ? INFINITY : -INFINITY);
    }
    if (b == -1) return op == "%" ? Value::Int(0) : (a == INT64_MIN ? Value::Float(-static_cast<double>(a)) : Value::Int(-a));
    if (op == "%") return Value::Int(a % b);  // JavaScript's remainder: the sign of the dividend
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) --q;  // floor, as Python
    return Value::Int(q);
  } else if (op == "<") return Value::Bool(a < b);
  else if (op == ">") return Value::Bool(a > b);
  else if (op == "<=") return Value::Bool(a <= b);
  else if (op == ">=") return Value::Bool(a >= b);
  else return std::nullopt;
  if (!ok) Fail("integer overflow in '" + op + "'");
  return Value::Int(r);
}

std::optional<Value> FloatArithmetic(const std::string& op, double a, double b) {
  if (op == "+") return Value::Float(a + b);
  if (op == "-") return Value::Float(a - b);
  if (op == "*") return Value::Float(a * b);
  if (op == "/") return Value::Float(a / b);
  if (op == "//") return Value::Float(std::floor(a / b));
  if (op == "%") return Value::Float(std::fmod(a, b));
  if (op == "<") return Value::Bool(a < b);
  if (op == ">") return Value::Bool(a > b);
  if (op == "<=") return Value::Bool(a <= b);
  if (op == ">=") return Value::Bool(a >= b);
  return std::nullopt;
}

double NumericLike(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_number(); }
bool IsNumericLike(const Value& v) { return v.is_number() || v.is_bool(); }

}  // namespace

Interpreter::~Interpreter() {
  for (const Value& ns : namespaces_) ns.object().clear();
}

const SpecialNames& Interpreter::SpecialNamesOf(const Node& owner) {
  auto it = special_names_.find(&owner);
  if (it != special_names_.end()) return it->second;
  SpecialNames found;
  for (const auto& n : owner.body) FindSpecialNames(*n, &found);
  return special_names_.emplace(&owner, found).first->second;
}

const Value* Scope::Lookup(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent) {
    for (const auto& [k, v] : s->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::Set(const std::string& name, Value v) {
  for (auto& [k, existing] : vars) {
    if (k == name) { existing = std::move(v); return; }
  }
  vars.emplace_back(name, std::move(v));
}

Interpreter::DepthGuard::DepthGuard(Interpreter* in, const Node& at) : in_(in) {
  if (++in_->depth_ > in_->limits_.max_depth) {
    Fail(Located(at.line, at.column, "template evaluation nested too deeply (more than " +
                                         std::to_string(in_->limits_.max_depth) + " levels)"));
  }
}

Scope* Interpreter::NewScope(Scope* parent) {
  scopes_.emplace_back();
  scopes_.back().parent = parent;
  return &scopes_.back();
}

void Interpreter::ReleaseScopes(const ScopeMark& mark) {
  if (pinned_ != mark.pinned) return;  // a macro or caller defined meanwhile may point into these scopes
  while (scopes_.size() > mark.size) scopes_.pop_back();
}

void Interpreter::Step(const Node& at) {
  if (++steps_ > limits_.max_steps) {
    Fail(Located(at.line, at.column, "template exceeds the work limit (" + std::to_string(limits_.max_steps) +
                                         " evaluation steps)"));
  }
}

Value Interpreter::CheckedString(std::string s) const {
  if (s.size() > limits_.max_output_bytes) {
    Fail("string exceeds the size limit (" + std::to_string(limits_.max_output_bytes) + " bytes)");
  }
  return Value::String(std::move(s));
}

Value Interpreter::CheckedArray(Array items) const {
  if (items.size() > limits_.max_items) Fail("list exceeds the length limit (" + std::to_string(limits_.max_items) + ")");
  return Value::MakeArray(std::move(items));
}

void Interpreter::SetupGlobals(Scope* g) {
  g->Set("true", Value::Bool(true));
  g->Set("false", Value::Bool(false));
  g->Set("none", Value::Null());
  g->Set("True", Value::Bool(true));
  g->Set("False", Value::Bool(false));
  g->Set("None", Value::Null());
  g->Set("raise_exception", Value::MakeFunction([](CallArgs& args) -> Value {
    // The template's message is the whole error text (what the oracle's .err files hold).
    Fail(args.positional.empty() ? "" : ToConcatString(args.positional[0]));
  }));
  g->Set("namespace", Value::MakeFunction([this](CallArgs& args) { return MakeNamespaceValue(args); }));
  g->Set("range", Value::MakeFunction([this](CallArgs& args) { return Range(args); }));
  g->Set("strftime_now", Value::MakeFunction([this](CallArgs& args) {
    const std::string format = args.positional.empty() ? "undefined" : ToConcatString(args.positional[0]);
    return Value::String(Strftime(now_, format));
  }));
}

Value Interpreter::MakeNamespaceValue(CallArgs& args) {
  if (args.positional.size() > 1) {
    Fail("namespace expected at most 1 argument, got " + std::to_string(args.positional.size()));
  }
  Value ns = Value::MakeNamespace();
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_object()) {
      for (const auto& [k, v] : source.object()) ns.Set(k, v);
    } else if (source.is_array()) {
      for (const Value& pair : source.array()) {
        if (!pair.is_array() || pair.array().size() != 2) {
          Fail("namespace expected an object or an iterable of [key, value] pairs");
        }
        if (!pair.array()[0].is_string()) Fail("namespace keys must be strings");
        ns.Set(pair.array()[0].as_string(), pair.array()[1]);
      }
    } else {
      Fail(std::string("'") + source.TypeName() + "' object is not iterable");
    }
  }
  for (const auto& [k, v] : args.keyword) ns.Set(k, v);
  namespaces_.push_back(ns);
  return ns;
}

// range(stop) / range(start, stop[, step]) of integers, refusing more than max_items.
Value Interpreter::Range(CallArgs& args) {
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_int()) Fail(std::string("range() arguments must be integers, got ") + v.TypeName());
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3) Fail("range() takes 1 to 3 arguments");
  const int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1];
  const int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) Fail("range() step must not be zero");
  const long double span = step > 0 ? (long double)stop - start : (long double)start - stop;
  const long double count = span <= 0 ? 0 : std::ceil(span / std::fabs((long double)step));
  if (count > limits_.max_items) Fail("range() too long: " + std::to_string((uint64_t)count) + " items (limit " +
                                      std::to_string(limits_.max_items) + ")");
  Array items;
  items.reserve(static_cast<size_t>(count));
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) items.push_back(Value::Int(start + (int64_t)i * step));
  return Value::MakeArray(std::move(items));
}

std::string Interpreter::Render(const std::vector<NodePtr>& program, const Value& context) {
  Scope* global = NewScope(nullptr);
  SetupGlobals(global);
  if (context.is_mapping_like()) {
    for (const auto& [k, v] : context.object()) global->Set(k, v);
  }
  std::string out;
  RenderBlock(program, global, out);
  if (jump_ != Jump::kNone) Fail("'break' or 'continue' outside a loop");
  return out;
}

void Interpreter::RenderBlock(const std::vector<NodePtr>& body, Scope* scope, std::string& out) {
  for (const NodePtr& statement : body) {
    RenderStatement(*statement, scope, out);
    if (out.size() > limits_.max_output_bytes) {
      Fail("output exceeds the size limit (" + std::to_string(limits_.max_output_bytes) + " bytes)");
    }
    if (jump_ != Jump::kNone) return;  // break/continue: unwind to the loop
  }
}

void Interpreter::RenderStatement(const Node& node, Scope* scope, std::string& out) {
  Step(node);
  switch (node.kind) {
    case NodeKind::kText: out += node.name; return;
    case NodeKind::kComment: return;
    case NodeKind::kIf: RenderBlock(Eval(*node.a, scope).Truthy() ? node.body : node.alternate, scope, out); return;
    case NodeKind::kFor: RenderFor(node, scope, out); return;
    case NodeKind::kSet: ExecuteSet(node, scope); return;
    case NodeKind::kMacro: DefineMacro(node, scope); return;
    case NodeKind::kBreak: jump_ = Jump::kBreak; return;
    case NodeKind::kContinue: jump_ = Jump::kContinue; return;
    default: break;
  }
  Value v;
  if (node.kind == NodeKind::kCallBlock) {
    v = RenderCallBlock(node, scope);
  } else if (node.kind == NodeKind::kFilterBlock) {
    std::string inner;
    RenderBlock(node.body, scope, inner);
    v = ApplyFilter(*this, Value::String(std::move(inner)), *node.a, scope);
  } else {
    v = Eval(node, scope);
  }
  if (!v.is_null() && !v.is_undefined()) out += ToOutputString(v);
}

// The items a for loop visits: an array's elements or an object's keys, kept only where the loop's
// `if` condition holds; tuple targets are checked before the first iteration, as the oracle does.
std::vector<Value> Interpreter::ForItems(const Node& node, Scope* loop_scope) {
  const Value iterable = Eval(*node.b, loop_scope);
  std::vector<Value> candidates;
  if (iterable.is_array()) {
    candidates = iterable.array();
  } else if (iterable.is_object()) {
    for (const auto& [k, v] : iterable.object()) candidates.push_back(Value::String(k));
  } else {
    Fail(std::string("Expected iterable or object type in for loop: got ") + iterable.TypeName());
  }
  const Node& target = *node.a;
  if (target.kind == NodeKind::kIdentifier && !node.c) return candidates;
  std::vector<Value> items;
  Scope* test_scope = node.c ? NewScope(loop_scope) : nullptr;
  for (Value& item : candidates) {
    if (target.kind == NodeKind::kTuple) {
      if (!item.is_array()) Fail(std::string("Cannot unpack non-iterable type: ") + item.TypeName());
      const size_t want = target.list.size(), have = item.array().size();
      if (want != have) Fail(std::string("Too ") + (want > have ? "few" : "many") + " items to unpack");
    }
    if (node.c) {
      BindTarget(target, item, test_scope);
      if (!Eval(*node.c, test_scope).Truthy()) continue;
    }
    items.push_back(std::move(item));
  }
  return items;
}

void Interpreter::BindTarget(const Node& target, const Value& value, Scope* scope) {
  if (target.kind == NodeKind::kIdentifier) {
    scope->Set(target.name, value);
    return;
  }
  const Array& values = value.array();
  for (size_t j = 0; j < target.list.size(); ++j) {
    const Node& name = *target.list[j];
    if (name.kind != NodeKind::kIdentifier) Fail("Cannot unpack non-identifier type");
    scope->Set(name.name, j < values.size() ? values[j] : Value());
  }
}

static Value LoopObject(const std::vector<Value>& items, size_t i) {
  const auto n = static_cast<int64_t>(items.size()), k = static_cast<int64_t>(i);
  return Value::MakeObject({
      {"index", Value::Int(k + 1)},
      {"index0", Value::Int(k)},
      {"revindex", Value::Int(n - k)},
      {"revindex0", Value::Int(n - k - 1)},
      {"first", Value::Bool(k == 0)},
      {"last", Value::Bool(k == n - 1)},
      {"length", Value::Int(n)},
      {"previtem", k > 0 ? items[i - 1] : Value()},
      {"nextitem", k < n - 1 ? items[i + 1] : Value()},
  });
}

void Interpreter::RenderFor(const Node& node, Scope* scope, std::string& out) {
  const ScopeMark mark = Mark();
  Scope* loop_scope = NewScope(scope);
  const std::vector<Value> items = ForItems(node, loop_scope);
  bool rendered_any = false;
  for (size_t i = 0; i < items.size(); ++i) {
    Step(node);
    loop_scope->Set("loop", LoopObject(items, i));
    BindTarget(*node.a, items[i], loop_scope);
    // The oracle unwinds break/continue with an exception: what the interrupted iteration had
    // rendered is dropped, and it does not count as an iteration for the loop's else block.
    std::string iteration;
    RenderBlock(node.body, loop_scope, iteration);
    if (jump_ == Jump::kContinue) { jump_ = Jump::kNone; continue; }
    if (jump_ == Jump::kBreak) { jump_ = Jump::kNone; break; }
    out += iteration;
    if (out.size() > limits_.max_output_bytes) Fail("output exceeds the size limit");
    rendered_any = true;
  }
  if (!rendered_any) RenderBlock(node.alternate, loop_scope, out);
  ReleaseScopes(mark);
}

void Interpreter::ExecuteSet(const Node& node, Scope* scope) {
  Value rhs;
  if (node.b) {
    rhs = Eval(*node.b, scope);
  } else {
    std::string body;
    RenderBlock(node.body, scope, body);
    rhs = Value::String(std::move(body));
  }
  const Node& target = *node.a;
  if (target.kind == NodeKind::kIdentifier) {
    scope->Set(target.name, std::move(rhs));
  } else if (target.kind == NodeKind::kTuple) {
    if (!rhs.is_array()) Fail(std::string("Cannot unpack non-iterable type in set: ") + rhs.TypeName());
    const size_t want = target.list.size(), have = rhs.array().size();
    if (want != have) Fail(std::string("Too ") + (want > have ? "few" : "many") + " items to unpack in set");
    for (const auto& name : target.list) {
      if (name->kind != NodeKind::kIdentifier) Fail("Cannot unpack to non-identifier in set");
    }
    BindTarget(target, rhs, scope);
  } else if (target.kind == NodeKind::kMember) {
    const Value object = Eval(*target.a, scope);
    if (!object.is_namespace()) Fail("cannot assign attribute on non-namespace object");
    if (target.flag || target.b->kind != NodeKind::kIdentifier) Fail("Cannot assign to member with non-identifier property");
    object.Set(target.b->name, std::move(rhs));
  } else {
    Fail(Located(target.line, target.column, "invalid target of an assignment"));
  }
}

void Interpreter::DefineMacro(const Node& node, Scope* scope) {
  ++pinned_;  // the macro keeps `scope` alive
  scope->Set(node.name, Value::MakeFunction([this, &node, scope](CallArgs& args) {
    return CallMacro(node, scope, args, call_site_);
  }));
}

// A macro body sees the scope it was defined in (lexical scoping, late binding), its parameters,
// and `caller` when invoked from a {% call %} block.
Value Interpreter::CallMacro(const Node& node, Scope* defined_in, CallArgs& args, Scope* call_site) {
  if (++macro_depth_ > limits_.max_depth / 4) {
    Fail(Located(node.line, node.column, "macro calls nested too deeply (more than " +
                                             std::to_string(limits_.max_depth / 4) + ")"));
  }
  const ScopeMark mark = Mark();
  const SpecialNames& special = SpecialNamesOf(node);
  Scope* parent = defined_in;
  if (special.caller) {
    parent = NewScope(defined_in);
    const Value* caller = call_site && call_site->call_block ? call_site->Lookup("caller") : nullptr;
    parent->Set("caller", caller ? *caller : Value());
  }
  Scope* scope = NewScope(parent);
  BindParameters("'" + node.name + "'", node.list, node, args, scope);
  std::string out;
  RenderBlock(node.body, scope, out);
  ReleaseScopes(mark);
  --macro_depth_;
  return Value::String(std::move(out));
}

void Interpreter::BindParameters(const std::string& display, const std::vector<NodePtr>& params,
                                 const Node& body_owner, CallArgs& args, Scope* scope) {
  const SpecialNames& special = SpecialNamesOf(body_owner);
  Object keywords = args.keyword;
  std::vector<const Node*> pending_defaults;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = *params[i];
    const std::string& name = p.name;  // kIdentifier or kKeywordArg: both keep the name here
    std::optional<Value> value;
    if (i < args.positional.size()) value = args.positional[i];
    for (auto it = keywords.begin(); !value && it != keywords.end(); ++it) {
      if (it->first == name) { value = it->second; keywords.erase(it); break; }
    }
    if (!value && p.kind == NodeKind::kKeywordArg) pending_defaults.push_back(&p);
    scope->Set(name, value ? *value : Value());
  }
  if (special.kwargs) {
    scope->Set("kwargs", Value::MakeObject(keywords));
  } else if (!keywords.empty()) {
    Fail("macro " + display + " takes no keyword argument '" + keywords[0].first + "'");
  }
  if (special.varargs) {
    Array rest;
    for (size_t i = params.size(); i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    scope->Set("varargs", Value::MakeArray(std::move(rest)));
  } else if (args.positional.size() > params.size()) {
    Fail("macro " + display + " takes not more than " + std::to_string(params.size()) + " argument(s)");
  }
  for (const Node* p : pending_defaults) scope->Set(p->name, Eval(*p->a, scope));
}

Value Interpreter::RenderCallBlock(const Node& node, Scope* scope) {
  ++pinned_;  // `caller` keeps `scope` alive
  Value caller = Value::MakeFunction([this, &node, scope](CallArgs& args) {
    const ScopeMark mark = Mark();
    Scope* block_scope = NewScope(scope);
    BindParameters("None", node.list, node, args, block_scope);
    std::string out;
    RenderBlock(node.body, block_scope, out);
    ReleaseScopes(mark);
    return Value::String(std::move(out));
  });
  const Node& call = *node.a;
  CallArgs args = EvalArgs(call.list, scope);
  const Value fn = Eval(*call.a, scope);
  if (!fn.is_function()) Fail(std::string("Cannot call something that is not a function: got ") + fn.TypeName());
  Scope* site = NewScope(scope);
  site->call_block = true;
  site->Set("caller", caller);
  call_site_ = site;
  return fn.function()(args);
}

Value Interpreter::Eval(const Node& node, Scope* scope) {
  DepthGuard guard(this, node);
  Step(node);
  switch (node.kind) {
    case NodeKind::kIdentifier: {
      const Value* v = scope->Lookup(node.name);
      return v ? *v : Value();
    }
    case NodeKind::kInt: return Value::Int(node.int_value);
    case NodeKind::kFloat: return Value::Float(node.float_value);
    case NodeKind::kString: return Value::String(node.name);
    case NodeKind::kArray:
    case NodeKind::kTuple: {
      Array items;
      for (const auto& e : node.list) items.push_back(Eval(*e, scope));
      return Value::MakeArray(std::move(items), node.kind == NodeKind::kTuple);
    }
    case NodeKind::kObject: {
      Value object = Value::MakeObject();
      for (size_t i = 0; i + 1 < node.list.size(); i += 2) {
        const Value key = Eval(*node.list[i], scope);
        if (!key.is_string()) Fail(std::string("Object keys must be strings: got ") + key.TypeName());
        object.Set(key.as_string(), Eval(*node.list[i + 1], scope));
      }
      return object;
    }
    case NodeKind::kMember: return EvalMember(node, scope);
    case NodeKind::kCall: return EvalCall(node, scope);
    case NodeKind::kFilter: return ApplyFilter(*this, Eval(*node.a, scope), node, scope);
    case NodeKind::kTest: return EvalTest(node, scope);
    case NodeKind::kUnary: return EvalUnary(node, scope);
    case NodeKind::kBinary: return EvalBinary(node, scope);
    case NodeKind::kTernary: return Eval(Eval(*node.a, scope).Truthy() ? *node.b : *node.c, scope);
    case NodeKind::kSelect: return Eval(*node.b, scope).Truthy() ? Eval(*node.a, scope) : Value();
    default: Fail(Located(node.line, node.column, "this expression cannot be evaluated here"));
  }
}

CallArgs Interpreter::EvalArgs(const std::vector<NodePtr>& args, Scope* scope) {
  CallArgs out;
  for (const auto& arg : args) {  // positional part first, as Python evaluates a call
    if (arg->kind == NodeKind::kSpread) {
      const Value v = Eval(*arg->a, scope);
      if (!v.is_array()) Fail(std::string("Cannot unpack non-iterable type: ") + v.TypeName());
      for (const Value& e : v.array()) out.positional.push_back(e);
    } else if (arg->kind != NodeKind::kKeywordArg && arg->kind != NodeKind::kKeywordSpread) {
      out.positional.push_back(Eval(*arg, scope));
    }
  }
  auto add_keyword = [&out](const std::string& key, Value v) {
    if (out.Keyword(key)) Fail("Got multiple values for keyword argument '" + key + "'");
    out.keyword.emplace_back(key, std::move(v));
  };
  for (const auto& arg : args) {
    if (arg->kind == NodeKind::kKeywordArg) {
      add_keyword(arg->name, Eval(*arg->a, scope));
    } else if (arg->kind == NodeKind::kKeywordSpread) {
      const Value v = Eval(*arg->a, scope);
      if (!v.is_object()) Fail(std::string("Argument after ** must be a mapping, not ") + v.TypeName());
      for (const auto& [k, e] : v.object()) add_keyword(k, e);
    }
  }
  return out;
}

Value Interpreter::EvalCall(const Node& node, Scope* scope) {
  CallArgs args = EvalArgs(node.list, scope);
  const Value fn = Eval(*node.a, scope);
  if (!fn.is_function()) Fail(std::string("Cannot call something that is not a function: got ") + fn.TypeName());
  call_site_ = scope;
  return fn.function()(args);
}

Value Interpreter::EvalTest(const Node& node, Scope* scope) {
  const Value operand = Eval(*node.a, scope);
  bool known = false;
  const bool result = RunTest(node.name, operand, nullptr, &known);
  if (!known) Fail("Unknown test: " + node.name);
  return Value::Bool(node.flag ? !result : result);
}

Value Interpreter::EvalUnary(const Node& node, Scope* scope) {
  const Value v = Eval(*node.a, scope);
  if (node.name == "not") return Value::Bool(!v.Truthy());
  const bool negate = node.name == "-";
  if (v.is_float()) return Value::Float(negate ? -v.as_float() : v.as_float());
  if (v.is_int() || v.is_bool()) {
    const int64_t i = v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
    if (negate && i == INT64_MIN) Fail("integer overflow in unary '-'");
    return Value::Int(negate ? -i : i);
  }
  Fail("Unknown operator \"" + node.name + "\" for " + v.TypeName());
}

Value Interpreter::EvalMember(const Node& node, Scope* scope) {
  const Value object = Eval(*node.a, scope);
  if (node.flag && node.b->kind == NodeKind::kSlice) return EvalSlice(object, *node.b, scope);
  Value property;
  if (node.flag) property = Eval(*node.b, scope);
  else if (node.b->kind == NodeKind::kInt) property = Value::Int(node.b->int_value);
  else property = Value::String(node.b->name);

  if (object.is_mapping_like()) {
    if (!property.is_string()) Fail(std::string("Cannot access property with non-string: got ") + property.TypeName());
    if (const Value* v = object.Find(property.as_string())) return *v;
    return object.is_object() ? BuiltinMember(*this, object, property.as_string()) : Value();
  }
  if (object.is_array() || object.is_string()) {
    if (property.is_string()) return BuiltinMember(*this, object, property.as_string());
    if (!property.is_int()) {
      Fail(std::string("Cannot access property with non-string/non-number: got ") + property.TypeName());
    }
    int64_t i = property.as_int();
    if (object.is_array()) {
      const auto n = static_cast<int64_t>(object.array().size());
      if (i < 0) i += n;
      return i >= 0 && i < n ? object.array()[i] : Value();
    }
    const auto chars = SplitCodePoints(object.as_string());
    const auto n = static_cast<int64_t>(chars.size());
    if (i < 0) i += n;
    return i >= 0 && i < n ? Value::String(std::string(chars[i])) : Value();
  }
  if (!property.is_string()) Fail(std::string("Cannot access property with non-string: got ") + property.TypeName());
  return BuiltinMember(*this, object, property.as_string());
}

// Python slicing (the oracle's utils.slice); strings are sliced by code point.
Value Interpreter::EvalSlice(const Value& object, const Node& slice, Scope* scope) {
  if (!object.is_array() && !object.is_string()) Fail("Slice object must be an array or string");
  std::optional<int64_t> part[3];
  const char* names[3] = {"start", "stop", "step"};
  const Node* nodes[3] = {slice.a.get(), slice.b.get(), slice.c.get()};
  for (int k = 0; k < 3; ++k) {
    const Value v = nodes[k] ? Eval(*nodes[k], scope) : Value();
    if (!v.is_int() && !v.is_undefined()) Fail(std::string("Slice ") + names[k] + " must be numeric or undefined");
    if (v.is_int()) part[k] = v.as_int();
  }
  std::vector<std::string_view> chars;
  if (object.is_string()) chars = SplitCodePoints(object.as_string());
  const auto n = static_cast<int64_t>(object.is_array() ? object.array().size() : chars.size());
  const int64_t step = part[2].value_or(1);
  int64_t start, stop;
  if (step >= 0) {
    start = part[0].value_or(0);
    start = start < 0 ? std::max<int64_t>(n + start, 0) : std::min(start, n);
    stop = part[1].value_or(n);
    stop = stop < 0 ? std::max<int64_t>(n + stop, 0) : std::min(stop, n);
  } else {
    start = part[0].value_or(n - 1);
    start = start < 0 ? std::max<int64_t>(n + start, -1) : std::min(start, n - 1);
    stop = part[1].value_or(-1);
    stop = stop < -1 ? std::max<int64_t>(n + stop, -1) : std::min(stop, n - 1);
  }
  Array items;
  std::string text;
  const int dir = step > 0 ? 1 : step < 0 ? -1 : 0;
  for (int64_t i = start; dir * i < dir * stop; i += step) {
    if (object.is_array()) items.push_back(object.array()[i]);
    else text.append(chars[i]);
  }
  return object.is_array() ? Value::MakeArray(std::move(items)) : Value::String(std::move(text));
}

Value Interpreter::EvalBinary(const Node& node, Scope* scope) {
  const std::string& op = node.name;
  const Value l = Eval(*node.a, scope);
  if (op == "and") return l.Truthy() ? Eval(*node.b, scope) : l;
  if (op == "or") return l.Truthy() ? l : Eval(*node.b, scope);
  const Value r = Eval(*node.b, scope);
  if (op == "==") return Value::Bool(LooseEquals(l, r));
  if (op == "!=") return Value::Bool(!LooseEquals(l, r));
  const bool membership = op == "in" || op == "not in";
  if (l.is_number() && r.is_number() && op != "~" && op != "**") {
    const auto v = l.is_int() && r.is_int() ? IntArithmetic(op, l.as_int(), r.as_int())
                                            : FloatArithmetic(op, l.as_number(), r.as_number());
    if (v) return *v;
  } else if (l.is_undefined() || r.is_undefined()) {
    if (r.is_undefined() && membership) return Value::Bool(op == "not in");
    if (op == "~" && !l.is_null() && !r.is_null()) {
      return CheckedString((l.is_undefined() ? "" : ToConcatString(l)) + (r.is_undefined() ? "" : ToConcatString(r)));
    }
    Fail("Cannot perform operation " + op + " on undefined values");
  } else if (l.is_null() || r.is_null()) {
    Fail("Cannot perform operation on null values");
  } else if (op == "~") {
    return CheckedString(ToConcatString(l) + ToConcatString(r));
  } else if (op == "**" && IsNumericLike(l) && IsNumericLike(r)) {
    return Power(l, r);
  } else if (l.is_array() && r.is_array()) {
    if (op == "+") {
      Array items = l.array();
      items.insert(items.end(), r.array().begin(), r.array().end());
      return CheckedArray(std::move(items));
    }
  } else if (r.is_array() && membership) {
    bool found = false;
    for (const Value& e : r.array()) found = found || StrictEquals(e, l);
    return Value::Bool(found == (op == "in"));
  }
  if ((l.is_string() || r.is_string()) && op == "+") return CheckedString(ToConcatString(l) + ToConcatString(r));
  if (l.is_string() && r.is_string() && membership) {
    return Value::Bool((r.as_string().find(l.as_string()) != std::string::npos) == (op == "in"));
  }
  if (l.is_string() && r.is_object() && membership) return Value::Bool((r.Find(l.as_string()) != nullptr) == (op == "in"));
  Fail("Unknown operator \"" + op + "\" between " + l.TypeName() + " and " + r.TypeName());
}

Value Interpreter::Power(const Value& l, const Value& r) {
  const double a = NumericLike(l), b = NumericLike(r);
  if (a == 0 && b < 0) Fail("0.0 cannot be raised to a negative power");
  const double result = std::pow(a, b);
  if (!std::isfinite(result)) Fail("Exponentiation result is not a finite real number");
  if (l.is_float() || r.is_float() || b < 0) return Value::Float(result);
  if (std::fabs(result) >= 9.2e18) Fail("integer overflow in '**'");
  return Value::Int(static_cast<int64_t>(result));
}

}  // namespace edgedecode::chat
