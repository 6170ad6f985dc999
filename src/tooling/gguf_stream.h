// Streaming GGUF v3 writer for files too large to hold in memory (a 1.1B-parameter f32 model is 4.4 GB):
// the caller declares every tensor (name, dims, type) first, then Begin() writes the header, and the
// tensor bytes follow one tensor at a time, in declaration order. The file is written under
// path + ".tmp" and renamed by Finish(), so a failed run never leaves a half file under the name.
//
// Same on-disk layout as gguf::Writer (src/gguf/gguf_writer.cc). Single-threaded; not copyable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"
#include "gguf/gguf.h"

namespace edgedecode::tooling {

class StreamWriter {
 public:
  explicit StreamWriter(uint64_t alignment = 32) : alignment_(alignment) {}
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Metadata keeps insertion order; setting a key twice replaces the value in place.
  void Set(const std::string& key, gguf::Value v);
  const gguf::Value* Find(const std::string& key) const;
  // Declares a tensor; returns InvalidArgument when the row length does not fit the type.
  Status Declare(const std::string& name, std::vector<int64_t> dims, GgmlType type);
  size_t tensor_count() const { return tensors_.size(); }
  size_t TensorBytes(size_t i) const { return tensors_[i].nbytes; }
  uint64_t TotalDataBytes() const;

  Status Begin(const std::string& path);
  // Appends bytes of the tensors in declaration order; a tensor may come in several pieces (a
  // piece must not run past the end of the current tensor). Padding is added when a tensor is complete.
  Status Write(const void* data, size_t nbytes);
  // All tensors must have been written. Flushes, closes and renames.
  Status Finish();

 private:
  struct Decl {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    size_t nbytes;
  };
  void Bytes(const void* p, size_t n);
  void Pad();
  void Abort();

  uint64_t alignment_;
  std::vector<std::pair<std::string, gguf::Value>> kv_;
  std::vector<Decl> tensors_;
  std::string path_, tmp_;
  FILE* f_ = nullptr;
  bool io_ok_ = true;
  uint64_t pos_ = 0;
  size_t next_ = 0;      // tensor being written
  size_t next_done_ = 0; // bytes of it written so far
};

}  // namespace edgedecode::tooling
