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

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const gguf::File& file);
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
