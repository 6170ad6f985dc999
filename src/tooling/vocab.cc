#include "tooling/vocab.h"

#include <cstdio>
#include <unordered_set>
#include <vector>

#include "tooling/rng.h"

namespace edgedecode::tooling {
namespace {

const char* const kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's word-boundary marker

// Common English words; each gets its prefixes as pieces so the SPM merges can reach it.
const char* const kWords[] = {
    "the", "and", "to", "of", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are",
    "with", "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by", "hot",
    "but", "some", "what", "there", "we", "can", "out", "other", "were", "all", "your", "when", "up",
    "use", "word", "how", "said", "an", "each", "she", "which", "do", "their", "time", "if", "will",
    "way", "about", "many", "then", "them", "would", "write", "like", "so", "these", "her", "long",
    "make", "thing", "see", "him", "two", "has", "look", "more", "day", "could", "go", "come", "did",
    "my", "sound", "no", "most", "number", "who", "over", "know", "water", "than", "call", "first",
    "people", "may", "down", "side", "been", "now", "find", "once", "upon", "little", "girl", "boy",
    "happy", "play", "friend", "big", "dog", "cat", "sun", "tree", "house", "story", "model", "edge",
};

}  // namespace

Status SetSyntheticSpmTokenizer(int64_t vocab, StreamWriter* w) {
  if (vocab < kMinSyntheticVocab)
    return InvalidArgument("vocab " + std::to_string(vocab) + " is too small for the synthetic tokenizer (at least " +
                           std::to_string(kMinSyntheticVocab) + "; or give --vocab)");
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // llama_token_type: 1 normal, 2 unknown, 3 control, 6 byte
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  std::unordered_set<std::string> seen(tokens.begin(), tokens.end());
  std::vector<std::string> pieces;  // normal pieces, in score order
  auto add = [&](const std::string& p) {
    if (static_cast<int64_t>(tokens.size() + pieces.size()) >= vocab) return;
    if (seen.insert(p).second) pieces.push_back(p);
  };
  // Single characters, then word-initial letters.
  add(kSpace);
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c));
  for (const char* s = "eationsrhldcumfpgwybvkxjqz"; *s; ++s) add(std::string(kSpace) + *s);
  for (char c = 'A'; c <= 'Z'; ++c) add(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) add(std::string(1, c));
  for (const char* s = ".,!?'\"-:;()"; *s; ++s) add(std::string(1, *s));
  for (char c = 'A'; c <= 'Z'; ++c) add(std::string(kSpace) + c);
  // Words, through their prefixes.
  for (const char* word : kWords) {
    std::string p = kSpace;
    for (const char* c = word; *c; ++c) {
      p += *c;
      if (c != word) add(p);
    }
  }
  // The rest: concatenations of two existing pieces (the right one not word-initial), biased to
  // short, early pieces like a real BPE vocabulary.
  Rng rng(0x5eed0fa11ull);
  size_t guard = 0;
  while (static_cast<int64_t>(tokens.size() + pieces.size()) < vocab) {
    if (++guard > static_cast<size_t>(vocab) * 200)
      return Internal("synthetic vocabulary: could not find enough distinct pieces");
    const size_t n = pieces.size();
    const float u1 = rng.Uniform(), u2 = rng.Uniform();
    const std::string& a = pieces[static_cast<size_t>(u1 * u1 * n)];
    const std::string& b = pieces[static_cast<size_t>(u2 * u2 * n)];
    if (b.rfind(kSpace, 0) == 0) continue;
    if (a.size() + b.size() > 16) continue;
    add(a + b);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 0; i < pieces.size(); ++i) {
    tokens.push_back(pieces[i]);
    types.push_back(1);
    scores.push_back(-static_cast<float>(i));
  }
  w->Set("tokenizer.ggml.model", gguf::Value::Str("llama"));
  w->Set("tokenizer.ggml.tokens", gguf::Value::StrArray(tokens));
  w->Set("tokenizer.ggml.scores", gguf::Value::F32Array(scores));
  w->Set("tokenizer.ggml.token_type", gguf::Value::I32Array(types));
  w->Set("tokenizer.ggml.unknown_token_id", gguf::Value::U32(0));
  w->Set("tokenizer.ggml.bos_token_id", gguf::Value::U32(1));
  w->Set("tokenizer.ggml.eos_token_id", gguf::Value::U32(2));
  w->Set("tokenizer.ggml.add_bos_token", gguf::Value::Bool(true));
  w->Set("tokenizer.ggml.add_eos_token", gguf::Value::Bool(false));
  return Status::Ok();
}

Result<int64_t> CopyTokenizer(const gguf::File& src, StreamWriter* w) {
  const gguf::Value* toks = src.Find("tokenizer.ggml.tokens");
  if (!toks || toks->type != gguf::ValueType::kArray || toks->array_type != gguf::ValueType::kString ||
      toks->array_size() == 0)
    return Corrupt(src.path() + ": no tokenizer.ggml.tokens string array (not a vocab GGUF?)");
  if (!src.Find("tokenizer.ggml.model")) return Corrupt(src.path() + ": missing key tokenizer.ggml.model");
  for (const auto& kv : src.metadata())
    if (kv.first.rfind("tokenizer.", 0) == 0) w->Set(kv.first, kv.second);
  return static_cast<int64_t>(toks->array_size());
}

}  // namespace edgedecode::tooling
