#include "tooling/hf_tokenizer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "base/json_depth.h"
#include "tooling/gguf_stream.h"

namespace edgedecode::tooling {
namespace {

using nlohmann::json;

// The Split regexes of the byte-level BPE pre-tokenizers llama.cpp implements, and its tokenizer.ggml.pre
// name for each. llama.cpp finds the name by hashing the ids of a check text; these regexes are what
// distinguishes the names it gives the tokenizers handled here.
const char kLlama3Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kQwen2Regex[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kGpt2Regex[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// llama_token_type values.
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

const char kSpmSpace[] = "\xE2\x96\x81";  // U+2581

// Field readers that never throw: a member of another JSON type reads as the default (json::value() throws).
bool BoolOr(const json& j, const char* key, bool def) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : def;
}
std::string StrOr(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string TypeOf(const json& j) { return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : ""; }

// The names convert_hf_to_gguf.py treats as control tokens even when tokenizer.json does not mark them special.
bool LooksSpecial(const std::string& t) {
  auto wraps = [&](const std::string& a, const std::string& b) {
    return t.size() >= a.size() + b.size() && t.compare(0, a.size(), a) == 0 &&
           t.compare(t.size() - b.size(), b.size(), b) == 0;
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wraps("<|", "|>") ||
         wraps("<\xEF\xBD\x9C", "\xEF\xBD\x9C>") || wraps("<unused", ">");
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

bool IsByteTokenText(const std::string& t) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
         std::isxdigit(static_cast<unsigned char>(t[4]));
}

// The pre-tokenizer of a byte-level BPE tokenizer.json: a ByteLevel step (with its own GPT-2 regex when
// use_regex is set) alone or after one Split regex. Returns the llama.cpp pre name.
Result<std::string> BytePreName(const json& pre, bool ignore_merges, const std::string& where) {
  std::vector<json> steps;
  if (TypeOf(pre) == "Sequence" && pre.contains("pretokenizers") && pre["pretokenizers"].is_array()) {
    for (const json& s : pre["pretokenizers"]) steps.push_back(s);
  } else if (!pre.is_null()) {
    steps.push_back(pre);
  }
  std::string regex;
  bool byte_level = false;
  for (const json& s : steps) {
    const std::string t = TypeOf(s);
    if (t == "ByteLevel") {
      byte_level = true;
      if (BoolOr(s, "add_prefix_space", false))
        return Unsupported(where + ": pre_tokenizer ByteLevel with add_prefix_space is not supported");
      if (BoolOr(s, "use_regex", true)) {
        if (!regex.empty()) return Unsupported(where + ": pre_tokenizer has two regexes (Split and ByteLevel use_regex)");
        regex = kGpt2Regex;
      }
    } else if (t == "Split") {
      if (!regex.empty()) return Unsupported(where + ": pre_tokenizer has more than one Split regex");
      const json& pat = s.contains("pattern") ? s["pattern"] : json();
      if (!pat.is_object() || !pat.contains("Regex") || !pat["Regex"].is_string())
        return Unsupported(where + ": pre_tokenizer Split without a Regex pattern is not supported");
      if (StrOr(s, "behavior") != "Isolated" || BoolOr(s, "invert", false))
        return Unsupported(where + ": pre_tokenizer Split with behavior '" + StrOr(s, "behavior") +
                           "'" + (BoolOr(s, "invert", false) ? " (inverted)" : "") + " is not supported (only Isolated)");
      regex = pat["Regex"].get<std::string>();
    } else {
      return Unsupported(where + ": pre_tokenizer type '" + t + "' is not supported for byte-level BPE (supported: "
                         "ByteLevel, Split with the GPT-2, Llama 3 or Qwen2 regex, Sequence of them)");
    }
  }
  if (!byte_level) return Unsupported(where + ": byte-level BPE needs a ByteLevel pre_tokenizer; there is none");
  std::string name;
  if (regex == kLlama3Regex) name = ignore_merges ? "llama-bpe" : "dbrx";
  else if (regex == kQwen2Regex) name = "qwen2";
  else if (regex == kGpt2Regex) name = "gpt-2";
  else
    return Unsupported(where + ": pre_tokenizer regex '" + regex +
                       "' is not one the GGUF tokenizers implement (supported: GPT-2, Llama 3, Qwen2)");
  if (ignore_merges && name != "llama-bpe")
    return Unsupported(where + ": model.ignore_merges with the " + name + " pre-tokenizer is not supported");
  return name;
}

// Normalizers the GGUF tokenizers reproduce. Byte-level BPE: none, or NFC (which llama.cpp does not apply:
// text that is not in NFC may tokenize differently; documented). SentencePiece-style: replacing ' ' by
// U+2581, optionally after prepending U+2581 (which sets add_space_prefix).
Status CheckNormalizer(const json& n, bool spm, bool* prepend, const std::string& where) {
  *prepend = false;
  if (n.is_null()) return Status::Ok();
  std::vector<json> steps;
  if (TypeOf(n) == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (const json& s : n["normalizers"]) steps.push_back(s);
  } else {
    steps.push_back(n);
  }
  for (const json& s : steps) {
    const std::string t = TypeOf(s);
    if (!spm && t == "NFC") continue;
    if (spm && t == "Prepend" && StrOr(s, "prepend") == kSpmSpace) {
      *prepend = true;
      continue;
    }
    if (spm && t == "Replace" && s.contains("pattern") && s["pattern"].is_object() &&
        StrOr(s["pattern"], "String") == " " && StrOr(s, "content") == kSpmSpace)
      continue;
    return Unsupported(where + ": normalizer type '" + t + "' is not supported (supported: " +
                       (spm ? "Replace ' ' by U+2581, Prepend U+2581" : "none, NFC") + ")");
  }
  return Status::Ok();
}

// Merges as "left right" strings: the old string form as is, the pair form joined with spaces inside a part
// written as U+0120 (what convert_hf_to_gguf.py does).
Result<std::vector<std::string>> MergesOf(const json& m, const std::string& where) {
  std::vector<std::string> out;
  if (!m.is_array()) return Corrupt(where + ": model.merges is not an array");
  out.reserve(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    const json& e = m[i];
    if (e.is_string()) {
      out.push_back(e.get<std::string>());
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      out.push_back(ReplaceAll(e[0].get<std::string>(), " ", "\xC4\xA0") + " " +
                    ReplaceAll(e[1].get<std::string>(), " ", "\xC4\xA0"));
    } else {
      return Corrupt(where + ": model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return out;
}

struct Added {
  std::string content;
  bool special = false;
};

// add_bos / add_eos (and the bos/eos names when there is no tokenizer_config.json) from a TemplateProcessing
// post-processor, the way convert_hf_to_gguf.py reads simple templates.
void ReadPostProcessor(const json& post, json* config, bool have_config, std::map<std::string, bool>* add) {
  if (!post.is_object()) return;
  std::vector<json> procs;
  if (post.contains("processors") && post["processors"].is_array()) {
    for (const json& p : post["processors"]) procs.push_back(p);
  } else {
    procs.push_back(post);
  }
  auto name = [&](const char* key) -> std::string {
    if (!config->contains(key)) return "";
    const json& v = (*config)[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return "";
  };
  for (const json& p : procs) {
    const std::string t = TypeOf(p);
    if (t == "RobertaProcessing") {
      (*add)["bos"] = (*add)["eos"] = (*add)["sep"] = true;
      continue;
    }
    if (t != "TemplateProcessing" || !p.contains("single") || !p["single"].is_array()) continue;
    const json& single = p["single"];
    if (single.size() <= 1) continue;
    auto special_id = [](const json& e) -> std::string {
      if (e.is_object() && e.contains("SpecialToken") && e["SpecialToken"].is_object() &&
          e["SpecialToken"].contains("id") && e["SpecialToken"]["id"].is_string())
        return e["SpecialToken"]["id"].get<std::string>();
      return "";
    };
    const std::string first = special_id(single.front()), last = special_id(single.back());
    if (!first.empty()) {
      std::string bos = name("bos_token"), cls = name("cls_token");
      if (have_config && first != bos && first != cls && bos.empty()) (*config)["bos_token"] = bos = first;
      (*add)["bos"] = !have_config || first == bos || first == cls;
    }
    if (!last.empty()) {
      std::string eos = name("eos_token");
      if (have_config && last != eos) {
        if (!config->contains("eot_token")) (*config)["eot_token"] = eos;
        else if (!config->contains("eom_token")) (*config)["eom_token"] = eos;
        (*config)["eos_token"] = eos = last;
      }
      (*add)["eos"] = true;
    }
  }
}

Result<std::string> ReadText(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFound(path + ": cannot open");
  if (!S_ISREG(st.st_mode)) return IoError(path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxHfTokenizerBytes)
    return Corrupt(path + ": " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                   std::to_string(kMaxHfTokenizerBytes) + " for a tokenizer file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError(path + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (!f.good() && !f.eof()) return IoError(path + ": read failed");
  return ss.str();
}

Result<json> ParseJson(const std::string& text, const std::string& where) {
  ED_RETURN_IF_ERROR(CheckJsonDepth(text, where));
  try {
    return json::parse(text);
  } catch (const std::exception& e) {
    return Corrupt(where + ": not valid JSON: " + e.what());
  }
}

Result<HfVocab> ParseVocab(const std::string& json_text, const std::string& where, const std::string& config_text,
                           const std::string& config_where, int64_t vocab_size) {
  ED_ASSIGN_OR_RETURN(json j, ParseJson(json_text, where));
  json config = json::object();
  const bool have_config = !config_text.empty();
  if (have_config) {
    ED_ASSIGN_OR_RETURN(config, ParseJson(config_text, config_where));
    if (!config.is_object()) return Corrupt(config_where + ": expected a JSON object");
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    return Corrupt(where + ": no \"model\" object (not a Hugging Face tokenizer.json?)");
  const json& model = j["model"];
  const std::string mtype = TypeOf(model);
  if (mtype != "BPE")
    return Unsupported(where + ": model type '" + mtype + "' is not supported (supported: BPE, byte-level or with byte_fallback)");
  const bool byte_fallback = BoolOr(model, "byte_fallback", false) == true;
  const bool ignore_merges = BoolOr(model, "ignore_merges", false) == true;
  if (!model.contains("vocab") || !model["vocab"].is_object()) return Corrupt(where + ": model.vocab is not an object");

  HfVocab out;
  tok::VocabSpec& s = out.spec;
  bool prepend = false;
  ED_RETURN_IF_ERROR(CheckNormalizer(j.contains("normalizer") ? j["normalizer"] : json(), byte_fallback, &prepend, where));
  if (byte_fallback) {
    s.model = "llama";
    s.pre = "default";
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null()) {
      const json& p = j["pre_tokenizer"];
      const bool split_space = TypeOf(p) == "Split" && p.contains("pattern") && p["pattern"].is_object() &&
                               StrOr(p["pattern"], "String") == " ";
      if (!split_space && TypeOf(p) != "Metaspace")
        return Unsupported(where + ": pre_tokenizer type '" + TypeOf(p) + "' is not supported with byte_fallback BPE");
    }
  } else {
    s.model = "gpt2";
    ED_ASSIGN_OR_RETURN(s.pre, BytePreName(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : json(), ignore_merges, where));
  }

  // Ids: model.vocab and added_tokens (which win on the same id, as get_vocab() does).
  std::unordered_map<int64_t, std::string> text_of;
  auto check_id = [&](const json& v, const std::string& what) -> Result<int64_t> {
    if (!v.is_number_integer()) return Corrupt(where + ": " + what + " has no integer id");
    const int64_t id = v.get<int64_t>();
    if (id < 0 || static_cast<uint64_t>(id) >= tok::kMaxVocab)
      return Corrupt(where + ": " + what + " has id " + std::to_string(id) + ", outside 0.." + std::to_string(tok::kMaxVocab - 1));
    return id;
  };
  int64_t max_id = -1;
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    ED_ASSIGN_OR_RETURN(int64_t id, check_id(it.value(), "model.vocab entry '" + it.key() + "'"));
    if (!text_of.emplace(id, it.key()).second)
      return Corrupt(where + ": model.vocab gives id " + std::to_string(id) + " to two tokens");
    max_id = std::max(max_id, id);
  }
  std::map<int64_t, Added> added;
  std::unordered_map<std::string, int64_t> added_by_content;  // first entry of a content, as the converter looks ids up
  if (j.contains("added_tokens")) {
    if (!j["added_tokens"].is_array()) return Corrupt(where + ": added_tokens is not an array");
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& a = j["added_tokens"][i];
      const std::string what = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string())
        return Corrupt(where + ": " + what + " has no content string");
      ED_ASSIGN_OR_RETURN(int64_t id, check_id(a.contains("id") ? a["id"] : json(), what));
      Added ad{a["content"].get<std::string>(), BoolOr(a, "special", false) == true};
      added_by_content.emplace(ad.content, id);
      text_of[id] = ad.content;
      added[id] = std::move(ad);
      max_id = std::max(max_id, id);
    }
  }
  out.n_added = static_cast<int64_t>(added.size());
  if (max_id < 0) return Corrupt(where + ": the vocabulary is empty");
  if (max_id + 1 - static_cast<int64_t>(text_of.size()) > kMaxHfIdGaps)
    return Corrupt(where + ": the largest id is " + std::to_string(max_id) + " but there are only " +
                   std::to_string(text_of.size()) + " tokens (more than " + std::to_string(kMaxHfIdGaps) +
                   " ids unused)");
  if (vocab_size > 0 && vocab_size <= max_id)
    return InvalidArgument("--vocab-size " + std::to_string(vocab_size) + " is not above the largest token id " +
                           std::to_string(max_id));
  if (vocab_size > static_cast<int64_t>(tok::kMaxVocab))
    return InvalidArgument("--vocab-size " + std::to_string(vocab_size) + " is above the limit of " + std::to_string(tok::kMaxVocab));
  const int64_t n = vocab_size > 0 ? vocab_size : max_id + 1;

  // Merge ranks, for the SentencePiece scores: a token's score is minus the rank of the first merge that
  // makes it, so the bigram merging by score applies merges in the tokenizer.json order.
  ED_ASSIGN_OR_RETURN(std::vector<std::string> merges, MergesOf(model.contains("merges") ? model["merges"] : json::array(), where));
  std::unordered_map<std::string, int64_t> made_by;
  if (byte_fallback) {
    for (size_t r = 0; r < merges.size(); ++r) {
      const std::string& m = merges[r];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) continue;
      made_by.emplace(m.substr(0, sp) + m.substr(sp + 1), static_cast<int64_t>(r));
    }
  } else {
    s.merges = std::move(merges);
  }

  const std::string unk_text = model.contains("unk_token") && model["unk_token"].is_string() ? model["unk_token"].get<std::string>() : "";
  s.tokens.resize(n);
  std::vector<int32_t> types(n);
  if (byte_fallback) s.scores.assign(n, -10000.0f);
  for (int64_t i = 0; i < n; ++i) {
    auto t = text_of.find(i);
    if (t == text_of.end()) {
      s.tokens[i] = "[PAD" + std::to_string(i) + "]";
      types[i] = kUnused;
      out.n_padding++;
      continue;
    }
    std::string text = t->second;
    auto a = added.find(i);
    int32_t type = kNormal;
    if (a != added.end() || added_by_content.count(text)) {
      const bool special = a != added.end() ? a->second.special : added[added_by_content[text]].special;
      if (special || LooksSpecial(text)) {
        type = kControl;
      } else {
        text = ReplaceAll(text, kSpmSpace, " ");  // user-defined tokens are matched in raw text
        type = kUserDefined;
      }
      if (byte_fallback) s.scores[i] = -1000.0f;  // an added token's score, as the converter writes it
    } else if (byte_fallback) {
      if (text == unk_text) type = kUnknown;
      else if (IsByteTokenText(text)) type = kByte;
      auto m = made_by.find(text);
      s.scores[i] = (type == kNormal && m != made_by.end()) ? -static_cast<float>(m->second) : 0.0f;
      if (type == kUnknown) s.scores[i] = 0.0f;
    }
    s.tokens[i] = std::move(text);
    types[i] = type;
  }
  s.token_types.assign(types.begin(), types.end());
  if (byte_fallback) s.add_space_prefix = prepend ? 1 : 0;

  // Special ids and add_* flags, as gguf-py's SpecialVocab reads them.
  std::map<std::string, bool> add;
  ReadPostProcessor(j.contains("post_processor") ? j["post_processor"] : json(), &config, have_config, &add);
  if (have_config) {
    for (const char* typ : {"bos", "eos", "unk", "sep", "pad", "cls", "mask", "eot", "eom"}) {
      const std::string k = typ;
      if (config.contains("add_" + k + "_token") && config["add_" + k + "_token"].is_boolean())
        add[k] = config["add_" + k + "_token"].get<bool>();
      const json& e = config.contains(k + "_token") ? config[k + "_token"] : json();
      std::string content;
      if (e.is_string()) content = e.get<std::string>();
      else if (e.is_object() && e.contains("content") && e["content"].is_string()) content = e["content"].get<std::string>();
      else continue;
      auto id = added_by_content.find(content);
      if (id == added_by_content.end()) continue;
      if (k == "bos") s.bos = id->second;
      else if (k == "eos") s.eos = id->second;
      else if (k == "unk") s.unk = id->second;
      else if (k == "sep") out.sep = id->second;
      else if (k == "pad") s.pad = id->second;
      else if (k == "mask") out.mask = id->second;
      else if (k == "eot") s.eot = id->second;
      else if (k == "eom") s.eom = id->second;
    }
    if (config.contains("chat_template") && config["chat_template"].is_string())
      out.chat_template = config["chat_template"].get<std::string>();
  }
  if (add.count("bos")) s.add_bos = add["bos"];
  if (add.count("eos")) s.add_eos = add["eos"];
  if (add.count("sep")) out.add_sep = add["sep"];
  return out;
}

}  // namespace

Result<HfVocab> HfVocabFromJson(const std::string& json_text, const std::string& where, const std::string& config_text,
                                const std::string& config_where, int64_t vocab_size) {
  // Every member is type-checked before it is read; this only turns a check that was missed into an error
  // instead of a crash.
  try {
    return ParseVocab(json_text, where, config_text, config_where, vocab_size);
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(where + ": unexpected JSON structure: " + e.what());
  }
}

Result<HfVocab> ConvertHfTokenizer(const std::string& json_path, const std::string& config_path,
                                   const std::string& out_path, int64_t vocab_size) {
  ED_ASSIGN_OR_RETURN(std::string text, ReadText(json_path));
  std::string config;
  if (!config_path.empty()) {
    ED_ASSIGN_OR_RETURN(config, ReadText(config_path));
    if (config.empty()) return Corrupt(config_path + ": empty file");
  }
  ED_ASSIGN_OR_RETURN(HfVocab v, HfVocabFromJson(text, json_path, config, config_path, vocab_size));
  // The result must load: the same checks the tokenizer makes on a GGUF.
  {
    auto t = tok::Tokenizer::FromSpec(v.spec);
    if (!t.ok()) return t.status().WithContext(json_path);
  }
  const tok::VocabSpec& s = v.spec;
  StreamWriter w;
  w.Set("general.architecture", gguf::Value::Str(s.model == "gpt2" ? "gpt2" : "llama"));
  w.Set("general.type", gguf::Value::Str("vocab"));
  w.Set("tokenizer.ggml.model", gguf::Value::Str(s.model));
  w.Set("tokenizer.ggml.pre", gguf::Value::Str(s.pre));
  w.Set("tokenizer.ggml.tokens", gguf::Value::StrArray(s.tokens));
  if (!s.scores.empty()) w.Set("tokenizer.ggml.scores", gguf::Value::F32Array(s.scores));
  w.Set("tokenizer.ggml.token_type",
        gguf::Value::I32Array(std::vector<int32_t>(s.token_types.begin(), s.token_types.end())));
  if (!s.merges.empty()) w.Set("tokenizer.ggml.merges", gguf::Value::StrArray(s.merges));
  auto id = [&](const char* key, int64_t v) {
    if (v >= 0) w.Set(key, gguf::Value::U32(static_cast<uint32_t>(v)));
  };
  id("tokenizer.ggml.bos_token_id", s.bos);
  id("tokenizer.ggml.eos_token_id", s.eos);
  id("tokenizer.ggml.unknown_token_id", s.unk);
  id("tokenizer.ggml.seperator_token_id", v.sep);  // llama.cpp's spelling
  id("tokenizer.ggml.padding_token_id", s.pad);
  id("tokenizer.ggml.mask_token_id", v.mask);
  id("tokenizer.ggml.eot_token_id", s.eot);
  id("tokenizer.ggml.eom_token_id", s.eom);
  if (s.add_bos >= 0) w.Set("tokenizer.ggml.add_bos_token", gguf::Value::Bool(s.add_bos));
  if (s.add_eos >= 0) w.Set("tokenizer.ggml.add_eos_token", gguf::Value::Bool(s.add_eos));
  if (v.add_sep >= 0) w.Set("tokenizer.ggml.add_sep_token", gguf::Value::Bool(v.add_sep));
  if (s.add_space_prefix >= 0) w.Set("tokenizer.ggml.add_space_prefix", gguf::Value::Bool(s.add_space_prefix));
  if (!v.chat_template.empty()) w.Set("tokenizer.chat_template", gguf::Value::Str(v.chat_template));
  ED_RETURN_IF_ERROR(w.Begin(out_path));
  ED_RETURN_IF_ERROR(w.Finish());
  return v;
}

}  // namespace edgedecode::tooling
