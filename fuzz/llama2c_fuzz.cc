// `edgedecode convert`: llama2.c checkpoints (legacy and version 1) and their tokenizer.bin, through
// tooling::ConvertLlama2c to a GGUF file, which our own reader must then accept.
// The input is "CHECKPOINT\n--part--\nTOKENIZER"; an input without the separator is a checkpoint alone,
// converted with the real 512-token tokenizer of the shared test data (so the real checkpoints are seeds).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "gguf/gguf.h"
#include "tooling/llama2c.h"

using namespace edgedecode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchDir dir;
  static const std::string real_tokenizer = fuzz::TestData("llm/tok512.bin");
  dir.Clear();
  const auto parts = fuzz::SplitParts(data, size, "\n--part--\n", 2);
  const std::string model = dir.Put("model.bin", parts[0]);
  const std::string tokenizer = parts.size() > 1 ? dir.Put("tokenizer.bin", parts[1]) : real_tokenizer;
  const std::string out = dir.Path("out.gguf");
  tooling::Llama2cInfo info;
  if (!tooling::ConvertLlama2c(model, tokenizer, out, &info).ok()) return 0;
  if (!gguf::File::Open(out).ok()) std::abort();  // a file we wrote that we cannot read back
  return 0;
}
