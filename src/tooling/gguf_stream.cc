#include "tooling/gguf_stream.h"

#include "base/temp_path.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace edgedecode::tooling {

StreamWriter::~StreamWriter() { Abort(); }

void StreamWriter::Abort() {
  if (f_) {
    std::fclose(f_);
    f_ = nullptr;
    std::remove(tmp_.c_str());
  }
}

void StreamWriter::Set(const std::string& key, gguf::Value v) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  }
  kv_.emplace_back(key, std::move(v));
}

const gguf::Value* StreamWriter::Find(const std::string& key) const {
  for (const auto& kv : kv_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

Status StreamWriter::Declare(const std::string& name, std::vector<int64_t> dims, GgmlType type) {
  const GgmlTypeTraits& tr = TypeTraits(type);
  if (dims.empty() || dims.size() > 4) return InvalidArgument("tensor '" + name + "': 1 to 4 dims required");
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0) return InvalidArgument("tensor '" + name + "': dims must be positive");
    n *= d;
  }
  if (!tr.known || dims[0] % tr.block_size != 0)
    return InvalidArgument("tensor '" + name + "': row length " + std::to_string(dims[0]) +
                           " does not fit type " + TypeName(static_cast<uint32_t>(type)));
  tensors_.push_back(Decl{name, std::move(dims), type, static_cast<size_t>(n / tr.block_size) * tr.type_size});
  return Status::Ok();
}

uint64_t StreamWriter::TotalDataBytes() const {
  uint64_t total = 0;
  for (const Decl& d : tensors_) total = (total + d.nbytes + alignment_ - 1) / alignment_ * alignment_;
  return total;
}

void StreamWriter::Bytes(const void* p, size_t n) {
  if (n && std::fwrite(p, 1, n, f_) != n) io_ok_ = false;
  pos_ += n;
}

void StreamWriter::Pad() {
  static const uint8_t zeros[256] = {0};
  uint64_t target = (pos_ + alignment_ - 1) / alignment_ * alignment_;
  while (pos_ < target) Bytes(zeros, std::min<uint64_t>(sizeof(zeros), target - pos_));
}

Status StreamWriter::Begin(const std::string& path) {
  if (f_) return Internal("StreamWriter::Begin called twice");
  path_ = path;
  tmp_ = TempPathFor(path);
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) return IoError(tmp_ + ": cannot create: " + std::strerror(errno));
  std::vector<gguf::TensorDesc> descs;
  descs.reserve(tensors_.size());
  for (const Decl& t : tensors_) descs.push_back({t.name, t.dims, t.type, t.nbytes});
  const std::string header = gguf::EncodeHeader(kv_, descs, alignment_);
  Bytes(header.data(), header.size());
  if (!io_ok_) {
    Abort();
    return IoError(path_ + ": write failed (disk full?)");
  }
  return Status::Ok();
}

Status StreamWriter::Write(const void* data, size_t nbytes) {
  if (!f_) return Internal("StreamWriter::Write before Begin");
  if (next_ >= tensors_.size()) return Internal("StreamWriter: more tensor data written than declared");
  const Decl& t = tensors_[next_];
  if (next_done_ + nbytes > t.nbytes)
    return Internal("tensor '" + t.name + "': " + std::to_string(next_done_ + nbytes) + " bytes given, " +
                    std::to_string(t.nbytes) + " expected");
  Bytes(data, nbytes);
  next_done_ += nbytes;
  if (next_done_ == t.nbytes) {
    Pad();
    ++next_;
    next_done_ = 0;
  }
  if (!io_ok_) {
    Abort();
    return IoError(path_ + ": write failed at tensor '" + t.name + "' (disk full?)");
  }
  return Status::Ok();
}

Status StreamWriter::Finish() {
  if (!f_) return Internal("StreamWriter::Finish before Begin");
  if (next_ != tensors_.size()) {
    Abort();
    return Internal("StreamWriter: " + std::to_string(next_) + " of " + std::to_string(tensors_.size()) +
                    " tensors written");
  }
  bool ok = io_ok_ && std::fflush(f_) == 0;
  ok = (std::fclose(f_) == 0) && ok;
  f_ = nullptr;
  if (!ok) {
    std::remove(tmp_.c_str());
    return IoError(path_ + ": write failed (disk full?)");
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    return IoError(path_ + ": cannot rename from " + tmp_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace edgedecode::tooling
