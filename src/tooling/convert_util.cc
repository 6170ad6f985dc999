#include "tooling/convert_util.h"

#include <cstring>

#include "quant/quant.h"

namespace edgedecode::tooling {

GgmlType FitType(GgmlType want, int64_t row_len) {
  auto fits = [&](GgmlType t) { return row_len % TypeTraits(t).block_size == 0; };
  if (fits(want)) return want;
  GgmlType t = GgmlType::kF16;
  switch (want) {
    case GgmlType::kQ2_K: case GgmlType::kQ3_K: t = GgmlType::kQ4_0; break;
    case GgmlType::kQ4_K: t = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: t = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: t = GgmlType::kQ8_0; break;
    default: break;
  }
  return fits(t) ? t : GgmlType::kF16;
}

static const GgmlType kWritable[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1,
    GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
    GgmlType::kQ6_K};

bool IsWritableType(GgmlType t) {
  for (GgmlType w : kWritable)
    if (w == t) return quant::CanQuantize(t);
  return false;
}

std::string WritableTypeList() {
  std::string s;
  for (GgmlType w : kWritable) {
    if (!s.empty()) s += ", ";
    s += TypeTraits(w).name;
  }
  return s;
}

void ConvertRows(const float* src, int64_t rows, int64_t n, GgmlType t, uint8_t* dst, ThreadPool* pool) {
  const size_t row_bytes = RowBytes(t, n);
  auto work = [&](int64_t r0, int64_t r1, int) {
    if (t == GgmlType::kF32) {
      std::memcpy(dst + r0 * row_bytes, src + r0 * n, (r1 - r0) * row_bytes);
      return;
    }
    for (int64_t r = r0; r < r1; ++r) quant::QuantizeRow(t, src + r * n, dst + r * row_bytes, n);
  };
  if (pool && pool->size() > 1 && rows > 1) {
    pool->ParallelFor(rows, 1, work);
  } else {
    work(0, rows, 0);
  }
}

}  // namespace edgedecode::tooling
