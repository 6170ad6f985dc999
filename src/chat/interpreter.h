// Evaluates a parsed template against a context, with the semantics of @huggingface/jinja 0.5.13:
// scoping (a `for` body and a macro call get their own scope, `if` does not), undefined values,
// JavaScript-flavoured equality, the filters, tests and methods the oracle has, and its error messages.
// Resource limits turn hostile templates into errors: output size, evaluation depth, work steps, range
// length. One Interpreter renders once; it is not thread-safe.
#pragma once

#include <cstdint>
#include <ctime>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/template.h"
#include "chat/value.h"

namespace edgedecode::chat {

using Limits = RenderLimits;

// Which of Jinja's special macro variables (caller, kwargs, varargs) a macro body reads: only then
// does a call bind them (and accept extra arguments).
struct SpecialNames {
  bool caller = false, kwargs = false, varargs = false;
};

// A variable scope. Scopes live in the interpreter's arena (macros keep a pointer to the scope they
// were defined in); see ScopeMark for when they are freed.
struct Scope {
  Scope* parent = nullptr;
  Object vars;
  bool call_block = false;  // a `{% call %}` site: its `caller` is visible to the macro called
  const Value* Lookup(std::string_view name) const;
  void Set(const std::string& name, Value v);
};

class Interpreter {
 public:
  Interpreter(const Limits& limits, const std::tm& now) : limits_(limits), now_(now) {}
  ~Interpreter();  // breaks reference cycles through namespaces (`set ns.self = ns`)
  // Renders the program with `context` (an object) as the global variables. Throws TemplateError.
  std::string Render(const std::vector<NodePtr>& program, const Value& context);

  // Used by the filters and methods (filters.cc, methods.cc):
  Value Eval(const Node& node, Scope* scope);
  CallArgs EvalArgs(const std::vector<NodePtr>& args, Scope* scope);
  Value CheckedString(std::string s) const;  // a string value, failing if it exceeds the size limit
  Value CheckedArray(Array items) const;
  const std::tm& now() const { return now_; }
  size_t max_items() const { return limits_.max_items; }

 private:
  enum class Jump { kNone, kBreak, kContinue };
  struct DepthGuard {
    DepthGuard(Interpreter* in, const Node& at);
    ~DepthGuard() { --in_->depth_; }
    Interpreter* in_;
  };

  // Scopes created after a mark are freed when the construct that made them ends, unless a macro or
  // a call block's `caller` was defined meanwhile (it may point into them).
  struct ScopeMark {
    size_t size;
    uint64_t pinned;
  };
  ScopeMark Mark() const { return {scopes_.size(), pinned_}; }
  void ReleaseScopes(const ScopeMark& mark);
  Scope* NewScope(Scope* parent);
  Value MakeNamespaceValue(CallArgs& args);
  Value Range(CallArgs& args);
  Value Power(const Value& l, const Value& r);
  void SetupGlobals(Scope* global);
  void Step(const Node& at);
  void RenderBlock(const std::vector<NodePtr>& body, Scope* scope, std::string& out);
  void RenderStatement(const Node& node, Scope* scope, std::string& out);
  void RenderFor(const Node& node, Scope* scope, std::string& out);
  std::vector<Value> ForItems(const Node& node, Scope* loop_scope);
  void BindTarget(const Node& target, const Value& value, Scope* scope);
  void ExecuteSet(const Node& node, Scope* scope);
  void DefineMacro(const Node& node, Scope* scope);
  Value CallMacro(const Node& node, Scope* defined_in, CallArgs& args, Scope* call_site);
  const SpecialNames& SpecialNamesOf(const Node& macro_or_call_block);
  void BindParameters(const std::string& display, const std::vector<NodePtr>& params, const Node& body_owner,
                      CallArgs& args, Scope* scope);
  Value RenderCallBlock(const Node& node, Scope* scope);
  Value EvalBinary(const Node& node, Scope* scope);
  Value EvalArithmetic(const std::string& op, const Value& l, const Value& r);
  Value EvalUnary(const Node& node, Scope* scope);
  Value EvalMember(const Node& node, Scope* scope);
  Value EvalSlice(const Value& object, const Node& slice, Scope* scope);
  Value EvalCall(const Node& node, Scope* scope);
  Value EvalTest(const Node& node, Scope* scope);

  Limits limits_;
  std::tm now_;
  std::deque<Scope> scopes_;
  int depth_ = 0;
  uint64_t steps_ = 0;
  Jump jump_ = Jump::kNone;
  uint64_t pinned_ = 0;
  int macro_depth_ = 0;
  Scope* call_site_ = nullptr;
  std::vector<Value> namespaces_;  // every namespace made: the only mutable containers, so the only cycles
  std::unordered_map<const Node*, SpecialNames> special_names_;  // per macro / call block, computed once  // the scope a function is being called from (macros look up `caller`)
};

// filters.cc
Value ApplyFilter(Interpreter& in, const Value& operand, const Node& filter, Scope* scope);
// methods.cc: `obj.name` for the builtins of strings, arrays and objects (bound methods or `length`),
// or undefined when there is none.
Value BuiltinMember(Interpreter& in, const Value& object, const std::string& name);
// The tests (`is defined`, ...): false in *known when the name is not a test.
bool RunTest(const std::string& name, const Value& operand, const Value* arg, bool* known);
// JavaScript `==` on runtime values, as the oracle compares them.
bool LooseEquals(const Value& a, const Value& b);
// Strict equality of primitive values (`in` on arrays, `unique`).
bool StrictEquals(const Value& a, const Value& b);
// Ordering used by sort/dictsort (the oracle's compareRuntimeValues).
int CompareValues(const Value& a, const Value& b, bool case_sensitive);
Value ReplaceString(Interpreter& in, const std::string& self, CallArgs& args);  // str.replace
std::string AsciiLower(std::string s);
std::string AsciiUpper(std::string s);

}  // namespace edgedecode::chat
