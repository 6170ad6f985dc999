// The key rotation of quantized KV caches (Context::rotate_k), shared by the cache write and attention.
#pragma once

#include <cmath>

namespace edgedecode::llm {

// In-place normalized Walsh-Hadamard transform of n (a power of two) floats: orthogonal, its own inverse.
inline void Hadamard(float* x, int n) {
  for (int len = 1; len < n; len <<= 1) {
    for (int i = 0; i < n; i += 2 * len) {
      for (int j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  for (int i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace edgedecode::llm
