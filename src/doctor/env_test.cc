#include "doctor/env.h"

#include <filesystem>
#include <functional>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "doctor/finding.h"
#include "doctor/hash.h"
#include "doctor/oci.h"
#include "doctor/test_util.h"

namespace edgedecode::doctor {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadBytes;
using testing::TempDir;
using testing::Testdata;
using testing::WriteBytes;

// Writes a blob and returns its descriptor.
json Blob(const std::string& dir, const std::string& media, const std::string& content) {
  std::string hex = Sha256Hex(reinterpret_cast<const uint8_t*>(content.data()), content.size());
  WriteBytes(dir + "/blobs/sha256/" + hex, content);
  return {{"mediaType", media}, {"digest", "sha256:" + hex}, {"size", content.size()}};
}

struct Layout {
  json layer, config, manifest, referrer;
};

// A good two-platform layout plus a signature-like referrer.
Layout MakeLayout(const std::string& dir) {
  Layout l;
  WriteBytes(dir + "/oci-layout", std::string(R"({"imageLayoutVersion":"1.0.0"})"));
  l.layer = Blob(dir, "application/vnd.oci.image.layer.v1.tar+gzip", std::string(1000, 'L'));
  l.config = Blob(dir, "application/vnd.oci.image.config.v1+json", R"({"architecture":"arm64","os":"linux"})");
  json m = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
            {"config", l.config}, {"layers", json::array({l.layer})}};
  l.manifest = Blob(dir, "application/vnd.oci.image.manifest.v1+json", m.dump());
  l.manifest["platform"] = {{"os", "linux"}, {"architecture", "arm64"}};
  json empty = Blob(dir, "application/vnd.oci.empty.v1+json", "{}");
  json sig = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
              {"artifactType", "application/vnd.example.sbom"}, {"config", empty}, {"layers", json::array()},
              {"subject", {{"mediaType", l.manifest["mediaType"]}, {"digest", l.manifest["digest"]}, {"size", l.manifest["size"]}}}};
  l.referrer = Blob(dir, "application/vnd.oci.image.manifest.v1+json", sig.dump());
  json idx = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
              {"manifests", json::array({l.manifest, l.referrer})}};
  WriteBytes(dir + "/index.json", idx.dump());
  return l;
}

std::vector<FindingCode> Codes(const OciReport& r, bool include_info = false) {
  std::vector<FindingCode> v;
  for (auto& f : r.findings) if (include_info || f.severity != Severity::kInfo) v.push_back(f.code);
  return v;
}
bool Has(const OciReport& r, FindingCode c) {
  auto v = Codes(r);
  return std::find(v.begin(), v.end(), c) != v.end();
}

std::string BlobPath(const std::string& dir, const json& d) {
  std::string dg = d["digest"];
  return dir + "/blobs/sha256/" + dg.substr(7);
}

TEST(Oci, GoodLayout) {
  TempDir t;
  MakeLayout(t.path);
  OciReport r = CheckOciLayout(t.path);
  EXPECT_TRUE(Codes(r).empty()) << r.findings[0].code << ": " << r.findings[0].message;
  EXPECT_EQ(r.referrers, 1);
  ASSERT_FALSE(r.platforms.empty());
  EXPECT_EQ(r.platforms[0], "linux/arm64 complete");
}

TEST(Oci, FlippedByteInLayer) {
  TempDir t;
  Layout l = MakeLayout(t.path);
  auto b = ReadBytes(BlobPath(t.path, l.layer));
  b[10] ^= 1;
  WriteBytes(BlobPath(t.path, l.layer), b);
  OciReport r = CheckOciLayout(t.path);
  EXPECT_TRUE(Has(r, FindingCode::kDigestMismatch));
  EXPECT_TRUE(Has(r, FindingCode::kPlatformIncomplete));
}

TEST(Oci, MissingBlobNoLayoutTraversalOrphan) {
  {
    TempDir t;
    Layout l = MakeLayout(t.path);
    fs::remove(BlobPath(t.path, l.config));
    EXPECT_TRUE(Has(CheckOciLayout(t.path), FindingCode::kBlobMissing));
  }
  {
    TempDir t;
    MakeLayout(t.path);
    fs::remove(t.path + "/oci-layout");
    EXPECT_TRUE(Has(CheckOciLayout(t.path), FindingCode::kOciLayoutMissing));
  }
  {
    TempDir t;
    Layout l = MakeLayout(t.path);
    WriteBytes(t.path + "/../ed_doctor_escape_target", std::string("secret"));
    json idx = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                {"manifests", json::array({{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                            {"digest", "sha256:../../../ed_doctor_escape_target"}, {"size", 6}}})}};
    WriteBytes(t.path + "/index.json", idx.dump());
    OciReport r = CheckOciLayout(t.path);
    EXPECT_TRUE(Has(r, FindingCode::kDigestPathTraversal));
    EXPECT_TRUE(Has(r, FindingCode::kOrphanBlob));  // the old blobs are now unreferenced
    fs::remove(t.path + "/../ed_doctor_escape_target");
  }
}

TEST(Oci, ReferrersResponses) {
  TempDir t;
  auto classify = [&](const std::string& body) {
    WriteBytes(t / "reply", body);
    return ClassifyReferrersResponse(t / "reply").code;
  };
  EXPECT_EQ(classify("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<!DOCTYPE html><html><title>Registry</title></html>"),
            FindingCode::kReferrersHtml);
  EXPECT_EQ(classify("<html><body>Sign in</body></html>"), FindingCode::kReferrersHtml);
  EXPECT_EQ(classify("HTTP/1.1 302 Found\r\nLocation: https://sso.example.com/login?next=/v2/\r\n\r\n"),
            FindingCode::kReferrersLoginRedirect);
  EXPECT_EQ(classify("HTTP/1.1 404 Not Found\r\n\r\n{\"errors\":[]}"), FindingCode::kReferrersNotFound);
  EXPECT_EQ(classify("HTTP/1.1 406 Not Acceptable\r\n\r\n"), FindingCode::kReferrersNotAcceptable);
  EXPECT_EQ(classify("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\n\r\n"
                     R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})"),
            FindingCode::kReferrersOk);
  EXPECT_EQ(classify(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"})"),
            FindingCode::kReferrersNotIndex);
  EXPECT_EQ(ClassifyReferrersResponse(t / "nope").code, FindingCode::kReferrersUnreadable);
}


bool HasMsg(const OciReport& r, FindingCode code, const std::string& text) {
  for (auto& f : r.findings)
    if (f.code == code && f.message.find(text) != std::string::npos) return true;
  return false;
}

std::string Dump(const OciReport& r) {
  std::string s;
  for (auto& f : r.findings) s += std::string(FindingCodeName(f.code)) + " [" + SeverityName(f.severity) + "] " + f.path + ": " + f.message + "\n";
  return s;
}

// Go's encoding/json (containerd) refuses a BOM and fields of the wrong JSON type; nlohmann accepts
// the BOM and throws on .value() of a wrong type. Both must end as findings.
TEST(Oci, GoJsonStrictness) {
  {
    TempDir t;
    MakeLayout(t.path);
    auto b = ReadBytes(t / "index.json");
    WriteBytes(t / "index.json", "\xEF\xBB\xBF" + std::string(b.begin(), b.end()));
    OciReport r = CheckOciLayout(t.path);
    EXPECT_TRUE(HasMsg(r, FindingCode::kIndexInvalid, "byte order mark")) << Dump(r);
  }
  struct Edit {
    const char* what;
    std::function<void(json&)> edit;
    const char* message;
  };
  const std::vector<Edit> edits = {
      {"string size", [](json& i) { i["manifests"][0]["size"] = std::to_string(i["manifests"][0]["size"].get<int64_t>()); },
       "manifests[0].size is a string"},
      {"float size", [](json& i) { i["manifests"][0]["size"] = 12.5; }, "manifests[0].size is a number"},
      {"string schemaVersion", [](json& i) { i["schemaVersion"] = "2"; }, "schemaVersion is a string"},
      {"numeric platform.os", [](json& i) { i["manifests"][0]["platform"]["os"] = 7; }, "manifests[0].platform.os is a number"},
      {"numeric mediaType", [](json& i) { i["manifests"][0]["mediaType"] = 1; }, "manifests[0].mediaType is a number"},
      {"numeric index mediaType", [](json& i) { i["mediaType"] = 3; }, "mediaType is a number"},
      {"object annotations value", [](json& i) { i["annotations"] = {{"a", {{"b", 1}}}}; }, "annotations.a is an object"},
  };
  for (const Edit& e : edits) {
    TempDir t;
    MakeLayout(t.path);
    auto b = ReadBytes(t / "index.json");
    json idx = json::parse(std::string(b.begin(), b.end()));
    e.edit(idx);
    WriteBytes(t / "index.json", idx.dump());
    OciReport r;
    EXPECT_NO_THROW(r = CheckOciLayout(t.path)) << e.what;
    EXPECT_TRUE(HasMsg(r, FindingCode::kIndexInvalid, e.message)) << e.what << "\n" << Dump(r);
    EXPECT_TRUE(HasMsg(r, FindingCode::kIndexInvalid, "Go's encoding/json")) << e.what;
  }
  {
    // null is Go's zero value, not a wrong type: no finding for the index, and never an exception.
    TempDir t;
    Layout l = MakeLayout(t.path);
    json m = {{"schemaVersion", nullptr}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
              {"config", l.config}, {"layers", json::array({l.layer})}, {"annotations", nullptr}};
    json md = Blob(t.path, "application/vnd.oci.image.manifest.v1+json", m.dump());
    md["platform"] = {{"os", "linux"}, {"architecture", "amd64"}, {"variant", nullptr}};
    WriteBytes(t / "index.json", json({{"schemaVersion", 2}, {"mediaType", nullptr}, {"annotations", nullptr},
                                       {"manifests", json::array({md})}}).dump());
    OciReport r;
    EXPECT_NO_THROW(r = CheckOciLayout(t.path));
    for (auto& f : r.findings) EXPECT_NE(f.code, FindingCode::kIndexInvalid) << Dump(r);
    EXPECT_TRUE(HasMsg(r, FindingCode::kManifestInvalid, "schemaVersion is not 2")) << Dump(r);
  }
  // Inside a manifest blob: the platform is incomplete, with the field named.
  TempDir t;
  Layout l = MakeLayout(t.path);
  json m = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"}, {"config", l.config},
            {"layers", json::array({l.layer})}};
  m["layers"][0]["size"] = "1000";
  json md = Blob(t.path, "application/vnd.oci.image.manifest.v1+json", m.dump());
  md["platform"] = {{"os", "linux"}, {"architecture", "amd64"}};
  WriteBytes(t / "index.json", json({{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                     {"manifests", json::array({md})}}).dump());
  OciReport r = CheckOciLayout(t.path);
  EXPECT_TRUE(HasMsg(r, FindingCode::kManifestInvalid, "layers[0].size is a string")) << Dump(r);
  ASSERT_EQ(r.platforms.size(), 1u);
  EXPECT_EQ(r.platforms[0], "linux/amd64 INCOMPLETE");
}

// An index entry whose media type is neither a manifest nor an index leaves its platform
// unpullable: never "complete" with nothing checked.
TEST(Oci, UnknownMediaTypeForAPlatform) {
  TempDir t;
  Layout l = MakeLayout(t.path);
  json entry = l.manifest;
  entry["mediaType"] = "application/vnd.oci.image.manifest.v1+jsn";
  WriteBytes(t / "index.json", json({{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                     {"manifests", json::array({entry})}}).dump());
  OciReport r = CheckOciLayout(t.path);
  ASSERT_EQ(r.platforms.size(), 1u);
  EXPECT_EQ(r.platforms[0], "linux/arm64 INCOMPLETE");
  EXPECT_TRUE(HasMsg(r, FindingCode::kUnknownMediaType, "nothing under it was checked")) << Dump(r);
  EXPECT_TRUE(Has(r, FindingCode::kPlatformIncomplete));
}

// image-spec 1.1 artifacts: any artifactType, config and layer media types; no warning.
TEST(Oci, ArtifactWithAnyLayerTypesIsValid) {
  TempDir t;
  Layout l = MakeLayout(t.path);
  json sbom = Blob(t.path, "application/spdx+json", R"({"spdxVersion":"SPDX-2.3"})");
  json note = Blob(t.path, "text/plain", "signed by ci\n");
  json cfg = Blob(t.path, "application/vnd.example.tool.config+json", "{}");
  for (const json& config : {Blob(t.path, "application/vnd.oci.empty.v1+json", "{}"), cfg}) {
    json art = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                {"artifactType", "application/x.example.anything"}, {"config", config},
                {"layers", json::array({sbom, note})},
                {"subject", {{"mediaType", l.manifest["mediaType"]}, {"digest", l.manifest["digest"]}, {"size", l.manifest["size"]}}}};
    json ad = Blob(t.path, "application/vnd.oci.image.manifest.v1+json", art.dump());
    ad["artifactType"] = "application/x.example.anything";
    WriteBytes(t / "index.json", json({{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                       {"manifests", json::array({l.manifest, ad})}}).dump());
    OciReport r = CheckOciLayout(t.path);
    std::vector<FindingCode> c;
    for (auto& f : r.findings)
      if (f.severity != Severity::kInfo && f.code != FindingCode::kOrphanBlob) c.push_back(f.code);
    EXPECT_TRUE(c.empty()) << Dump(r);
    EXPECT_EQ(r.referrers, 1);
  }
}

TEST(Oci, SymlinkLoopsAreFindings) {
  TempDir t;
  Layout l = MakeLayout(t.path);
  const std::string layer = BlobPath(t.path, l.layer);
  fs::remove(layer);
  fs::create_symlink(layer, layer);                        // a blob that points at itself
  fs::create_symlink(t / "blobs/sha256/b", t / "blobs/sha256/a");  // an unreferenced a -> b -> a
  fs::create_symlink(t / "blobs/sha256/a", t / "blobs/sha256/b");
  OciReport r;
  EXPECT_NO_THROW(r = CheckOciLayout(t.path));
  EXPECT_TRUE(HasMsg(r, FindingCode::kSymlinkLoop, "blobs/sha256/a")) << Dump(r);
  EXPECT_TRUE(HasMsg(r, FindingCode::kSymlinkLoop, l.layer["digest"].get<std::string>())) << Dump(r);
  EXPECT_TRUE(Has(r, FindingCode::kPlatformIncomplete));
  fs::remove(t / "index.json");
  fs::create_symlink(t / "index.json", t / "index.json");
  EXPECT_NO_THROW(r = CheckOciLayout(t.path));
  EXPECT_TRUE(HasMsg(r, FindingCode::kSymlinkLoop, "index.json")) << Dump(r);
}

// Saved replies read as an HTTP client reads them.
TEST(Oci, ReferrersTranscripts) {
  TempDir t;
  auto verdict = [&](const std::string& body) {
    WriteBytes(t / "reply", body);
    return ClassifyReferrersResponse(t / "reply");
  };
  const std::string index =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})";
  const std::string ok_head = "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\n\r\n";
  ReferrersVerdict v = verdict("HTTP/1.1 307 Temporary Redirect\r\nLocation: https://cdn.example.com/r\r\n"
                               "Content-Length: 0\r\n\r\n" + ok_head + index);
  EXPECT_EQ(v.code, FindingCode::kReferrersOk) << v.message;
  EXPECT_EQ(v.http_status, 200);
  EXPECT_NE(v.message.find("307 to https://cdn.example.com/r"), std::string::npos) << v.message;
  // A redirect with an HTML body and no Content-Length (LF line ends), then the answer.
  v = verdict("HTTP/1.1 302 Found\nLocation: /v2/app/referrers/x\nContent-Type: text/html\n\n<a href=\"/v2/\">Found</a>.\n\n"
              "HTTP/2 200\ncontent-type: application/vnd.oci.image.index.v1+json\n\n" + index);
  EXPECT_EQ(v.code, FindingCode::kReferrersOk) << v.message;
  v = verdict("HTTP/1.1 100 Continue\r\n\r\n" + ok_head + index);
  EXPECT_EQ(v.code, FindingCode::kReferrersOk) << v.message;
  EXPECT_EQ(v.http_status, 200);
  v = verdict("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
              "WWW-Authenticate: Bearer realm=\"https://auth.example.com/token\",service=\"registry.example.com\","
              "scope=\"repository:team/app:pull\"\r\n\r\n"
              R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})");
  EXPECT_EQ(v.code, FindingCode::kReferrersAuth);
  EXPECT_EQ(v.http_status, 401);
  EXPECT_NE(v.message.find("realm https://auth.example.com/token"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("scope repository:team/app:pull"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("auth problem"), std::string::npos) << v.message;
  v = verdict("HTTP/1.1 403 Forbidden\r\n\r\n{}");
  EXPECT_EQ(v.code, FindingCode::kReferrersAuth);
  v = verdict("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"r\",error=\"insufficient_scope\"\r\n\r\n");
  EXPECT_EQ(v.code, FindingCode::kReferrersAuth);
  EXPECT_NE(v.message.find("lacks pull access"), std::string::npos) << v.message;
  // Strict JSON in the reply too: BOM, wrong types; never an exception.
  v = verdict(ok_head + "\xEF\xBB\xBF" + index);
  EXPECT_EQ(v.code, FindingCode::kReferrersNotIndex);
  EXPECT_NE(v.message.find("byte order mark"), std::string::npos) << v.message;
  EXPECT_EQ(verdict(R"({"schemaVersion":2,"mediaType":5,"manifests":[]})").code, FindingCode::kReferrersNotIndex);
  v = verdict(R"({"schemaVersion":"2","mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})");
  EXPECT_EQ(v.code, FindingCode::kReferrersNotIndex);
  EXPECT_NE(v.message.find("schemaVersion is a string"), std::string::npos) << v.message;
  v = verdict(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"a/b","digest":"sha256:00","size":"5"}]})");
  EXPECT_EQ(v.code, FindingCode::kReferrersNotIndex);
  EXPECT_NE(v.message.find("manifests[0].size is a string"), std::string::npos) << v.message;
  EXPECT_EQ(verdict("HTTP/1.1 100 Continue\r\n\r\n").code, FindingCode::kReferrersNotIndex);
}

TEST(Env, ModelIntegrityAndRoofline) {
  const std::string model = Testdata("llm/gguf/stories260K.f32.gguf");
  ModelCheck m = CheckModel(model);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_GT(m.n_tensors, 0u);
  EXPECT_GT(m.bytes_per_token, 0u);
  EXPECT_LE(m.bytes_per_token, m.file_size);
  EXPECT_EQ(m.sha256.size(), 64u);
  TempDir t;
  auto b = ReadBytes(model);
  std::vector<uint8_t> cut(b.begin(), b.begin() + b.size() / 2);
  WriteBytes(t / "cut.gguf", cut);
  ModelCheck c = CheckModel(t / "cut.gguf");
  EXPECT_FALSE(c.ok);
  EXPECT_FALSE(c.error.empty());
  WriteBytes(t / "m.gguf", b);
  WriteBytes(t / "m.gguf.sha256", std::string(64, '0') + "  m.gguf\n");
  ModelCheck h = CheckModel(t / "m.gguf");
  bool mismatch = false;
  for (auto& f : h.findings) mismatch |= f.code == FindingCode::kHashMismatch;
  EXPECT_TRUE(mismatch);
  WriteBytes(t / "m.gguf.sha256", m.sha256 + "  m.gguf\n");
  EXPECT_TRUE(CheckModel(t / "m.gguf").findings.empty());
}

TEST(Env, CpuAndBandwidth) {
  CpuInfo c = ReadCpuInfo();
  EXPECT_GT(c.logical_cores, 0);
  EXPECT_GT(c.usable_cores, 0);
  EXPECT_GT(c.mem_total, 0u);
  EXPECT_GT(bench::MeasureReadBandwidth(1, 8 << 20, 1), 0.0);
  auto curve = bench::MeasureReadBandwidthCurve(3, 4 << 20, 1);
  ASSERT_EQ(curve.size(), 3u);  // 1, 2, 3 threads
  EXPECT_EQ(curve.back().threads, 3);
}

// The finding-code table (finding.h) is the contract with --json consumers: every code has a distinct,
// non-empty name and text, and every name is a row of the table in docs/doctor.md.
TEST(FindingCodes, TableIsCompleteAndDocumented) {
  const std::vector<FindingCode> all = AllFindingCodes();
  ASSERT_FALSE(all.empty());
  const std::vector<uint8_t> bytes = ReadBytes(std::string(EDGEDECODE_SOURCE_DIR) + "/docs/doctor.md");
  const std::string doc(bytes.begin(), bytes.end());
  ASSERT_FALSE(doc.empty()) << "docs/doctor.md not found";
  std::set<std::string> names, texts;
  for (size_t i = 0; i < all.size(); ++i) {
    const FindingCode c = all[i];
    EXPECT_EQ(static_cast<size_t>(c), i) << "AllFindingCodes() is in enum order";
    const std::string name = FindingCodeName(c), text = FindingCodeText(c);
    EXPECT_FALSE(name.empty()) << i;
    EXPECT_FALSE(text.empty()) << name;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos) << name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_TRUE(texts.insert(text).second) << "duplicate text for " << name << ": " << text;
    EXPECT_NE(doc.find("| `" + name + "` |"), std::string::npos) << name << " is not in the table in docs/doctor.md";
  }
  // Spot checks that the strings printed today did not change.
  EXPECT_STREQ(FindingCodeName(FindingCode::kExtensionMismatch), "extension-mismatch");
  EXPECT_STREQ(FindingCodeName(FindingCode::kGb18030VersionSensitive), "gb18030-version-sensitive");
  EXPECT_STREQ(FindingCodeName(FindingCode::kReferrersUnreadable), "referrers-unreadable");
}

}  // namespace
}  // namespace edgedecode::doctor
