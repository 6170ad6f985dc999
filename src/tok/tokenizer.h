// Tokenizers built from GGUF metadata (tokenizer.ggml.*), matching llama.cpp's llama-vocab:
//  - "llama": SentencePiece-style BPE over scores, with byte fallback (<0xXX> tokens), space prefix.
//  - "gpt2": GPT-2-style byte-level BPE over merges, with the pre-tokenizer the vocab names
//    (tokenizer.ggml.pre: default/gpt-2, deepseek-coder, llama-bpe/llama3, qwen2, ...).
// Special/control tokens in the text are recognized when parse_special is true (as llama.cpp's
// llama-tokenize does by default for its golden tests).
//
// A Tokenizer is immutable after construction and safe to use from many threads. It copies what it
// needs from the GGUF file, so the file may be closed afterwards.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgedecode/status.h"
#include "gguf/gguf.h"

namespace edgedecode::tok {

// The tokenizer.ggml.* metadata, decoded (what FromGguf reads; synth can build one in memory).
struct VocabSpec {
  static constexpr int64_t kUnset = -2;
  std::string model;                 // tokenizer.ggml.model: "llama" | "gpt2"
  std::string pre;                   // tokenizer.ggml.pre ("" = default)
  std::string name;                  // general.name (llama.cpp keys some token attributes on it)
  std::vector<std::string> tokens;   // [n_vocab]
  std::vector<float> scores;         // [n_vocab] or empty (all 0)
  std::vector<int64_t> token_types;  // [n_vocab] or empty (all normal): 1 normal .. 6 byte
  std::vector<std::string> merges;   // gpt2: "left right", by rank
  int64_t bos = kUnset, eos = kUnset, eot = kUnset, eom = kUnset, unk = kUnset, pad = kUnset;
  int add_bos = -1, add_eos = -1, add_space_prefix = -1;  // -1: the model's default
};

// Largest vocabulary accepted (the largest real ones have ~260k tokens); a bigger one is Corrupt, before the
// tables sized by it are built.
inline constexpr size_t kMaxVocab = size_t{1} << 22;

class Tokenizer {
 public:
  // Errors: NotFound for a missing tokenizer key, Unsupported for another tokenizer.ggml.model or
  // pre-tokenizer, Corrupt for inconsistent arrays or a vocab mangled by a UTF-8 re-encoding.
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const gguf::File& file);
  static Result<std::unique_ptr<Tokenizer>> FromSpec(const VocabSpec& spec);
  virtual ~Tokenizer() = default;

  // Text to ids. add_bos prepends BOS when the vocab has one (callers pass add_bos_default() unless
  // the user said --no-bos).
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special = true) const = 0;
  // The bytes this token stands for when detokenized (SPM "▁" becomes " ", byte tokens become their
  // byte, GPT-2 byte-level symbols are unmapped). Control tokens give "" unless render_special.
  virtual std::string TokenToPiece(int32_t id, bool render_special = false) const = 0;
  // The vocab's raw token string, as stored.
  virtual const std::string& TokenText(int32_t id) const = 0;
  // Concatenates pieces; drops the leading space the SPM tokenizer adds after BOS, like llama.cpp.
  virtual std::string Decode(const std::vector<int32_t>& ids) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos() const = 0;  // -1 when none
  virtual int32_t eos() const = 0;  // -1 when none
  virtual bool add_bos_default() const = 0;
  virtual bool IsEndOfGeneration(int32_t id) const = 0;  // eos, eot, eom ...
  virtual std::string model() const = 0;  // "llama", "gpt2"
  // Oddities found while loading that did not stop it (out-of-range special ids, ...).
  virtual const std::vector<std::string>& warnings() const = 0;
  // Id of a token by its exact text, -1 when none.
  virtual int32_t TokenId(const std::string& text) const = 0;
};

// Turns a stream of token pieces into valid UTF-8 text: bytes of an incomplete multi-byte sequence are
// held back until the sequence completes (byte-fallback tokens split characters across tokens).
class Utf8Stream {
 public:
  // Appends bytes; returns the longest prefix of complete UTF-8 now available.
  std::string Push(const std::string& bytes);
  // Whatever is left (an invalid or unfinished sequence), with invalid bytes as U+FFFD.
  std::string Flush();

 private:
  std::string pending_;
};

}  // namespace edgedecode::tok
