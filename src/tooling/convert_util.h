// Helpers shared by synth and quantize: choosing a type that fits a row length, and converting rows
// of floats to any writable type in parallel. Thread-safe (pure functions; the pool is the caller's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"

namespace edgedecode::tooling {

// The type used for a matrix whose rows have row_len elements when `want` was asked for: `want`
// when row_len is a multiple of its block size, otherwise llama.cpp's fallback (q4_k -> q5_0,
// q5_k -> q5_1, q6_k -> q8_0, q2_k/q3_k -> q4_0; then f16 when even that does not fit).
GgmlType FitType(GgmlType want, int64_t row_len);

// The types quantize and synth write.
bool IsWritableType(GgmlType t);
std::string WritableTypeList();

// Converts rows x n floats (row-major) into dst (rows * RowBytes(t, n) bytes), rows split over the pool.
void ConvertRows(const float* src, int64_t rows, int64_t n, GgmlType t, uint8_t* dst, ThreadPool* pool);

}  // namespace edgedecode::tooling
