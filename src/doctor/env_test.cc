#include "doctor/env.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

std::vector<std::string> Codes(const OciReport& r, bool include_info = false) {
  std::vector<std::string> v;
  for (auto& f : r.findings) if (include_info || f.severity != Severity::kInfo) v.push_back(f.code);
  return v;
}
bool Has(const OciReport& r, const std::string& c) {
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
  EXPECT_TRUE(Has(r, "digest-mismatch"));
  EXPECT_TRUE(Has(r, "platform-incomplete"));
}

TEST(Oci, MissingBlobNoLayoutTraversalOrphan) {
  {
    TempDir t;
    Layout l = MakeLayout(t.path);
    fs::remove(BlobPath(t.path, l.config));
    EXPECT_TRUE(Has(CheckOciLayout(t.path), "blob-missing"));
  }
  {
    TempDir t;
    MakeLayout(t.path);
    fs::remove(t.path + "/oci-layout");
    EXPECT_TRUE(Has(CheckOciLayout(t.path), "oci-layout-missing"));
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
    EXPECT_TRUE(Has(r, "digest-path-traversal"));
    EXPECT_TRUE(Has(r, "orphan-blob"));  // the old blobs are now unreferenced
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
            "referrers-html");
  EXPECT_EQ(classify("<html><body>Sign in</body></html>"), "referrers-html");
  EXPECT_EQ(classify("HTTP/1.1 302 Found\r\nLocation: https://sso.example.com/login?next=/v2/\r\n\r\n"),
            "referrers-login-redirect");
  EXPECT_EQ(classify("HTTP/1.1 404 Not Found\r\n\r\n{\"errors\":[]}"), "referrers-not-found");
  EXPECT_EQ(classify("HTTP/1.1 406 Not Acceptable\r\n\r\n"), "referrers-not-acceptable");
  EXPECT_EQ(classify("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\n\r\n"
                     R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})"),
            "referrers-ok");
  EXPECT_EQ(classify(R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"})"),
            "referrers-not-index");
  EXPECT_EQ(ClassifyReferrersResponse(t / "nope").code, "referrers-unreadable");
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
  for (auto& f : h.findings) mismatch |= f.code == "hash-mismatch";
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

}  // namespace
}  // namespace edgedecode::doctor
