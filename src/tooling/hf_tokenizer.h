// Hugging Face tokenizer.json (+ tokenizer_config.json) to a GGUF vocabulary, with the tokenizer.* keys
// llama.cpp's convert_hf_to_gguf.py writes for the same files:
//  - byte-level BPE (Qwen2/3, Llama 3, GPT-2 style): tokenizer.ggml.model "gpt2", the pre-tokenizer named by
//    the Split regex (llama.cpp identifies it by hashing token ids instead; the regex is what that hash stands
//    for), tokens, token types, merges;
//  - SentencePiece-style BPE with byte fallback (Gemma 3): tokenizer.ggml.model "llama" with scores that
//    reproduce the merge order and the token types of a SentencePiece model;
//  - bos/eos/unk/sep/pad/mask ids and add_bos/add_eos from tokenizer_config.json and the post-processor.
// Anything the GGUF tokenizers cannot reproduce (another model type, normalizer or pre-tokenizer) is an
// Unsupported error that names the part. Pure functions apart from the file I/O; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgedecode/status.h"
#include "tok/tokenizer.h"

namespace edgedecode::tooling {

// Largest tokenizer.json / tokenizer_config.json read: the largest real ones are ~35 MB (Gemma 3's 262k tokens),
// and the parsed document takes ~10 times the text (Gemma 3's conversion peaks at ~330 MB).
inline constexpr uint64_t kMaxHfTokenizerBytes = uint64_t{64} << 20;
// Ids may leave gaps (filled with [PADn] tokens), at most this many more than there are entries: an id far
// above the rest would otherwise size the token table.
inline constexpr int64_t kMaxHfIdGaps = 65536;

struct HfVocab {
  tok::VocabSpec spec;       // model, pre, tokens, scores (llama only), token_types, merges, special ids
  int add_sep = -1;          // tokenizer.ggml.add_sep_token (-1: not written)
  int64_t sep = tok::VocabSpec::kUnset, mask = tok::VocabSpec::kUnset;
  std::string chat_template;  // from tokenizer_config.json ("" = none)
  int64_t n_added = 0;        // entries of added_tokens
  int64_t n_padding = 0;      // [PADn] tokens filling ids no entry has
};

// Parses the texts. config_text may be empty (no tokenizer_config.json). `where` / `config_where` name the
// files in errors. vocab_size > 0 pads the vocabulary with [PADn] tokens up to it, like a model's config.json
// vocab_size does (0: the largest id + 1).
Result<HfVocab> HfVocabFromJson(const std::string& json_text, const std::string& where,
                                const std::string& config_text, const std::string& config_where,
                                int64_t vocab_size = 0);

// Reads the files (config_path may be empty), converts, and writes a vocab-only GGUF to out_path atomically
// (a temporary file renamed at the end).
Result<HfVocab> ConvertHfTokenizer(const std::string& json_path, const std::string& config_path,
                                   const std::string& out_path, int64_t vocab_size = 0);

}  // namespace edgedecode::tooling
