// Helpers shared by the doctor tests: file I/O in a per-test temporary directory.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace edgedecode::doctor::testing {

inline std::string Testdata(const std::string& rel) { return std::string(EDGEDECODE_TESTDATA) + "/" + rel; }

inline std::vector<uint8_t> ReadBytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  return {t.begin(), t.end()};
}

inline void WriteBytes(const std::string& p, const void* d, size_t n) {
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(static_cast<const char*>(d), static_cast<std::streamsize>(n));
}
inline void WriteBytes(const std::string& p, const std::string& s) { WriteBytes(p, s.data(), s.size()); }
inline void WriteBytes(const std::string& p, const std::vector<uint8_t>& v) { WriteBytes(p, v.data(), v.size()); }

// A fresh directory under /tmp, removed when the object dies.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ed_doctor_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& rel) const { return path + "/" + rel; }
};

}  // namespace edgedecode::doctor::testing
