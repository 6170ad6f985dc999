// Label and annotation text (`doctor data`): encoding detection (BOM, UTF-16/32 NUL pattern, strict
// UTF-8, uchardet), conversion to UTF-8 with iconv and its bad-sequence positions, the mixed-encoding line
// repair, GB18030's version-sensitive codes and the findings, as doctor::TextFindings builds them.
#include <cstdint>

#include "doctor/text_check.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const doctor::Detection d = doctor::DetectEncoding(data, size);
  doctor::Conversion conv;
  (void)doctor::TextFindings(data, size, d, &conv);
  if (!d.encoding.empty()) (void)doctor::ConvertToUtf8(data, size, d.encoding, d.bom_bytes);
  if (!d.secondary.empty()) (void)doctor::ConvertMixedUtf8(data, size, d.secondary, d.bom_bytes);
  // A fixed legacy encoding too: the conversion's error positions on input that is not in it.
  (void)doctor::ConvertToUtf8(data, size, "GB18030", 0);
  (void)doctor::Gb18030VersionSensitive(data, size);
  size_t first_bad = 0;
  (void)doctor::IsStrictUtf8(data, size, &first_bad);
  return 0;
}
