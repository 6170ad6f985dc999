// What the harnesses share: the bytes as a file (most parsers take a path), a scratch folder for inputs
// made of several files, and the split of one input into parts. Harnesses run one input at a time.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace edgedecode::fuzz {

// One in-memory file (memfd), rewritten for every input: the parsers open and map it by path like a
// regular file, nothing touches the disk and nothing is left behind after a crash.
class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(::memfd_create(name, 0)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& Write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      const ssize_t w = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (w <= 0) std::abort();
      done += static_cast<size_t>(w);
    }
    return path_;
  }
  const std::string& Write(std::string_view s) { return Write(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// A private folder under $TMPDIR (or /tmp) for inputs that are several files (a layout, a model and its
// tokenizer, a converter's output). Emptied for every input, removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/edgedecode-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    dir_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  void Clear() const {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) std::filesystem::remove_all(e.path(), ec);
  }
  // Writes `bytes` to dir/rel (folders created); returns the full path.
  std::string Put(const std::string& rel, std::string_view bytes) const {
    const std::filesystem::path p = dir_ / rel;
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
  std::string Path(const std::string& rel) const { return (dir_ / rel).string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// The input cut at every `sep` (at most max_parts parts; the last one keeps the rest). Seeds and
// dictionaries use the same separator, so the fuzzer can add, drop and swap parts.
inline std::vector<std::string_view> SplitParts(const uint8_t* data, size_t size, std::string_view sep, size_t max_parts) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = rest.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(rest.substr(0, at));
    rest.remove_prefix(at + sep.size());
  }
  parts.push_back(rest);
  return parts;
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// The shared test data and the source tree, fixed at build time (fixed inputs a harness combines with the
// fuzzed one: device profiles, a small model).
inline std::string TestData(const std::string& rel) { return std::string(EDGEDECODE_TESTDATA) + "/" + rel; }
inline std::string SourceFile(const std::string& rel) { return std::string(EDGEDECODE_SOURCE_DIR) + "/" + rel; }

}  // namespace edgedecode::fuzz
