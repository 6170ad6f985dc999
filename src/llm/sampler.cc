#include "llm/sampler.h"

#include <algorithm>
#include <cmath>

#include "base/splitmix64.h"

namespace edgedecode::llm {

Sampler::Sampler(const SamplerParams& p) : p_(p), state_(p.seed ^ 0x9e3779b97f4a7c15ull) {}

double Sampler::NextUniform() { return SplitMix64Uniform(&state_); }

void Sampler::Accept(int32_t token) {
  if (p_.repeat_last_n <= 0) return;
  recent_.push_back(token);
  while (static_cast<int>(recent_.size()) > p_.repeat_last_n) recent_.pop_front();
}

int32_t Sampler::Sample(const float* logits, int n_vocab) {
  cand_.resize(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) cand_[static_cast<size_t>(i)] = {logits[i], i};
  if (p_.repeat_penalty != 1.0f) {
    std::vector<int32_t> seen(recent_.begin(), recent_.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t t : seen) {
      if (t < 0 || t >= n_vocab) continue;
      float& l = cand_[static_cast<size_t>(t)].first;
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
    }
  }
  int32_t chosen;
  if (p_.temperature <= 0) {
    // Greedy; ties go to the lowest id (as llama.cpp's argmax does).
    size_t best = 0;
    for (size_t i = 1; i < cand_.size(); ++i)
      if (cand_[i].first > cand_[best].first) best = i;
    chosen = cand_[best].second;
  } else {
    auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
    size_t n = cand_.size();
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
      std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
      n = static_cast<size_t>(p_.top_k);
    } else {
      std::sort(cand_.begin(), cand_.end(), by_logit);
    }
    // Softmax over the survivors at the temperature.
    std::vector<double> prob(n);
    const double mx = cand_[0].first;
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp((cand_[i].first - mx) / p_.temperature);
    for (double& x : prob) x /= sum;
    if (p_.min_p > 0) {
      size_t keep = 1;
      while (keep < n && prob[keep] >= p_.min_p * prob[0]) ++keep;
      n = keep;
    }
    if (p_.top_p < 1.0f) {
      double cum = 0;
      size_t keep = 0;
      while (keep < n) {
        cum += prob[keep++];
        if (cum >= p_.top_p) break;
      }
      n = keep;
    }
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += prob[i];
    double r = NextUniform() * total;
    size_t pick = n - 1;
    for (size_t i = 0; i < n; ++i) {
      r -= prob[i];
      if (r < 0) {
        pick = i;
        break;
      }
    }
    chosen = cand_[pick].second;
  }
  Accept(chosen);
  return chosen;
}

}  // namespace edgedecode::llm
