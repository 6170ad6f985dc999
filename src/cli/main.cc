// edgedecode: one binary, many subcommands. This file is only the dispatch table.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int, char**);
  const char* summary;
};

// The subcommands, in the order of `edgedecode --help`; each is src/cli/NAME_cmd.cc.
const Command kCommands[] = {
    {"run", edgedecode::cli::RunMain, "generate text from a GGUF model (streams; timings on stderr)"},
    {"chat", edgedecode::cli::ChatMain, "multi-turn chat in the terminal with the model's chat template (scriptable on stdin)"},
    {"logits", edgedecode::cli::LogitsMain, "teacher-forced next-token distributions (for checks against other engines)"},
    {"bench", edgedecode::cli::BenchMain, "prefill/decode speed with the bandwidth roofline"},
    {"perplexity", edgedecode::cli::PerplexityMain, "perplexity over a text file; KL divergence against saved logits"},
    {"plan", edgedecode::cli::PlanMain, "memory budget table (weights, KV cache, activations) against a device"},
    {"info", edgedecode::cli::InfoMain, "what a GGUF model holds, what decoding it reads per token, whether this build runs it"},
    {"tokenize", edgedecode::cli::TokenizeMain, "text to token ids (and pieces)"},
    {"synth", edgedecode::cli::SynthMain, "write a model with random weights in a real architecture shape"},
    {"quantize", edgedecode::cli::QuantizeMain, "re-encode a GGUF model's tensors (f16, q8_0, q4_0, q4_k, ...)"},
    {"convert", edgedecode::cli::ConvertMain, "import a model from another format (llama2c)"},
#ifndef EDGEDECODE_CORE_ONLY  // the core build (cross to Arm) has no scan or doctor module
    {"scan", edgedecode::cli::ScanMain, "where each node of a model runs on a target device"},
    {"rewrite", edgedecode::cli::RewriteMain, "rewrite an ONNX model for a device (shapes, Resize), verified by ONNX Runtime"},
    {"doctor", edgedecode::cli::DoctorMain, "environment and data checks that expose decode failures"},
    {"serve", edgedecode::cli::ServeMain, "OpenAI-compatible HTTP service (chat/completions, streaming, parallel slots)"},
#endif
};

void PrintHelp(FILE* out) {
  std::fprintf(out,
               "edgedecode %s: get AI models onto edge devices and make them fast there.\n\n"
               "usage: edgedecode <command> [options]   (edgedecode <command> --help for details)\n\n"
               "commands:\n",
               EDGEDECODE_VERSION);
  for (const Command& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    PrintHelp(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("edgedecode %s\n", EDGEDECODE_VERSION);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::string(argv[1]) == c.name) return c.main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "edgedecode: unknown command '%s'\n\n", argv[1]);
  PrintHelp(stderr);
  return 2;
}
