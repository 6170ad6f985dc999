// The tensor types of GGUF files, with ggml's numbering (the numbers are on disk: never renumber).
// Block layouts are llama.cpp's; src/quant/ implements them. Thread-safe (constant tables).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace edgedecode {

enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3,
  // 4 and 5 were Q4_2/Q4_3, removed upstream
  kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22,
  kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30,
  kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39,
};

struct GgmlTypeTraits {
  const char* name;      // llama.cpp's lower-case name: "q4_0", "f16", ...
  int64_t block_size;    // elements per block (1 for plain types)
  size_t type_size;      // bytes per block
  bool known;            // the layout is known (so sizes can be computed)
  bool supported;        // edgedecode can compute with it (IQ types: known size, not supported)
};

// Traits for a raw type number from a file; unknown numbers give known=false.
const GgmlTypeTraits& TypeTraits(uint32_t type);
inline const GgmlTypeTraits& TypeTraits(GgmlType t) { return TypeTraits(static_cast<uint32_t>(t)); }
// Bytes of a row of n elements (n must be a multiple of block_size).
size_t RowBytes(GgmlType t, int64_t n);
// Parses "q4_0", "Q4_K", "f16" ...; false when unknown.
bool ParseGgmlType(std::string_view name, GgmlType* out);
std::string TypeName(uint32_t type);

}  // namespace edgedecode
