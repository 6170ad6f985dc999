// GGUF writer (version 3). The layout is described at the top of gguf_reader.cc.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gguf/gguf.h"

namespace edgedecode::gguf {
namespace {

class Out {
 public:
  explicit Out(FILE* f) : f_(f) {}
  bool ok() const { return ok_; }
  uint64_t pos() const { return pos_; }
  void Bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) ok_ = false;
    pos_ += n;
  }
  template <typename T>
  void Pod(T v) { Bytes(&v, sizeof(T)); }
  void Str(const std::string& s) {
    Pod<uint64_t>(s.size());
    Bytes(s.data(), s.size());
  }
  void Pad(uint64_t alignment) {
    static const uint8_t zeros[256] = {0};
    uint64_t target = (pos_ + alignment - 1) / alignment * alignment;
    while (pos_ < target) Bytes(zeros, std::min<uint64_t>(sizeof(zeros), target - pos_));
  }
  void Value(const gguf::Value& v) {
    switch (v.type) {
      case ValueType::kUint8: Pod<uint8_t>(static_cast<uint8_t>(v.u)); break;
      case ValueType::kInt8: Pod<int8_t>(static_cast<int8_t>(v.i)); break;
      case ValueType::kUint16: Pod<uint16_t>(static_cast<uint16_t>(v.u)); break;
      case ValueType::kInt16: Pod<int16_t>(static_cast<int16_t>(v.i)); break;
      case ValueType::kUint32: Pod<uint32_t>(static_cast<uint32_t>(v.u)); break;
      case ValueType::kInt32: Pod<int32_t>(static_cast<int32_t>(v.i)); break;
      case ValueType::kUint64: Pod<uint64_t>(v.u); break;
      case ValueType::kInt64: Pod<int64_t>(v.i); break;
      case ValueType::kFloat32: Pod<float>(static_cast<float>(v.f)); break;
      case ValueType::kFloat64: Pod<double>(v.f); break;
      case ValueType::kBool: Pod<uint8_t>(v.u ? 1 : 0); break;
      case ValueType::kString: Str(v.str); break;
      case ValueType::kArray:
        Pod<uint32_t>(static_cast<uint32_t>(v.array_type));
        Pod<uint64_t>(v.array.size());
        for (const gguf::Value& e : v.array) Value(e);
        break;
    }
  }

 private:
  FILE* f_;
  bool ok_ = true;
  uint64_t pos_ = 0;
};

}  // namespace

void Writer::Set(const std::string& key, gguf::Value v) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  }
  kv_.emplace_back(key, std::move(v));
}

void Writer::Remove(const std::string& key) {
  for (auto it = kv_.begin(); it != kv_.end(); ++it) {
    if (it->first == key) {
      kv_.erase(it);
      return;
    }
  }
}

void Writer::CopyMetadataFrom(const File& src) {
  for (const auto& kv : src.metadata()) Set(kv.first, kv.second);
}

void Writer::AddTensor(const std::string& name, std::vector<int64_t> dims, GgmlType type, const void* data,
                       size_t nbytes) {
  PendingTensor t{name, std::move(dims), type, {}, nullptr, nbytes};
  t.owned.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
  tensors_.push_back(std::move(t));
}

void Writer::AddTensorRef(const std::string& name, std::vector<int64_t> dims, GgmlType type, const void* data,
                          size_t nbytes) {
  tensors_.push_back(PendingTensor{name, std::move(dims), type, {}, data, nbytes});
}

Status Writer::Write(const std::string& path) const {
  // Validate before touching the disk.
  for (const PendingTensor& t : tensors_) {
    const GgmlTypeTraits& tr = TypeTraits(t.type);
    if (t.dims.empty() || t.dims.size() > 4) return InvalidArgument("tensor '" + t.name + "': 1 to 4 dims required");
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    if (!tr.known || t.dims[0] % tr.block_size != 0)
      return InvalidArgument("tensor '" + t.name + "': row length does not fit type " + tr.name);
    if (static_cast<size_t>(n / tr.block_size) * tr.type_size != t.nbytes)
      return InvalidArgument("tensor '" + t.name + "': " + std::to_string(t.nbytes) + " bytes given, " +
                             std::to_string(n / tr.block_size * tr.type_size) + " expected for its shape and type");
  }
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return IoError(tmp + ": cannot create: " + std::strerror(errno));
  Out out(f);
  out.Pod<uint32_t>(0x46554747u);
  out.Pod<uint32_t>(3);
  out.Pod<uint64_t>(tensors_.size());
  std::vector<std::pair<std::string, gguf::Value>> kv = kv_;
  bool has_alignment = false;
  for (auto& p : kv) has_alignment |= p.first == "general.alignment";
  if (!has_alignment && alignment_ != 32) kv.emplace_back("general.alignment", gguf::Value::U32(static_cast<uint32_t>(alignment_)));
  out.Pod<uint64_t>(kv.size());
  for (const auto& p : kv) {
    out.Str(p.first);
    out.Pod<uint32_t>(static_cast<uint32_t>(p.second.type));
    out.Value(p.second);
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    out.Str(t.name);
    out.Pod<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) out.Pod<uint64_t>(static_cast<uint64_t>(d));
    out.Pod<uint32_t>(static_cast<uint32_t>(t.type));
    out.Pod<uint64_t>(offset);
    offset = (offset + t.nbytes + alignment_ - 1) / alignment_ * alignment_;
  }
  out.Pad(alignment_);
  for (const PendingTensor& t : tensors_) {
    out.Bytes(t.owned.empty() ? t.data : t.owned.data(), t.nbytes);
    out.Pad(alignment_);
  }
  bool ok = out.ok() && std::fflush(f) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return IoError(path + ": write failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return IoError(path + ": cannot rename from " + tmp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace edgedecode::gguf
