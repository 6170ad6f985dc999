// `edgedecode logits`: a teacher-forced pass over a prompt, with the top-K next-token probabilities at every
// position (for correctness checks against other engines).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/model_options.h"

namespace edgedecode::cli {
namespace {

Result<std::vector<int32_t>> ParseIds(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of(", ", i);
    if (j == std::string::npos) j = s.size();
    if (j > i) {
      const std::string item = s.substr(i, j - i);
      char* end = nullptr;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (*end != '\0' || v < 0 || v > INT32_MAX) return InvalidArgument("--ids: '" + item + "' is not a token id");
      ids.push_back(static_cast<int32_t>(v));
    }
    i = j + 1;
  }
  return ids;
}

}  // namespace

int LogitsMain(int argc, char** argv) {
  const std::string cmd = "edgedecode logits";
  CLI::App app{"Teacher-forced pass over a prompt: top-K next-token probabilities at every position "
               "(for correctness checks against other engines).",
               cmd};
  ModelOptions mo;
  mo.Add(app);
  std::string prompt, ids_arg;
  int top = 10;
  bool no_bos = false;
  JsonOutput json;
  CLI::Option* p_opt = app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("--ids", ids_arg, "token ids instead of text, e.g. 1,403,407")->excludes(p_opt);
  app.add_option("--top", top, "how many of the most likely tokens to list per position")->capture_default_str();
  app.add_flag("--no-bos", no_bos, "do not prepend BOS to a text prompt");
  json.Add(app, "every position's top tokens");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (top < 1) return Fail(cmd, InvalidArgument("--top must be >= 1"));
  std::vector<int32_t> toks;
  if (!ids_arg.empty()) {
    auto r = ParseIds(ids_arg);
    if (!r.ok()) return Fail(cmd, r.status());
    toks = *r;
  }

  auto loaded = LoadModel(mo);
  if (!loaded.ok()) return Fail(cmd, loaded.status());
  llm::Context& ctx = *loaded->ctx;
  const tok::Tokenizer& tk = loaded->model->tokenizer();
  if (ids_arg.empty()) toks = tk.Encode(prompt, !no_bos && tk.add_bos_default());
  if (toks.empty()) return Fail(cmd, InvalidArgument("nothing to evaluate: give -p TEXT or --ids"));
  if (static_cast<int>(toks.size()) > ctx.n_ctx())
    return Fail(cmd, InvalidArgument(std::to_string(toks.size()) + " tokens do not fit in the context of " +
                                     std::to_string(ctx.n_ctx()) + " (use -c to enlarge it)"));
  if (Status st = ctx.Eval(toks.data(), static_cast<int>(toks.size()), true); !st.ok()) return Fail(cmd, st);

  const int nv = ctx.n_vocab();
  top = std::min(top, nv);
  FILE* out = json.text();
  nlohmann::json positions = nlohmann::json::array();
  std::vector<std::pair<double, int>> pr(static_cast<size_t>(nv));
  for (int i = 0; i < static_cast<int>(toks.size()); ++i) {
    const float* lg = ctx.logits(i);
    double mx = lg[0];
    for (int v = 1; v < nv; ++v) mx = std::max(mx, static_cast<double>(lg[v]));
    double sum = 0;
    for (int v = 0; v < nv; ++v) sum += std::exp(static_cast<double>(lg[v]) - mx);
    for (int v = 0; v < nv; ++v) pr[static_cast<size_t>(v)] = {std::exp(static_cast<double>(lg[v]) - mx) / sum, v};
    std::partial_sort(pr.begin(), pr.begin() + top, pr.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    nlohmann::json tops = nlohmann::json::array();
    for (int k = 0; k < top; ++k) tops.push_back({pr[static_cast<size_t>(k)].second, pr[static_cast<size_t>(k)].first});
    positions.push_back({{"pos", i}, {"token", toks[static_cast<size_t>(i)]}, {"top", tops}});
    if (!json.to_stdout()) {
      const int32_t t = toks[static_cast<size_t>(i)];
      std::fprintf(out, "%4d %6d %-16s", i, t, ("'" + tk.TokenToPiece(t, true) + "'").c_str());
      for (int k = 0; k < std::min(top, 5); ++k)
        std::fprintf(out, "  %d:%.4f", pr[static_cast<size_t>(k)].second, pr[static_cast<size_t>(k)].first);
      std::fprintf(out, "\n");
    }
  }
  if (json.on()) {
    nlohmann::json j;
    j["model"] = mo.model;
    j["n_vocab"] = nv;
    j["tokens"] = toks;
    j["kernels"] = kernels::IsaName(ctx.isa());
    j["positions"] = positions;
    if (Status st = json.Write(j, "logits", {mo.model}); !st.ok()) return Fail(cmd, st);
  }
  return 0;
}

}  // namespace edgedecode::cli
