#include "doctor/hash.h"

#include <cstdio>
#include <memory>
#include <vector>

#include <openssl/evp.h>

namespace edgedecode::doctor {
namespace {
std::string ToHex(const unsigned char* d, unsigned n) {
  static const char* k = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (unsigned i = 0; i < n; ++i) {
    s[2 * i] = k[d[i] >> 4];
    s[2 * i + 1] = k[d[i] & 15];
  }
  return s;
}
struct CtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
}  // namespace

std::string Sha256Hex(const uint8_t* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr);
  return ToHex(md, len);
}

Result<std::string> Sha256File(const std::string& path, uint64_t* size_out) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) return IoError(path + ": cannot open for reading");
  std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<unsigned char> buf(1 << 20);
  uint64_t total = 0;
  size_t got;
  while ((got = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    EVP_DigestUpdate(ctx.get(), buf.data(), got);
    total += got;
  }
  if (std::ferror(f.get())) return IoError(path + ": read error after " + std::to_string(total) + " bytes");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  if (size_out) *size_out = total;
  return ToHex(md, len);
}

}  // namespace edgedecode::doctor
