#include "doctor/hash.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
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

constexpr size_t kHexDigits = 64;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }  // coreutils' ISWHITE
bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

std::string LowerHex(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

// Why a would-be digest is not one (empty when it is 64 hex digits and nothing else).
std::string DigestProblem(std::string_view d) {
  size_t n = 0;
  while (n < d.size() && IsHex(d[n])) ++n;
  if (n == d.size() && n == kHexDigits) return "";
  if (n < d.size() && n == kHexDigits && IsBlank(d[n]))
    return "blanks after the digest (sha256sum --tag lines end with the digest)";
  if (n < d.size() && n < kHexDigits)
    return std::string("character '") + d[n] + "' at digest position " + std::to_string(n + 1) + " is not a hex digit";
  return "the digest has " + std::to_string(n) + " hex digits; SHA-256 has 64";
}

// coreutils' filename_unescape: only \\, \n and \r; anything else makes the line invalid.
std::optional<std::string> Unescape(std::string_view s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') { r += s[i]; continue; }
    if (++i == s.size()) return std::nullopt;
    if (s[i] == 'n') r += '\n';
    else if (s[i] == 'r') r += '\r';
    else if (s[i] == '\\') r += '\\';
    else return std::nullopt;
  }
  return r;
}

// One line (newline and one trailing CR already removed), as coreutils' split_3 reads it.
// `reversed` is its bsd_reversed state: -1 undecided, 0 "HASH  FILE" seen, 1 "HASH FILE" seen.
bool ParseLine(std::string_view s, int* reversed, ChecksumEntry* e, std::string* why) {
  size_t i = 0;
  while (i < s.size() && IsBlank(s[i])) ++i;
  bool escaped = false;
  if (i < s.size() && s[i] == '\\') { ++i; escaped = true; }
  std::string_view rest = s.substr(i), name;
  if (rest.substr(0, 6) == "SHA256") {
    // BSD style (sha256sum --tag): "SHA256 (FILE) = HASH"; the name runs to the last ')'.
    size_t j = 6;
    if (j < rest.size() && rest[j] == ' ') ++j;
    if (j >= rest.size() || rest[j] != '(') { *why = "starts with SHA256 but no '(' follows (the form is 'SHA256 (FILE) = HASH')"; return false; }
    rest.remove_prefix(j + 1);
    size_t close = rest.rfind(')');
    if (close == std::string_view::npos) { *why = "no ')' closes the file name"; return false; }
    name = rest.substr(0, close);
    size_t k = close + 1;
    while (k < rest.size() && IsBlank(rest[k])) ++k;
    if (k >= rest.size() || rest[k] != '=') { *why = "no '=' after '(FILE)'"; return false; }
    ++k;
    while (k < rest.size() && IsBlank(rest[k])) ++k;
    std::string_view digest = rest.substr(k);
    if (std::string p = DigestProblem(digest); !p.empty()) { *why = p; return false; }
    e->hex = LowerHex(digest);
    e->bsd_tag = true;
  } else {
    if (rest.size() >= 6 && LowerHex(rest.substr(0, 6)) == "sha256") {
      *why = "the tag must be upper-case 'SHA256', as sha256sum --tag writes it";
      return false;
    }
    size_t n = 0;
    while (n < rest.size() && IsHex(rest[n])) ++n;
    if (n == rest.size() && n == kHexDigits) {
      *why = "a digest without a file name (sha256sum -c needs 'HASH  FILE')";
      return false;
    }
    if (n != kHexDigits) {
      *why = n < rest.size() && n < kHexDigits && !IsBlank(rest[n])
                 ? std::string("character '") + rest[n] + "' at digest position " + std::to_string(n + 1) + " is not a hex digit"
                 : "the digest has " + std::to_string(n) + " hex digits; SHA-256 has 64";
      return false;
    }
    if (rest.size() < kHexDigits + 2) { *why = "no file name after the digest"; return false; }
    if (!IsBlank(rest[kHexDigits])) { *why = "the digest is not followed by a space or tab"; return false; }
    e->hex = LowerHex(rest.substr(0, kHexDigits));
    size_t k = kHexDigits + 1;
    // One blank then the name is the "reversed" style (md5 -r); two blanks or " *" the GNU style.
    // coreutils refuses a reversed line after a GNU one (a renamed file with a leading blank could
    // otherwise pass), and after a reversed line keeps every later character as part of the name.
    if (rest.size() - k == 1 || (rest[k] != ' ' && rest[k] != '*')) {
      if (*reversed == 0) {
        *why = "one blank between digest and name after earlier 'HASH  FILE' lines; sha256sum -c refuses the mix";
        return false;
      }
      *reversed = 1;
    } else if (*reversed != 1) {
      *reversed = 0;
      e->binary = rest[k++] == '*';
    }
    name = rest.substr(k);
  }
  if (escaped) {
    auto u = Unescape(name);
    if (!u) { *why = "the line starts with '\\' but the name has an escape other than \\\\, \\n or \\r"; return false; }
    e->path = std::move(*u);
  } else {
    e->path = std::string(name);
  }
  if (e->path.empty()) { *why = "empty file name"; return false; }
  return true;
}

std::string Slurp(const std::string& path, bool* ok) {
  std::string text, why;
  *ok = ReadRegularFile(path, kMaxChecksumListBytes, &text, &why);
  return text;
}

}  // namespace

int OpenRegularFile(const std::string& path, uint64_t* size, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = S_ISFIFO(st.st_mode)  ? "is a FIFO (named pipe), not a regular file"
           : S_ISDIR(st.st_mode) ? "is a folder, not a regular file"
                                 : "is not a regular file";
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

bool ReadRegularFile(const std::string& path, uint64_t limit, std::string* out, std::string* why) {
  uint64_t size = 0;
  const int fd = OpenRegularFile(path, &size, why);
  if (fd < 0) return false;
  if (size > limit) {
    *why = "is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(limit);
    ::close(fd);
    return false;
  }
  out->assign(static_cast<size_t>(size), '\0');
  uint64_t got = 0;
  while (got < size) {
    const ssize_t r = ::read(fd, out->data() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<uint64_t>(r);
  }
  out->resize(static_cast<size_t>(got));
  ::close(fd);
  return true;
}

std::string Sha256Hex(const uint8_t* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr);
  return ToHex(md, len);
}

Result<std::string> Sha256File(const std::string& path, uint64_t* size_out) {
  uint64_t size = 0;
  std::string why;
  const int fd = OpenRegularFile(path, &size, &why);
  if (fd < 0) return IoError(path + ": " + why);
  std::unique_ptr<FILE, int (*)(FILE*)> f(::fdopen(fd, "rb"), std::fclose);
  if (!f) {
    ::close(fd);
    return IoError(path + ": cannot open for reading");
  }
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

ChecksumList ParseSha256Sums(std::string_view text) {
  ChecksumList out;
  int reversed = -1;
  int64_t lineno = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineno;
    if (!line.empty() && line[0] == '#') continue;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // one CR only, as coreutils
    if (line.empty()) continue;
    ChecksumEntry e;
    e.line = lineno;
    std::string why;
    if (ParseLine(line, &reversed, &e, &why)) out.entries.push_back(std::move(e));
    else out.problems.push_back({lineno, "improperly formatted SHA256 checksum line: " + why});
  }
  return out;
}

std::string Sha256SumLine(const std::string& hex, const std::string& path) {
  if (path.find_first_of("\\\n\r") == std::string::npos) return hex + "  " + path + "\n";
  std::string esc;
  for (char c : path) {
    if (c == '\\') esc += "\\\\";
    else if (c == '\n') esc += "\\n";
    else if (c == '\r') esc += "\\r";
    else esc += c;
  }
  return "\\" + hex + "  " + esc + "\n";
}

Result<SidecarDigest> ReadSha256Sidecar(const std::string& sidecar_path, const std::string& target_name) {
  bool ok = false;
  std::string text = Slurp(sidecar_path, &ok);
  if (!ok) return IoError(sidecar_path + ": cannot open for reading");
  SidecarDigest d;
  // A bare digest: only its side file's name says which file it is for (sha256sum -c refuses it).
  std::string_view t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || IsBlank(t.back()))) t.remove_suffix(1);
  while (!t.empty() && IsBlank(t.front())) t.remove_prefix(1);
  if (t.size() == kHexDigits && DigestProblem(t).empty()) {
    d.hex = LowerHex(t);
    d.line = 1;
    d.bare = true;
    return d;
  }
  if (text.rfind("\xEF\xBB\xBF", 0) == 0)
    return Corrupt(sidecar_path + ":1: starts with a UTF-8 byte order mark; sha256sum -c rejects the line");
  ChecksumList list = ParseSha256Sums(text);
  const std::string base = target_name.substr(target_name.find_last_of('/') + 1);
  std::string listed;
  for (const auto& e : list.entries) {
    const std::string eb = e.path.substr(e.path.find_last_of('/') + 1);
    if (eb == base) {
      d.hex = e.hex;
      d.line = e.line;
      return d;
    }
    listed += (listed.empty() ? "" : ", ") + e.path;
  }
  if (!list.problems.empty())
    return Corrupt(sidecar_path + ":" + std::to_string(list.problems[0].line) + ": " + list.problems[0].message);
  if (listed.empty()) return Corrupt(sidecar_path + ": no checksum lines");
  return NotFound(sidecar_path + ": lists " + listed + ", not " + base);
}

}  // namespace edgedecode::doctor
