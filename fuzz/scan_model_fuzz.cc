// What `edgedecode scan` reads as a model: an ONNX protobuf (scan::ReadModelProto, then OnnxModel::Load
// with its validation, external-data checks and libonnx shape inference) placed on every device profile
// of targets/ (scan::Scan, and the text, CSV and JSON reports); a TFLite flatbuffer, which scan sniffs
// and refuses with a message (there is no TFLite parser to fuzz beyond that); and a GGUF file, which scan
// places with ScanGguf.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuzz/fuzz_util.h"
#include "scan/gguf_scan.h"
#include "scan/onnx_model.h"
#include "scan/scanner.h"

using namespace edgedecode;

namespace {

std::vector<scan::Profile> LoadProfiles() {
  std::vector<scan::Profile> profiles;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(fuzz::SourceFile("targets"), ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files)
    if (auto prof = scan::Profile::Load(p.string()); prof.ok()) profiles.push_back(std::move(prof.value()));
  return profiles;
}

void Report(const scan::ScanReport& r) {
  (void)r.ToText(true);
  (void)r.ToCsv();
  (void)r.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<scan::Profile> profiles = LoadProfiles();
  static fuzz::MemFile file("model.onnx");
  const std::string& path = file.Write(data, size);
  if (scan::LooksLikeGguf(path)) {
    for (const scan::Profile& p : profiles)
      if (auto r = scan::ScanGguf(path, p); r.ok()) Report(r.value());
    return 0;
  }
  (void)scan::ReadModelProto(path);
  auto m = scan::OnnxModel::Load(path);
  if (!m.ok()) return 0;
  scan::ScanOptions opts;
  opts.quantized = size % 2 == 1;  // both settings over the corpus, one per input (half the cost)
  for (const scan::Profile& p : profiles) Report(scan::Scan(*m.value(), p, opts));
  return 0;
}
