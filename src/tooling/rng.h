// Deterministic random numbers for synthetic weights: the same seed gives the same bits on every
// machine, compiler and standard library (std::normal_distribution is implementation-defined, so it
// is not used). Header-only; each generator is owned by one thread.
#pragma once

#include <cstdint>

#include "base/splitmix64.h"

namespace edgedecode::tooling {

// splitmix64: seeds streams and hashes (seed, tensor, row) into independent stream seeds.
using edgedecode::SplitMix64;

inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0xd1b54a32d192ed03ull);
  SplitMix64(&s);
  return SplitMix64(&s);
}

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = SplitMix64(&seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 24 bits.
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  // Approximately standard normal: the Irwin-Hall sum of four 16-bit uniforms from one draw, centred
  // and scaled to unit variance. Only integer and exactly-rounded float arithmetic, so it is
  // bit-identical everywhere (no libm); tails end at +-3.46, which is fine for random weights.
  float Normal() {
    const uint64_t r = Next();
    const int64_t sum = static_cast<int64_t>(r & 0xffff) + static_cast<int64_t>((r >> 16) & 0xffff) +
                        static_cast<int64_t>((r >> 32) & 0xffff) + static_cast<int64_t>(r >> 48);
    // sum of 4 uniforms on {0..65535}: mean 2 * 65535, variance 4 * (65536^2 - 1) / 12.
    constexpr double kMean = 2.0 * 65535.0;
    constexpr double kInvStd = 1.0 / 37837.22723;  // sqrt(4 * (65536^2 - 1) / 12)
    return static_cast<float>((static_cast<double>(sum) - kMean) * kInvStd);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace edgedecode::tooling
