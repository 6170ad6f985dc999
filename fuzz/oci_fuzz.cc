// OCI image layouts (`doctor env --oci DIR`): oci-layout, index.json, manifests, configs, referrers.
// The input is a layout cut into parts at "\n--part--\n":
//   part 0  the oci-layout file, part 1 index.json, parts 2.. blobs, written as blobs/sha256/<their digest>;
//   a part that is exactly "-" is left out (a missing file); a part whose first line is "path:REL" is
//   written at REL instead (a blob under a wrong name, an orphan, a stray file).
// Digests cannot be found by mutation, so "@digestN@" and "@sizeN@" in a part are replaced by the digest
// ("sha256:<hex>") and the size of part N (N > this part's number; parts are filled in from the last),
// which lets the fuzzer build manifests whose blobs are present and intact.
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "doctor/hash.h"
#include "doctor/oci.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode;

namespace {

constexpr size_t kMaxParts = 12;

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) s->replace(at, from.size(), to);
}

// A relative path inside the layout folder: no "..", not absolute, a plain character set.
bool SafeRelative(const std::string& rel) {
  if (rel.empty() || rel.size() > 200 || rel[0] == '/') return false;
  for (char c : rel)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '/')) return false;
  return rel.find("..") == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir layout;
  layout.Clear();
  const auto cut = fuzz::SplitParts(data, size, "\n--part--\n", kMaxParts);
  std::vector<std::string> parts(cut.begin(), cut.end());
  std::vector<std::string> digest(parts.size()), bytes(parts.size());
  for (size_t i = parts.size(); i-- > 0;) {
    for (size_t j = i + 1; j < parts.size() && j < 10; ++j) {
      ReplaceAll(&parts[i], "@digest" + std::to_string(j) + "@", digest[j]);
      ReplaceAll(&parts[i], "@size" + std::to_string(j) + "@", bytes[j]);
    }
    std::string rel;
    if (parts[i].rfind("path:", 0) == 0) {
      const size_t nl = parts[i].find('\n');
      rel = parts[i].substr(5, nl == std::string::npos ? std::string::npos : nl - 5);
      parts[i].erase(0, nl == std::string::npos ? parts[i].size() : nl + 1);
      if (!SafeRelative(rel)) continue;
    }
    const std::string hex = doctor::Sha256Hex(reinterpret_cast<const uint8_t*>(parts[i].data()), parts[i].size());
    digest[i] = "sha256:" + hex;
    bytes[i] = std::to_string(parts[i].size());
    if (parts[i] == "-") continue;
    if (rel.empty()) rel = i == 0 ? "oci-layout" : i == 1 ? "index.json" : "blobs/sha256/" + hex;
    layout.Put(rel, parts[i]);
  }
  const doctor::OciReport r = doctor::CheckOciLayout(layout.dir().string());
  for (const auto& f : r.findings) (void)doctor::FindingCodeName(f.code);
  return 0;
}
