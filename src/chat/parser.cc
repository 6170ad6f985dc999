// A recursive-descent parser mirroring the oracle's (parser.ts), one function per precedence level.
#include "chat/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "chat/value.h"

namespace edgedecode::chat {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  std::vector<NodePtr> Run();

 private:
  // Keeps the recursion of the parser (and the height of the tree it builds) bounded.
  struct NestingGuard {
    explicit NestingGuard(Parser* p) : p_(p) {
      if (++p_->nesting_ > kMaxNesting) p_->Error("template nested too deeply (more than " +
                                                   std::to_string(kMaxNesting) + " levels)");
    }
    ~NestingGuard() { --p_->nesting_; }
    Parser* p_;
  };

  bool AtEnd(size_t ahead = 0) const { return pos_ + ahead >= tokens_.size(); }
  const Token& Peek(size_t ahead = 0) const { return tokens_[pos_ + ahead]; }
  bool Is(TokenType type, size_t ahead = 0) const { return !AtEnd(ahead) && Peek(ahead).type == type; }
  bool IsIdentifier(std::string_view name, size_t ahead = 0) const {
    return Is(TokenType::kIdentifier, ahead) && Peek(ahead).value == name;
  }
  bool IsStatement(std::initializer_list<std::string_view> names) const;
  [[noreturn]] void Error(const std::string& message) const;
  const Token& Expect(TokenType type, const std::string& what);
  void ExpectIdentifier(std::string_view name);
  void ExpectEndTag(std::string_view name);
  NodePtr NewNode(NodeKind kind, const Token& at);
  NodePtr Finish(NodePtr node);
  void ParseBodyUntil(std::vector<NodePtr>& body, std::initializer_list<std::string_view> ends,
                      const Token& opener);

  NodePtr ParseAny();
  NodePtr ParseStatement();
  NodePtr ParseSet(const Token& at);
  NodePtr ParseIf(const Token& at);
  NodePtr ParseFor(const Token& at);
  NodePtr ParseMacro(const Token& at);
  NodePtr ParseCallBlock(const Token& at);
  NodePtr ParseFilterBlock(const Token& at);
  NodePtr ParseExpressionSequence(bool primary);
  NodePtr ParseExpression();
  NodePtr ParseOr();
  NodePtr ParseAnd();
  NodePtr ParseNot();
  NodePtr ParseComparison();
  NodePtr ParseAdditive();
  NodePtr ParseMultiplicative();
  NodePtr ParsePower();
  NodePtr ParseTest();
  NodePtr ParseFilter();
  NodePtr ParseUnarySign();
  NodePtr ParseCallMember();
  NodePtr ParseCall(NodePtr callee);
  std::vector<NodePtr> ParseArgs(bool parameters);
  NodePtr ParseMember(NodePtr object);
  NodePtr ParseSubscript(const Token& at);
  NodePtr ParsePrimary();
  NodePtr Binary(const Token& op, std::string name, NodePtr left, NodePtr right);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

void Parser::Error(const std::string& message) const {
  if (tokens_.empty()) Fail(Located(1, 1, message));
  const Token& t = AtEnd() ? tokens_.back() : Peek();
  Fail(Located(t.line, t.column, message));
}

const Token& Parser::Expect(TokenType type, const std::string& what) {
  if (AtEnd()) Error("unexpected end of template, expected " + what);
  if (Peek().type != type) Error("expected " + what + ", got '" + Peek().value + "'");
  return tokens_[pos_++];
}

void Parser::ExpectIdentifier(std::string_view name) {
  if (!IsIdentifier(name)) Error("expected '" + std::string(name) + "'");
  ++pos_;
}

void Parser::ExpectEndTag(std::string_view name) {
  Expect(TokenType::kOpenStatement, "'{%'");
  ExpectIdentifier(name);
  Expect(TokenType::kCloseStatement, "'%}'");
}

bool Parser::IsStatement(std::initializer_list<std::string_view> names) const {
  if (!Is(TokenType::kOpenStatement) || !Is(TokenType::kIdentifier, 1)) return false;
  return std::find(names.begin(), names.end(), Peek(1).value) != names.end();
}

NodePtr Parser::NewNode(NodeKind kind, const Token& at) {
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->line = at.line;
  node->column = at.column;
  return node;
}

// Computes the node's height; a tree taller than twice the nesting limit (left-leaning chains such as
// a+b+c+... grow without recursion in the parser) is rejected here.
NodePtr Parser::Finish(NodePtr node) {
  int h = 0;
  for (const NodePtr* child : {&node->a, &node->b, &node->c}) {
    if (*child) h = std::max(h, (*child)->depth);
  }
  for (const auto* list : {&node->list, &node->body, &node->alternate}) {
    for (const auto& child : *list) h = std::max(h, child->depth);
  }
  node->depth = h + 1;
  if (node->depth > 2 * kMaxNesting) {
    Fail(Located(node->line, node->column, "expression nested too deeply (more than " +
                                               std::to_string(2 * kMaxNesting) + " levels)"));
  }
  return node;
}

void Parser::ParseBodyUntil(std::vector<NodePtr>& body, std::initializer_list<std::string_view> ends,
                            const Token& opener) {
  while (!IsStatement(ends)) {
    if (AtEnd()) {
      Fail(Located(opener.line, opener.column, "unterminated '" + opener.value + "' block: expected '{% " +
                                                   std::string(*ends.begin()) + " %}' before the end of the template"));
    }
    body.push_back(ParseAny());
  }
}

std::vector<NodePtr> Parser::Run() {
  std::vector<NodePtr> program;
  while (!AtEnd()) program.push_back(ParseAny());
  return program;
}

NodePtr Parser::ParseAny() {
  NestingGuard guard(this);
  const Token& t = Peek();
  switch (t.type) {
    case TokenType::kComment: ++pos_; return NewNode(NodeKind::kComment, t);
    case TokenType::kText: {
      ++pos_;
      NodePtr node = NewNode(NodeKind::kText, t);
      node->name = t.value;
      return node;
    }
    case TokenType::kOpenStatement: return ParseStatement();
    case TokenType::kOpenExpression: {
      ++pos_;
      NodePtr expr = ParseExpression();
      Expect(TokenType::kCloseExpression, "'}}'");
      return expr;
    }
    default: Error("unexpected '" + t.value + "'");
  }
}

NodePtr Parser::ParseStatement() {
  ++pos_;  // {%
  if (!Is(TokenType::kIdentifier)) Error(AtEnd() ? "unexpected end of template in a statement" : "unknown statement");
  const Token& t = tokens_[pos_++];
  if (t.value == "set") return ParseSet(t);
  if (t.value == "if") {
    NodePtr node = ParseIf(t);
    ExpectEndTag("endif");
    return node;
  }
  if (t.value == "for") {
    NodePtr node = ParseFor(t);
    ExpectEndTag("endfor");
    return node;
  }
  if (t.value == "macro") {
    NodePtr node = ParseMacro(t);
    ExpectEndTag("endmacro");
    return node;
  }
  if (t.value == "call") return ParseCallBlock(t);
  if (t.value == "filter") return ParseFilterBlock(t);
  if (t.value == "break" || t.value == "continue") {
    Expect(TokenType::kCloseStatement, "'%}'");
    return NewNode(t.value == "break" ? NodeKind::kBreak : NodeKind::kContinue, t);
  }
  --pos_;
  Error("unknown statement '" + t.value + "'");
}

NodePtr Parser::ParseSet(const Token& at) {
  NodePtr node = NewNode(NodeKind::kSet, at);
  node->a = ParseExpressionSequence(false);
  if (Is(TokenType::kEquals)) {
    ++pos_;
    node->b = ParseExpressionSequence(false);
  } else {
    Expect(TokenType::kCloseStatement, "'%}' or '='");
    ParseBodyUntil(node->body, {"endset"}, at);
    Expect(TokenType::kOpenStatement, "'{%'");
    ExpectIdentifier("endset");
  }
  Expect(TokenType::kCloseStatement, "'%}'");
  return Finish(std::move(node));
}

NodePtr Parser::ParseIf(const Token& at) {
  NestingGuard guard(this);  // an elif chain recurses
  NodePtr node = NewNode(NodeKind::kIf, at);
  node->a = ParseExpression();
  Expect(TokenType::kCloseStatement, "'%}'");
  ParseBodyUntil(node->body, {"endif", "elif", "else"}, at);
  if (IsStatement({"elif"})) {
    pos_ += 2;
    node->alternate.push_back(ParseIf(tokens_[pos_ - 1]));
  } else if (IsStatement({"else"})) {
    pos_ += 2;
    Expect(TokenType::kCloseStatement, "'%}'");
    ParseBodyUntil(node->alternate, {"endif"}, at);
  }
  return Finish(std::move(node));
}

NodePtr Parser::ParseFor(const Token& at) {
  NodePtr node = NewNode(NodeKind::kFor, at);
  node->a = ParseExpressionSequence(true);
  if (node->a->kind != NodeKind::kIdentifier && node->a->kind != NodeKind::kTuple) {
    Error("expected a name or a tuple of names for the loop variable");
  }
  if (!IsIdentifier("in")) Error("expected 'in' after the loop variable");
  ++pos_;
  NodePtr iterable = ParseExpression();
  if (iterable->kind == NodeKind::kSelect) {  // `for x in xs if cond`: the condition filters items
    node->b = std::move(iterable->a);
    node->c = std::move(iterable->b);
  } else {
    node->b = std::move(iterable);
  }
  Expect(TokenType::kCloseStatement, "'%}'");
  ParseBodyUntil(node->body, {"endfor", "else"}, at);
  if (IsStatement({"else"})) {
    pos_ += 2;
    Expect(TokenType::kCloseStatement, "'%}'");
    ParseBodyUntil(node->alternate, {"endfor"}, at);
  }
  return Finish(std::move(node));
}

NodePtr Parser::ParseMacro(const Token& at) {
  NodePtr node = NewNode(NodeKind::kMacro, at);
  if (!Is(TokenType::kIdentifier)) Error("expected a macro name");
  node->name = tokens_[pos_++].value;
  node->list = ParseArgs(/*parameters=*/true);
  Expect(TokenType::kCloseStatement, "'%}'");
  ParseBodyUntil(node->body, {"endmacro"}, at);
  return Finish(std::move(node));
}

NodePtr Parser::ParseCallBlock(const Token& at) {
  NodePtr node = NewNode(NodeKind::kCallBlock, at);
  if (Is(TokenType::kOpenParen)) node->list = ParseArgs(/*parameters=*/true);
  if (!Is(TokenType::kIdentifier)) Error("expected a macro name after 'call'");
  NodePtr call = NewNode(NodeKind::kCall, Peek());
  call->a = ParsePrimary();
  call->list = ParseArgs(/*parameters=*/false);
  node->a = Finish(std::move(call));
  Expect(TokenType::kCloseStatement, "'%}'");
  ParseBodyUntil(node->body, {"endcall"}, at);
  ExpectEndTag("endcall");
  return Finish(std::move(node));
}

NodePtr Parser::ParseFilterBlock(const Token& at) {
  NodePtr node = NewNode(NodeKind::kFilterBlock, at);
  if (!Is(TokenType::kIdentifier)) Error("expected a filter name");
  NodePtr filter = NewNode(NodeKind::kFilter, Peek());
  filter->name = tokens_[pos_++].value;
  if (Is(TokenType::kOpenParen)) {
    filter->flag = true;
    filter->list = ParseArgs(/*parameters=*/false);
  }
  node->a = Finish(std::move(filter));
  Expect(TokenType::kCloseStatement, "'%}'");
  ParseBodyUntil(node->body, {"endfilter"}, at);
  ExpectEndTag("endfilter");
  return Finish(std::move(node));
}

NodePtr Parser::ParseExpressionSequence(bool primary) {
  if (AtEnd()) Error("unexpected end of template, expected an expression");
  const Token& at = Peek();
  NodePtr first = primary ? ParsePrimary() : ParseExpression();
  if (!Is(TokenType::kComma)) return first;
  NodePtr tuple = NewNode(NodeKind::kTuple, at);
  tuple->list.push_back(std::move(first));
  while (Is(TokenType::kComma)) {
    ++pos_;
    tuple->list.push_back(primary ? ParsePrimary() : ParseExpression());
  }
  return Finish(std::move(tuple));
}

NodePtr Parser::ParseExpression() {
  NestingGuard guard(this);
  NodePtr value = ParseOr();
  if (!IsIdentifier("if")) return value;
  const Token& at = tokens_[pos_++];
  NodePtr test = ParseOr();
  if (IsIdentifier("else")) {
    ++pos_;
    NodePtr node = NewNode(NodeKind::kTernary, at);
    node->a = std::move(test);
    node->b = std::move(value);
    node->c = ParseExpression();
    return Finish(std::move(node));
  }
  NodePtr node = NewNode(NodeKind::kSelect, at);
  node->a = std::move(value);
  node->b = std::move(test);
  return Finish(std::move(node));
}

NodePtr Parser::Binary(const Token& op, std::string name, NodePtr left, NodePtr right) {
  NodePtr node = NewNode(NodeKind::kBinary, op);
  node->name = std::move(name);
  node->a = std::move(left);
  node->b = std::move(right);
  return Finish(std::move(node));
}

NodePtr Parser::ParseOr() {
  NodePtr left = ParseAnd();
  while (IsIdentifier("or")) {
    const Token& op = tokens_[pos_++];
    left = Binary(op, "or", std::move(left), ParseAnd());
  }
  return left;
}

NodePtr Parser::ParseAnd() {
  NodePtr left = ParseNot();
  while (IsIdentifier("and")) {
    const Token& op = tokens_[pos_++];
    left = Binary(op, "and", std::move(left), ParseNot());
  }
  return left;
}

NodePtr Parser::ParseNot() {
  if (!IsIdentifier("not")) return ParseComparison();
  NestingGuard guard(this);
  NodePtr node = NewNode(NodeKind::kUnary, tokens_[pos_++]);
  node->name = "not";
  node->a = ParseNot();
  return Finish(std::move(node));
}

NodePtr Parser::ParseComparison() {
  NodePtr left = ParseAdditive();
  while (true) {
    std::string op;
    const Token* at = AtEnd() ? nullptr : &Peek();
    if (IsIdentifier("not") && IsIdentifier("in", 1)) {
      op = "not in";
      pos_ += 2;
    } else if (IsIdentifier("in") || Is(TokenType::kComparison)) {
      op = Peek().value;
      ++pos_;
    } else {
      return left;
    }
    left = Binary(*at, op, std::move(left), ParseAdditive());
  }
}

NodePtr Parser::ParseAdditive() {
  NodePtr left = ParseMultiplicative();
  while (Is(TokenType::kAdditive)) {
    const Token& op = tokens_[pos_++];
    left = Binary(op, op.value, std::move(left), ParseMultiplicative());
  }
  return left;
}

NodePtr Parser::ParseMultiplicative() {
  NodePtr left = ParsePower();
  while (Is(TokenType::kMultiplicative)) {
    const Token& op = tokens_[pos_++];
    left = Binary(op, op.value, std::move(left), ParsePower());
  }
  return left;
}

NodePtr Parser::ParsePower() {
  NodePtr left = ParseTest();
  while (Is(TokenType::kPower)) {
    const Token& op = tokens_[pos_++];
    left = Binary(op, op.value, std::move(left), ParseTest());
  }
  return left;
}

NodePtr Parser::ParseTest() {
  NodePtr operand = ParseFilter();
  while (IsIdentifier("is")) {
    NodePtr node = NewNode(NodeKind::kTest, tokens_[pos_++]);
    if (IsIdentifier("not")) {
      node->flag = true;
      ++pos_;
    }
    // Test names are identifiers, but `is none` / `is true` etc. are spelled like constants.
    if (!Is(TokenType::kIdentifier)) Error("expected the name of a test after 'is'");
    node->name = tokens_[pos_++].value;
    node->a = std::move(operand);
    operand = Finish(std::move(node));
  }
  return operand;
}

NodePtr Parser::ParseFilter() {
  NodePtr operand = ParseUnarySign();
  while (Is(TokenType::kPipe)) {
    ++pos_;
    if (!Is(TokenType::kIdentifier)) Error("expected the name of a filter after '|'");
    NodePtr node = NewNode(NodeKind::kFilter, Peek());
    node->name = tokens_[pos_++].value;
    if (Is(TokenType::kOpenParen)) {
      node->flag = true;
      node->list = ParseArgs(/*parameters=*/false);
    }
    node->a = std::move(operand);
    operand = Finish(std::move(node));
  }
  return operand;
}

NodePtr Parser::ParseUnarySign() {
  if ((Is(TokenType::kUnary) || Is(TokenType::kAdditive)) && (Peek().value == "-" || Peek().value == "+")) {
    NestingGuard guard(this);
    NodePtr node = NewNode(NodeKind::kUnary, tokens_[pos_++]);
    node->name = tokens_[pos_ - 1].value;
    node->a = ParseUnarySign();
    return Finish(std::move(node));
  }
  return ParseCallMember();
}

NodePtr Parser::ParseCallMember() {
  NodePtr member = ParseMember(ParsePrimary());
  if (Is(TokenType::kOpenParen)) return ParseCall(std::move(member));
  return member;
}

NodePtr Parser::ParseCall(NodePtr callee) {
  while (true) {  // foo(...)(...).x(...)
    NodePtr call = NewNode(NodeKind::kCall, Peek());
    call->a = std::move(callee);
    call->list = ParseArgs(/*parameters=*/false);
    callee = ParseMember(Finish(std::move(call)));
    if (!Is(TokenType::kOpenParen)) return callee;
  }
}

// `(a, b=1, *xs, **kw)`: call arguments, or macro parameters (names with optional defaults).
std::vector<NodePtr> Parser::ParseArgs(bool parameters) {
  NestingGuard guard(this);
  Expect(TokenType::kOpenParen, "'('");
  std::vector<NodePtr> args;
  bool saw_keyword = false;
  while (!Is(TokenType::kCloseParen)) {
    if (AtEnd()) Error("unexpected end of template in an argument list");
    const Token& at = Peek();
    const bool spread = Is(TokenType::kMultiplicative) && at.value == "*";
    const bool keyword_spread = Is(TokenType::kPower);
    if ((spread || keyword_spread) && parameters) Error("argument unpacking is not allowed in parameter declarations");
    NodePtr arg;
    if (spread || keyword_spread) {
      ++pos_;
      arg = NewNode(spread ? NodeKind::kSpread : NodeKind::kKeywordSpread, at);
      arg->a = ParseExpression();
      arg = Finish(std::move(arg));
    } else {
      arg = ParseExpression();
      if (Is(TokenType::kEquals)) {
        ++pos_;
        if (arg->kind != NodeKind::kIdentifier) Error("expected a name before '='");
        NodePtr kw = NewNode(NodeKind::kKeywordArg, at);
        kw->name = arg->name;
        kw->a = ParseExpression();
        arg = Finish(std::move(kw));
        saw_keyword = true;
      } else if (parameters && arg->kind != NodeKind::kIdentifier) {
        Error("expected a parameter name");
      } else if (saw_keyword) {
        Error(parameters ? "non-default argument follows default argument"
                         : "positional arguments must come before keyword arguments");
      }
    }
    args.push_back(std::move(arg));
    if (Is(TokenType::kComma)) ++pos_;
  }
  ++pos_;  // )
  return args;
}

NodePtr Parser::ParseMember(NodePtr object) {
  while (Is(TokenType::kDot) || Is(TokenType::kOpenBracket)) {
    const Token& op = tokens_[pos_++];
    NodePtr node = NewNode(NodeKind::kMember, op);
    node->a = std::move(object);
    if (op.type == TokenType::kOpenBracket) {
      node->flag = true;
      node->b = ParseSubscript(op);
      Expect(TokenType::kCloseBracket, "']'");
    } else {
      if (!Is(TokenType::kIdentifier) && !Is(TokenType::kNumber)) Error("expected a name after '.'");
      node->b = ParsePrimary();
      if (node->b->kind != NodeKind::kIdentifier && node->b->kind != NodeKind::kInt) {
        Error("expected a name or an integer after '.'");
      }
    }
    object = Finish(std::move(node));
  }
  return object;
}

// Inside `[...]`: an index expression or a slice `a:b:c` (each part optional).
NodePtr Parser::ParseSubscript(const Token& at) {
  std::vector<NodePtr> parts;
  bool is_slice = false;
  while (!Is(TokenType::kCloseBracket)) {
    if (AtEnd()) Error("unexpected end of template, expected ']'");
    if (Is(TokenType::kColon)) {
      parts.push_back(nullptr);
      ++pos_;
      is_slice = true;
    } else {
      parts.push_back(ParseExpression());
      if (Is(TokenType::kColon)) {
        ++pos_;
        is_slice = true;
      }
    }
  }
  if (parts.empty()) Error("expected an index or a slice inside '[]'");
  if (!is_slice) return std::move(parts[0]);
  if (parts.size() > 3) Error("a slice has at most 3 parts");
  NodePtr slice = NewNode(NodeKind::kSlice, at);
  parts.resize(3);
  slice->a = std::move(parts[0]);
  slice->b = std::move(parts[1]);
  slice->c = std::move(parts[2]);
  return Finish(std::move(slice));
}

NodePtr Parser::ParsePrimary() {
  if (AtEnd()) Error("unexpected end of template, expected an expression");
  const Token& t = tokens_[pos_++];
  switch (t.type) {
    case TokenType::kNumber: {
      const bool is_float = t.value.find('.') != std::string::npos;
      NodePtr node = NewNode(is_float ? NodeKind::kFloat : NodeKind::kInt, t);
      if (is_float) {
        node->float_value = std::strtod(t.value.c_str(), nullptr);
      } else {
        errno = 0;
        node->int_value = std::strtoll(t.value.c_str(), nullptr, 10);
        if (errno == ERANGE) {  // JavaScript keeps it as an (inexact) number: 1e+22
          node->kind = NodeKind::kFloat;
          node->float_value = std::strtod(t.value.c_str(), nullptr);
        }
      }
      return node;
    }
    case TokenType::kString: {
      NodePtr node = NewNode(NodeKind::kString, t);
      node->name = t.value;
      while (Is(TokenType::kString)) node->name += tokens_[pos_++].value;  // "a" "b" concatenates
      return node;
    }
    case TokenType::kIdentifier: {
      NodePtr node = NewNode(NodeKind::kIdentifier, t);
      node->name = t.value;
      return node;
    }
    case TokenType::kOpenParen: {
      NestingGuard guard(this);
      NodePtr inner = ParseExpressionSequence(false);
      Expect(TokenType::kCloseParen, "')'");
      return inner;
    }
    case TokenType::kOpenBracket:
    case TokenType::kOpenBrace: {
      NestingGuard guard(this);
      const bool is_array = t.type == TokenType::kOpenBracket;
      const TokenType close = is_array ? TokenType::kCloseBracket : TokenType::kCloseBrace;
      NodePtr node = NewNode(is_array ? NodeKind::kArray : NodeKind::kObject, t);
      while (!Is(close)) {
        if (AtEnd()) Error(std::string("unexpected end of template, expected '") + (is_array ? "]" : "}") + "'");
        node->list.push_back(ParseExpression());
        if (!is_array) {
          Expect(TokenType::kColon, "':' between key and value");
          node->list.push_back(ParseExpression());
        }
        if (Is(TokenType::kComma)) ++pos_;
      }
      ++pos_;
      return Finish(std::move(node));
    }
    default:
      --pos_;
      Error("unexpected '" + t.value + "'");
  }
}

}  // namespace

std::vector<NodePtr> Parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).Run(); }

}  // namespace edgedecode::chat
