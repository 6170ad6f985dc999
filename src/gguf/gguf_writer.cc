// GGUF writer (version 3). The layout is described at the top of gguf_reader.cc.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/temp_path.h"
#include "gguf/gguf.h"

namespace edgedecode::gguf {
namespace {

// Appends little-endian GGUF encodings to a byte string.
class Encoder {
 public:
  explicit Encoder(std::string* out) : out_(out) {}
  template <typename T>
  void Pod(T v) { out_->append(reinterpret_cast<const char*>(&v), sizeof(T)); }
  void Str(const std::string& s) {
    Pod<uint64_t>(s.size());
    out_->append(s);
  }
  void Pad(uint64_t alignment) { out_->resize((out_->size() + alignment - 1) / alignment * alignment, '\0'); }
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
        Pod<uint64_t>(v.array_size());
        if (v.array_type == ValueType::kString) {
          for (const std::string& e : v.strings) Str(e);
        } else if (v.array_type == ValueType::kArray) {
          for (const gguf::Value& e : v.array) Value(e);
        } else {
          out_->append(reinterpret_cast<const char*>(v.packed.data()), v.packed.size());
        }
        break;
    }
  }

 private:
  std::string* out_;
};

}  // namespace

std::string EncodeHeader(const std::vector<std::pair<std::string, Value>>& kv_in,
                         const std::vector<TensorDesc>& tensors, uint64_t alignment) {
  std::string bytes;
  Encoder e(&bytes);
  e.Pod<uint32_t>(0x46554747u);  // "GGUF"
  e.Pod<uint32_t>(3);
  e.Pod<uint64_t>(tensors.size());
  std::vector<std::pair<std::string, gguf::Value>> kv = kv_in;
  bool has_alignment = false;
  for (const auto& p : kv) has_alignment |= p.first == "general.alignment";
  if (!has_alignment && alignment != 32) kv.emplace_back("general.alignment", gguf::Value::U32(static_cast<uint32_t>(alignment)));
  e.Pod<uint64_t>(kv.size());
  for (const auto& p : kv) {
    e.Str(p.first);
    e.Pod<uint32_t>(static_cast<uint32_t>(p.second.type));
    e.Value(p.second);
  }
  uint64_t offset = 0;
  for (const TensorDesc& t : tensors) {
    e.Str(t.name);
    e.Pod<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) e.Pod<uint64_t>(static_cast<uint64_t>(d));
    e.Pod<uint32_t>(static_cast<uint32_t>(t.type));
    e.Pod<uint64_t>(offset);
    offset = (offset + t.nbytes + alignment - 1) / alignment * alignment;
  }
  e.Pad(alignment);
  return bytes;
}

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
  const std::string tmp = TempPathFor(path);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return IoError(tmp + ": cannot create: " + std::strerror(errno));
  std::vector<TensorDesc> descs;
  descs.reserve(tensors_.size());
  for (const PendingTensor& t : tensors_) descs.push_back({t.name, t.dims, t.type, t.nbytes});
  const std::string header = EncodeHeader(kv_, descs, alignment_);
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  static const char zeros[256] = {0};
  for (const PendingTensor& t : tensors_) {
    const void* data = t.owned.empty() ? t.data : t.owned.data();
    ok = ok && (t.nbytes == 0 || std::fwrite(data, 1, t.nbytes, f) == t.nbytes);
    const size_t pad = (alignment_ - t.nbytes % alignment_) % alignment_;
    for (size_t left = pad; ok && left > 0;) {
      const size_t n = std::min(left, sizeof(zeros));
      ok = std::fwrite(zeros, 1, n, f) == n;
      left -= n;
    }
  }
  ok = ok && std::fflush(f) == 0;
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
