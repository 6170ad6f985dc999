// Import of llama2.c checkpoints (Karpathy's run.c format) into GGUF "llama", as llama.cpp's
// convert-llama2c-to-ggml does: same tensor names, order and values (no RoPE permutation is needed:
// llama2.c stores wq/wk in the interleaved-pair layout llama.cpp's "llama" RoPE uses), same
// tokenizer arrays. Thread-safe (no shared state).
//
// Checkpoint formats (little-endian):
//   legacy:    7 x i32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len}
//              (vocab_size < 0: the classifier is not shared and wcls follows), then f32 arrays:
//              token_embedding[vocab][dim], rms_att[L][dim], wq[L][dim][dim], wk[L][kv_dim][dim],
//              wv[L][kv_dim][dim], wo[L][dim][dim], rms_ffn[L][dim], w1[L][hidden][dim],
//              w2[L][dim][hidden], w3[L][hidden][dim], rms_final[dim],
//              freq_cis_real[seq_len][hd/2], freq_cis_imag[seq_len][hd/2] (skipped), [wcls[vocab][dim]]
//   version 1: u32 magic 0x616b3432 ("ak42"), i32 version 1, the 7 i32 (vocab_size > 0), u8
//              shared_classifier, zero padding to 256 bytes; then rms_att[L], rms_ffn[L], rms_final,
//              token_embedding, wq[L], wk[L], wv[L], wo[L], w1[L], w2[L], w3[L], [wcls]
// Tokenizer (tokenizer.bin): i32 max_token_length, then vocab_size x {f32 score, i32 len, len bytes}.
#pragma once

#include <string>

#include "edgedecode/status.h"

namespace edgedecode::tooling {

struct Llama2cInfo {
  int version = 0;  // 0 legacy, 1 version 1
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
  bool shared_classifier = true;
};

// Converts model_path + tokenizer_path to out_path (f32, like llama.cpp's converter). The context
// length written is the checkpoint's seq_len. Errors name the file and what does not fit.
Status ConvertLlama2c(const std::string& model_path, const std::string& tokenizer_path,
                      const std::string& out_path, Llama2cInfo* info = nullptr);

}  // namespace edgedecode::tooling
