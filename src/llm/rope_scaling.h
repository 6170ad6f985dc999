// Llama 3.1 / 3.2 RoPE scaling ("rope_type": "llama3" in the Hugging Face config): each rotary frequency
// is divided by a factor that is 1 for short wavelengths, `factor` for long ones and a smooth blend in
// between. llama.cpp does not compute this at run time: its converter writes the factors as the f32
// tensor rope_freqs.weight (n_rot/2), which ggml's rope divides each angle by. synth writes that tensor
// with this function, and the loader uses it only for files that carry rope.scaling.type = "llama3"
// instead of the tensor. Header-only so that the runtime and the tooling share one definition.
// Pure function; thread-safe.
#pragma once

#include <cmath>
#include <vector>

namespace edgedecode::llm {

struct Llama3RopeScaling {
  float factor = 8.0f;           // divisor of the long wavelengths
  float low_freq_factor = 1.0f;  // wavelengths above orig_ctx / low_freq_factor get `factor`
  float high_freq_factor = 4.0f; // wavelengths below orig_ctx / high_freq_factor are left alone
  float orig_ctx = 8192.0f;      // original_max_position_embeddings
};

// The n_rot/2 divisors for rotary dims n_rot and base `base`. The arithmetic is float32, in the order of
// llama.cpp's converter (convert_hf_to_gguf.py: torch float32 frequencies and wavelengths), so that the
// values match its rope_freqs.weight to the rounding of pow.
inline std::vector<float> Llama3RopeFactors(int n_rot, float base, const Llama3RopeScaling& s) {
  std::vector<float> out;
  const float pi = 3.14159265358979323846f;
  const float low_wavelen = s.orig_ctx / s.low_freq_factor;
  const float high_wavelen = s.orig_ctx / s.high_freq_factor;
  for (int i = 0; i < n_rot; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(n_rot));
    const float wavelen = 2.0f * pi / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(s.factor);
    } else {
      const float smooth = (s.orig_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      out.push_back(1.0f / ((1.0f - smooth) / s.factor + smooth));
    }
  }
  return out;
}

}  // namespace edgedecode::llm
