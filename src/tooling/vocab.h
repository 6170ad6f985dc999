// Tokenizer metadata for models made by synth: a synthetic SentencePiece ("llama") vocabulary, or the
// tokenizer.* keys copied from a vocab GGUF. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "edgedecode/status.h"
#include "gguf/gguf.h"
#include "tooling/gguf_stream.h"

namespace edgedecode::tooling {

// Smallest vocabulary the synthetic tokenizer accepts: <unk>, <s>, </s> and the 256 byte tokens.
constexpr int64_t kMinSyntheticVocab = 259;

// Writes a SentencePiece-style vocabulary of exactly `vocab` tokens: 0 <unk> (unknown), 1 <s> and
// 2 </s> (control), 3..258 <0x00>..<0xFF> (byte fallback), then pieces built by merging two existing
// pieces (so each is reachable by the SPM bigram merges), common English words first, with falling
// scores. The vocabulary depends only on `vocab`, not on the weight seed.
Status SetSyntheticSpmTokenizer(int64_t vocab, StreamWriter* w);

// Copies every tokenizer.* key of src; returns the number of tokens (tokenizer.ggml.tokens).
Result<int64_t> CopyTokenizer(const gguf::File& src, StreamWriter* w);

}  // namespace edgedecode::tooling
