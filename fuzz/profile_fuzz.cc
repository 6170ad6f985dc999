// Device profiles (targets/*.json, docs/profiles.md) as both readers take them: scan's loader
// (scan::Profile::Load) with the rules applied to fixed real models (scan::Scan on two ONNX models, one
// with If subgraphs and unknown dims; ScanGguf on a GGUF LLM, which reads the "llm" section), and doctor's
// hardware image-decoder section (doctor::LoadHwDecoder, then CheckAgainstHw on a few decoded images).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "doctor/profile.h"
#include "fuzz/fuzz_util.h"
#include "scan/gguf_scan.h"
#include "scan/onnx_model.h"
#include "scan/scanner.h"

using namespace edgedecode;

namespace {

// Fixed inputs from the shared test data; a harness built without it fuzzes the loaders alone.
std::vector<std::unique_ptr<scan::OnnxModel>> LoadModels() {
  std::vector<std::unique_ptr<scan::OnnxModel>> models;
  for (const char* rel : {"models/onnx/mnist-8.onnx", "models/onnx/silero_vad.livekit-1.9.0.onnx"})
    if (auto m = scan::OnnxModel::Load(fuzz::TestData(rel)); m.ok()) models.push_back(std::move(m.value()));
  return models;
}

std::vector<doctor::ImageInfo> Images() {
  doctor::ImageInfo jpeg;
  jpeg.format = doctor::Format::kJpeg;
  jpeg.width = 5000, jpeg.height = 3000, jpeg.bit_depth = 12;
  jpeg.progressive = jpeg.arithmetic = jpeg.cmyk = true;
  jpeg.subsampling = "4:2:2";
  jpeg.decoded = true;
  doctor::ImageInfo png;
  png.format = doctor::Format::kPng;
  png.width = 17, png.height = 9, png.bit_depth = 16, png.progressive = true, png.decoded = true;
  doctor::ImageInfo heif;
  heif.format = doctor::Format::kHeif;
  return {jpeg, png, heif};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::unique_ptr<scan::OnnxModel>> models = LoadModels();
  static const std::vector<doctor::ImageInfo> images = Images();
  static const std::string gguf = fuzz::TestData("llm/gguf/stories260K.q8_0-ffn_down_f16.gguf");
  static fuzz::MemFile file("target.json");
  const std::string& path = file.Write(data, size);
  if (auto prof = scan::Profile::Load(path); prof.ok()) {
    for (const auto& m : models) (void)scan::Scan(*m, prof.value()).ToText(true);
    (void)scan::ScanGguf(gguf, prof.value());
  }
  if (auto hw = doctor::LoadHwDecoder(path); hw.ok())
    for (const doctor::ImageInfo& info : images) (void)doctor::CheckAgainstHw(info, hw.value());
  return 0;
}
