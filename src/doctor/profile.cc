#include "doctor/profile.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace edgedecode::doctor {
namespace {

using nlohmann::json;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "jpg") s = "jpeg";
  if (s == "tif") s = "tiff";
  if (s == "heic") s = "heif";  // FormatName spells it "heif"
  return s;
}

int64_t GetInt(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (j.contains(k) && j[k].is_number()) return j[k].get<int64_t>();
  return 0;
}

std::optional<bool> GetBool(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (!j.contains(k)) continue;
    const json& v = j[k];
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_string()) {
      std::string s = Lower(v.get<std::string>());
      if (s == "yes" || s == "true" || s == "supported") return true;
      if (s == "no" || s == "false" || s == "unsupported") return false;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<HwDecoder> LoadHwDecoder(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open target profile");
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) return Corrupt(path + ": not valid JSON");
  if (!j.is_object()) return Corrupt(path + ": a target profile must be a JSON object");
  HwDecoder hw;
  // "name", else "target", else the file: only string values (json::value throws on any other type).
  auto str = [&j](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  hw.target = !str("name").empty() ? str("name") : !str("target").empty() ? str("target") : path;
  if (!j.contains("image_decoder"))
    return InvalidArgument(path + ": no \"image_decoder\" key (the profile does not describe a hardware image decoder)");
  const json& d = j["image_decoder"];
  if (!d.is_object()) return Corrupt(path + ": \"image_decoder\" is not an object");
  if (d.contains("formats") && d["formats"].is_array())
    for (const auto& f : d["formats"]) if (f.is_string()) hw.formats.insert(Lower(f.get<std::string>()));
  hw.max_width = GetInt(d, {"max_width", "width_max"});
  hw.max_height = GetInt(d, {"max_height", "height_max"});
  hw.min_width = GetInt(d, {"min_width", "width_min"});
  hw.min_height = GetInt(d, {"min_height", "height_min"});
  hw.progressive = GetBool(d, {"progressive", "jpeg_progressive"});
  hw.arithmetic = GetBool(d, {"arithmetic", "arithmetic_coding", "jpeg_arithmetic"});
  hw.cmyk = GetBool(d, {"cmyk"});
  for (const char* k : {"bit_depth", "bit_depths"}) {
    if (!d.contains(k)) continue;
    if (d[k].is_array()) { for (const auto& b : d[k]) if (b.is_number()) hw.bit_depths.insert(b.get<int>()); }
    else if (d[k].is_number()) hw.max_bit_depth = d[k].get<int>();
  }
  if (d.contains("max_bit_depth") && d["max_bit_depth"].is_number()) hw.max_bit_depth = d["max_bit_depth"].get<int>();
  if (d.contains("12bit") || d.contains("twelve_bit")) {
    auto b = GetBool(d, {"12bit", "twelve_bit"});
    if (b && !*b && hw.max_bit_depth == 0 && hw.bit_depths.empty()) hw.max_bit_depth = 8;
  }
  // docs/profiles.md layout: format-specific limits under "jpeg" and "png".
  if (d.contains("jpeg") && d["jpeg"].is_object()) {
    const json& jp = d["jpeg"];
    if (auto b = GetBool(jp, {"progressive"})) hw.progressive = b;
    if (auto b = GetBool(jp, {"arithmetic"})) hw.arithmetic = b;
    if (auto b = GetBool(jp, {"cmyk"})) hw.cmyk = b;
    if (jp.contains("bit_depth") && jp["bit_depth"].is_array())
      for (const auto& b : jp["bit_depth"]) if (b.is_number()) hw.bit_depths.insert(b.get<int>());
    for (const char* k : {"chroma_subsampling", "subsampling"})
      if (jp.contains(k) && jp[k].is_array())
        for (const auto& x : jp[k]) if (x.is_string()) hw.subsampling.insert(Lower(x.get<std::string>()));
  }
  if (d.contains("png") && d["png"].is_object()) {
    const json& pn = d["png"];
    if (pn.contains("bit_depth") && pn["bit_depth"].is_array())
      for (const auto& b : pn["bit_depth"]) if (b.is_number()) hw.png_bit_depths.insert(b.get<int>());
    hw.png_interlaced = GetBool(pn, {"interlaced"});
  }
  hw.target = d.value("name", hw.target);
  if (d.contains("subsampling") && d["subsampling"].is_array())
    for (const auto& s : d["subsampling"]) if (s.is_string()) hw.subsampling.insert(Lower(s.get<std::string>()));
  for (const json* src : std::initializer_list<const json*>{&d, &j}) {
    for (const char* k : {"input_size", "model_input"}) {
      if (src->contains(k) && (*src)[k].is_array() && (*src)[k].size() >= 2 && (*src)[k][0].is_number()) {
        hw.input_width = (*src)[k][0].get<int64_t>();
        hw.input_height = (*src)[k][1].get<int64_t>();
      }
    }
  }
  return hw;
}

std::vector<Finding> CheckAgainstHw(const ImageInfo& info, const HwDecoder& hw) {
  std::vector<Finding> out;
  auto add = [&](std::string msg) {
    Finding f;
    f.code = FindingCode::kExceedsHwDecoder;
    f.severity = Severity::kError;
    f.message = hw.target + ": " + msg;
    out.push_back(std::move(f));
  };
  const std::string fmt = FormatName(info.format);
  // One rule for every format the decoder does not list, decodable here or not (HEIF, WebP, PNG).
  if (!hw.formats.empty() && !hw.formats.count(fmt)) {
    std::string listed;
    for (const auto& f : hw.formats) listed += (listed.empty() ? "" : ", ") + f;
    add("format " + fmt + " is not decoded by the hardware decoder, which takes " + listed +
        " (falls back to CPU, or fails where there is none)");
    out.back().fix = "re-encode as " + *hw.formats.begin();
    if (hw.formats.count("jpeg")) out.back().fix = "re-encode as JPEG";
    return out;
  }
  if (info.width <= 0 || info.height <= 0) return out;  // size unknown (not decoded): no size limits to test
  std::string dims = std::to_string(info.width) + "x" + std::to_string(info.height);
  bool too_big = (hw.max_width && info.width > hw.max_width) || (hw.max_height && info.height > hw.max_height);
  bool too_small = (hw.min_width && info.width < hw.min_width) || (hw.min_height && info.height < hw.min_height);
  if (too_big) {
    // Suggested resize: the model's input size when known, else the largest size inside the limit.
    int64_t tw, th;
    if (hw.input_width && hw.input_height) { tw = hw.input_width; th = hw.input_height; }
    else {
      double s = 1.0;
      if (hw.max_width) s = std::min(s, double(hw.max_width) / info.width);
      if (hw.max_height) s = std::min(s, double(hw.max_height) / info.height);
      tw = std::max<int64_t>(1, int64_t(info.width * s));
      th = std::max<int64_t>(1, int64_t(info.height * s));
    }
    add(dims + " is larger than the decoder maximum " + std::to_string(hw.max_width) + "x" +
        std::to_string(hw.max_height));
    out.back().fix = "resize to " + std::to_string(tw) + "x" + std::to_string(th);
  }
  if (too_small)
    add(dims + " is smaller than the decoder minimum " + std::to_string(hw.min_width) + "x" +
        std::to_string(hw.min_height));
  if (info.format == Format::kJpeg) {
    if (hw.progressive && !*hw.progressive && info.progressive) {
      add("progressive JPEG; the decoder takes baseline only");
      out.back().fix = "re-encode as baseline JPEG";
    }
    if (hw.arithmetic && !*hw.arithmetic && info.arithmetic) {
      add("arithmetic-coded JPEG; the decoder takes Huffman only");
      out.back().fix = "re-encode with Huffman coding";
    }
    if (hw.cmyk && !*hw.cmyk && info.cmyk) add("CMYK/YCCK JPEG; the decoder takes YCbCr/gray only");
    if (!hw.subsampling.empty() && !info.subsampling.empty() && !hw.subsampling.count(info.subsampling))
      add("chroma subsampling " + info.subsampling + " is not supported");
  }
  if (info.format == Format::kPng) {
    if (!hw.png_bit_depths.empty() && !hw.png_bit_depths.count(info.bit_depth))
      add("PNG bit depth " + std::to_string(info.bit_depth) + " is not supported");
    if (hw.png_interlaced && !*hw.png_interlaced && info.progressive) add("interlaced (Adam7) PNG is not supported");
  }
  // Flat bit-depth limits apply to every format; the "jpeg" list only to JPEG.
  if ((hw.max_bit_depth && info.bit_depth > hw.max_bit_depth) ||
      (info.format == Format::kJpeg && !hw.bit_depths.empty() && !hw.bit_depths.count(info.bit_depth)))
    add(std::to_string(info.bit_depth) + "-bit samples are not supported");
  return out;
}

}  // namespace edgedecode::doctor
