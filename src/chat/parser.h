// Tokens -> syntax tree, with the grammar and operator precedence of @huggingface/jinja (e.g. filters
// bind tighter than unary minus; `**` is left-associative). Throws TemplateError with the line and
// column of the offending token; nesting deeper than kMaxNesting is an error, not a stack overflow.
#pragma once

#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace edgedecode::chat {

constexpr int kMaxNesting = 128;  // statement and expression nesting, and syntax tree height / 2

std::vector<NodePtr> Parse(std::vector<Token> tokens);

}  // namespace edgedecode::chat
