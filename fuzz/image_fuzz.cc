// Images as `doctor data` checks them: the format sniffed from the content, the full decode by the real
// decoders with every failure classified and located (doctor::CheckImage: JPEG, PNG, GIF, WebP, TIFF,
// BMP, ICO, PNM, with the JPEG marker walk and PNG chunk/zlib replay of image_offsets.cc), the limits of a
// hardware decoder (CheckAgainstHw) and, for a JPEG that decodes, the `--fix` rewrites (jpeg_fix.h).
// Content that sniffs as no image is decoded as the format its size picks, as doctor decodes a file
// whose damaged signature leaves only its extension to go by.
#include <algorithm>
#include <cstdint>
#include <iterator>

#include "doctor/image_check.h"
#include "doctor/jpeg_fix.h"
#include "doctor/profile.h"
#include "doctor/sniff.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode;
using doctor::Format;

namespace {

constexpr Format kImageFormats[] = {Format::kJpeg, Format::kPng, Format::kWebp, Format::kGif, Format::kBmp,
                                    Format::kTiff, Format::kIco, Format::kPnm, Format::kHeif, Format::kAvif};

doctor::HwDecoder Decoder() {
  doctor::HwDecoder hw;
  hw.target = "fuzz";
  hw.formats = {"jpeg", "png"};
  hw.max_width = hw.max_height = 4096;
  hw.progressive = false;
  hw.arithmetic = false;
  hw.cmyk = false;
  hw.bit_depths = {8};
  hw.subsampling = {"4:2:0", "4:4:4"};
  hw.input_width = hw.input_height = 64;
  return hw;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const doctor::HwDecoder hw = Decoder();
  Format f = doctor::SniffContent(data, std::min<size_t>(size, 4096), size);
  (void)doctor::FormatName(f);
  if (!doctor::IsImageFormat(f)) f = kImageFormats[size % std::size(kImageFormats)];
  const doctor::ImageCheck c = doctor::CheckImage(f, data, size);
  (void)doctor::CheckAgainstHw(c.info, hw);
  if (f == Format::kJpeg && c.info.decoded) {
    (void)doctor::JpegToBaseline(data, size);
    (void)doctor::JpegResizeToFit(data, size, 64, 64);
  }
  return 0;
}
