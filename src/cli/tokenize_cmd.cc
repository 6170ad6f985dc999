// `edgedecode tokenize`: text to token ids (and pieces), for checks against llama-tokenize.
#include <cstdio>

#include "base/json_depth.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/gguf.h"
#include "tok/tokenizer.h"

namespace edgedecode::cli {
namespace {

// --strings: a JSON array of texts, one line of ids each (the oracle tests tokenize thousands of strings).
int TokenizeStrings(const std::string& cmd, const std::string& model, const std::string& path, bool no_bos,
                    bool no_special) {
  auto text = ReadInputText(path);
  if (!text.ok()) return Fail(cmd, text.status());
  if (Status st = CheckJsonDepth(*text, path); !st.ok()) return Fail(cmd, st);
  nlohmann::json list;
  try {
    list = nlohmann::json::parse(*text);
  } catch (const std::exception& e) {
    return Fail(cmd, Corrupt(path + ": not valid JSON: " + e.what()));
  }
  if (!list.is_array()) return Fail(cmd, Corrupt(path + ": expected a JSON array of strings"));
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) return Fail(cmd, Corrupt(path + ": element " + std::to_string(i) + " is not a string"));
  }
  auto gguf = gguf::File::Open(model);
  if (!gguf.ok()) return Fail(cmd, gguf.status());
  auto tk = tok::Tokenizer::FromGguf(**gguf);
  if (!tk.ok()) return Fail(cmd, tk.status());
  for (const std::string& w : (*tk)->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  const bool bos = !no_bos && (*tk)->add_bos_default();
  for (const auto& s : list) {
    const nlohmann::json ids = (*tk)->Encode(s.get<std::string>(), bos, !no_special);
    std::fprintf(stdout, "%s\n", ids.dump().c_str());
  }
  return std::fflush(stdout) == 0 ? 0 : Fail(cmd, IoError("stdout: write failed"));
}

}  // namespace

int TokenizeMain(int argc, char** argv) {
  const std::string cmd = "edgedecode tokenize";
  CLI::App app{"Tokenize text with the tokenizer stored in a GGUF file (ids on one line).", cmd};
  std::string model, prompt, file, strings;
  bool no_bos = false, pieces = false, no_special = false;
  JsonOutput json;
  app.add_option("-m,--model", model, "GGUF file (a model or a vocab-only file)")->required();
  CLI::Option* p = app.add_option("-p,--prompt", prompt, "text to tokenize ('-': stdin)");
  CLI::Option* f = app.add_option("-f,--file", file, "read the text from FILE ('-': stdin)")->excludes(p);
  app.add_option("--strings", strings, "JSON file holding an array of strings: prints one JSON array of ids per "
                 "string, one per line (many texts with one load of the vocabulary)")->excludes(p)->excludes(f);
  app.add_flag("--no-bos", no_bos, "do not prepend BOS");
  app.add_flag("--no-parse-special", no_special, "treat control-token text as plain text");
  app.add_flag("--pieces", pieces, "print one 'id<TAB>piece' line per token");
  json.Add(app, "{ids, pieces}");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (p->count() == 0 && file.empty() && strings.empty())
    return Fail(cmd, InvalidArgument("give the text with -p TEXT, -f FILE or --strings FILE.json"));
  if (!strings.empty() && (json.on() || pieces))
    return Fail(cmd, InvalidArgument("--strings prints ids only: --json and --pieces do not apply"));
  if (!strings.empty()) return TokenizeStrings(cmd, model, strings, no_bos, no_special);
  std::string text = prompt;
  if (!file.empty() || prompt == "-") {
    auto t = ReadInputText(file.empty() ? "-" : file);
    if (!t.ok()) return Fail(cmd, t.status());
    text = *t;
  }
  auto gguf = gguf::File::Open(model);
  if (!gguf.ok()) return Fail(cmd, gguf.status());
  auto tk = tok::Tokenizer::FromGguf(**gguf);
  if (!tk.ok()) return Fail(cmd, tk.status());
  for (const std::string& w : (*tk)->warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  const auto ids = (*tk)->Encode(text, !no_bos && (*tk)->add_bos_default(), !no_special);
  FILE* out = json.text();
  if (pieces) {
    for (int32_t id : ids) std::fprintf(out, "%d\t%s\n", id, (*tk)->TokenToPiece(id, true).c_str());
  } else if (!json.to_stdout()) {
    for (size_t i = 0; i < ids.size(); ++i) std::fprintf(out, i ? " %d" : "%d", ids[i]);
    std::fprintf(out, "\n");
  }
  if (json.on()) {
    nlohmann::json j;
    j["ids"] = ids;
    nlohmann::json ps = nlohmann::json::array();
    for (int32_t id : ids) ps.push_back((*tk)->TokenText(id));
    j["pieces"] = ps;
    if (Status st = json.Write(j, "tokenize", {model, file}); !st.ok()) return Fail(cmd, st);
  }
  return 0;
}

}  // namespace edgedecode::cli
