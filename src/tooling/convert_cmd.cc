// edgedecode convert: import models from other formats (llama2.c checkpoints).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "tooling/cmd_util.h"
#include "tooling/llama2c.h"

namespace edgedecode::cli {

int ConvertMain(int argc, char** argv) {
  using namespace edgedecode::tooling;
  CLI::App app{"Convert a model from another format to GGUF.", "edgedecode convert"};
  app.require_subcommand(1);
  CLI::App* l2c = app.add_subcommand("llama2c", "llama2.c checkpoint (legacy or version-1 export, f32) + tokenizer.bin");
  std::string model, tok, out;
  l2c->add_option("model", model, "llama2.c checkpoint (.bin)")->required();
  l2c->add_option("--tokenizer", tok, "llama2.c tokenizer (.bin), e.g. tok512.bin")->required();
  l2c->add_option("-o,--output", out, "output GGUF")->required();
  CLI11_PARSE(app, argc, argv);
  Llama2cInfo info;
  Status s = ConvertLlama2c(model, tok, out, &info);
  if (!s.ok()) return Fail("convert", s);
  std::fprintf(stderr, "convert: wrote %s (llama2.c %s: dim %d, hidden %d, layers %d, heads %d/%d, vocab %d, seq %d, %s classifier)\n",
               out.c_str(), info.version ? "version 1" : "legacy", info.dim, info.hidden_dim, info.n_layers,
               info.n_heads, info.n_kv_heads, info.vocab_size, info.seq_len, info.shared_classifier ? "shared" : "own");
  return 0;
}

}  // namespace edgedecode::cli
