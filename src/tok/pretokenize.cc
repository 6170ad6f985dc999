#include "tok/pretokenize.h"

#include "tok/unicode.h"

namespace edgedecode::tok {

Result<PreType> PreTypeFromName(const std::string& n) {
  auto any = [&](std::initializer_list<const char*> names) {
    for (const char* x : names) {
      if (n == x) return true;
    }
    return false;
  };
  if (n.empty() || n == "default") return PreType::kDefault;
  if (any({"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion"})) return PreType::kGpt2;
  if (any({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"}))
    return PreType::kLlama3;
  if (any({"dbrx", "smaug-bpe"})) return PreType::kDbrx;
  if (any({"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan"})) return PreType::kQwen2;
  if (n == "deepseek-coder") return PreType::kDeepseekCoder;
  if (any({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}))
    return PreType::kStarcoder;
  return Unsupported("pre-tokenizer '" + n +
                     "' is not supported (supported: default, gpt-2, llama3/llama-bpe, qwen2, "
                     "deepseek-coder, starcoder, dbrx and their aliases)");
}

const char* PreTypeName(PreType t) {
  switch (t) {
    case PreType::kDefault: return "default";
    case PreType::kGpt2: return "gpt-2";
    case PreType::kLlama3: return "llama3";
    case PreType::kDbrx: return "dbrx";
    case PreType::kQwen2: return "qwen2";
    case PreType::kDeepseekCoder: return "deepseek-coder";
    case PreType::kStarcoder: return "starcoder";
  }
  return "?";
}

std::vector<PreRegex> RegexChain(PreType t) {
  switch (t) {
    case PreType::kDefault:
      return {PreRegex::kPunctSymbols, PreRegex::kGpt2, PreRegex::kNumbers, PreRegex::kThreeDigits};
    case PreType::kGpt2: return {PreRegex::kGpt2};
    case PreType::kLlama3:
    case PreType::kDbrx: return {PreRegex::kLlama3};
    case PreType::kQwen2: return {PreRegex::kQwen2};
    case PreType::kDeepseekCoder:
      return {PreRegex::kNewline, PreRegex::kSpaceLetters, PreRegex::kSpacePunct, PreRegex::kCjk,
              PreRegex::kOneNumber};
    case PreType::kStarcoder: return {PreRegex::kOneNumber, PreRegex::kGpt2};
  }
  return {};
}

namespace {

// The text of one piece under match: code points with their classes, [begin, end) of the piece.
// Positions outside the piece read as "nothing" (flags 0), which is how a regex sees the end.
struct Span {
  const uint32_t* cp;
  const uint16_t* fl;
  size_t end;
  uint32_t c(size_t i) const { return i < end ? cp[i] : 0xFFFFFFFFu; }
  uint16_t f(size_t i) const { return i < end ? fl[i] : 0; }
  bool ws(size_t i) const { return f(i) & kCpWhitespace; }
  bool letter(size_t i) const { return f(i) & kCpLetter; }
  bool number(size_t i) const { return f(i) & kCpNumber; }
  bool punct(size_t i) const { return f(i) & kCpPunct; }
  // [^\s\p{L}\p{N}]: any code point of the piece that is none of these.
  bool other(size_t i) const { return i < end && !(fl[i] & (kCpWhitespace | kCpLetter | kCpNumber)); }
  bool crlf(size_t i) const { return c(i) == '\r' || c(i) == '\n'; }
};

uint32_t AsciiLower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive. Returns the match length or 0.
size_t Contraction(const Span& s, size_t p, bool icase) {
  if (s.c(p) != '\'') return 0;
  auto lc = [&](size_t i) { return icase ? AsciiLower(s.c(i)) : s.c(i); };
  const uint32_t a = lc(p + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const uint32_t b = lc(p + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

template <typename Pred>
size_t Run(const Span& s, size_t p, Pred pred) {
  size_t q = p;
  while (pred(q)) q++;
  return q - p;
}

// \s+(?!\S) then (when `plain` is set) \s+. The lookahead makes a run of spaces followed by a
// non-space give back its last space.
size_t SpacesNotBeforeNonSpace(const Span& s, size_t p, bool plain) {
  const size_t n = Run(s, p, [&](size_t i) { return s.ws(i); });
  if (n == 0) return 0;
  if (p + n >= s.end) return n;  // at the end: nothing follows
  if (n > 1) return n - 1;
  return plain ? n : 0;
}

size_t MatchGpt2(const Span& s, size_t p) {
  if (size_t m = Contraction(s, p, false)) return m;
  const size_t q = p + (s.c(p) == ' ' ? 1 : 0);
  if (s.letter(q)) return (q - p) + Run(s, q, [&](size_t i) { return s.letter(i); });
  if (s.number(q)) return (q - p) + Run(s, q, [&](size_t i) { return s.number(i); });
  if (s.other(q)) return (q - p) + Run(s, q, [&](size_t i) { return s.other(i); });
  return SpacesNotBeforeNonSpace(s, p, false);
}

size_t MatchLlama3(const Span& s, size_t p, size_t max_digits) {
  if (size_t m = Contraction(s, p, true)) return m;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (s.letter(p)) return Run(s, p, [&](size_t i) { return s.letter(i); });
  if (p < s.end && !s.crlf(p) && !s.number(p) && s.letter(p + 1))
    return 1 + Run(s, p + 1, [&](size_t i) { return s.letter(i); });
  // \p{N}{1,max}
  if (s.number(p)) {
    const size_t n = Run(s, p, [&](size_t i) { return s.number(i); });
    return n < max_digits ? n : max_digits;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const size_t q = p + (s.c(p) == ' ' ? 1 : 0);
  if (s.other(q)) {
    size_t e = q + Run(s, q, [&](size_t i) { return s.other(i); });
    e += Run(s, e, [&](size_t i) { return s.crlf(i); });
    return e - p;
  }
  // \s*[\r\n]+ : up to the last \r or \n of the run of spaces.
  const size_t n = Run(s, p, [&](size_t i) { return s.ws(i); });
  size_t last = 0;
  for (size_t i = p; i < p + n; ++i) {
    if (s.crlf(i)) last = i + 1;
  }
  if (last) return last - p;
  return SpacesNotBeforeNonSpace(s, p, true);
}

bool InCjk(const Span& s, size_t i) {
  if (i >= s.end || s.ws(i)) return false;  // llama.cpp hides non-ASCII spaces from this regex
  const uint32_t c = s.cp[i];
  return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF);
}

bool PunctOrSymbolAscii(const Span& s, size_t i) {
  if (i >= s.end) return false;
  const uint32_t c = s.cp[i];
  return s.punct(i) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' ||
         c == '~' || c == '|';
}

size_t MatchAt(PreRegex r, const Span& s, size_t p) {
  switch (r) {
    case PreRegex::kGpt2: return MatchGpt2(s, p);
    case PreRegex::kLlama3: return MatchLlama3(s, p, 3);
    case PreRegex::kQwen2: return MatchLlama3(s, p, 1);
    case PreRegex::kPunctSymbols: return Run(s, p, [&](size_t i) { return PunctOrSymbolAscii(s, i); });
    case PreRegex::kNumbers: return Run(s, p, [&](size_t i) { return s.number(i); });
    case PreRegex::kThreeDigits: {
      for (size_t k = 0; k < 3; ++k) {
        if (s.c(p + k) < '0' || s.c(p + k) > '9') return 0;
      }
      return 3;
    }
    case PreRegex::kOneNumber: return s.number(p) ? 1 : 0;
    case PreRegex::kNewline: return s.crlf(p) ? 1 : 0;
    case PreRegex::kSpaceLetters:
      if (s.ws(p) && s.letter(p + 1)) return 1 + Run(s, p + 1, [&](size_t i) { return s.letter(i); });
      return Run(s, p, [&](size_t i) { return s.letter(i); });
    case PreRegex::kSpacePunct:
      if (s.ws(p) && s.punct(p + 1)) return 1 + Run(s, p + 1, [&](size_t i) { return s.punct(i); });
      return Run(s, p, [&](size_t i) { return s.punct(i); });
    case PreRegex::kCjk: return Run(s, p, [&](size_t i) { return InCjk(s, i); });
  }
  return 0;
}

}  // namespace

std::vector<size_t> PreTokenize(const std::vector<uint32_t>& cps, const std::vector<PreRegex>& chain) {
  std::vector<uint16_t> flags(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) flags[i] = CodepointFlags(cps[i]);
  std::vector<size_t> pieces;
  if (!cps.empty()) pieces.push_back(cps.size());
  for (PreRegex r : chain) {
    std::vector<size_t> next;
    next.reserve(pieces.size() * 2);
    size_t start = 0;
    for (size_t len : pieces) {
      const Span s{cps.data(), flags.data(), start + len};
      size_t gap = start;  // first code point not yet emitted
      size_t p = start;
      while (p < s.end) {
        const size_t m = MatchAt(r, s, p);
        if (m == 0) {
          p++;
          continue;
        }
        if (p > gap) next.push_back(p - gap);
        next.push_back(m);
        p += m;
        gap = p;
      }
      if (s.end > gap) next.push_back(s.end - gap);
      start += len;
    }
    pieces.swap(next);
  }
  return pieces;
}

std::vector<std::string> PreTokenizeUtf8(std::string_view text, PreType t) {
  const std::vector<uint32_t> cps = DecodeUtf8(text);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t len : PreTokenize(cps, RegexChain(t))) {
    words.push_back(EncodeUtf8(cps, start, start + len));
    start += len;
  }
  return words;
}

}  // namespace edgedecode::tok
