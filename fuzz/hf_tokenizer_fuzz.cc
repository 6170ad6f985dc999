// `edgedecode convert tokenizer`: a Hugging Face tokenizer.json (and tokenizer_config.json) through
// tooling::HfVocabFromJson; a vocabulary it accepts must build a tokenizer (or be refused with an error) and
// encode text without crashing. The input is "TOKENIZER_JSON\n--part--\nCONFIG_JSON"; without the separator,
// the tokenizer.json alone.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "tok/tokenizer.h"
#include "tooling/hf_tokenizer.h"

using namespace edgedecode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::SplitParts(data, size, "\n--part--\n", 2);
  auto v = tooling::HfVocabFromJson(std::string(parts[0]), "tokenizer.json",
                                    parts.size() > 1 ? std::string(parts[1]) : std::string(), "config.json");
  if (!v.ok()) return 0;
  auto t = tok::Tokenizer::FromSpec(v->spec);
  if (!t.ok()) return 0;
  const auto ids = (*t)->Encode("Hello, world! 123 \xE2\x96\x81 <|im_start|>\n\n  x", true);
  (void)(*t)->Decode(ids);
  return 0;
}
