// GGUF files: reading (versions 1-3, memory-mapped tensor data) and writing (version 3).
// The format is documented at the top of gguf_reader.cc.
//
// Ownership: a gguf::File owns its mapping; TensorInfo::data points into it and lives as long as the
// File. A File is immutable after Open and safe to read from many threads. A Writer is single-threaded.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "edgedecode/ggml_types.h"
#include "edgedecode/status.h"

namespace edgedecode::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* ValueTypeName(ValueType t);

// Bytes of one element of a scalar type (u8 .. f64, bool); 0 for kString and kArray.
size_t ValueTypeSize(ValueType t);

// Parsed metadata takes at most this many times the file size, plus kMetadataMemorySlack, of memory; a file
// whose metadata would take more is Corrupt (numbers and bools of arrays are kept packed, so only absurd
// files, e.g. millions of empty strings, come near it).
inline constexpr uint64_t kMetadataMemoryPerFileByte = 4;
inline constexpr uint64_t kMetadataMemorySlack = uint64_t{16} << 20;

// One metadata value. Scalars use the field of their kind. Arrays hold array_size() elements of array_type,
// kept compactly: numbers and bools packed as the file stores them (`packed`, little-endian,
// ValueTypeSize(array_type) bytes each), strings in `strings`, nested arrays (type kArray) in `array`; so a
// long array costs about its size in the file, not a whole Value per element.
struct Value {
  ValueType type = ValueType::kUint32;
  uint64_t u = 0;      // kUint8..kUint64, kBool (0/1)
  int64_t i = 0;       // kInt8..kInt64
  double f = 0;        // kFloat32, kFloat64
  std::string str;     // kString
  ValueType array_type = ValueType::kUint32;
  std::vector<uint8_t> packed;       // kArray of numbers or bools
  std::vector<std::string> strings;  // kArray of kString
  std::vector<Value> array;          // kArray of kArray

  bool is_integer() const;
  bool is_float() const { return type == ValueType::kFloat32 || type == ValueType::kFloat64; }
  // Numeric value of any integer/float/bool scalar (a float is truncated and saturated to int64; NaN gives 0).
  double as_double() const;
  int64_t as_int() const;
  // Elements of an array (0 for a scalar), and element i as a Value of its own.
  size_t array_size() const;
  Value element(size_t i) const;

  static Value U32(uint32_t v);
  static Value I32(int32_t v);
  static Value U64(uint64_t v);
  static Value F32(float v);
  static Value Bool(bool v);
  static Value Str(std::string v);
  static Value StrArray(const std::vector<std::string>& v);
  static Value F32Array(const std::vector<float>& v);
  static Value I32Array(const std::vector<int32_t>& v);
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous row length (ne0)
  uint32_t type = 0;          // raw GgmlType number
  uint64_t offset = 0;        // from the start of the data section
  uint64_t nbytes = 0;        // computed from dims and type
  const uint8_t* data = nullptr;  // into the File's mapping

  int64_t n_elements() const;
  int64_t rows() const { return dims.empty() ? 0 : n_elements() / dims[0]; }
  GgmlType ggml_type() const { return static_cast<GgmlType>(type); }
};

class File {
 public:
  // Maps and validates the file: magic, version, every length against the file size, tensor types,
  // alignment, tensor data in bounds and not overlapping. Errors name the file, the offset and the item.
  static Result<std::unique_ptr<File>> Open(const std::string& path);
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* Find(const std::string& key) const;
  // Typed getters: NotFound naming the key when missing, Corrupt when the type does not fit.
  Result<std::string> GetString(const std::string& key) const;
  Result<int64_t> GetInt(const std::string& key) const;
  Result<double> GetFloat(const std::string& key) const;
  Result<bool> GetBool(const std::string& key) const;
  Result<std::vector<std::string>> GetStringArray(const std::string& key) const;
  Result<std::vector<double>> GetFloatArray(const std::string& key) const;
  // Integers and bools only (a float array is Corrupt: it has no exact integer values).
  Result<std::vector<int64_t>> GetIntArray(const std::string& key) const;
  // Getters with a default for optional keys (still Corrupt-free: a wrong type gives the default).
  int64_t GetIntOr(const std::string& key, int64_t def) const;
  double GetFloatOr(const std::string& key, double def) const;
  std::string GetStringOr(const std::string& key, const std::string& def) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(const std::string& name) const;

 private:
  File() = default;
  friend class Parser;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t size_ = 0;
  uint64_t data_offset_ = 0;
  void* map_ = nullptr;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Bytes decoding one token reads from the file's tensors (a llama.cpp model): every tensor once, but the
// token embedding (`token_embd.weight`) only one row, a lookup, unless it is also the output matrix (no
// `output.weight`). The KV cache comes on top.
uint64_t DecodeBytesPerToken(const File& f);

// A tensor as a header describes it.
struct TensorDesc {
  std::string name;
  std::vector<int64_t> dims;
  GgmlType type;
  size_t nbytes;
};

// The bytes of a version-3 header: magic, counts, metadata (plus general.alignment when it is not the
// default and not given), tensor infos with their aligned offsets, and the padding up to the data
// section. Tensor i's data then starts at the next multiple of `alignment` after tensor i-1's. Both
// Writer and the streaming writer of src/tooling emit this, so the layout is written in one place.
std::string EncodeHeader(const std::vector<std::pair<std::string, Value>>& kv,
                         const std::vector<TensorDesc>& tensors, uint64_t alignment);

// Writes GGUF version 3. Metadata keys keep insertion order; setting a key twice replaces it.
// Tensor data is copied at AddTensor unless AddTensorRef is used (then the caller keeps it alive
// until Write returns).
class Writer {
 public:
  explicit Writer(uint64_t alignment = 32) : alignment_(alignment) {}
  void Set(const std::string& key, Value v);
  void Remove(const std::string& key);
  // Copies every metadata key of src (used to carry a tokenizer or a whole header over).
  void CopyMetadataFrom(const File& src);
  void AddTensor(const std::string& name, std::vector<int64_t> dims, GgmlType type,
                 const void* data, size_t nbytes);
  void AddTensorRef(const std::string& name, std::vector<int64_t> dims, GgmlType type,
                    const void* data, size_t nbytes);
  // Writes to a temporary name beside path (base/temp_path.h) then renames, so a failed write never leaves a
  // half file under the name.
  Status Write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<int64_t> dims;
    GgmlType type;
    std::vector<uint8_t> owned;
    const void* data;
    size_t nbytes;
  };
  uint64_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace edgedecode::gguf
