// Next-token sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, with a seeded
// RNG whose sequence is the same on every platform (splitmix64, not <random>'s distributions).
// A Sampler is not thread-safe; one per sequence.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace edgedecode::llm {

struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy
  int top_k = 40;            // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off (llama.cpp semantics: logit / r if > 0 else logit * r)
  int repeat_last_n = 64;
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p);
  // Picks the next token from n_vocab logits (not modified) and records it for the penalty.
  int32_t Sample(const float* logits, int n_vocab);
  // Records a token that was not sampled (prompt tokens), for the repetition penalty.
  void Accept(int32_t token);

 private:
  double NextUniform();  // [0, 1)
  SamplerParams p_;
  uint64_t state_;
  std::deque<int32_t> recent_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace edgedecode::llm
