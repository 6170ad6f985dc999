// The lexer. It first rewrites the text the way the oracle's preprocess() does (keeping, for every
// byte, its offset in the original so that errors can name a line and column), then cuts tokens.
#include "chat/lexer.h"

#include <algorithm>
#include <cstdint>

#include "chat/value.h"

namespace edgedecode::chat {
namespace {

// Text plus, for each byte, the offset it came from in the original template.
struct MappedText {
  std::string text;
  std::vector<uint32_t> origin;
  void Append(std::string_view src_text, size_t src_offset, const MappedText& src) {
    text.append(src_text);
    for (size_t i = 0; i < src_text.size(); ++i) origin.push_back(src.origin[src_offset + i]);
  }
};

bool IsLineStart(const std::string& t, size_t i) {
  if (i == 0) return true;
  const char c = t[i - 1];
  if (c == '\n' || c == '\r') return true;
  // U+2028 / U+2029 (E2 80 A8 / A9) also start a line for a JavaScript multiline `^`.
  return i >= 3 && t.compare(i - 3, 2, "\xe2\x80") == 0 && (t[i - 1] == '\xa8' || t[i - 1] == '\xa9');
}

// lstrip_blocks: /^[ \t]*({[#%-])/gm -> "$1"
MappedText LstripBlocks(const MappedText& in) {
  MappedText out;
  const std::string& t = in.text;
  for (size_t i = 0; i < t.size();) {
    if (IsLineStart(t, i)) {
      size_t j = i;
      while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
      if (j + 1 < t.size() && t[j] == '{' && (t[j + 1] == '#' || t[j + 1] == '%' || t[j + 1] == '-')) i = j;
    }
    out.Append(std::string_view(t).substr(i, 1), i, in);
    ++i;
  }
  return out;
}

// trim_blocks: /([#%-]})\n/g -> "$1"
MappedText TrimBlocks(const MappedText& in) {
  MappedText out;
  const std::string& t = in.text;
  for (size_t i = 0; i < t.size(); ++i) {
    out.Append(std::string_view(t).substr(i, 1), i, in);
    if (i >= 1 && t[i] == '}' && (t[i - 1] == '#' || t[i - 1] == '%' || t[i - 1] == '-') && i + 1 < t.size() &&
        t[i + 1] == '\n') {
      ++i;  // drop the newline
    }
  }
  return out;
}

size_t SkipJsSpaces(std::string_view t, size_t i) {
  while (i < t.size()) {
    const size_t len = JsSpaceAt(t, i);
    if (!len) break;
    i += len;
  }
  return i;
}

// Matches /{%(-?)\s*(?:end)?generation\s*(-?)%}/ at i; returns the end or 0.
size_t MatchGenerationTag(std::string_view t, size_t i, bool* lstrip, bool* rstrip) {
  if (t.substr(i, 2) != "{%") return 0;
  size_t j = i + 2;
  *lstrip = j < t.size() && t[j] == '-';
  if (*lstrip) ++j;
  j = SkipJsSpaces(t, j);
  if (t.substr(j, 3) == "end") j += 3;
  if (t.substr(j, 10) != "generation") return 0;
  j = SkipJsSpaces(t, j + 10);
  *rstrip = j < t.size() && t[j] == '-';
  if (*rstrip) ++j;
  if (t.substr(j, 2) != "%}") return 0;
  return j + 2;
}

// Removes HF's {% generation %} / {% endgeneration %} tags, honouring their `-` markers.
MappedText RemoveGenerationTags(const MappedText& in) {
  MappedText out;
  const std::string_view t = in.text;
  size_t last = 0;
  for (size_t i = t.find("{%"); i != std::string_view::npos; i = t.find("{%", i)) {
    bool lstrip = false, rstrip = false;
    const size_t end = MatchGenerationTag(t, i, &lstrip, &rstrip);
    if (!end) { i += 2; continue; }
    size_t keep_end = i;
    if (lstrip) keep_end = last + TrimJs(t.substr(last, i - last), false, true).size();  // not past the last tag
    out.Append(t.substr(last, keep_end - last), last, in);
    const size_t after = SkipJsSpaces(t, end);
    if (!rstrip) out.Append(t.substr(end, after - end), end, in);
    last = i = after;
  }
  out.Append(t.substr(last), last, in);
  return out;
}

MappedText Preprocess(std::string_view source) {
  MappedText m;
  m.text.assign(source);
  if (!m.text.empty() && m.text.back() == '\n') m.text.pop_back();  // keep_trailing_newline=False
  m.origin.resize(m.text.size());
  for (size_t i = 0; i < m.origin.size(); ++i) m.origin[i] = static_cast<uint32_t>(i);
  return RemoveGenerationTags(TrimBlocks(LstripBlocks(m)));
}

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

struct Rule {
  const char* text;
  TokenType type;
};
// Longest operators first where one is a prefix of another (the oracle's table order, per first char).
constexpr Rule kRules[] = {
    {"{%", TokenType::kOpenStatement}, {"%}", TokenType::kCloseStatement}, {"{{", TokenType::kOpenExpression},
    {"}}", TokenType::kCloseExpression}, {"(", TokenType::kOpenParen}, {")", TokenType::kCloseParen},
    {"{", TokenType::kOpenBrace}, {"}", TokenType::kCloseBrace}, {"[", TokenType::kOpenBracket},
    {"]", TokenType::kCloseBracket}, {",", TokenType::kComma}, {".", TokenType::kDot}, {":", TokenType::kColon},
    {"|", TokenType::kPipe}, {"<=", TokenType::kComparison}, {">=", TokenType::kComparison},
    {"==", TokenType::kComparison}, {"!=", TokenType::kComparison}, {"<", TokenType::kComparison},
    {">", TokenType::kComparison}, {"+", TokenType::kAdditive}, {"-", TokenType::kAdditive},
    {"~", TokenType::kAdditive}, {"**", TokenType::kPower}, {"*", TokenType::kMultiplicative},
    {"//", TokenType::kMultiplicative}, {"/", TokenType::kMultiplicative}, {"%", TokenType::kMultiplicative},
    {"=", TokenType::kEquals},
};

class Lexer {
 public:
  Lexer(std::string_view original, MappedText src) : original_(original), src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < original_.size(); ++i) {
      if (original_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }
  std::vector<Token> Run();

 private:
  const std::string& t() const { return src_.text; }
  char At(size_t i) const { return i < t().size() ? t()[i] : '\0'; }
  void Locate(size_t at, int* line, int* column) const;
  [[noreturn]] void Error(const std::string& message) const;
  void Push(TokenType type, std::string value, size_t at);
  void StripTrailingWhitespace();
  void SkipLeadingWhitespace() { pos_ = SkipJsSpaces(t(), pos_); }
  void SkipSpacesInTag();
  bool LexText();
  void LexComment();
  bool LexWhitespaceControl();
  bool LexUnarySign(char c, TokenType last);
  bool LexRule();
  void LexString(char quote);
  std::string CharAt(size_t i) const;
  uint32_t Hex(int n, char escape);
  void LexNumber(TokenType last);
  std::string Digits();

  std::string_view original_;
  MappedText src_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  int curly_depth_ = 0;  // `{` nesting inside an expression: there `}}` closes braces, not the tag
  std::vector<Token> tokens_;
};

void Lexer::Locate(size_t at, int* line, int* column) const {
  const size_t offset = at < src_.origin.size() ? src_.origin[at] : original_.size();
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
  *line = static_cast<int>(it - line_starts_.begin()) + 1;
  *column = static_cast<int>(offset - *it) + 1;
}

void Lexer::Error(const std::string& message) const {
  int line, column;
  Locate(pos_, &line, &column);
  Fail(Located(line, column, message));
}

void Lexer::Push(TokenType type, std::string value, size_t at) {
  Token tok{type, std::move(value)};
  Locate(at, &tok.line, &tok.column);
  tokens_.push_back(std::move(tok));
}

void Lexer::StripTrailingWhitespace() {
  if (tokens_.empty() || tokens_.back().type != TokenType::kText) return;
  std::string& text = tokens_.back().value;
  text.resize(TrimJs(text, false, true).size());
  if (text.empty()) tokens_.pop_back();
}

// Whitespace between tokens inside a tag; as in the oracle, running into the end of input is an error.
void Lexer::SkipSpacesInTag() {
  while (size_t len = JsSpaceAt(t(), pos_)) {
    pos_ += len;
    if (pos_ >= t().size()) Error("Unexpected end of input");
  }
}

// Text up to the next `{%`, `{{` or `{#`; only after a tag (or at the start).
bool Lexer::LexText() {
  size_t end = pos_;
  while (true) {
    end = t().find('{', end);
    if (end == std::string::npos) { end = t().size(); break; }
    const char next = At(end + 1);
    if (next == '%' || next == '{' || next == '#') break;
    ++end;
  }
  if (end == pos_) return false;
  Push(TokenType::kText, t().substr(pos_, end - pos_), pos_);
  pos_ = end;
  return true;
}

void Lexer::LexComment() {
  const size_t start = pos_;
  pos_ += 2;
  const bool strip_before = At(pos_) == '-';
  if (strip_before) ++pos_;
  const size_t end = t().find("#}", pos_);
  if (end == std::string::npos) { pos_ = start; Error("Missing end of comment tag"); }
  std::string comment = t().substr(pos_, end - pos_);
  const bool strip_after = !comment.empty() && comment.back() == '-';
  if (strip_after) comment.pop_back();
  if (strip_before) StripTrailingWhitespace();
  Push(TokenType::kComment, std::move(comment), start);
  pos_ = end + 2;
  if (strip_after) SkipLeadingWhitespace();
}

// `{%-`, `{{-` (at a tag start) and `-%}`, `-}}` (inside one).
bool Lexer::LexWhitespaceControl() {
  const char c = At(pos_), next = At(pos_ + 1);
  if (c == '{' && At(pos_ + 2) == '-' && (next == '%' || next == '{')) {
    StripTrailingWhitespace();
    Push(next == '%' ? TokenType::kOpenStatement : TokenType::kOpenExpression, next == '%' ? "{%" : "{{", pos_);
    if (next == '{') curly_depth_ = 0;
    pos_ += 3;
    return true;
  }
  if (c == '-' && At(pos_ + 2) == '}' && (next == '%' || next == '}')) {
    Push(next == '%' ? TokenType::kCloseStatement : TokenType::kCloseExpression, next == '%' ? "%}" : "}}", pos_);
    pos_ += 3;
    SkipLeadingWhitespace();
    return true;
  }
  return false;
}

std::string Lexer::Digits() {
  const size_t start = pos_;
  while (IsDigit(At(pos_))) {
    if (++pos_ >= t().size()) Error("Unexpected end of input");
  }
  return t().substr(start, pos_ - start);
}

// A `-`/`+` that cannot be binary (after `(`, `,`, an operator ...) is a sign: folded into a number
// literal when digits follow, else a unary operator token.
bool Lexer::LexUnarySign(char c, TokenType last) {
  switch (last) {
    case TokenType::kIdentifier:
    case TokenType::kNumber:
    case TokenType::kString:
    case TokenType::kCloseParen:
    case TokenType::kCloseBracket: return false;  // binary
    default: break;
  }
  const size_t start = pos_++;
  std::string num = Digits();
  if (!num.empty() && At(pos_) == '.' && IsDigit(At(pos_ + 1))) {
    ++pos_;
    num += '.';
    num += Digits();
  }
  Push(num.empty() ? TokenType::kUnary : TokenType::kNumber, std::string(1, c) + num, start);
  return true;
}

bool Lexer::LexRule() {
  for (const Rule& rule : kRules) {
    const std::string_view seq = rule.text;
    if (seq == "}}" && curly_depth_ > 0) continue;
    if (t().compare(pos_, seq.size(), seq) != 0) continue;
    Push(rule.type, std::string(seq), pos_);
    if (rule.type == TokenType::kOpenExpression) curly_depth_ = 0;
    if (rule.type == TokenType::kOpenBrace) ++curly_depth_;
    if (rule.type == TokenType::kCloseBrace) --curly_depth_;
    pos_ += seq.size();
    return true;
  }
  return false;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;  // a lone surrogate: what node writes for it
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// The whole UTF-8 character at i (for messages: never half of one).
std::string Lexer::CharAt(size_t i) const {
  if (i >= t().size()) return "end of input";
  return std::string(SplitCodePoints(std::string_view(t()).substr(i, 4)).front());
}

// n hex digits at pos_ (\xHH, \uHHHH), consumed.
uint32_t Lexer::Hex(int n, char escape) {
  uint32_t cp = 0;
  for (int k = 0; k < n; ++k) {
    const int h = HexValue(At(pos_ + k));
    if (h < 0) Error(std::string("Invalid hexadecimal escape sequence: \\") + escape);
    cp = cp * 16 + h;
  }
  pos_ += n;
  return cp;
}

void Lexer::LexString(char quote) {
  const size_t start = pos_++;
  std::string str;
  while (true) {
    if (pos_ >= t().size()) { pos_ = start; Error("Unexpected end of input (unterminated string)"); }
    const char c = t()[pos_++];
    if (c == quote) break;
    if (c != '\\') { str += c; continue; }
    if (pos_ >= t().size()) Error("Unexpected end of input");
    const char e = t()[pos_++];
    if (e == 'x' || e == 'u') {
      uint32_t cp = Hex(e == 'x' ? 2 : 4, e);
      // "\ud83d\ude00": a UTF-16 surrogate pair, as JavaScript reads it, is one character.
      if (cp >= 0xd800 && cp <= 0xdbff && At(pos_) == '\\' && At(pos_ + 1) == 'u') {
        const size_t save = pos_;
        pos_ += 2;
        const uint32_t low = Hex(4, 'u');
        if (low >= 0xdc00 && low <= 0xdfff) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        } else {
          pos_ = save;
        }
      }
      AppendUtf8(str, cp);
      continue;
    }
    const char* escapes = "n\nt\tr\rb\bf\fv\v''\"\"\\\\";
    bool found = false;
    for (const char* p = escapes; *p; p += 2) {
      if (*p == e) { str += p[1]; found = true; break; }
    }
    if (!found) { --pos_; Error("Unexpected escaped character: " + CharAt(pos_)); }
  }
  Push(TokenType::kString, std::move(str), start);
}

void Lexer::LexNumber(TokenType last) {
  const size_t start = pos_;
  std::string num = Digits();
  if (last != TokenType::kDot && At(pos_) == '.' && IsDigit(At(pos_ + 1))) {
    ++pos_;
    num += '.';
    num += Digits();
  }
  Push(TokenType::kNumber, std::move(num), start);
}

std::vector<Token> Lexer::Run() {
  while (pos_ < t().size()) {
    const bool have_last = !tokens_.empty();
    const TokenType last = have_last ? tokens_.back().type : TokenType::kText;
    if (!have_last || last == TokenType::kCloseStatement || last == TokenType::kCloseExpression ||
        last == TokenType::kComment) {
      if (LexText()) continue;
    }
    if (At(pos_) == '{' && At(pos_ + 1) == '#') { LexComment(); continue; }
    if (At(pos_) == '{' && LexWhitespaceControl()) continue;
    SkipSpacesInTag();
    const char c = At(pos_);
    if (c == '-' && LexWhitespaceControl()) continue;
    if (c == '-' || c == '+') {
      if (!have_last || last == TokenType::kText) Error("Unexpected character: " + CharAt(pos_));
      if (LexUnarySign(c, last)) continue;
    }
    if (LexRule()) continue;
    if (c == '\'' || c == '"') { LexString(c); continue; }
    if (IsDigit(c)) { LexNumber(last); continue; }
    if (IsWordChar(c)) {
      const size_t start = pos_;
      while (pos_ < t().size() && IsWordChar(t()[pos_])) ++pos_;
      Push(TokenType::kIdentifier, t().substr(start, pos_ - start), start);
      continue;
    }
    Error("Unexpected character: " + CharAt(pos_));
  }
  return std::move(tokens_);
}

}  // namespace

std::string Located(int line, int column, const std::string& message) {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

std::vector<Token> Tokenize(std::string_view source) {
  return Lexer(source, Preprocess(source)).Run();
}

}  // namespace edgedecode::chat
