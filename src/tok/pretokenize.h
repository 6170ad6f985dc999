// GPT-2-style pre-tokenizers: split text into words before BPE, as the regexes llama.cpp uses per
// tokenizer.ggml.pre do. The regexes use \p{L}, \p{N}, \p{P} and \s, which std::regex cannot
// express, so each regex is a hand-written matcher over code point classes (tok/unicode.h) that
// follows the regex's leftmost-first, backtracking semantics. A pre-tokenizer is a chain of regexes:
// each one splits every piece left by the previous one into its matches and the gaps between them.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edgedecode/status.h"

namespace edgedecode::tok {

enum class PreType {
  kDefault,        // llama.cpp LLAMA_VOCAB_PRE_TYPE_DEFAULT
  kGpt2,           // gpt-2, mpt, olmo, jais, phi-2, ...
  kLlama3,         // llama3, llama-bpe, llama-v3, falcon3, ...
  kDbrx,           // llama3's regex without ignore_merges (dbrx, smaug-bpe)
  kQwen2,          // qwen2, stablelm2, deepseek-r1-qwen, megrez
  kDeepseekCoder,  // deepseek-coder
  kStarcoder,      // starcoder, refact, command-r, smollm, codeshell, exaone, minerva-7b
};

// Maps tokenizer.ggml.pre to a type; Unsupported naming the value (and the supported ones) otherwise.
// An empty name gives kDefault, like llama.cpp.
Result<PreType> PreTypeFromName(const std::string& name);
const char* PreTypeName(PreType t);

// One regex of a chain, by name (for tests): "gpt2", "llama3", "qwen2", "punct_symbols" ...
enum class PreRegex {
  kGpt2,           // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  kLlama3,         // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,          // as kLlama3 with \p{N} instead of \p{N}{1,3}
  kPunctSymbols,   // [\p{P}\$\+<=>\^~\|]+
  kNumbers,        // \p{N}+
  kThreeDigits,    // [0-9][0-9][0-9]
  kOneNumber,      // \p{N}
  kNewline,        // [\r\n]
  kSpaceLetters,   // \s?\p{L}+
  kSpacePunct,     // \s?\p{P}+
  kCjk,            // [一-龥ࠀ-一가-퟿]+
};

std::vector<PreRegex> RegexChain(PreType t);

// Splits code points into words; returns the word lengths in code points (they sum to cps.size()).
std::vector<size_t> PreTokenize(const std::vector<uint32_t>& cps, const std::vector<PreRegex>& chain);

// Convenience: UTF-8 in, UTF-8 words out (invalid bytes become U+FFFD, as in llama.cpp).
std::vector<std::string> PreTokenizeUtf8(std::string_view text, PreType t);

}  // namespace edgedecode::tok
