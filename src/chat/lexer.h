// Template text -> tokens, as @huggingface/jinja's lexer does it for chat templates: trim_blocks and
// lstrip_blocks on, one trailing newline dropped, `{%-`/`-%}` (and `{{-`, `{#-` ...) strip whitespace,
// HF's `{% generation %}` tags removed. Every token keeps its line and column in the original text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgedecode::chat {

enum class TokenType {
  kText, kNumber, kString, kIdentifier, kEquals, kOpenParen, kCloseParen, kOpenStatement,
  kCloseStatement, kOpenExpression, kCloseExpression, kOpenBracket, kCloseBracket, kOpenBrace,
  kCloseBrace, kComma, kDot, kColon, kPipe, kAdditive, kMultiplicative, kPower, kComparison,
  kUnary, kComment,
};

struct Token {
  TokenType type;
  std::string value;
  int line = 0, column = 0;  // 1-based, in the template as given
};

// Throws TemplateError ("line L, column C: ...") on a lexical error.
std::vector<Token> Tokenize(std::string_view source);

// "line L, column C: message"
std::string Located(int line, int column, const std::string& message);

}  // namespace edgedecode::chat
