// Hardware image-decoder limits from a target profile (targets/*.json, key "image_decoder", written
// by the scan module; see docs/profiles.md). Read tolerantly: every field is optional.
// Plain value type.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/image_check.h"
#include "edgedecode/status.h"

namespace edgedecode::doctor {

struct HwDecoder {
  std::string target;                 // profile name (or file name)
  std::set<std::string> formats;      // lower-case ("jpeg", "png"); empty = not restricted
  int64_t max_width = 0, max_height = 0, min_width = 0, min_height = 0;  // 0 = no limit
  std::optional<bool> progressive;    // false = baseline only
  std::optional<bool> arithmetic;
  std::optional<bool> cmyk;
  std::set<int> bit_depths;           // empty = any (a "bit_depth": N or "max_bit_depth" means <= N)
  int max_bit_depth = 0;
  std::set<std::string> subsampling;  // empty = any ("4:2:0", "4:2:2", "4:4:4", "4:0:0" = grey)
  std::set<int> png_bit_depths;       // from "png": {"bit_depth": [...]}; empty = any
  std::optional<bool> png_interlaced; // from "png": {"interlaced": bool}
  int64_t input_width = 0, input_height = 0;  // model input size, for the suggested resize
};

// The image_decoder section of a profile file (the CLI resolves --target NAME to its file: cli/common.h).
Result<HwDecoder> LoadHwDecoder(const std::string& path);

// Findings `exceeds-hw-decoder` (one per violated limit) for one decoded image.
std::vector<Finding> CheckAgainstHw(const ImageInfo& info, const HwDecoder& hw);

}  // namespace edgedecode::doctor
