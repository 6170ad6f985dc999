// Saved registry replies (`doctor env --referrers-response FILE`): the HTTP transcript split into
// responses (doctor::ParseHttpTranscript), every WWW-Authenticate challenge (ParseAuthChallenge), and the
// whole file classified as doctor classifies it (ClassifyReferrersResponse).
#include <cstdint>
#include <string>

#include "doctor/http_reply.h"
#include "doctor/oci.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemFile file("reply");
  const std::string_view text = fuzz::AsText(data, size);
  for (const doctor::HttpResponse& r : doctor::ParseHttpTranscript(text)) {
    (void)r.Header("content-type");
    for (const auto& [name, value] : r.headers)
      if (name == "www-authenticate") (void)doctor::ParseAuthChallenge(value);
  }
  // The challenge parser on its own, on the raw text (a header value can hold anything).
  (void)doctor::ParseAuthChallenge(text.substr(0, 4096));
  (void)doctor::ClassifyReferrersResponse(file.Write(data, size));
  return 0;
}
