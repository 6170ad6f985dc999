#include "doctor/oci.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "doctor/hash.h"

namespace edgedecode::doctor {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kIndex = "application/vnd.oci.image.index.v1+json";
const char* kManifest = "application/vnd.oci.image.manifest.v1+json";
const std::set<std::string> kKnownTypes = {
    kIndex, kManifest,
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.oci.image.layer.v1.tar", "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.oci.empty.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.container.image.v1+json",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
};

bool Slurp(const fs::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

struct Walker {
  fs::path dir;
  OciReport rep;
  std::set<std::string> reached;              // "sha256/<hex>"
  std::set<std::string> present_digests;      // digests whose blob exists and matches
  std::map<std::string, std::string> cache;   // verified blob contents (JSON blobs only)

  void Add(const std::string& code, Severity sev, const std::string& where, std::string msg) {
    Finding f;
    f.code = code;
    f.severity = sev;
    f.path = where;
    f.message = std::move(msg);
    rep.findings.push_back(std::move(f));
  }

  // Validates a descriptor and its blob; returns the blob bytes if read (json blobs) in *content.
  bool Descriptor(const json& d, const std::string& where, bool want_content, std::string* content) {
    if (!d.is_object() || !d.contains("digest") || !d["digest"].is_string() || !d.contains("size") ||
        !d["size"].is_number_integer() || !d.contains("mediaType") || !d["mediaType"].is_string()) {
      Add("manifest-invalid", Severity::kError, where, "descriptor lacks mediaType, digest or size");
      return false;
    }
    const std::string mt = d["mediaType"], dg = d["digest"];
    const int64_t size = d["size"];
    if (!kKnownTypes.count(mt) && mt.rfind("application/vnd.", 0) != 0)
      Add("unknown-media-type", Severity::kWarning, where, "media type '" + mt + "' is not a registered OCI/Docker type");
    else if (!kKnownTypes.count(mt))
      Add("unknown-media-type", Severity::kInfo, where, "vendor media type '" + mt + "'");
    if (dg.find('/') != std::string::npos || dg.find("..") != std::string::npos || dg.find('\\') != std::string::npos) {
      Add("digest-path-traversal", Severity::kError, where, "digest '" + dg + "' would escape blobs/ (path traversal); not opened");
      return false;
    }
    static const std::regex kSha256("^sha256:[a-f0-9]{64}$"), kSha512("^sha512:[a-f0-9]{128}$");
    if (!std::regex_match(dg, kSha256) && !std::regex_match(dg, kSha512)) {
      Add("digest-invalid", Severity::kError, where, "digest '" + dg + "' is not algorithm:lowercase-hex");
      return false;
    }
    const std::string alg = dg.substr(0, dg.find(':')), hex = dg.substr(dg.find(':') + 1);
    const std::string rel = "blobs/" + alg + "/" + hex;
    reached.insert(alg + "/" + hex);
    fs::path p = dir / "blobs" / alg / hex;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      Add("blob-missing", Severity::kError, rel, "blob for " + dg + " (" + mt + ") is not in the layout");
      return false;
    }
    ++rep.blobs_checked;
    uint64_t actual = fs::file_size(p, ec);
    if (static_cast<int64_t>(actual) != size)
      Add("size-mismatch", Severity::kError, rel, "descriptor size " + std::to_string(size) + ", blob has " + std::to_string(actual));
    if (alg == "sha256") {
      auto h = Sha256File(p.string());
      if (!h.ok() || h.value() != hex) {
        Add("digest-mismatch", Severity::kError, rel, "content SHA-256 " + (h.ok() ? h.value() : "unreadable") +
            " does not match its digest (corrupted in transfer)");
        return false;
      }
    }
    present_digests.insert(dg);
    if (want_content && !Slurp(p, content)) return false;
    return true;
  }

  // Returns true if the manifest and everything it references is present and valid.
  bool Manifest(const json& desc, const std::string& where, int depth) {
    std::string body;
    if (!Descriptor(desc, where, true, &body)) return false;
    const std::string mt = desc["mediaType"];
    const std::string rel = "blobs/" + std::string(desc["digest"]).replace(std::string(desc["digest"]).find(':'), 1, "/");
    json m = json::parse(body, nullptr, false);
    if (m.is_discarded() || !m.is_object()) {
      Add("manifest-invalid", Severity::kError, rel, "not JSON (" + mt + ")");
      return false;
    }
    if (m.contains("subject")) {
      ++rep.referrers;
      const json& s = m["subject"];
      if (s.is_object() && s.contains("digest") && s["digest"].is_string()) {
        pending_subjects.push_back({rel, s["digest"]});
      }
    }
    if (mt == kIndex || mt == "application/vnd.docker.distribution.manifest.list.v2+json") {
      if (depth > 8) { Add("manifest-invalid", Severity::kError, rel, "index nesting deeper than 8"); return false; }
      return Index(m, rel, depth + 1);
    }
    if (mt != kManifest && mt != "application/vnd.docker.distribution.manifest.v2+json") {
      return true;  // an artifact blob referenced from an index: checked as a blob only
    }
    ++rep.manifests;
    bool ok = true;
    if (!m.contains("config")) { Add("manifest-invalid", Severity::kError, rel, "image manifest has no config"); ok = false; }
    else {
      std::string cfg;
      if (!Descriptor(m["config"], rel + " config", true, &cfg)) ok = false;
      else if (json::parse(cfg, nullptr, false).is_discarded()) {
        Add("manifest-invalid", Severity::kError, rel, "config blob is not JSON"); ok = false;
      }
    }
    if (!m.contains("layers") || !m["layers"].is_array()) { Add("manifest-invalid", Severity::kError, rel, "image manifest has no layers array"); ok = false; }
    else {
      int i = 0;
      for (const auto& l : m["layers"]) {
        std::string dummy;
        if (!Descriptor(l, rel + " layer " + std::to_string(i), false, &dummy)) ok = false;
        ++i;
      }
    }
    return ok;
  }

  bool Index(const json& idx, const std::string& where, int depth) {
    if (!idx.contains("manifests") || !idx["manifests"].is_array()) {
      Add("index-invalid", Severity::kError, where, "image index has no manifests array");
      return false;
    }
    if (idx.value("schemaVersion", 0) != 2) Add("index-invalid", Severity::kError, where, "schemaVersion is not 2");
    bool all = true;
    int i = 0;
    for (const auto& d : idx["manifests"]) {
      std::string plat;
      if (d.is_object() && d.contains("platform") && d["platform"].is_object()) {
        const json& p = d["platform"];
        plat = p.value("os", "?") + "/" + p.value("architecture", "?");
        if (p.contains("variant")) plat += "/" + p.value("variant", "");
      }
      size_t before = rep.findings.size();
      bool ok = Manifest(d, where + " manifests[" + std::to_string(i) + "]", depth);
      if (!plat.empty()) {
        rep.platforms.push_back(plat + (ok ? " complete" : " INCOMPLETE"));
        if (!ok) {
          std::string why = rep.findings.size() > before ? rep.findings[before].code : "error";
          Add("platform-incomplete", Severity::kError, where, "platform " + plat + " cannot be pulled offline (" + why + ")");
        }
      }
      all &= ok;
      ++i;
    }
    return all;
  }

  std::vector<std::pair<std::string, std::string>> pending_subjects;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

OciReport CheckOciLayout(const std::string& dir_s) {
  Walker w;
  w.dir = dir_s;
  std::string text;
  if (!Slurp(w.dir / "oci-layout", &text)) {
    w.Add("oci-layout-missing", Severity::kError, "oci-layout", "no oci-layout file: this is not an OCI image layout (engines refuse it)");
  } else {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("imageLayoutVersion") || !j["imageLayoutVersion"].is_string())
      w.Add("oci-layout-invalid", Severity::kError, "oci-layout", "must be JSON with a string imageLayoutVersion");
    else if (j["imageLayoutVersion"] != "1.0.0")
      w.Add("oci-layout-invalid", Severity::kWarning, "oci-layout", "imageLayoutVersion " + std::string(j["imageLayoutVersion"]) + " (expected 1.0.0)");
  }
  if (!Slurp(w.dir / "index.json", &text)) {
    w.Add("index-invalid", Severity::kError, "index.json", "index.json is missing");
    return w.rep;
  }
  json idx = json::parse(text, nullptr, false);
  if (idx.is_discarded() || !idx.is_object()) {
    w.Add("index-invalid", Severity::kError, "index.json", "index.json is not a JSON object");
    return w.rep;
  }
  if (idx.contains("mediaType") && idx["mediaType"] != kIndex)
    w.Add("index-invalid", Severity::kError, "index.json", "mediaType is '" + idx["mediaType"].dump() + "', not an image index");
  w.Index(idx, "index.json", 0);
  for (auto& [where, dg] : w.pending_subjects)
    if (!w.present_digests.count(dg))
      w.Add("subject-missing", Severity::kInfo, where, "referrer's subject " + dg + " is not in this layout");
  std::error_code ec;
  if (fs::is_directory(w.dir / "blobs", ec)) {
    for (auto it = fs::recursive_directory_iterator(w.dir / "blobs", ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (!it->is_regular_file()) continue;
      std::string rel = it->path().lexically_relative(w.dir / "blobs").generic_string();
      if (!w.reached.count(rel))
        w.Add("orphan-blob", Severity::kWarning, "blobs/" + rel, "blob is not referenced from index.json (garbage, or a lost tag)");
    }
  }
  return w.rep;
}

ReferrersVerdict ClassifyReferrersResponse(const std::string& path) {
  ReferrersVerdict v;
  std::string raw;
  if (!Slurp(path, &raw)) {
    v.code = "referrers-unreadable";
    v.message = path + ": cannot read";
    return v;
  }
  // A reply saved with `curl -i` starts with the status line and headers; a body alone is allowed.
  std::string body = raw, ctype, location;
  if (raw.rfind("HTTP/", 0) == 0) {
    size_t end = raw.find("\r\n\r\n");
    size_t skip = 4;
    if (end == std::string::npos) { end = raw.find("\n\n"); skip = 2; }
    std::string head = raw.substr(0, end);
    body = end == std::string::npos ? "" : raw.substr(end + skip);
    std::istringstream hs(head);
    std::string line;
    std::getline(hs, line);
    size_t sp = line.find(' ');
    if (sp != std::string::npos) v.http_status = std::atoi(line.c_str() + sp + 1);
    while (std::getline(hs, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      size_t c = line.find(':');
      if (c == std::string::npos) continue;
      std::string k = Lower(line.substr(0, c)), val = line.substr(c + 1);
      while (!val.empty() && val[0] == ' ') val.erase(0, 1);
      if (k == "content-type") ctype = Lower(val);
      if (k == "location") location = val;
    }
  }
  size_t i = 0;
  while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) ++i;
  std::string start = Lower(body.substr(i, 64));
  const bool html = ctype.find("text/html") != std::string::npos || start.rfind("<!doctype", 0) == 0 ||
                    start.rfind("<html", 0) == 0;
  if (v.http_status >= 300 && v.http_status < 400) {
    std::string l = Lower(location);
    bool login = l.find("login") != std::string::npos || l.find("signin") != std::string::npos ||
                 l.find("sso") != std::string::npos || l.find("auth") != std::string::npos;
    v.code = login ? "referrers-login-redirect" : "referrers-redirect";
    v.message = "HTTP " + std::to_string(v.http_status) + " redirect to " + location +
                (login ? ": a proxy or registry front end wants a browser login; give the client a token "
                         "(docker/oras login) or exempt /v2/ from the SSO proxy"
                       : ": the client must follow it with the same Accept header");
    return v;
  }
  if (v.http_status == 404) {
    v.code = "referrers-not-found";
    v.message = "HTTP 404: the registry does not implement GET /v2/<name>/referrers/<digest>; clients must use the "
                "referrers tag schema fallback (tag sha256-<hex>) or the registry must be upgraded";
    return v;
  }
  if (v.http_status == 406) {
    v.code = "referrers-not-acceptable";
    v.message = "HTTP 406: send 'Accept: application/vnd.oci.image.index.v1+json' with the referrers request";
    return v;
  }
  if (html) {
    v.code = "referrers-html";
    v.message = "an HTML page served with status " + std::to_string(v.http_status ? v.http_status : 200) +
                " instead of an image index: this is what produces \"failed to decode referrers index\". "
                "A proxy/CDN or the registry's UI answers /v2/ paths; route /v2/ to the registry API";
    return v;
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    v.code = "referrers-not-index";
    v.message = "the body is not JSON (content type '" + ctype + "'); the spec requires an image index";
    return v;
  }
  if (j.value("mediaType", "") != kIndex || !j.contains("manifests") || !j["manifests"].is_array()) {
    v.code = "referrers-not-index";
    v.message = "JSON but not an image index (mediaType '" + j.value("mediaType", "") +
                "'): the spec requires mediaType application/vnd.oci.image.index.v1+json with a manifests array";
    return v;
  }
  v.code = "referrers-ok";
  v.message = "a valid referrers image index with " + std::to_string(j["manifests"].size()) + " referrer(s)";
  return v;
}

}  // namespace edgedecode::doctor
