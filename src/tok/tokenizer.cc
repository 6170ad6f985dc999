// Tokenizers from GGUF metadata. The algorithms follow llama.cpp's llama-vocab.cpp (SPM bigram
// merging by score, BPE merging by rank, special-token partitioning) so that ids match exactly.
#include "tok/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "tok/pretokenize.h"
#include "tok/unicode.h"

namespace edgedecode::tok {
namespace {

// Token attributes (llama.cpp's llama_token_attr bits, the ones used here).
enum : uint32_t {
  kUndefined = 0,
  kUnknown = 1 << 0,
  kUnused = 1 << 1,
  kNormal = 1 << 2,
  kControl = 1 << 3,
  kUserDefined = 1 << 4,
  kByte = 1 << 5,
  kLstrip = 1 << 7,
  kRstrip = 1 << 8,
};

uint32_t AttrFromType(int64_t t) {
  switch (t) {
    case 1: return kNormal;
    case 2: return kUnknown;
    case 3: return kControl;
    case 4: return kUserDefined;
    case 5: return kUnused;
    case 6: return kByte;
    default: return kUndefined;
  }
}

const char kSpmSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a byte-fallback token's text, exactly "<0xHH>" (two hex digits, either case).
bool ParseByteToken(const std::string& text, uint8_t* byte) {
  if (text.size() != 6 || text.compare(0, 3, "<0x") != 0 || text[5] != '>') return false;
  const int hi = HexDigit(text[3]), lo = HexDigit(text[4]);
  if (hi < 0 || lo < 0) return false;
  *byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

class VocabTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> Build(const VocabSpec& s);

  std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special) const override;
  std::string TokenToPiece(int32_t id, bool render_special) const override;
  const std::string& TokenText(int32_t id) const override {
    static const std::string kEmpty;
    return (id >= 0 && id < vocab_size()) ? tokens_[id].text : kEmpty;
  }
  std::string Decode(const std::vector<int32_t>& ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  int32_t bos() const override { return bos_; }
  int32_t eos() const override { return eos_; }
  bool add_bos_default() const override { return add_bos_ && bos_ >= 0; }
  bool IsEndOfGeneration(int32_t id) const override { return eog_.count(id) > 0; }
  std::string model() const override { return spm_ ? "llama" : "gpt2"; }
  const std::vector<std::string>& warnings() const override { return warnings_; }
  int32_t TokenId(const std::string& text) const override { return Lookup(text); }

 private:
  struct Token {
    std::string text;
    float score = 0;
    uint32_t attr = kNormal;
    uint8_t byte = 0;  // the byte a kByte token stands for (its text is <0xHH>)
  };
  struct Fragment {  // a piece of the input: raw text [off, off+len) or a special token
    int32_t token = -1;
    size_t off = 0, len = 0;
  };

  int32_t Lookup(const std::string& s) const {
    auto it = token_to_id_.find(s);
    return it == token_to_id_.end() ? -1 : it->second;
  }
  int BpeRank(const std::string& a, const std::string& b) const {
    auto it = bpe_ranks_.find(std::to_string(a.size()) + ":" + a + b);
    return it == bpe_ranks_.end() ? -1 : it->second;
  }
  std::vector<Fragment> Partition(std::string_view text, bool parse_special) const;
  void EncodeSpm(const std::string& text, std::vector<int32_t>* out) const;
  void EncodeBpe(std::string_view text, std::vector<int32_t>* out) const;
  int32_t ByteToken(uint8_t b) const;

  bool spm_ = true;
  PreType pre_ = PreType::kDefault;
  bool ignore_merges_ = false;
  std::vector<Token> tokens_;
  std::unordered_map<std::string, int32_t> token_to_id_;
  std::unordered_map<std::string, int> bpe_ranks_;
  std::vector<int32_t> special_;  // control/user-defined/unknown ids, longest text first
  std::unordered_set<int32_t> eog_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  std::vector<std::string> warnings_;
};

Result<std::unique_ptr<Tokenizer>> VocabTokenizer::Build(const VocabSpec& s) {
  auto t = std::make_unique<VocabTokenizer>();
  if (s.model == "llama") {
    t->spm_ = true;
  } else if (s.model == "gpt2") {
    t->spm_ = false;
  } else {
    return Unsupported("tokenizer model '" + s.model + "' is not supported (supported: llama, gpt2)");
  }
  const size_t n = s.tokens.size();
  if (n == 0) return Corrupt("tokenizer.ggml.tokens is empty");
  if (n > kMaxVocab)
    return Corrupt("tokenizer.ggml.tokens has " + std::to_string(n) + " tokens, more than the limit of " +
                   std::to_string(kMaxVocab));
  if (!s.scores.empty() && s.scores.size() != n)
    return Corrupt("tokenizer.ggml.scores has " + std::to_string(s.scores.size()) +
                   " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  if (!s.token_types.empty() && s.token_types.size() != n)
    return Corrupt("tokenizer.ggml.token_type has " + std::to_string(s.token_types.size()) +
                   " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  t->tokens_.resize(n);
  size_t n_replacement = 0, n_invalid = 0;
  for (size_t i = 0; i < n; ++i) {
    Token& tk = t->tokens_[i];
    tk.text = s.tokens[i];
    if (tk.text.empty()) tk.text = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
    if (!s.scores.empty()) {
      tk.score = s.scores[i];
      if (!std::isfinite(tk.score))
        return Corrupt("tokenizer.ggml.scores[" + std::to_string(i) + "] is not finite");
    }
    if (!s.token_types.empty()) {
      const int64_t ty = s.token_types[i];
      if (ty < 0 || ty > 6)
        return Corrupt("tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(ty) +
                       " is not a token type (0..6)");
      tk.attr = AttrFromType(ty);
    }
    if ((tk.attr & kByte) && !ParseByteToken(tk.text, &tk.byte)) {
      // llama.cpp reads whatever strtol makes of the two characters after "<0x" (0 for "<0xZZ>"): a wrong
      // byte. The piece is kept as a normal token instead, its text standing for itself.
      t->warnings_.push_back("token " + std::to_string(i) + " is typed byte but its text is not <0xHH>: treated as a normal token");
      tk.attr = kNormal;
    }
    if (tk.text.find("\xEF\xBF\xBD") != std::string::npos) n_replacement++;
    if (!IsValidUtf8(tk.text)) n_invalid++;
    t->token_to_id_[tk.text] = static_cast<int32_t>(i);  // the last duplicate wins, as llama.cpp
  }
  // A vocab whose bytes went through a lossy UTF-8 re-encoding has many U+FFFD tokens (and the
  // duplicates collapse in the lookup table): ids would silently differ from the real model's.
  if (n_replacement > 8 && n_replacement * 100 > n)
    return Corrupt(std::to_string(n_replacement) + " of " + std::to_string(n) +
                   " tokens contain U+FFFD: the vocab was mangled by a UTF-8 re-encoding");
  if (n_replacement > 0)
    t->warnings_.push_back(std::to_string(n_replacement) + " tokens contain U+FFFD (lost bytes?)");
  if (n_invalid > 0 && t->spm_)
    t->warnings_.push_back(std::to_string(n_invalid) + " tokens are not valid UTF-8");

  if (!t->spm_) {
    if (s.merges.empty()) return Corrupt("tokenizer.ggml.merges is missing or empty (needed by gpt2)");
    if (s.merges.size() > kMaxVocab)
      return Corrupt("tokenizer.ggml.merges has " + std::to_string(s.merges.size()) + " entries, more than the limit of " +
                     std::to_string(kMaxVocab));
    for (size_t i = 0; i < s.merges.size(); ++i) {
      const std::string& m = s.merges[i];
      const size_t pos = m.find(' ', 1);
      std::string a, b;
      if (pos != std::string::npos) {
        a = m.substr(0, pos);
        b = m.substr(pos + 1);
      }
      t->bpe_ranks_.emplace(std::to_string(a.size()) + ":" + a + b, static_cast<int>(i));
    }
    ED_ASSIGN_OR_RETURN(t->pre_, PreTypeFromName(s.pre));
    if (s.pre.empty()) t->warnings_.push_back("tokenizer.ggml.pre missing, using 'default'");
    t->ignore_merges_ = t->pre_ == PreType::kLlama3;
  }

  // Defaults as llama.cpp, then the keys.
  int64_t bos = t->spm_ ? 1 : 11, eos = t->spm_ ? 2 : 11, unk = t->spm_ ? 0 : -1;
  t->add_bos_ = t->spm_ || t->pre_ == PreType::kLlama3;
  t->add_space_prefix_ = t->spm_;
  auto pick = [&](int64_t v, int64_t def, const char* key) -> int32_t {
    if (v == VocabSpec::kUnset) v = def;
    if (v < -1 || v >= static_cast<int64_t>(n)) {
      t->warnings_.push_back(std::string(key) + " = " + std::to_string(v) + " is out of range, ignored");
      v = (def >= 0 && def < static_cast<int64_t>(n)) ? def : -1;
    }
    return static_cast<int32_t>(v);
  };
  t->bos_ = pick(s.bos, bos, "tokenizer.ggml.bos_token_id");
  t->eos_ = pick(s.eos, eos, "tokenizer.ggml.eos_token_id");
  t->unk_ = pick(s.unk, unk, "tokenizer.ggml.unknown_token_id");
  const int32_t eot = pick(s.eot, -1, "tokenizer.ggml.eot_token_id");
  const int32_t eom = pick(s.eom, -1, "tokenizer.ggml.eom_token_id");
  if (s.add_bos >= 0) t->add_bos_ = s.add_bos;
  if (s.add_eos >= 0) t->add_eos_ = s.add_eos;
  if (s.add_space_prefix >= 0) t->add_space_prefix_ = s.add_space_prefix;

  for (size_t i = 0; i < n; ++i) {
    if (t->tokens_[i].attr & (kControl | kUserDefined | kUnknown)) t->special_.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(t->special_.begin(), t->special_.end(), [&](int32_t a, int32_t b) {
    return t->tokens_[a].text.size() > t->tokens_[b].text.size();
  });
  // Phi-3 strips whitespace after its special tokens (llama.cpp sets this by model name).
  std::string name = s.name;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : t->special_) t->tokens_[id].attr |= kRstrip;
    for (const char* x : {"</s>"}) if (int32_t id = t->Lookup(x); id >= 0) t->tokens_[id].attr |= kRstrip;
    for (const char* x : {"<unk>", "<s>", "<|endoftext|>"})
      if (int32_t id = t->Lookup(x); id >= 0) t->tokens_[id].attr &= ~kRstrip;
  }

  for (int32_t id : {t->eos_, eot, eom}) {
    if (id >= 0) t->eog_.insert(id);
  }
  for (const char* x : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                        "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>"}) {
    const int32_t id = t->Lookup(x);
    if (id >= 0 && (t->tokens_[id].attr & kControl)) t->eog_.insert(id);
  }
  return std::unique_ptr<Tokenizer>(std::move(t));
}

// Splits text at special tokens, longest first, left to right (llama.cpp's tokenizer_st_partition).
// Control and unknown tokens count only when parse_special; user-defined ones always do.
std::vector<VocabTokenizer::Fragment> VocabTokenizer::Partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});
  for (int32_t id : special_) {
    const Token& tk = tokens_[id];
    if (!parse_special && (tk.attr & (kControl | kUnknown))) continue;
    std::vector<Fragment> next;
    next.reserve(frags.size());
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t off = f.off, len = f.len;
      while (len > 0) {
        const size_t m = text.substr(off, len).find(tk.text);
        if (m == std::string_view::npos) break;
        size_t left_len = m;
        if (tk.attr & kLstrip) {
          while (left_len > 0 && std::isspace(static_cast<unsigned char>(text[off + left_len - 1]))) left_len--;
        }
        if (left_len > 0) next.push_back({-1, off, left_len});
        next.push_back({id, 0, 0});
        size_t r_off = off + m + tk.text.size();
        size_t r_len = len - m - tk.text.size();
        if (tk.attr & kRstrip) {
          while (r_len > 0 && std::isspace(static_cast<unsigned char>(text[r_off]))) {
            r_off++;
            r_len--;
          }
        }
        off = r_off;
        len = r_len;
      }
      if (len > 0) next.push_back({-1, off, len});
    }
    frags.swap(next);
  }
  return frags;
}

int32_t VocabTokenizer::ByteToken(uint8_t b) const {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  int32_t id = Lookup(buf);
  if (id < 0) id = Lookup(std::string(1, static_cast<char>(b)));
  return id >= 0 ? id : unk_;
}

// SentencePiece BPE: start from UTF-8 characters, repeatedly merge the adjacent pair whose
// concatenation is the best-scoring token (ties: leftmost), then emit tokens, falling back to
// byte tokens for pieces that are not in the vocab.
void VocabTokenizer::EncodeSpm(const std::string& text, std::vector<int32_t>* out) const {
  struct Sym { int prev, next; size_t off, n; };
  struct Bigram { int left, right; float score; size_t size; };
  auto worse = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::vector<Sym> sym;
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(Utf8SeqLen(static_cast<uint8_t>(text[off])), text.size() - off);
    const int idx = static_cast<int>(sym.size());
    sym.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, off, len});
    off += len;
  }
  if (sym.empty()) return;
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
  auto try_add = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const int32_t id = Lookup(text.substr(sym[l].off, sym[l].n + sym[r].n));
    if (id < 0) return;
    queue.push({l, r, tokens_[id].score, sym[l].n + sym[r].n});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Sym& l = sym[b.left];
    Sym& r = sym[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
  for (int i = 0; i != -1; i = sym[i].next) {
    const std::string piece = text.substr(sym[i].off, sym[i].n);
    const int32_t id = Lookup(piece);
    if (id >= 0) {
      out->push_back(id);
    } else {
      for (char c : piece) {
        const int32_t bt = ByteToken(static_cast<uint8_t>(c));
        if (bt >= 0) out->push_back(bt);
      }
    }
  }
}

// Byte-level BPE: pre-tokenize into words, map bytes to printable code points, merge the adjacent
// pair of lowest merge rank (ties: leftmost) until none applies.
void VocabTokenizer::EncodeBpe(std::string_view text, std::vector<int32_t>* out) const {
  struct Sym { int prev, next; size_t off, n; };
  struct Bigram { int left, right; int rank; std::string text; };
  auto worse = [](const Bigram& a, const Bigram& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  for (const std::string& raw : PreTokenizeUtf8(text, pre_)) {
    std::string word;
    for (char c : raw) word += ByteToUnicodeUtf8(static_cast<uint8_t>(c));
    if (ignore_merges_) {
      if (int32_t id = Lookup(word); id >= 0) {
        out->push_back(id);
        continue;
      }
    }
    std::vector<Sym> sym;
    for (size_t off = 0; off < word.size();) {
      const size_t len = std::min(Utf8SeqLen(static_cast<uint8_t>(word[off])), word.size() - off);
      const int idx = static_cast<int>(sym.size());
      sym.push_back({idx - 1, off + len == word.size() ? -1 : idx + 1, off, len});
      off += len;
    }
    std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
    auto add = [&](int l, int r) {
      if (l < 0 || r < 0) return;
      std::string a = word.substr(sym[l].off, sym[l].n), b = word.substr(sym[r].off, sym[r].n);
      const int rank = BpeRank(a, b);
      if (rank < 0) return;
      queue.push({l, r, rank, a + b});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) add(i - 1, i);
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Sym& l = sym[b.left];
      Sym& r = sym[b.right];
      if (l.n == 0 || r.n == 0) continue;
      if (word.compare(l.off, l.n + r.n, b.text) != 0 || r.off != l.off + l.n) continue;  // stale
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      add(l.prev, b.left);
      add(b.left, l.next);
    }
    for (const Sym& s : sym) {
      if (s.n == 0) continue;
      const std::string piece = word.substr(s.off, s.n);
      const int32_t id = Lookup(piece);
      if (id >= 0) {
        out->push_back(id);
      } else {
        for (char c : piece) {  // llama.cpp's fallback: single-byte tokens, else dropped
          if (int32_t bt = Lookup(std::string(1, c)); bt >= 0) out->push_back(bt);
        }
      }
    }
  }
}

std::vector<int32_t> VocabTokenizer::Encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && bos_ >= 0) out.push_back(bos_);
  bool prev_special = true;  // SPM: a space prefix at the start and after each special token
  for (const Fragment& f : Partition(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    if (spm_) {
      std::string s;
      if (add_space_prefix_ && prev_special) s = " ";
      s.append(text.substr(f.off, f.len));
      std::string esc;
      esc.reserve(s.size() + 8);
      for (char c : s) {
        if (c == ' ') esc += kSpmSpace; else esc += c;
      }
      EncodeSpm(esc, &out);
    } else {
      EncodeBpe(text.substr(f.off, f.len), &out);
    }
    prev_special = false;
  }
  return out;
}

std::string VocabTokenizer::TokenToPiece(int32_t id, bool render_special) const {
  if (id < 0 || id >= vocab_size()) return "";
  const Token& tk = tokens_[id];
  if (!render_special && (tk.attr & (kControl | kUnknown))) return "";
  if (tk.attr & (kControl | kUnknown | kUserDefined)) return tk.text;
  if (spm_) {
    if (tk.attr & kNormal) {
      std::string r;
      for (size_t i = 0; i < tk.text.size();) {
        if (tk.text.compare(i, 3, kSpmSpace) == 0) {
          r += ' ';
          i += 3;
        } else {
          r += tk.text[i++];
        }
      }
      return r;
    }
    if (tk.attr & kByte) return std::string(1, static_cast<char>(tk.byte));  // text checked at load
    return "";
  }
  if (tk.attr & kNormal) {
    std::string r;
    for (uint32_t cp : DecodeUtf8(tk.text)) {
      const int b = UnicodeToByte(cp);
      if (b >= 0) r += static_cast<char>(b); else AppendUtf8(cp, &r);  // not a byte image: as is
    }
    return r;
  }
  return "";
}

std::string VocabTokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  size_t i = 0;
  if (!ids.empty() && ids[0] == bos_) i = 1;
  bool strip = spm_ && add_space_prefix_;  // undo the space prefix Encode added at the start
  for (; i < ids.size(); ++i) {
    std::string p = TokenToPiece(ids[i], false);
    if (strip && !p.empty() && p[0] == ' ') p.erase(0, 1);
    strip = false;
    out += p;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromSpec(const VocabSpec& spec) { return VocabTokenizer::Build(spec); }

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::File& f) {
  VocabSpec s;
  const gguf::Value* model = f.Find("tokenizer.ggml.model");
  if (!model) return NotFound(f.path() + ": metadata key tokenizer.ggml.model is missing (no tokenizer)");
  ED_ASSIGN_OR_RETURN(s.model, f.GetString("tokenizer.ggml.model"));
  s.pre = f.GetStringOr("tokenizer.ggml.pre", "");
  s.name = f.GetStringOr("general.name", "");
  // Names the file once (the gguf getters' errors already start with it).
  auto ctx = [&](const Status& st) {
    return st.message().rfind(f.path() + ": ", 0) == 0 ? st : st.WithContext(f.path());
  };
  // Checked before anything is copied: the arrays below are sized by it.
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}) {
    const gguf::Value* v = f.Find(key);
    if (v != nullptr && v->array_size() > kMaxVocab)
      return Corrupt(f.path() + ": " + key + " has " + std::to_string(v->array_size()) +
                     " entries, more than the limit of " + std::to_string(kMaxVocab));
  }
  {
    auto r = f.GetStringArray("tokenizer.ggml.tokens");
    if (!r.ok()) return ctx(r.status());
    s.tokens = std::move(r).value();
  }
  if (f.Find("tokenizer.ggml.scores")) {
    auto r = f.GetFloatArray("tokenizer.ggml.scores");
    if (!r.ok()) return ctx(r.status());
    for (double d : r.value()) s.scores.push_back(static_cast<float>(d));
  }
  if (f.Find("tokenizer.ggml.token_type")) {
    auto r = f.GetIntArray("tokenizer.ggml.token_type");
    if (!r.ok()) return ctx(r.status());
    s.token_types = std::move(r).value();
  }
  if (f.Find("tokenizer.ggml.merges")) {
    auto r = f.GetStringArray("tokenizer.ggml.merges");
    if (!r.ok()) return ctx(r.status());
    s.merges = std::move(r).value();
  }
  auto id = [&](const char* key) { return f.Find(key) ? f.GetIntOr(key, VocabSpec::kUnset) : VocabSpec::kUnset; };
  s.bos = id("tokenizer.ggml.bos_token_id");
  s.eos = id("tokenizer.ggml.eos_token_id");
  s.eot = id("tokenizer.ggml.eot_token_id");
  s.eom = id("tokenizer.ggml.eom_token_id");
  s.unk = id("tokenizer.ggml.unknown_token_id");
  s.pad = id("tokenizer.ggml.padding_token_id");
  auto flag = [&](const char* key) -> int {
    if (!f.Find(key)) return -1;
    auto r = f.GetBool(key);
    return r.ok() ? (r.value() ? 1 : 0) : -1;
  };
  s.add_bos = flag("tokenizer.ggml.add_bos_token");
  s.add_eos = flag("tokenizer.ggml.add_eos_token");
  s.add_space_prefix = flag("tokenizer.ggml.add_space_prefix");
  auto r = FromSpec(s);
  if (!r.ok()) return ctx(r.status());
  return r;
}

// ---- Utf8Stream ----

namespace {
// Length of the valid sequence starting at s[i] (0: invalid lead or bad continuation; the value
// `need` when the bytes so far are a valid but unfinished prefix and run past the end).
size_t SeqAt(const std::string& s, size_t i, bool* incomplete) {
  *incomplete = false;
  const uint8_t b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) return 1;
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) len = 2;
  else if (b >= 0xE0 && b <= 0xEF) { len = 3; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
  else if (b >= 0xF0 && b <= 0xF4) { len = 4; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
  else return 0;
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) {
      *incomplete = true;
      return 0;
    }
    const uint8_t c = static_cast<uint8_t>(s[i + k]);
    if (k == 1 ? (c < lo || c > hi) : ((c & 0xC0) != 0x80)) return 0;
  }
  return len;
}
}  // namespace

std::string Utf8Stream::Push(const std::string& bytes) {
  pending_ += bytes;
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    bool incomplete = false;
    const size_t len = SeqAt(pending_, i, &incomplete);
    if (incomplete) break;  // wait for the rest
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      i += 1;
    } else {
      out.append(pending_, i, len);
      i += len;
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Stream::Flush() {
  std::string out = pending_.empty() ? "" : "\xEF\xBF\xBD";
  pending_.clear();
  return out;
}

}  // namespace edgedecode::tok
