// edgedecode tokenize: text to token ids (and pieces), for checking against llama-tokenize.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "tok/tokenizer.h"

namespace edgedecode::cli {

int TokenizeMain(int argc, char** argv) {
  CLI::App app{"Tokenize text with the tokenizer stored in a GGUF file (ids on one line)."};
  std::string model, prompt;
  bool no_bos = false, pieces = false, json = false, no_special = false;
  app.add_option("-m,--model", model, "GGUF file (a model or a vocab-only file)")->required();
  app.add_option("-p,--prompt", prompt, "text to tokenize")->required();
  app.add_flag("--no-bos", no_bos, "do not prepend BOS");
  app.add_flag("--no-parse-special", no_special, "treat control-token text as plain text");
  app.add_flag("--pieces", pieces, "print one 'id<TAB>piece' line per token");
  app.add_flag("--json", json, "print a JSON object {ids, pieces}");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto file = gguf::File::Open(model);
  if (!file.ok()) {
    std::fprintf(stderr, "edgedecode tokenize: %s\n", file.status().message().c_str());
    return 3;
  }
  auto tk = tok::Tokenizer::FromGguf(**file);
  if (!tk.ok()) {
    std::fprintf(stderr, "edgedecode tokenize: %s\n", tk.status().message().c_str());
    return tk.status().code() == StatusCode::kUnsupported ? 4 : 3;
  }
  for (const std::string& w : (*tk)->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  const auto ids = (*tk)->Encode(prompt, !no_bos && (*tk)->add_bos_default(), !no_special);
  if (json) {
    nlohmann::json j;
    j["ids"] = ids;
    nlohmann::json ps = nlohmann::json::array();
    for (int32_t id : ids) ps.push_back((*tk)->TokenText(id));
    j["pieces"] = ps;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (pieces) {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, (*tk)->TokenToPiece(id, true).c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace edgedecode::cli
