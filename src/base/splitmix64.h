// splitmix64 (Steele, Lea & Flood): one step of a 64-bit generator whose sequence is the same on every
// machine, compiler and standard library. The sampler, the replay drafter and synthetic weights draw from it.
#pragma once

#include <cstdint>

namespace edgedecode {

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A double in [0, 1) from the top 53 bits of one step.
inline double SplitMix64Uniform(uint64_t* state) { return static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53; }

}  // namespace edgedecode
