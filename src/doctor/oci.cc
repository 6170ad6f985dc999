#include "doctor/oci.h"

#include "base/json_depth.h"

#include <cerrno>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "doctor/hash.h"
#include "doctor/http_reply.h"

namespace edgedecode::doctor {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kIndex = "application/vnd.oci.image.index.v1+json";
const char* kManifest = "application/vnd.oci.image.manifest.v1+json";
const char* kDockerList = "application/vnd.docker.distribution.manifest.list.v2+json";
const char* kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
const std::set<std::string> kKnownTypes = {
    kIndex, kManifest,
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.oci.image.layer.v1.tar", "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.oci.empty.v1+json",
    kDockerManifest, kDockerList,
    "application/vnd.docker.container.image.v1+json",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
};
const std::set<std::string> kImageConfigTypes = {"application/vnd.oci.image.config.v1+json",
                                                 "application/vnd.docker.container.image.v1+json"};

bool IsIndexType(const std::string& mt) { return mt == kIndex || mt == kDockerList; }
bool IsManifestType(const std::string& mt) { return mt == kManifest || mt == kDockerManifest; }

// RFC 6838 type/subtype (what image-spec requires of any media type, artifact ones included).
bool MediaTypeSyntaxOk(const std::string& mt) {
  static const std::regex kName("^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$");
  return std::regex_match(mt, kName);
}

// "" when `p` is a regular file we can open; else why, in words. Never throws: a symlink loop in a
// layout is a finding, not a filesystem_error.
std::string FileProblem(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (ec && ec.value() == ELOOP) return "is a symlink loop (too many levels of symbolic links)";
  if (st.type() == fs::file_type::not_found || (ec && ec.value() == ENOENT)) {
    std::error_code ec2;
    return fs::is_symlink(fs::symlink_status(p, ec2)) ? "is a dangling symlink" : "does not exist";
  }
  if (ec) return ec.message();
  if (!fs::is_regular_file(st)) return "is not a regular file";
  return "";
}

// JSON documents of a layout (oci-layout, index.json, manifests, configs) are read whole; registries
// refuse manifests over 4 MiB (distribution's limit), so a bigger one is a finding, not an allocation.
constexpr uint64_t kMaxJsonBytes = uint64_t{4} << 20;
// A saved HTTP transcript (headers and body) is read whole too.
constexpr uint64_t kMaxTranscriptBytes = uint64_t{16} << 20;
// nlohmann's parser keeps a stack entry per level and dump() recurses: deeper documents are refused
// before parsing (base/json_depth.h). No image-spec document nests more than 5 levels.
bool JsonTooDeep(const std::string& text) { return !CheckJsonDepth(text, "").ok(); }

bool Slurp(const fs::path& p, std::string* out, uint64_t limit = kMaxJsonBytes, std::string* why = nullptr) {
  if (std::string problem = FileProblem(p); !problem.empty()) {
    if (why) *why = problem;
    return false;
  }
  std::error_code ec;
  const uint64_t size = fs::file_size(p, ec);
  if (ec || size > limit) {
    if (why) *why = ec ? ec.message() : "is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(limit) + " bytes";
    return false;
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out->assign(static_cast<size_t>(size), '\0');
  in.read(out->data(), static_cast<std::streamsize>(size));
  out->resize(static_cast<size_t>(in.gcount()));
  return true;
}

// Parses as Go's encoding/json (containerd, docker, oras) would accept: nlohmann skips a UTF-8
// byte order mark, Go does not ("invalid character 'ï' looking for beginning of value").
bool ParseGoJson(const std::string& text, json* out, std::string* why) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) {
    *why = "starts with a UTF-8 byte order mark; Go's encoding/json (containerd, docker, oras) rejects it: "
           "invalid character '\xC3\xAF' looking for beginning of value";
    return false;
  }
  if (JsonTooDeep(text)) {
    *why = "nests arrays/objects more than " + std::to_string(kMaxJsonDepth) + " levels deep: not parsed";
    return false;
  }
  *out = json::parse(text, nullptr, false);
  if (out->is_discarded()) {
    *why = "is not valid JSON";
    return false;
  }
  return true;
}

// ---- Field types of the image-spec Go structs: Go's json.Unmarshal fails the whole document on a
// field of the wrong JSON type (a string size, a numeric os); null leaves the zero value.
enum class Kind { kString, kInt64, kStringArray, kStringMap, kDescriptor, kDescriptorArray, kPlatform };
struct Field {
  const char* name;
  Kind kind;
};
const std::vector<Field> kDescriptorFields = {
    {"mediaType", Kind::kString}, {"digest", Kind::kString}, {"size", Kind::kInt64},
    {"urls", Kind::kStringArray}, {"annotations", Kind::kStringMap}, {"data", Kind::kString},
    {"platform", Kind::kPlatform}, {"artifactType", Kind::kString}};
const std::vector<Field> kPlatformFields = {
    {"architecture", Kind::kString}, {"os", Kind::kString}, {"os.version", Kind::kString},
    {"os.features", Kind::kStringArray}, {"variant", Kind::kString}, {"features", Kind::kStringArray}};
const std::vector<Field> kIndexFields = {
    {"schemaVersion", Kind::kInt64}, {"mediaType", Kind::kString}, {"artifactType", Kind::kString},
    {"manifests", Kind::kDescriptorArray}, {"subject", Kind::kDescriptor}, {"annotations", Kind::kStringMap}};
const std::vector<Field> kManifestFields = {
    {"schemaVersion", Kind::kInt64}, {"mediaType", Kind::kString}, {"artifactType", Kind::kString},
    {"config", Kind::kDescriptor}, {"layers", Kind::kDescriptorArray}, {"subject", Kind::kDescriptor},
    {"annotations", Kind::kStringMap}};

std::string Shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

std::string Wrong(const std::string& path, const json& v, const char* want) {
  const std::string t = v.type_name();
  return path + (t == "object" || t == "array" ? " is an " : " is a ") + t + " (" + Shown(v) + "), not " + want;
}

// "" or the first field of the wrong JSON type, with its path ("manifests[0].size is a string ...").
std::string TypeError(const json& o, const std::vector<Field>& fields, const std::string& path) {
  if (!o.is_object()) return Wrong(path, o, "an object");
  for (const Field& f : fields) {
    auto it = o.find(f.name);
    if (it == o.end() || it->is_null()) continue;
    const json& v = *it;
    const std::string p = path.empty() ? f.name : path + "." + f.name;
    std::string e;
    switch (f.kind) {
      case Kind::kString:
        if (!v.is_string()) e = Wrong(p, v, "a string");
        break;
      case Kind::kInt64:
        if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}))
          e = Wrong(p, v, "an integer (Go int64)");
        break;
      case Kind::kStringArray:
        if (!v.is_array()) { e = Wrong(p, v, "an array of strings"); break; }
        for (size_t i = 0; i < v.size() && e.empty(); ++i)
          if (!v[i].is_string()) e = Wrong(p + "[" + std::to_string(i) + "]", v[i], "a string");
        break;
      case Kind::kStringMap:
        if (!v.is_object()) { e = Wrong(p, v, "an object of strings"); break; }
        for (auto kv = v.begin(); kv != v.end() && e.empty(); ++kv)
          if (!kv->is_string()) e = Wrong(p + "." + kv.key(), *kv, "a string");
        break;
      case Kind::kDescriptor: e = TypeError(v, kDescriptorFields, p); break;
      case Kind::kPlatform: e = TypeError(v, kPlatformFields, p); break;
      case Kind::kDescriptorArray:
        if (!v.is_array()) { e = Wrong(p, v, "an array of descriptors"); break; }
        for (size_t i = 0; i < v.size() && e.empty(); ++i)
          e = TypeError(v[i], kDescriptorFields, p + "[" + std::to_string(i) + "]");
        break;
    }
    if (!e.empty()) return e;
  }
  return "";
}

const char* kGoRejects = "; Go's encoding/json (containerd, docker, oras) rejects the whole document";

std::string Str(const json& o, const char* key, const std::string& dflt) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : dflt;
}

struct Walker {
  fs::path dir;
  OciReport rep;
  std::set<std::string> reached;              // "sha256/<hex>"
  std::set<std::string> present_digests;      // digests whose blob exists and matches
  std::vector<std::pair<std::string, std::string>> pending_subjects;
  std::map<std::string, std::string> hashed;  // digest -> its blob's SHA-256 (or "unreadable"), hashed once
  // Manifests and indexes already walked (digest -> result and its first error code), and the chain being
  // walked now: a shared child is walked once, and an index that reaches itself is a cycle.
  struct Walked {
    bool ok = false;
    std::string first_error;
  };
  std::map<std::string, Walked> walked;
  std::set<std::string> walking;

  void Add(FindingCode code, Severity sev, const std::string& where, std::string msg) {
    Finding f;
    f.code = code;
    f.severity = sev;
    f.path = where;
    f.message = std::move(msg);
    rep.findings.push_back(std::move(f));
  }

  // Validates a descriptor (types already checked) and its blob; the blob bytes in *content when
  // asked. `any_type`: an artifact's config/layers, where image-spec 1.1 allows any media type.
  bool Descriptor(const json& d, const std::string& where, bool want_content, std::string* content, bool any_type = false) {
    std::string missing;
    for (const char* k : {"mediaType", "digest", "size"})
      if (!d.is_object() || !d.contains(k) || d[k].is_null()) missing += std::string(missing.empty() ? "" : ", ") + k;
    if (!missing.empty()) {
      Add(FindingCode::kManifestInvalid, Severity::kError, where, "descriptor lacks " + missing);
      return false;
    }
    if (!d["mediaType"].is_string() || !d["digest"].is_string() || !d["size"].is_number_integer()) {
      Add(FindingCode::kManifestInvalid, Severity::kError, where, TypeError(d, kDescriptorFields, "descriptor") + kGoRejects);
      return false;
    }
    const std::string mt = d["mediaType"], dg = d["digest"];
    const int64_t size = d["size"].get<int64_t>();
    if (!MediaTypeSyntaxOk(mt))
      Add(FindingCode::kUnknownMediaType, Severity::kWarning, where, "media type '" + mt + "' is not type/subtype (RFC 6838)");
    else if (!any_type && !kKnownTypes.count(mt) && mt.rfind("application/vnd.", 0) != 0)
      Add(FindingCode::kUnknownMediaType, Severity::kWarning, where, "media type '" + mt + "' is not a registered OCI/Docker type");
    else if (!any_type && !kKnownTypes.count(mt))
      Add(FindingCode::kUnknownMediaType, Severity::kInfo, where, "vendor media type '" + mt + "'");
    if (dg.find('/') != std::string::npos || dg.find("..") != std::string::npos || dg.find('\\') != std::string::npos) {
      Add(FindingCode::kDigestPathTraversal, Severity::kError, where, "digest '" + dg + "' would escape blobs/ (path traversal); not opened");
      return false;
    }
    static const std::regex kSha256("^sha256:[a-f0-9]{64}$"), kSha512("^sha512:[a-f0-9]{128}$");
    if (!std::regex_match(dg, kSha256) && !std::regex_match(dg, kSha512)) {
      Add(FindingCode::kDigestInvalid, Severity::kError, where, "digest '" + dg + "' is not algorithm:lowercase-hex");
      return false;
    }
    const std::string alg = dg.substr(0, dg.find(':')), hex = dg.substr(dg.find(':') + 1);
    const std::string rel = "blobs/" + alg + "/" + hex;
    reached.insert(alg + "/" + hex);
    const fs::path p = dir / "blobs" / alg / hex;
    if (std::string why = FileProblem(p); !why.empty()) {
      const bool loop = why.find("loop") != std::string::npos;
      Add(loop ? FindingCode::kSymlinkLoop : FindingCode::kBlobMissing, Severity::kError, rel,
          "blob for " + dg + " (" + mt + ") " + (loop ? why : "is not in the layout (" + why + ")"));
      return false;
    }
    std::error_code ec;
    const uint64_t actual = fs::file_size(p, ec);
    if (ec || static_cast<int64_t>(actual) != size)
      Add(FindingCode::kSizeMismatch, Severity::kError, rel, "descriptor size " + std::to_string(size) + ", blob has " + std::to_string(actual));
    if (alg == "sha256") {
      // Each blob is hashed once, however many descriptors reference it (nested indexes share blobs).
      auto [memo, first] = hashed.try_emplace(dg);
      if (first) {
        ++rep.blobs_checked;
        auto h = Sha256File(p.string());
        memo->second = h.ok() ? h.value() : "unreadable";
      }
      if (memo->second != hex) {
        if (first)
          Add(FindingCode::kDigestMismatch, Severity::kError, rel, "content SHA-256 " + memo->second +
              " does not match its digest (corrupted in transfer)");
        return false;
      }
    } else {
      ++rep.blobs_checked;
    }
    present_digests.insert(dg);
    if (std::string why; want_content && !Slurp(p, content, kMaxJsonBytes, &why)) {
      Add(FindingCode::kManifestInvalid, Severity::kError, rel, mt + " blob " + (why.empty() ? "cannot be read" : why));
      return false;
    }
    return true;
  }

  // Returns true if the manifest and everything it references is present and valid. `plat` is the
  // platform the index entry names ("" for none).
  bool Manifest(const json& desc, const std::string& where, int depth, const std::string& plat) {
    if (!desc.is_object() || !desc.contains("digest") || !desc["digest"].is_string() || !desc.contains("mediaType") ||
        !desc["mediaType"].is_string() || (!IsIndexType(desc["mediaType"]) && !IsManifestType(desc["mediaType"]))) {
      last_error.clear();
      return ManifestOnce(desc, where, depth, plat);
    }
    const std::string dg = desc["digest"];
    if (auto it = walked.find(dg); it != walked.end()) {
      Descriptor(desc, where, false, nullptr);  // this descriptor's own size and type; the blob is hashed once
      last_error = it->second.first_error;
      return it->second.ok;
    }
    if (walking.count(dg)) {
      Add(FindingCode::kManifestInvalid, Severity::kError, where,
          "index cycle: " + dg + " references itself (directly or through other indexes); clients would loop");
      last_error = FindingCodeName(FindingCode::kManifestInvalid);
      return false;
    }
    walking.insert(dg);
    const size_t before = rep.findings.size();
    Walked w;
    w.ok = ManifestOnce(desc, where, depth, plat);
    for (size_t k = before; k < rep.findings.size() && w.first_error.empty(); ++k)
      if (rep.findings[k].severity == Severity::kError) w.first_error = FindingCodeName(rep.findings[k].code);
    walking.erase(dg);
    walked[dg] = w;
    last_error = w.first_error;
    return w.ok;
  }
  std::string last_error;  // the first error code under the manifest Manifest() just returned on

  bool ManifestOnce(const json& desc, const std::string& where, int depth, const std::string& plat) {
    std::string body;
    if (!Descriptor(desc, where, true, &body)) return false;
    const std::string mt = desc["mediaType"];
    const std::string dg = desc["digest"];
    const std::string rel = "blobs/" + std::string(dg).replace(dg.find(':'), 1, "/");
    if (!IsIndexType(mt) && !IsManifestType(mt)) {
      if (plat.empty()) return true;  // an artifact blob referenced from an index: checked as a blob only
      // containerd resolves a platform only through manifest/index media types: it skips this entry.
      Add(FindingCode::kUnknownMediaType, Severity::kError, where,
          "entry for platform " + plat + " has media type '" + mt + "', neither an image manifest nor an index: "
          "clients skip it, so the platform cannot be pulled; nothing under it was checked");
      return false;
    }
    json m;
    std::string why;
    if (!ParseGoJson(body, &m, &why)) {
      Add(FindingCode::kManifestInvalid, Severity::kError, rel, mt + " " + why);
      return false;
    }
    if (std::string e = TypeError(m, IsIndexType(mt) ? kIndexFields : kManifestFields, ""); !e.empty()) {
      Add(FindingCode::kManifestInvalid, Severity::kError, rel, e + kGoRejects);
      return false;
    }
    if (m.contains("mediaType") && m["mediaType"].is_string() && m["mediaType"] != mt) {
      Add(FindingCode::kManifestInvalid, Severity::kError, rel, "its mediaType '" + m["mediaType"].get<std::string>() +
          "' differs from the descriptor's '" + mt + "'");
      return false;
    }
    if (m.contains("subject") && m["subject"].is_object()) {
      ++rep.referrers;
      const json& s = m["subject"];
      if (s.contains("digest") && s["digest"].is_string()) pending_subjects.push_back({rel, s["digest"]});
    }
    if (IsIndexType(mt)) {
      if (depth > 8) { Add(FindingCode::kManifestInvalid, Severity::kError, rel, "index nesting deeper than 8"); return false; }
      return Index(m, rel, depth + 1);
    }
    ++rep.manifests;
    bool ok = true;
    // Types are checked, but null is allowed (Go's zero value), which .value() would throw on.
    if (!m.contains("schemaVersion") || !m["schemaVersion"].is_number_integer() || m["schemaVersion"] != 2)
      Add(FindingCode::kManifestInvalid, Severity::kWarning, rel, "schemaVersion is not 2 (image-spec requires 2; containerd does not check it)");
    // An artifact (image-spec 1.1: artifactType, or a config that is not an image config) may carry
    // config and layers of any media type.
    const bool artifact = m.contains("artifactType") ||
                          (m.contains("config") && m["config"].is_object() && !kImageConfigTypes.count(Str(m["config"], "mediaType", "")));
    if (!m.contains("config") || !m["config"].is_object()) { Add(FindingCode::kManifestInvalid, Severity::kError, rel, "image manifest has no config"); ok = false; }
    else {
      const std::string cmt = Str(m["config"], "mediaType", "");
      const bool want_json = cmt.size() >= 4 && cmt.compare(cmt.size() - 4, 4, "json") == 0;
      std::string cfg;
      if (!Descriptor(m["config"], rel + " config", want_json, &cfg, artifact)) ok = false;
      else if (want_json && (JsonTooDeep(cfg) || json::parse(cfg, nullptr, false).is_discarded())) {
        Add(FindingCode::kManifestInvalid, Severity::kError, rel, "config blob is not JSON"); ok = false;
      }
    }
    if (!m.contains("layers") || !m["layers"].is_array()) {
      if (!artifact) { Add(FindingCode::kManifestInvalid, Severity::kError, rel, "image manifest has no layers array"); ok = false; }
    } else {
      int i = 0;
      for (const auto& l : m["layers"]) {
        std::string dummy;
        if (!Descriptor(l, rel + " layer " + std::to_string(i), false, &dummy, artifact)) ok = false;
        ++i;
      }
    }
    return ok;
  }

  bool Index(const json& idx, const std::string& where, int depth) {
    if (!idx.contains("manifests") || !idx["manifests"].is_array()) {
      Add(FindingCode::kIndexInvalid, Severity::kError, where, "image index has no manifests array");
      return false;
    }
    if (!idx.contains("schemaVersion") || !idx["schemaVersion"].is_number_integer() || idx["schemaVersion"] != 2)
      Add(FindingCode::kIndexInvalid, Severity::kError, where, "schemaVersion is not 2");
    bool all = true;
    int i = 0;
    for (const auto& d : idx["manifests"]) {
      std::string plat;
      if (d.is_object() && d.contains("platform") && d["platform"].is_object()) {
        const json& p = d["platform"];
        plat = Str(p, "os", "?") + "/" + Str(p, "architecture", "?");
        if (!Str(p, "variant", "").empty()) plat += "/" + Str(p, "variant", "");
      }
      size_t before = rep.findings.size();
      bool ok = Manifest(d, where + " manifests[" + std::to_string(i) + "]", depth, plat);
      if (!plat.empty()) {
        rep.platforms.push_back(plat + (ok ? " complete" : " INCOMPLETE"));
        if (!ok) {
          std::string why = last_error.empty() ? "error" : last_error;
          for (size_t k = before; k < rep.findings.size(); ++k)
            if (rep.findings[k].severity == Severity::kError) { why = FindingCodeName(rep.findings[k].code); break; }
          Add(FindingCode::kPlatformIncomplete, Severity::kError, where, "platform " + plat + " cannot be pulled offline (" + why + ")");
        }
      }
      all &= ok;
      ++i;
    }
    return all;
  }

  void Run() {
    std::string text;
    json j;
    std::string why;
    if (std::string p = FileProblem(dir / "oci-layout"); !p.empty()) {
      if (p.find("loop") != std::string::npos) Add(FindingCode::kSymlinkLoop, Severity::kError, "oci-layout", "oci-layout " + p);
      else Add(FindingCode::kOciLayoutMissing, Severity::kError, "oci-layout", "no oci-layout file: this is not an OCI image layout (engines refuse it)");
    } else if (!Slurp(dir / "oci-layout", &text, kMaxJsonBytes, &why) || !ParseGoJson(text, &j, &why) || !j.is_object() ||
               !j.contains("imageLayoutVersion") || !j["imageLayoutVersion"].is_string()) {
      Add(FindingCode::kOciLayoutInvalid, Severity::kError, "oci-layout",
          why.empty() ? "must be JSON with a string imageLayoutVersion" : "oci-layout " + why);
    } else if (j["imageLayoutVersion"] != "1.0.0") {
      Add(FindingCode::kOciLayoutInvalid, Severity::kWarning, "oci-layout", "imageLayoutVersion " + std::string(j["imageLayoutVersion"]) + " (expected 1.0.0)");
    }
    if (std::string p = FileProblem(dir / "index.json"); !p.empty()) {
      if (p.find("loop") != std::string::npos) Add(FindingCode::kSymlinkLoop, Severity::kError, "index.json", "index.json " + p);
      else Add(FindingCode::kIndexInvalid, Severity::kError, "index.json", "index.json is missing (" + p + ")");
      return;
    }
    json idx;
    why.clear();
    if (!Slurp(dir / "index.json", &text, kMaxJsonBytes, &why) || !ParseGoJson(text, &idx, &why) || !idx.is_object()) {
      Add(FindingCode::kIndexInvalid, Severity::kError, "index.json",
          why.empty() ? "index.json is not a JSON object" : "index.json " + why);
      return;
    }
    if (std::string e = TypeError(idx, kIndexFields, ""); !e.empty()) {
      Add(FindingCode::kIndexInvalid, Severity::kError, "index.json", e + kGoRejects);
      return;
    }
    if (idx.contains("mediaType") && idx["mediaType"].is_string() && idx["mediaType"] != kIndex)
      Add(FindingCode::kIndexInvalid, Severity::kError, "index.json", "mediaType is '" + Shown(idx["mediaType"]) + "', not an image index");
    Index(idx, "index.json", 0);
    for (auto& [where, dg] : pending_subjects)
      if (!present_digests.count(dg))
        Add(FindingCode::kSubjectMissing, Severity::kInfo, where, "referrer's subject " + dg + " is not in this layout");
    std::error_code ec;
    if (fs::is_directory(dir / "blobs", ec)) {
      for (auto it = fs::recursive_directory_iterator(dir / "blobs", ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code ec2;
        const std::string rel = it->path().lexically_relative(dir / "blobs").generic_string();
        if (std::string p = FileProblem(it->path()); p.find("loop") != std::string::npos) {
          if (!reached.count(rel)) Add(FindingCode::kSymlinkLoop, Severity::kError, "blobs/" + rel, "blobs/" + rel + " " + p);
          continue;
        }
        if (!it->is_regular_file(ec2)) continue;
        if (!reached.count(rel))
          Add(FindingCode::kOrphanBlob, Severity::kWarning, "blobs/" + rel, "blob is not referenced from index.json (garbage, or a lost tag)");
      }
      if (ec) Add(FindingCode::kIndexInvalid, Severity::kError, "blobs", "blobs/ cannot be listed: " + ec.message());
    }
  }
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

OciReport CheckOciLayout(const std::string& dir_s) {
  Walker w;
  w.dir = dir_s;
  // The walk checks every type before use; a library exception is still never allowed out.
  try {
    w.Run();
  } catch (const std::exception& e) {
    w.Add(FindingCode::kIndexInvalid, Severity::kError, "index.json", std::string("layout could not be walked: ") + e.what());
  }
  return w.rep;
}

ReferrersVerdict ClassifyReferrersResponse(const std::string& path) {
  ReferrersVerdict v;
  std::string raw;
  std::string why;
  if (!Slurp(path, &raw, kMaxTranscriptBytes, &why)) {
    v.code = FindingCode::kReferrersUnreadable;
    v.message = path + ": cannot read" + (why.empty() ? std::string() : " (" + why + ")");
    return v;
  }
  // Read the transcript as the client did: interim 1xx replies are skipped and each redirect that
  // was followed (curl -iL) leads to the next reply; the last reply is the answer.
  const std::vector<HttpResponse> rs = ParseHttpTranscript(raw);
  const HttpResponse* last = nullptr;
  std::string hops;
  for (const HttpResponse& r : rs) {
    if (r.status >= 100 && r.status < 200) continue;
    if (last && last->status >= 300 && last->status < 400)
      hops += (hops.empty() ? "" : ", ") + std::to_string(last->status) + " to " + last->Header("location");
    last = &r;
  }
  if (!last) {
    v.code = FindingCode::kReferrersNotIndex;
    v.http_status = rs.empty() ? 0 : rs.back().status;
    v.message = "the transcript ends after an interim " + std::to_string(v.http_status) + " reply: no final response was saved";
    return v;
  }
  const HttpResponse& r = *last;
  v.http_status = r.status;
  const std::string after = hops.empty() ? "" : " (after following " + hops + ")";
  const std::string body = r.body, ctype = Lower(r.Header("content-type")), location = r.Header("location");
  size_t i = 0;
  while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) ++i;
  std::string start = Lower(body.substr(i, 64));
  const bool html = ctype.find("text/html") != std::string::npos || start.rfind("<!doctype", 0) == 0 ||
                    start.rfind("<html", 0) == 0;
  if (r.status == 401 || r.status == 403 || r.status == 407) {
    // Auth problems are named as such, with what the server asked for.
    v.code = FindingCode::kReferrersAuth;
    const AuthChallenge a = ParseAuthChallenge(r.Header(r.status == 407 ? "proxy-authenticate" : "www-authenticate"));
    std::string asked;
    if (!a.scheme.empty()) {
      asked = a.scheme + " challenge";
      if (!a.realm.empty()) asked += ", realm " + a.realm;
      if (!a.service.empty()) asked += ", service " + a.service;
      if (!a.scope.empty()) asked += ", scope " + a.scope;
      if (!a.error.empty()) asked += ", error " + a.error;
    }
    if (r.status == 407) {
      v.message = "HTTP 407: the HTTP proxy wants credentials (" + (asked.empty() ? std::string("no challenge") : asked) +
                  "): set them in HTTPS_PROXY / the client's proxy config";
    } else if (r.status == 403 || a.error == "insufficient_scope") {
      v.message = "HTTP " + std::to_string(r.status) + ": authenticated, but not allowed" +
                  (asked.empty() ? "" : " (" + asked + ")") +
                  ": the token or account lacks pull access to this repository; ask for repository:<name>:pull";
    } else if (Lower(a.scheme) == "bearer") {
      v.message = "HTTP 401: the registry wants a bearer token (" + asked + "): get a token from the realm for that "
                  "service and scope and retry with 'Authorization: Bearer <token>' (docker/oras login does this). "
                  "This is an auth problem, not a malformed referrers index";
    } else if (Lower(a.scheme) == "basic") {
      v.message = "HTTP 401: the registry wants basic credentials (" + asked + "): log in (docker/oras login) first";
    } else {
      v.message = "HTTP 401 without a usable WWW-Authenticate challenge: the registry (or a proxy in front of it) "
                  "refuses anonymous access; log in first";
    }
    v.message += after;
    return v;
  }
  if (r.status >= 300 && r.status < 400) {
    std::string l = Lower(location);
    bool login = l.find("login") != std::string::npos || l.find("signin") != std::string::npos ||
                 l.find("sso") != std::string::npos || l.find("auth") != std::string::npos;
    v.code = login ? FindingCode::kReferrersLoginRedirect : FindingCode::kReferrersRedirect;
    v.message = "HTTP " + std::to_string(r.status) + " redirect to " + location +
                (login ? ": a proxy or registry front end wants a browser login; give the client a token "
                         "(docker/oras login) or exempt /v2/ from the SSO proxy"
                       : ": the client must follow it with the same Accept header") + after;
    return v;
  }
  if (r.status == 404) {
    v.code = FindingCode::kReferrersNotFound;
    v.message = "HTTP 404: the registry does not implement GET /v2/<name>/referrers/<digest>; clients must use the "
                "referrers tag schema fallback (tag sha256-<hex>) or the registry must be upgraded" + after;
    return v;
  }
  if (r.status == 406) {
    v.code = FindingCode::kReferrersNotAcceptable;
    v.message = "HTTP 406: send 'Accept: application/vnd.oci.image.index.v1+json' with the referrers request" + after;
    return v;
  }
  if (html) {
    v.code = FindingCode::kReferrersHtml;
    v.message = "an HTML page served with status " + std::to_string(r.status ? r.status : 200) +
                " instead of an image index: this is what produces \"failed to decode referrers index\". "
                "A proxy/CDN or the registry's UI answers /v2/ paths; route /v2/ to the registry API" + after;
    return v;
  }
  if (r.status >= 400) {
    v.code = FindingCode::kReferrersNotIndex;
    v.message = "HTTP " + std::to_string(r.status) + " " + r.reason + ": an error reply, not an image index" + after;
    return v;
  }
  json j;
  why.clear();
  if (!ParseGoJson(body, &j, &why) || !j.is_object()) {
    v.code = FindingCode::kReferrersNotIndex;
    v.message = "the body " + (why.empty() ? "is not a JSON object" : why) + " (content type '" + ctype +
                "'); the spec requires an image index" + after;
    return v;
  }
  if (std::string e = TypeError(j, kIndexFields, ""); !e.empty()) {
    v.code = FindingCode::kReferrersNotIndex;
    v.message = e + kGoRejects + after;
    return v;
  }
  if (Str(j, "mediaType", "") != kIndex || !j.contains("manifests") || !j["manifests"].is_array()) {
    v.code = FindingCode::kReferrersNotIndex;
    v.message = "JSON but not an image index (mediaType '" + Str(j, "mediaType", "") +
                "'): the spec requires mediaType application/vnd.oci.image.index.v1+json with a manifests array" + after;
    return v;
  }
  v.code = FindingCode::kReferrersOk;
  v.message = "a valid referrers image index with " + std::to_string(j["manifests"].size()) + " referrer(s)" + after;
  return v;
}

}  // namespace edgedecode::doctor
