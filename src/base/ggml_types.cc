#include "edgedecode/ggml_types.h"

#include <algorithm>
#include <cassert>
#include <cctype>

namespace edgedecode {
namespace {

// Indexed by the on-disk type number. Sizes follow llama.cpp's block structs (ggml-common.h).
constexpr GgmlTypeTraits kUnknown = {"unknown", 0, 0, false, false};
constexpr GgmlTypeTraits kTraits[] = {
    /* 0 */ {"f32", 1, 4, true, true},
    /* 1 */ {"f16", 1, 2, true, true},
    /* 2 */ {"q4_0", 32, 18, true, true},
    /* 3 */ {"q4_1", 32, 20, true, true},
    /* 4 */ kUnknown,
    /* 5 */ kUnknown,
    /* 6 */ {"q5_0", 32, 22, true, true},
    /* 7 */ {"q5_1", 32, 24, true, true},
    /* 8 */ {"q8_0", 32, 34, true, true},
    /* 9 */ {"q8_1", 32, 36, true, false},
    /* 10 */ {"q2_k", 256, 84, true, true},
    /* 11 */ {"q3_k", 256, 110, true, true},
    /* 12 */ {"q4_k", 256, 144, true, true},
    /* 13 */ {"q5_k", 256, 176, true, true},
    /* 14 */ {"q6_k", 256, 210, true, true},
    /* 15 */ {"q8_k", 256, 292, true, false},
    /* 16 */ {"iq2_xxs", 256, 66, true, false},
    /* 17 */ {"iq2_xs", 256, 74, true, false},
    /* 18 */ {"iq3_xxs", 256, 98, true, false},
    /* 19 */ {"iq1_s", 256, 50, true, false},
    /* 20 */ {"iq4_nl", 32, 18, true, false},
    /* 21 */ {"iq3_s", 256, 110, true, false},
    /* 22 */ {"iq2_s", 256, 82, true, false},
    /* 23 */ {"iq4_xs", 256, 136, true, false},
    /* 24 */ {"i8", 1, 1, true, false},
    /* 25 */ {"i16", 1, 2, true, false},
    /* 26 */ {"i32", 1, 4, true, false},
    /* 27 */ {"i64", 1, 8, true, false},
    /* 28 */ {"f64", 1, 8, true, false},
    /* 29 */ {"iq1_m", 256, 56, true, false},
    /* 30 */ {"bf16", 1, 2, true, true},
    /* 31 */ kUnknown,
    /* 32 */ kUnknown,
    /* 33 */ kUnknown,
    /* 34 */ {"tq1_0", 256, 54, true, false},
    /* 35 */ {"tq2_0", 256, 66, true, false},
    /* 36 */ kUnknown,
    /* 37 */ kUnknown,
    /* 38 */ kUnknown,
    /* 39 */ {"mxfp4", 32, 17, true, false},
};
constexpr uint32_t kNumTraits = sizeof(kTraits) / sizeof(kTraits[0]);

}  // namespace

const GgmlTypeTraits& TypeTraits(uint32_t type) {
  static const GgmlTypeTraits unknown = kUnknown;
  return type < kNumTraits ? kTraits[type] : unknown;
}

size_t RowBytes(GgmlType t, int64_t n) {
  const GgmlTypeTraits& tr = TypeTraits(t);
  assert(tr.known && n % tr.block_size == 0);
  return static_cast<size_t>(n / tr.block_size) * tr.type_size;
}

bool ParseGgmlType(std::string_view name, GgmlType* out) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (uint32_t i = 0; i < kNumTraits; ++i) {
    if (kTraits[i].known && lower == kTraits[i].name) {
      *out = static_cast<GgmlType>(i);
      return true;
    }
  }
  return false;
}

std::string TypeName(uint32_t type) {
  const GgmlTypeTraits& tr = TypeTraits(type);
  return tr.known ? tr.name : "type#" + std::to_string(type);
}

}  // namespace edgedecode
