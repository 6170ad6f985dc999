// Request bodies of `edgedecode serve` (cli/serve_request.h): the JSON body, the generation parameters,
// chat messages, the completion prompt, /tokenize and /detokenize, each to its parameters or to the 400
// error that names the field (whose reply body is serialised as the server sends it). HTTP framing is
// cpp-httplib's (a Debian library), not fuzzed here.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/serve_request.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode::cli::serve;

namespace {

void Reply(const std::optional<ApiError>& e) {
  if (e) (void)nlohmann::ordered_json{{"error", ErrorObject(*e)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json b;
  if (auto e = ParseBody(edgedecode::fuzz::AsText(data, size), &b)) return Reply(e), 0;
  GenParams p;
  Reply(ParseGenParams(b, &p));
  Reply(ParseLogprobs(b, true, &p));
  Reply(ParseLogprobs(b, false, &p));
  Reply(ParseResponseFormat(b, &p));
  nlohmann::ordered_json messages;
  if (auto e = ParseMessages(b, &messages)) Reply(e);
  else (void)messages.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  PromptInput prompt;
  Reply(ParsePrompt(b, 512, &prompt));
  TokenizeRequest t;
  Reply(ParseTokenizeRequest(b, &t));
  std::vector<int32_t> ids;
  Reply(ParseTokenIds(b, 512, &ids));
  return 0;
}
