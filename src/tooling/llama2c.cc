#include "tooling/llama2c.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tooling/gguf_stream.h"

namespace edgedecode::tooling {
namespace {

// Read-only mapping of a whole file.
class Mapped {
 public:
  ~Mapped() {
    if (data_ && size_) munmap(const_cast<uint8_t*>(data_), size_);
  }
  Status Open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return NotFound(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return IoError(path + ": not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        size_ = 0;
        return IoError(path + ": cannot map: " + std::strerror(errno));
      }
      data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return Status::Ok();
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

int32_t ReadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// One weight array inside the checkpoint: byte offset and element count.
struct Span {
  uint64_t offset = 0;
  uint64_t count = 0;
};

struct Layout {
  Span emb, rms_final, wcls;
  std::vector<Span> rms_att, rms_ffn, wq, wk, wv, wo, w1, w2, w3;
  uint64_t end = 0;
};

Layout ComputeLayout(const Llama2cInfo& h, uint64_t header_bytes) {
  const uint64_t d = h.dim, hid = h.hidden_dim, L = h.n_layers, V = h.vocab_size;
  const uint64_t kv = d / h.n_heads * h.n_kv_heads, hd = d / h.n_heads;
  Layout l;
  uint64_t pos = header_bytes;
  auto take = [&](uint64_t n) {
    Span s{pos, n};
    pos += n * 4;
    return s;
  };
  auto per_layer = [&](std::vector<Span>* v, uint64_t n) {
    for (uint64_t i = 0; i < L; ++i) v->push_back(take(n));
  };
  if (h.version == 0) {
    l.emb = take(V * d);
    per_layer(&l.rms_att, d);
    per_layer(&l.wq, d * d);
    per_layer(&l.wk, kv * d);
    per_layer(&l.wv, kv * d);
    per_layer(&l.wo, d * d);
    per_layer(&l.rms_ffn, d);
    per_layer(&l.w1, hid * d);
    per_layer(&l.w2, d * hid);
    per_layer(&l.w3, hid * d);
    l.rms_final = take(d);
    take(static_cast<uint64_t>(h.seq_len) * hd / 2);  // freq_cis_real
    take(static_cast<uint64_t>(h.seq_len) * hd / 2);  // freq_cis_imag
  } else {
    per_layer(&l.rms_att, d);
    per_layer(&l.rms_ffn, d);
    l.rms_final = take(d);
    l.emb = take(V * d);
    per_layer(&l.wq, d * d);
    per_layer(&l.wk, kv * d);
    per_layer(&l.wv, kv * d);
    per_layer(&l.wo, d * d);
    per_layer(&l.w1, hid * d);
    per_layer(&l.w2, d * hid);
    per_layer(&l.w3, hid * d);
  }
  l.wcls = h.shared_classifier ? l.emb : take(V * d);
  l.end = pos;
  return l;
}

Status ParseHeader(const Mapped& m, const std::string& path, Llama2cInfo* h, uint64_t* header_bytes) {
  if (m.size() < 28) return Corrupt(path + ": " + std::to_string(m.size()) + " bytes, too short for a llama2.c header");
  int32_t p[7];
  if (ReadI32(m.data()) == 0x616b3432) {
    if (m.size() < 256) return Corrupt(path + ": version-1 header truncated (" + std::to_string(m.size()) + " of 256 bytes)");
    const int32_t version = ReadI32(m.data() + 4);
    if (version != 1)
      return Unsupported(path + ": llama2.c export version " + std::to_string(version) +
                         " is not supported (supported: legacy and version 1; 2 is int8-quantized)");
    for (int i = 0; i < 7; ++i) p[i] = ReadI32(m.data() + 8 + 4 * i);
    h->version = 1;
    const uint8_t shared = m.data()[36];
    if (shared > 1) return Corrupt(path + ": offset 36: shared_classifier flag is " + std::to_string(shared) + ", not 0 or 1");
    h->shared_classifier = shared == 1;
    if (p[5] <= 0) return Corrupt(path + ": offset 28: vocab_size " + std::to_string(p[5]) + " must be positive in version 1");
    *header_bytes = 256;
  } else {
    for (int i = 0; i < 7; ++i) p[i] = ReadI32(m.data() + 4 * i);
    h->version = 0;
    h->shared_classifier = p[5] > 0;
    // INT32_MIN has no positive counterpart (negating it overflows): it stays negative, refused below.
    if (p[5] < 0 && p[5] != INT32_MIN) p[5] = -p[5];
    *header_bytes = 28;
  }
  h->dim = p[0];
  h->hidden_dim = p[1];
  h->n_layers = p[2];
  h->n_heads = p[3];
  h->n_kv_heads = p[4];
  h->vocab_size = p[5];
  h->seq_len = p[6];
  static const char* kNames[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  static const int32_t kMax[] = {1 << 16, 1 << 18, 1 << 10, 1 << 10, 1 << 10, 1 << 22, 1 << 22};
  const int64_t hdr_off = h->version == 1 ? 8 : 0;
  for (int i = 0; i < 7; ++i) {
    const int32_t v = i == 5 ? h->vocab_size : p[i];
    if (v <= 0 || v > kMax[i])
      return Corrupt(path + ": offset " + std::to_string(hdr_off + 4 * i) + ": " + kNames[i] + " = " +
                     std::to_string(v) + " is not a plausible value (not a llama2.c checkpoint?)");
  }
  if (h->dim % h->n_heads != 0 || (h->dim / h->n_heads) % 2 != 0)
    return Corrupt(path + ": dim " + std::to_string(h->dim) + " is not a multiple of 2 * n_heads " + std::to_string(h->n_heads));
  if (h->n_kv_heads > h->n_heads || h->n_heads % h->n_kv_heads != 0)
    return Corrupt(path + ": n_heads " + std::to_string(h->n_heads) + " is not a multiple of n_kv_heads " +
                   std::to_string(h->n_kv_heads));
  return Status::Ok();
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

Status ReadTokenizer(const std::string& path, int vocab_size, Vocab* v) {
  Mapped m;
  ED_RETURN_IF_ERROR(m.Open(path));
  if (m.size() < 4) return Corrupt(path + ": too short for a llama2.c tokenizer");
  const int32_t max_len = ReadI32(m.data());
  if (max_len <= 0 || max_len > 4096)
    return Corrupt(path + ": offset 0: max_token_length " + std::to_string(max_len) + " is not plausible");
  uint64_t pos = 4;
  for (int i = 0; i < vocab_size; ++i) {
    if (pos + 8 > m.size())
      return Corrupt(path + ": offset " + std::to_string(pos) + ": ends after " + std::to_string(i) +
                     " tokens, but the model has vocab_size " + std::to_string(vocab_size) +
                     " (tokenizer does not belong to this model?)");
    float score;
    std::memcpy(&score, m.data() + pos, 4);
    const int32_t len = ReadI32(m.data() + pos + 4);
    if (len < 0 || len > max_len || pos + 8 + static_cast<uint64_t>(len) > m.size())
      return Corrupt(path + ": offset " + std::to_string(pos + 4) + ": token " + std::to_string(i) + " has length " +
                     std::to_string(len) + " (max_token_length " + std::to_string(max_len) + ", " +
                     std::to_string(m.size() - pos - 8) + " bytes left)");
    if (!std::isfinite(score))
      return Corrupt(path + ": offset " + std::to_string(pos) + ": token " + std::to_string(i) + " has a non-finite score");
    std::string text(reinterpret_cast<const char*>(m.data() + pos + 8), static_cast<size_t>(len));
    pos += 8 + static_cast<uint64_t>(len);
    // llama2.c writes <s>/</s> as "\n<s>\n"/"\n</s>\n" and SentencePiece's U+2581 as a space;
    // GGUF "llama" vocabularies keep the SentencePiece form.
    int32_t type = 1;  // normal
    if (i == 0) {
      type = 2;  // unknown
    } else if (i == 1 || i == 2) {
      type = 3;  // control
      if (text == "\n<s>\n") text = "<s>";
      if (text == "\n</s>\n") text = "</s>";
    } else if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
               std::isxdigit(static_cast<unsigned char>(text[3])) && std::isxdigit(static_cast<unsigned char>(text[4]))) {
      type = 6;  // byte
    }
    std::string sp;
    for (char c : text) {
      if (c == ' ') sp += "\xe2\x96\x81";
      else sp += c;
    }
    v->tokens.push_back(std::move(sp));
    v->scores.push_back(score);
    v->types.push_back(type);
  }
  if (pos != m.size())
    return Corrupt(path + ": " + std::to_string(m.size() - pos) + " bytes left after the " + std::to_string(vocab_size) +
                   " tokens of the model's vocab_size (tokenizer does not belong to this model?)");
  return Status::Ok();
}

}  // namespace

Status ConvertLlama2c(const std::string& model_path, const std::string& tok_path, const std::string& out_path,
                      Llama2cInfo* info) {
  Mapped m;
  ED_RETURN_IF_ERROR(m.Open(model_path));
  Llama2cInfo h;
  uint64_t header_bytes = 0;
  ED_RETURN_IF_ERROR(ParseHeader(m, model_path, &h, &header_bytes));
  const Layout l = ComputeLayout(h, header_bytes);
  if (l.end != m.size()) {
    // A legacy file may also be shared with its wcls missing; say what the header implies.
    return Corrupt(model_path + ": file has " + std::to_string(m.size()) + " bytes, but the header (" +
                   (h.version ? "version 1" : "legacy") + ", dim " + std::to_string(h.dim) + ", hidden " +
                   std::to_string(h.hidden_dim) + ", layers " + std::to_string(h.n_layers) + ", heads " +
                   std::to_string(h.n_heads) + "/" + std::to_string(h.n_kv_heads) + ", vocab " +
                   std::to_string(h.vocab_size) + (h.shared_classifier ? " shared" : " unshared") + ", seq_len " +
                   std::to_string(h.seq_len) + ") implies " + std::to_string(l.end) +
                   (m.size() < l.end ? " (truncated?)" : " (trailing data?)"));
  }
  Vocab vocab;
  ED_RETURN_IF_ERROR(ReadTokenizer(tok_path, h.vocab_size, &vocab));

  using gguf::Value;
  StreamWriter w;
  // Keys and order as llama.cpp's convert-llama2c-to-ggml writes them (except context_length: it writes
  // its own default of 128; the checkpoint's seq_len is what the model was trained for).
  w.Set("tokenizer.ggml.tokens", Value::StrArray(vocab.tokens));
  w.Set("tokenizer.ggml.scores", Value::F32Array(vocab.scores));
  w.Set("tokenizer.ggml.token_type", Value::I32Array(vocab.types));
  w.Set("tokenizer.ggml.model", Value::Str("llama"));
  w.Set("general.architecture", Value::Str("llama"));
  w.Set("general.name", Value::Str("llama"));
  w.Set("tokenizer.ggml.unknown_token_id", Value::U32(0));
  w.Set("tokenizer.ggml.bos_token_id", Value::U32(1));
  w.Set("tokenizer.ggml.eos_token_id", Value::U32(2));
  w.Set("tokenizer.ggml.seperator_token_id", Value::U32(0xffffffffu));
  w.Set("tokenizer.ggml.padding_token_id", Value::U32(0xffffffffu));
  w.Set("llama.context_length", Value::U32(static_cast<uint32_t>(h.seq_len)));
  w.Set("llama.embedding_length", Value::U32(static_cast<uint32_t>(h.dim)));
  w.Set("llama.feed_forward_length", Value::U32(static_cast<uint32_t>(h.hidden_dim)));
  w.Set("llama.attention.head_count", Value::U32(static_cast<uint32_t>(h.n_heads)));
  w.Set("llama.attention.head_count_kv", Value::U32(static_cast<uint32_t>(h.n_kv_heads)));
  w.Set("llama.block_count", Value::U32(static_cast<uint32_t>(h.n_layers)));
  w.Set("llama.rope.dimension_count", Value::U32(static_cast<uint32_t>(h.dim / h.n_heads)));
  w.Set("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5f));
  w.Set("general.file_type", Value::U32(0));  // all f32

  const int64_t d = h.dim, hid = h.hidden_dim, V = h.vocab_size, kv = h.dim / h.n_heads * h.n_kv_heads;
  struct Out {
    std::string name;
    std::vector<int64_t> dims;
    Span span;
  };
  std::vector<Out> outs = {{"token_embd.weight", {d, V}, l.emb},
                           {"output_norm.weight", {d}, l.rms_final},
                           {"output.weight", {d, V}, l.wcls}};
  for (int i = 0; i < h.n_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    outs.push_back({b + "attn_q.weight", {d, d}, l.wq[i]});
    outs.push_back({b + "attn_k.weight", {d, kv}, l.wk[i]});
    outs.push_back({b + "attn_v.weight", {d, kv}, l.wv[i]});
    outs.push_back({b + "attn_output.weight", {d, d}, l.wo[i]});
    outs.push_back({b + "attn_norm.weight", {d}, l.rms_att[i]});
    outs.push_back({b + "ffn_gate.weight", {d, hid}, l.w1[i]});
    outs.push_back({b + "ffn_down.weight", {hid, d}, l.w2[i]});
    outs.push_back({b + "ffn_up.weight", {d, hid}, l.w3[i]});
    outs.push_back({b + "ffn_norm.weight", {d}, l.rms_ffn[i]});
  }
  for (const Out& o : outs) ED_RETURN_IF_ERROR(w.Declare(o.name, o.dims, GgmlType::kF32));
  ED_RETURN_IF_ERROR(w.Begin(out_path));
  for (const Out& o : outs) ED_RETURN_IF_ERROR(w.Write(m.data() + o.span.offset, o.span.count * 4));
  ED_RETURN_IF_ERROR(w.Finish());
  if (info) *info = h;
  return Status::Ok();
}

}  // namespace edgedecode::tooling
