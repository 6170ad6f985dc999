// The syntax tree of a template: one node type with a kind, as the engine's node kinds share most
// fields. Which fields a kind uses is listed beside it. Nodes own their children.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edgedecode::chat {

enum class NodeKind {
  // Statements
  kText,         // name = the text
  kComment,
  kIf,           // a = test, body, alternate (else / elif chain)
  kFor,          // a = loop target (identifier / tuple), b = iterable, c = `if` filter or null, body, alternate
  kSet,          // a = target, b = value (null: block set, the value is body rendered)
  kMacro,        // name, list = parameters (identifier or keyword-arg with default), body
  kCallBlock,    // a = the call (kCall), list = caller parameters, body
  kFilterBlock,  // a = the filter (kFilter with a = null), body
  kBreak,
  kContinue,
  // Expressions
  kIdentifier,   // name
  kInt,          // int_value
  kFloat,        // float_value
  kString,       // name = the literal
  kArray,        // list
  kTuple,        // list
  kObject,       // list = key0, value0, key1, value1, ...
  kMember,       // a = object, b = property, flag = computed (`[...]`); b is kIdentifier/kInt for `.x`
  kSlice,        // a = start, b = stop, c = step (each may be null)
  kCall,         // a = callee, list = arguments
  kFilter,       // a = operand, name, list = arguments, flag = written with parentheses
  kTest,         // a = operand, name, flag = negated (`is not`)
  kUnary,        // name = "not" / "-" / "+", a
  kBinary,       // name = operator, a, b
  kTernary,      // a = condition, b = if true, c = if false
  kSelect,       // a = value, b = condition (`x if c` without else)
  kKeywordArg,   // name = keyword, a = value
  kSpread,       // a  (`*args`)
  kKeywordSpread,// a  (`**kwargs`)
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  int line = 0, column = 0;
  int depth = 1;  // height of this subtree: bounded by the parser so that evaluation cannot overflow the stack
  std::string name;
  int64_t int_value = 0;
  double float_value = 0;
  bool flag = false;
  NodePtr a, b, c;
  std::vector<NodePtr> list, body, alternate;
};

}  // namespace edgedecode::chat
