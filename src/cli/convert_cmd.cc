// `edgedecode convert`: import models from other formats (llama2.c checkpoints).
#include <cstdio>

#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/output_file.h"
#include "cli/signals.h"
#include "tooling/llama2c.h"

namespace edgedecode::cli {

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
  if (auto rc = Parse(app, argc, argv)) return *rc;
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
