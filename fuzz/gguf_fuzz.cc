// GGUF files as every command that takes a model reads them: the container (gguf::File::Open), the
// metadata getters `info` uses, the bytes-per-token sum, the tokenizer (tok::Tokenizer::FromGguf, then a
// short encode/decode round) and the runtime's model validation (llm::Model::Load, without the weights'
// forward pass).
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "gguf/gguf.h"
#include "llm/model.h"
#include "tok/tokenizer.h"

using namespace edgedecode;

namespace {

void ReadMetadata(const gguf::File& f) {
  const std::string arch = f.GetStringOr("general.architecture", "");
  for (const char* key : {".block_count", ".embedding_length", ".attention.head_count", ".context_length"})
    (void)f.GetIntOr(arch + key, 0);
  (void)f.GetFloatOr(arch + ".rope.freq_base", 10000.0);
  (void)f.GetStringArray("tokenizer.ggml.tokens");
  (void)f.GetFloatArray("tokenizer.ggml.scores");
  (void)f.GetIntArray("tokenizer.ggml.token_type");
  (void)f.GetBool("tokenizer.ggml.add_bos_token");
  for (const auto& [key, v] : f.metadata()) {
    if (v.type == gguf::ValueType::kArray) (void)gguf::ValueTypeName(v.array_type);
    else if (v.type != gguf::ValueType::kString) (void)v.as_double();
  }
  for (const gguf::TensorInfo& t : f.tensors()) {
    (void)t.n_elements();
    (void)t.rows();
  }
  (void)gguf::DecodeBytesPerToken(f);
}

void UseTokenizer(const gguf::File& f) {
  auto tk = tok::Tokenizer::FromGguf(f);
  if (!tk.ok()) return;
  const tok::Tokenizer& t = **tk;
  const std::vector<int32_t> ids = t.Encode("Hello world! <s> 1234 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x99\x82\n", true);
  (void)t.Decode(ids);
  for (int32_t id = 0; id < t.vocab_size() && id < 300; ++id) (void)t.TokenToPiece(id, true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemFile file("model.gguf");
  const std::string& path = file.Write(data, size);
  auto f = gguf::File::Open(path);
  if (!f.ok()) return 0;
  ReadMetadata(**f);
  UseTokenizer(**f);
  (void)llm::Model::Load(path, /*load_tokenizer=*/false);
  return 0;
}
