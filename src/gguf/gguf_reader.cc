// GGUF reader.
//
// The format (all integers little-endian), as llama.cpp writes it:
//
//   u32   magic            "GGUF" (0x46554747)
//   u32   version          1, 2 or 3
//   cnt   tensor_count     cnt = u32 in version 1, u64 in versions 2 and 3
//   cnt   kv_count
//   kv_count x {
//     str   key            str = cnt length + UTF-8 bytes (no terminator)
//     u32   value_type     0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool(u8), 8 str,
//                          9 array, 10 u64, 11 i64, 12 f64
//     ...   value          arrays: u32 element type, cnt count, elements (arrays may nest)
//   }
//   tensor_count x {
//     str   name
//     u32   n_dims         at most 4
//     dim   dims[n_dims]   dim = u32 in version 1, u64 later; dims[0] is the contiguous row length
//     u32   type           GgmlType number (include/edgedecode/ggml_types.h)
//     u64   offset         from the start of the data section; a multiple of the alignment
//   }
//   padding to `general.alignment` (u32 metadata key, default 32)
//   data section          tensor bytes; tensor i occupies [offset, offset + nbytes(dims, type))
//
// Every length read from the file is checked against the bytes that remain before anything is
// allocated, so a corrupt length cannot trigger a giant allocation; tensor data must lie inside the
// file and tensors must not overlap.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "gguf/gguf.h"

namespace edgedecode::gguf {

const char* ValueTypeName(ValueType t) {
  static const char* kNames[] = {"u8",  "i8",   "u16", "i16", "u32", "i32", "f32",
                                 "bool", "str", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? kNames[i] : "invalid";
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kUint16: case ValueType::kInt16:
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kUint64: case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

static bool IsSigned(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 || t == ValueType::kInt64;
}

size_t ValueTypeSize(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUint16: case ValueType::kInt16: return 2;
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

double Value::as_double() const {
  if (is_float()) return f;
  if (IsSigned(type)) return static_cast<double>(i);
  return static_cast<double>(u);
}

int64_t Value::as_int() const {
  if (is_float()) {
    // Converting a float outside int64's range (or NaN) is undefined behaviour: saturate instead.
    if (!(f == f)) return 0;
    if (f >= 9.2233720368547758e18) return INT64_MAX;
    if (f <= -9.2233720368547758e18) return INT64_MIN;
    return static_cast<int64_t>(f);
  }
  if (IsSigned(type)) return i;
  return static_cast<int64_t>(u);
}

size_t Value::array_size() const {
  if (type != ValueType::kArray) return 0;
  if (array_type == ValueType::kString) return strings.size();
  if (array_type == ValueType::kArray) return array.size();
  const size_t es = ValueTypeSize(array_type);
  return es == 0 ? 0 : packed.size() / es;
}

// Element i of a packed array, decoded from its little-endian bytes.
static Value Unpack(ValueType t, const uint8_t* p) {
  Value x;
  x.type = t;
  switch (t) {
    case ValueType::kUint8: case ValueType::kBool: x.u = p[0]; break;
    case ValueType::kInt8: { int8_t v; std::memcpy(&v, p, 1); x.i = v; break; }
    case ValueType::kUint16: { uint16_t v; std::memcpy(&v, p, 2); x.u = v; break; }
    case ValueType::kInt16: { int16_t v; std::memcpy(&v, p, 2); x.i = v; break; }
    case ValueType::kUint32: { uint32_t v; std::memcpy(&v, p, 4); x.u = v; break; }
    case ValueType::kInt32: { int32_t v; std::memcpy(&v, p, 4); x.i = v; break; }
    case ValueType::kUint64: std::memcpy(&x.u, p, 8); break;
    case ValueType::kInt64: std::memcpy(&x.i, p, 8); break;
    case ValueType::kFloat32: { float v; std::memcpy(&v, p, 4); x.f = v; break; }
    case ValueType::kFloat64: std::memcpy(&x.f, p, 8); break;
    case ValueType::kString: case ValueType::kArray: break;
  }
  return x;
}

Value Value::element(size_t idx) const {
  if (idx >= array_size()) return Value();
  if (array_type == ValueType::kString) return Str(strings[idx]);
  if (array_type == ValueType::kArray) return array[idx];
  return Unpack(array_type, packed.data() + idx * ValueTypeSize(array_type));
}

Value Value::U32(uint32_t v) { Value x; x.type = ValueType::kUint32; x.u = v; return x; }
Value Value::I32(int32_t v) { Value x; x.type = ValueType::kInt32; x.i = v; return x; }
Value Value::U64(uint64_t v) { Value x; x.type = ValueType::kUint64; x.u = v; return x; }
Value Value::F32(float v) { Value x; x.type = ValueType::kFloat32; x.f = v; return x; }
Value Value::Bool(bool v) { Value x; x.type = ValueType::kBool; x.u = v ? 1 : 0; return x; }
Value Value::Str(std::string v) { Value x; x.type = ValueType::kString; x.str = std::move(v); return x; }
Value Value::StrArray(const std::vector<std::string>& v) {
  Value x; x.type = ValueType::kArray; x.array_type = ValueType::kString;
  x.strings = v;
  return x;
}
Value Value::F32Array(const std::vector<float>& v) {
  Value x; x.type = ValueType::kArray; x.array_type = ValueType::kFloat32;
  x.packed.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(x.packed.data(), v.data(), x.packed.size());
  return x;
}
Value Value::I32Array(const std::vector<int32_t>& v) {
  Value x; x.type = ValueType::kArray; x.array_type = ValueType::kInt32;
  x.packed.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(x.packed.data(), v.data(), x.packed.size());
  return x;
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Sequential, bounds-checked reader over the mapped bytes.
class Parser {
 public:
  Parser(File* f, const uint8_t* base, uint64_t size)
      : f_(f), base_(base), size_(size),
        mem_budget_(size > (UINT64_MAX - kMetadataMemorySlack) / kMetadataMemoryPerFileByte
                        ? UINT64_MAX
                        : size * kMetadataMemoryPerFileByte + kMetadataMemorySlack) {}

  Status Parse() {
    uint32_t magic = 0;
    ED_RETURN_IF_ERROR(ReadPod(&magic, "magic"));
    if (magic != 0x46554747u) {
      char shown[5] = {0};
      std::memcpy(shown, &magic, 4);
      for (char& c : shown) if (c && (c < 32 || c > 126)) c = '?';
      std::string hint = std::memcmp(base_, "lmgg", 4) == 0 || std::memcmp(base_, "ggml", 4) == 0 ||
                                 std::memcmp(base_, "ggjt", 4) == 0 || std::memcmp(base_, "ggmf", 4) == 0
                             ? " (a legacy ggml container, not GGUF)"
                             : "";
      return Corrupt("not a GGUF file: magic at offset 0 is '" + std::string(shown) + "', expected 'GGUF'" + hint);
    }
    ED_RETURN_IF_ERROR(ReadPod(&f_->version_, "version"));
    if (f_->version_ < 1 || f_->version_ > 3)
      return Unsupported("unsupported GGUF version " + std::to_string(f_->version_) + " (supported: 1, 2, 3)");
    uint64_t n_tensors = 0, n_kv = 0;
    ED_RETURN_IF_ERROR(ReadCount(&n_tensors, "tensor count"));
    ED_RETURN_IF_ERROR(ReadCount(&n_kv, "metadata count"));
    // Each kv needs at least a length, a type and one byte; each tensor at least ~ 24 bytes.
    if (n_kv > Remaining() / 9) return Corrupt(At() + "metadata count " + std::to_string(n_kv) + " exceeds the file size (truncated or corrupt)");
    if (n_tensors > Remaining() / 24) return Corrupt(At() + "tensor count " + std::to_string(n_tensors) + " exceeds the file size (truncated or corrupt)");

    for (uint64_t k = 0; k < n_kv; ++k) {
      std::string key;
      uint64_t key_at = pos_;
      ED_RETURN_IF_ERROR(ReadString(&key, "metadata key #" + std::to_string(k)));
      ED_RETURN_IF_ERROR(Charge(sizeof(std::pair<std::string, Value>) + kIndexNodeBytes + 2 * HeapBytes(key), key_at,
                                "metadata key #" + std::to_string(k)));
      uint32_t type = 0;
      ED_RETURN_IF_ERROR(ReadPod(&type, "type of '" + key + "'"));
      Value v;
      ED_RETURN_IF_ERROR(ReadValue(static_cast<ValueType>(type), &v, key, 0));
      if (f_->kv_index_.count(key))
        return Corrupt("duplicate metadata key '" + key + "' at offset " + std::to_string(key_at));
      f_->kv_index_[key] = f_->kv_.size();
      f_->kv_.emplace_back(std::move(key), std::move(v));
    }

    if (const Value* a = f_->Find("general.alignment")) {
      if (!a->is_integer() || a->as_int() <= 0 || (a->as_int() & (a->as_int() - 1)) != 0 || a->as_int() > (1 << 20))
        return Corrupt("general.alignment must be a power of two (got " + std::to_string(a->as_int()) + ")");
      f_->alignment_ = static_cast<uint64_t>(a->as_int());
    }

    f_->tensors_.reserve(n_tensors);
    for (uint64_t t = 0; t < n_tensors; ++t) {
      TensorInfo ti;
      const uint64_t info_at = pos_;
      ED_RETURN_IF_ERROR(ReadString(&ti.name, "tensor name #" + std::to_string(t)));
      ED_RETURN_IF_ERROR(Charge(sizeof(TensorInfo) + 4 * sizeof(int64_t) + kIndexNodeBytes + 2 * HeapBytes(ti.name),
                                info_at, "tensor '" + ti.name + "'"));
      uint32_t n_dims = 0;
      ED_RETURN_IF_ERROR(ReadPod(&n_dims, "n_dims of tensor '" + ti.name + "'"));
      if (n_dims < 1 || n_dims > 4)
        return Corrupt(At() + "tensor '" + ti.name + "' has " + std::to_string(n_dims) + " dims (1 to 4 allowed)");
      int64_t n_el = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        uint64_t dim = 0;
        if (f_->version_ == 1) {
          uint32_t d32 = 0;
          ED_RETURN_IF_ERROR(ReadPod(&d32, "dims of tensor '" + ti.name + "'"));
          dim = d32;
        } else {
          ED_RETURN_IF_ERROR(ReadPod(&dim, "dims of tensor '" + ti.name + "'"));
        }
        if (dim == 0 || dim > (uint64_t{1} << 40) || static_cast<uint64_t>(n_el) > (uint64_t{1} << 50) / dim)
          return Corrupt(At() + "tensor '" + ti.name + "' has an absurd dimension " + std::to_string(dim));
        n_el *= static_cast<int64_t>(dim);
        ti.dims.push_back(static_cast<int64_t>(dim));
      }
      ED_RETURN_IF_ERROR(ReadPod(&ti.type, "type of tensor '" + ti.name + "'"));
      ED_RETURN_IF_ERROR(ReadPod(&ti.offset, "offset of tensor '" + ti.name + "'"));
      const GgmlTypeTraits& tr = TypeTraits(ti.type);
      if (!tr.known) return Corrupt("tensor '" + ti.name + "' has unknown type " + std::to_string(ti.type));
      if (ti.dims[0] % tr.block_size != 0)
        return Corrupt("tensor '" + ti.name + "': row length " + std::to_string(ti.dims[0]) +
                       " is not a multiple of the " + tr.name + " block size " + std::to_string(tr.block_size));
      ti.nbytes = static_cast<uint64_t>(n_el / tr.block_size) * tr.type_size;
      if (ti.offset % f_->alignment_ != 0)
        return Corrupt("tensor '" + ti.name + "': data offset " + std::to_string(ti.offset) +
                       " is not a multiple of the alignment " + std::to_string(f_->alignment_));
      if (f_->tensor_index_.count(ti.name)) return Corrupt("duplicate tensor name '" + ti.name + "'");
      f_->tensor_index_[ti.name] = f_->tensors_.size();
      f_->tensors_.push_back(std::move(ti));
    }

    uint64_t data_off = (pos_ + f_->alignment_ - 1) / f_->alignment_ * f_->alignment_;
    if (n_tensors > 0 && data_off > size_)
      return Corrupt("truncated: data section would start at offset " + std::to_string(data_off) +
                     " but the file has " + std::to_string(size_) + " bytes");
    f_->data_offset_ = data_off;
    uint64_t data_size = size_ >= data_off ? size_ - data_off : 0;

    std::vector<const TensorInfo*> by_offset;
    for (TensorInfo& ti : f_->tensors_) {
      if (ti.offset > data_size || ti.nbytes > data_size - ti.offset)
        return Corrupt("tensor '" + ti.name + "' data [" + std::to_string(data_off + ti.offset) + ", " +
                       std::to_string(data_off + ti.offset + ti.nbytes) + ") lies outside the file (" +
                       std::to_string(size_) + " bytes): truncated or corrupt");
      ti.data = base_ + data_off + ti.offset;
      by_offset.push_back(&ti);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo* p = by_offset[i - 1];
      if (p->offset + p->nbytes > by_offset[i]->offset)
        return Corrupt("tensors '" + p->name + "' and '" + by_offset[i]->name + "' overlap in the data section");
    }
    return Status::Ok();
  }

 private:
  // Heap bytes behind a std::string (beyond its small-string buffer), with the allocator's header.
  static uint64_t HeapBytes(const std::string& s) { return s.size() > 15 ? s.size() + 1 + 16 : 0; }
  static constexpr uint64_t kIndexNodeBytes = 64;  // a std::map node of the key or tensor index

  // Counts `bytes` of memory the parsed metadata will take against the budget (kMetadataMemoryPerFileByte x
  // the file size + kMetadataMemorySlack), before they are allocated.
  Status Charge(uint64_t bytes, uint64_t at, const std::string& what) {
    if (bytes > mem_budget_ - mem_)
      return Corrupt("at offset " + std::to_string(at) + ": " + what + " would bring the parsed metadata past " +
                     std::to_string(mem_budget_) + " bytes of memory (" + std::to_string(kMetadataMemoryPerFileByte) +
                     " x the file size + " + std::to_string(kMetadataMemorySlack >> 20) +
                     " MiB): too many elements for a model file");
    mem_ += bytes;
    return Status::Ok();
  }

  uint64_t Remaining() const { return size_ - pos_; }
  std::string At() const { return "at offset " + std::to_string(pos_) + ": "; }

  Status Truncated(const std::string& what, uint64_t need) const {
    return Corrupt("truncated at offset " + std::to_string(pos_) + " reading " + what + " (need " +
                   std::to_string(need) + " bytes, " + std::to_string(Remaining()) + " left)");
  }

  template <typename T>
  Status ReadPod(T* out, const std::string& what) {
    if (Remaining() < sizeof(T)) return Truncated(what, sizeof(T));
    std::memcpy(out, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadCount(uint64_t* out, const std::string& what) {
    if (f_->version_ == 1) {
      uint32_t c = 0;
      ED_RETURN_IF_ERROR(ReadPod(&c, what));
      *out = c;
      return Status::Ok();
    }
    return ReadPod(out, what);
  }

  Status ReadString(std::string* out, const std::string& what) {
    uint64_t len = 0;
    uint64_t at = pos_;
    ED_RETURN_IF_ERROR(ReadCount(&len, "length of " + what));
    if (len > Remaining())
      return Corrupt("string length " + std::to_string(len) + " at offset " + std::to_string(at) + " (" + what +
                     ") runs past the end of the file");
    out->assign(reinterpret_cast<const char*>(base_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  static uint64_t MinSize(ValueType t) {
    switch (t) {
      case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
      case ValueType::kUint16: case ValueType::kInt16: return 2;
      case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
      case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
      case ValueType::kString: return 4;
      case ValueType::kArray: return 8;
    }
    return 1;
  }

  // An array: numbers and bools copied packed (bools checked), strings one by one, nested arrays recursively;
  // the memory each takes is charged before it is allocated.
  Status ReadArray(Value* v, const std::string& key, int depth) {
    if (depth > 8) return Corrupt(At() + "arrays nested too deep in '" + key + "'");
    uint32_t et = 0;
    ED_RETURN_IF_ERROR(ReadPod(&et, "array type of '" + key + "'"));
    if (et > 12) return Corrupt(At() + "array '" + key + "' has invalid element type " + std::to_string(et));
    v->array_type = static_cast<ValueType>(et);
    uint64_t n = 0;
    const uint64_t at = pos_;
    ED_RETURN_IF_ERROR(ReadCount(&n, "array length of '" + key + "'"));
    if (n > Remaining() / MinSize(v->array_type))
      return Corrupt("array '" + key + "' at offset " + std::to_string(at) + " claims " + std::to_string(n) +
                     " elements, more than the file holds");
    const std::string what = "array '" + key + "' of " + std::to_string(n) + " " + ValueTypeName(v->array_type);
    if (v->array_type == ValueType::kString) {
      ED_RETURN_IF_ERROR(Charge(n * sizeof(std::string), at, what));
      v->strings.resize(n);
      for (uint64_t j = 0; j < n; ++j) {
        const uint64_t s_at = pos_;
        ED_RETURN_IF_ERROR(ReadString(&v->strings[j], "element " + std::to_string(j) + " of '" + key + "'"));
        ED_RETURN_IF_ERROR(Charge(HeapBytes(v->strings[j]), s_at, what));
      }
      return Status::Ok();
    }
    if (v->array_type == ValueType::kArray) {
      ED_RETURN_IF_ERROR(Charge(n * sizeof(Value), at, what));
      v->array.resize(n);
      for (uint64_t j = 0; j < n; ++j) {
        v->array[j].type = ValueType::kArray;
        ED_RETURN_IF_ERROR(ReadArray(&v->array[j], key, depth + 1));
      }
      return Status::Ok();
    }
    const uint64_t bytes = n * ValueTypeSize(v->array_type);  // n <= Remaining() / size: no overflow
    ED_RETURN_IF_ERROR(Charge(bytes, at, what));
    v->packed.assign(base_ + pos_, base_ + pos_ + bytes);
    if (v->array_type == ValueType::kBool) {
      for (uint64_t j = 0; j < n; ++j)
        if (v->packed[j] > 1)
          return Corrupt("at offset " + std::to_string(pos_ + j) + ": element " + std::to_string(j) + " of bool array '" +
                         key + "' has value " + std::to_string(v->packed[j]));
    }
    pos_ += bytes;
    return Status::Ok();
  }

  Status ReadValue(ValueType type, Value* v, const std::string& key, int depth) {
    v->type = type;
    const std::string what = "value of '" + key + "'";
    switch (type) {
      case ValueType::kUint8: { uint8_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->u = x; return Status::Ok(); }
      case ValueType::kInt8: { int8_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->i = x; return Status::Ok(); }
      case ValueType::kUint16: { uint16_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->u = x; return Status::Ok(); }
      case ValueType::kInt16: { int16_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->i = x; return Status::Ok(); }
      case ValueType::kUint32: { uint32_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->u = x; return Status::Ok(); }
      case ValueType::kInt32: { int32_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->i = x; return Status::Ok(); }
      case ValueType::kUint64: { uint64_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->u = x; return Status::Ok(); }
      case ValueType::kInt64: { int64_t x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->i = x; return Status::Ok(); }
      case ValueType::kFloat32: { float x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->f = x; return Status::Ok(); }
      case ValueType::kFloat64: { double x = 0; ED_RETURN_IF_ERROR(ReadPod(&x, what)); v->f = x; return Status::Ok(); }
      case ValueType::kBool: {
        uint8_t x = 0;
        ED_RETURN_IF_ERROR(ReadPod(&x, what));
        if (x > 1) return Corrupt(At() + "bool '" + key + "' has value " + std::to_string(x));
        v->u = x;
        return Status::Ok();
      }
      case ValueType::kString: {
        const uint64_t at = pos_;
        ED_RETURN_IF_ERROR(ReadString(&v->str, what));
        return Charge(HeapBytes(v->str), at, "string '" + key + "'");
      }
      case ValueType::kArray: return ReadArray(v, key, depth);
    }
    return Corrupt(At() + "metadata '" + key + "' has invalid value type " + std::to_string(static_cast<uint32_t>(type)));
  }

  File* f_;
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t mem_budget_;
  uint64_t mem_ = 0;
};

Result<std::unique_ptr<File>> File::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(path + ": not a regular file");
  }
  std::unique_ptr<File> f(new File());
  f->path_ = path;
  f->size_ = static_cast<uint64_t>(st.st_size);
  if (f->size_ < 8) {
    ::close(fd);
    return Corrupt(path + ": truncated: " + std::to_string(f->size_) + " bytes is too short for a GGUF header");
  }
  void* m = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return IoError(path + ": mmap failed: " + std::strerror(errno));
  f->map_ = m;
  Parser p(f.get(), static_cast<const uint8_t*>(m), f->size_);
  Status st2 = p.Parse();
  if (!st2.ok()) return st2.WithContext(path);
  return f;
}

File::~File() {
  if (map_) ::munmap(map_, size_);
}

const Value* File::Find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

static Status Missing(const File& f, const std::string& key) {
  return NotFound(f.path() + ": required metadata key '" + key + "' is missing");
}
static Status WrongType(const File& f, const std::string& key, const Value& v, const char* want) {
  const std::string got = v.type == ValueType::kArray ? std::string("array of ") + ValueTypeName(v.array_type)
                                                      : std::string(ValueTypeName(v.type));
  return Corrupt(f.path() + ": metadata '" + key + "' has type " + got + ", expected " + want);
}

Result<std::string> File::GetString(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (v->type != ValueType::kString) return WrongType(*this, key, *v, "str");
  return v->str;
}

Result<int64_t> File::GetInt(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (!v->is_integer() && v->type != ValueType::kBool) return WrongType(*this, key, *v, "an integer");
  return v->as_int();
}

Result<double> File::GetFloat(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (!v->is_integer() && !v->is_float()) return WrongType(*this, key, *v, "a number");
  return v->as_double();
}

Result<bool> File::GetBool(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (v->type != ValueType::kBool && !v->is_integer()) return WrongType(*this, key, *v, "bool");
  return v->as_int() != 0;
}

Result<std::vector<std::string>> File::GetStringArray(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (v->type != ValueType::kArray || v->array_type != ValueType::kString) return WrongType(*this, key, *v, "array of str");
  return v->strings;
}

Result<std::vector<double>> File::GetFloatArray(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (v->type != ValueType::kArray || v->array_type == ValueType::kString || v->array_type == ValueType::kArray)
    return WrongType(*this, key, *v, "array of numbers");
  std::vector<double> out(v->array_size());
  for (size_t j = 0; j < out.size(); ++j) out[j] = v->element(j).as_double();
  return out;
}

Result<std::vector<int64_t>> File::GetIntArray(const std::string& key) const {
  const Value* v = Find(key);
  if (!v) return Missing(*this, key);
  if (v->type != ValueType::kArray || v->array_type == ValueType::kString || v->array_type == ValueType::kArray ||
      v->array_type == ValueType::kFloat32 || v->array_type == ValueType::kFloat64)
    return WrongType(*this, key, *v, "array of integers");
  std::vector<int64_t> out(v->array_size());
  for (size_t j = 0; j < out.size(); ++j) out[j] = v->element(j).as_int();
  return out;
}

int64_t File::GetIntOr(const std::string& key, int64_t def) const {
  const Value* v = Find(key);
  return v && (v->is_integer() || v->type == ValueType::kBool) ? v->as_int() : def;
}

double File::GetFloatOr(const std::string& key, double def) const {
  const Value* v = Find(key);
  return v && (v->is_integer() || v->is_float()) ? v->as_double() : def;
}

std::string File::GetStringOr(const std::string& key, const std::string& def) const {
  const Value* v = Find(key);
  return v && v->type == ValueType::kString ? v->str : def;
}

uint64_t DecodeBytesPerToken(const File& f) {
  uint64_t b = 0;
  for (const TensorInfo& t : f.tensors()) b += t.nbytes;
  const TensorInfo* e = f.FindTensor("token_embd.weight");
  if (e != nullptr && e->rows() > 0 && f.FindTensor("output.weight") != nullptr) b -= e->nbytes - e->nbytes / e->rows();
  return b;
}

}  // namespace edgedecode::gguf
