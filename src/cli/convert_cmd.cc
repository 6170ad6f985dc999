// `edgedecode convert`: import models from other formats (llama2.c checkpoints, Hugging Face tokenizer.json).
#include <cstdio>

#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/output_file.h"
#include "cli/signals.h"
#include "tooling/hf_tokenizer.h"
#include "tooling/llama2c.h"

namespace edgedecode::cli {
namespace {

int ConvertTokenizer(const std::string& cmd, const std::string& in, const std::string& config, int64_t vocab_size,
                     const std::string& out, JsonOutput& json) {
  std::vector<std::string> inputs = {in};
  if (!config.empty()) inputs.push_back(config);
  if (Status s = CheckOutputIsNotInput(out, inputs, "-o"); !s.ok()) return Fail(cmd, s);
  ExitOnSignalRemoving(TempPathFor(out));
  auto v = tooling::ConvertHfTokenizer(in, config, out, vocab_size);
  if (!v.ok()) return Fail(cmd, v.status());
  const tok::VocabSpec& s = v->spec;
  auto text = [&](int64_t id) { return id >= 0 && id < static_cast<int64_t>(s.tokens.size()) ? s.tokens[id] : std::string("-"); };
  std::fprintf(stderr, "convert: wrote %s (tokenizer %s, pre %s: %zu tokens, %lld added, %lld padding, %zu merges; bos %s, eos %s, add_bos %s)\n",
               out.c_str(), s.model.c_str(), s.pre.c_str(), s.tokens.size(), static_cast<long long>(v->n_added),
               static_cast<long long>(v->n_padding), s.merges.size(), text(s.bos).c_str(), text(s.eos).c_str(),
               s.add_bos < 0 ? "default" : (s.add_bos ? "yes" : "no"));
  if (json.on()) {
    auto idj = [](int64_t id) { return id >= 0 ? nlohmann::json(id) : nlohmann::json(nullptr); };
    nlohmann::json j = {{"output", out}, {"format", "tokenizer.json"}, {"model", s.model}, {"pre", s.pre},
                        {"tokens", s.tokens.size()}, {"added", v->n_added}, {"padding", v->n_padding},
                        {"merges", s.merges.size()}, {"bos", idj(s.bos)}, {"eos", idj(s.eos)}, {"pad", idj(s.pad)},
                        {"unk", idj(s.unk)}, {"add_bos", s.add_bos < 0 ? nlohmann::json(nullptr) : nlohmann::json(s.add_bos == 1)},
                        {"chat_template", !v->chat_template.empty()}};
    inputs.push_back(out);
    if (Status st = json.Write(j, "convert", inputs); !st.ok()) return Fail(cmd, st);
  }
  return 0;
}

}  // namespace

int ConvertMain(int argc, char** argv) {
  using namespace edgedecode::tooling;
  const std::string cmd = "edgedecode convert";
  CLI::App app{"Convert a model from another format to GGUF.", cmd};
  app.require_subcommand(1);
  CLI::App* l2c = app.add_subcommand("llama2c", "llama2.c checkpoint (legacy or version-1 export, f32) + tokenizer.bin");
  std::string model, tok, out;
  JsonOutput json;
  l2c->add_option("model", model, "llama2.c checkpoint (.bin)")->required();
  l2c->add_option("--tokenizer", tok, "llama2.c tokenizer (.bin), e.g. tok512.bin")->required();
  l2c->add_option("-o,--output", out, "output GGUF")->required();
  json.Add(*l2c, "a summary");
  CLI::App* hf = app.add_subcommand("tokenizer", "Hugging Face tokenizer.json (byte-level BPE or SentencePiece-style BPE) to a vocab-only GGUF");
  std::string hf_json, hf_config;
  int64_t vocab_size = 0;
  JsonOutput hf_out;
  hf->add_option("tokenizer", hf_json, "tokenizer.json")->required();
  hf->add_option("--config", hf_config, "tokenizer_config.json (special tokens, add_bos/add_eos, chat template)");
  hf->add_option("--vocab-size", vocab_size, "pad the vocabulary with [PADn] tokens up to this size (the model's config.json vocab_size)");
  hf->add_option("-o,--output", out, "output GGUF")->required();
  hf_out.Add(*hf, "a summary");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (hf->parsed()) return ConvertTokenizer(cmd, hf_json, hf_config, vocab_size, out, hf_out);
  if (Status s = CheckOutputIsNotInput(out, {model, tok}, "-o"); !s.ok()) return Fail(cmd, s);
  ExitOnSignalRemoving(TempPathFor(out));
  Llama2cInfo info;
  if (Status s = ConvertLlama2c(model, tok, out, &info); !s.ok()) return Fail(cmd, s);
  std::fprintf(stderr, "convert: wrote %s (llama2.c %s: dim %d, hidden %d, layers %d, heads %d/%d, vocab %d, seq %d, %s classifier)\n",
               out.c_str(), info.version ? "version 1" : "legacy", info.dim, info.hidden_dim, info.n_layers,
               info.n_heads, info.n_kv_heads, info.vocab_size, info.seq_len, info.shared_classifier ? "shared" : "own");
  if (json.on()) {
    nlohmann::json j = {{"output", out}, {"format", "llama2c"}, {"version", info.version}, {"dim", info.dim},
                        {"hidden_dim", info.hidden_dim}, {"layers", info.n_layers}, {"heads", info.n_heads},
                        {"kv_heads", info.n_kv_heads}, {"vocab", info.vocab_size}, {"seq_len", info.seq_len}};
    if (Status s = json.Write(j, "convert", {model, tok, out}); !s.ok()) return Fail(cmd, s);
  }
  return 0;
}

}  // namespace edgedecode::cli
