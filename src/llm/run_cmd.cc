// `edgedecode run` (generate text) and `edgedecode logits` (teacher-forced next-token distributions).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "cli/commands.h"
#include "llm/context.h"
#include "llm/model.h"
#include "llm/sampler.h"
#include "llm/cli_options.h"

namespace edgedecode::cli {
namespace {


Result<std::vector<int32_t>> ParseIds(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of(", ", i);
    if (j == std::string::npos) j = s.size();
    if (j > i) {
      try {
        ids.push_back(static_cast<int32_t>(std::stol(s.substr(i, j - i))));
      } catch (...) {
        return InvalidArgument("--ids: '" + s.substr(i, j - i) + "' is not a token id");
      }
    }
    i = j + 1;
  }
  return ids;
}

}  // namespace

int RunMain(int argc, char** argv) {
  CLI::App app{"Generate text from a GGUF model. Text streams to stdout; timings go to stderr.", "edgedecode run"};
  ModelOptions mo;
  mo.Add(app);
  ProfileOptions po;
  po.Add(app);
  std::string prompt;
  int n_predict = 128;
  bool no_bos = false, json = false, ignore_eos = false, context_shift = false;
  llm::SamplerParams sp;
  app.add_option("-p,--prompt", prompt, "prompt text (empty: generate from BOS)");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate")->capture_default_str();
  app.add_option("--temp", sp.temperature, "temperature; 0 = greedy")->capture_default_str();
  app.add_option("--top-k", sp.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", sp.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", sp.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", sp.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", sp.repeat_last_n, "tokens the penalty looks back over")->capture_default_str();
  app.add_option("--seed", sp.seed, "RNG seed: the same seed gives the same text")->capture_default_str();
  app.add_flag("--no-bos", no_bos, "do not prepend BOS");
  app.add_flag("--context-shift", context_shift,
               "at the context end, drop the oldest half (keeping BOS) and go on, instead of stopping");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating past end-of-generation tokens");
  app.add_flag("--json", json, "print one JSON object at the end (text, token ids, timings) instead of streaming");
  CLI11_PARSE(app, argc, argv);
  if (n_predict < 0) return Fail(InvalidArgument("-n must be >= 0"));

  auto loaded = LoadModel(mo);
  if (!loaded.ok()) return Fail(loaded.status());
  llm::Context& ctx = *loaded->ctx;
  const tok::Tokenizer& tk = loaded->model->tokenizer();

  std::vector<int32_t> toks = tk.Encode(prompt, !no_bos && tk.add_bos_default());
  if (toks.empty()) {
    if (tk.bos() < 0) return Fail(InvalidArgument("empty prompt and the vocabulary has no BOS token"));
    toks.push_back(tk.bos());
  }
  if (static_cast<int>(toks.size()) >= ctx.n_ctx())
    return Fail(InvalidArgument("the prompt has " + std::to_string(toks.size()) + " tokens, which does not fit in the context of " +
                                std::to_string(ctx.n_ctx()) + " (use -c to enlarge it)"));

  std::unique_ptr<llm::Profiler> prof;
  if (po.on()) {
    prof = std::make_unique<llm::Profiler>(ctx.n_threads(), !po.trace.empty());
    ctx.SetProfiler(prof.get());
  }
  llm::Sampler sampler(sp);
  for (int32_t t : toks) sampler.Accept(t);
  auto t_prefill = Clock::now();
  Status st = ctx.Eval(toks.data(), static_cast<int>(toks.size()), false);
  if (!st.ok()) return Fail(st);
  auto t_prefill_end = Clock::now();

  std::vector<int32_t> out_ids;
  std::string text;
  tok::Utf8Stream utf8;
  std::string stop = "n_predict";
  double ttft = 0;
  auto t_decode = Clock::now();
  int32_t prev = toks.back();
  int shifts = 0;
  for (int i = 0; i < n_predict; ++i) {
    int32_t next = sampler.Sample(ctx.logits(0), ctx.n_vocab());
    if (i == 0) {
      ttft = Seconds(t_prefill, Clock::now());
      t_decode = Clock::now();
    }
    if (!ignore_eos && tk.IsEndOfGeneration(next)) {
      stop = "eos";
      break;
    }
    out_ids.push_back(next);
    std::string piece = tk.TokenToPiece(next);
    // SentencePiece: the space a word carries is dropped right after BOS (as llama2.c and llama.cpp do).
    if (prev == tk.bos() && tk.model() == "llama" && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    std::string ready = utf8.Push(piece);
    text += ready;
    if (!json) {
      std::fwrite(ready.data(), 1, ready.size(), stdout);
      std::fflush(stdout);
    }
    prev = next;
    if (i + 1 == n_predict) break;
    if (ctx.n_past() >= ctx.n_ctx()) {
      if (!context_shift) {
        stop = "context";
        break;
      }
      // Keep BOS and the newer half, and rebuild the cache from them (a prefill): positions restart,
      // so RoPE stays consistent whatever the KV cache type.
      std::vector<int32_t> all = toks;
      all.insert(all.end(), out_ids.begin(), out_ids.end() - 1);  // `next` is evaluated below
      const size_t keep = static_cast<size_t>(ctx.n_ctx()) / 2;
      std::vector<int32_t> kept;
      if (!all.empty() && all[0] == tk.bos()) kept.push_back(tk.bos());
      kept.insert(kept.end(), all.end() - static_cast<long>(std::min(keep, all.size())), all.end());
      ctx.Reset();
      st = ctx.Eval(kept.data(), static_cast<int>(kept.size()), false);
      if (!st.ok()) return Fail(st);
      ++shifts;
      if (!json) std::fprintf(stderr, "\n[context shift: kept %zu of %zu tokens]\n", kept.size(), all.size() + 1);
    }
    st = ctx.Eval(&next, 1, false);
    if (!st.ok()) return Fail(st);
  }
  std::string rest = utf8.Flush();
  text += rest;
  auto t_end = Clock::now();
  const double prefill_s = Seconds(t_prefill, t_prefill_end);
  const int n_decoded = static_cast<int>(out_ids.size());
  // Decode time covers the n-1 forward passes after the first sampled token.
  const double decode_s = Seconds(t_decode, t_end);
  const double prefill_tps = toks.size() / std::max(prefill_s, 1e-9);
  const double decode_tps = n_decoded > 1 ? (n_decoded - 1) / std::max(decode_s, 1e-9) : 0.0;
  if (!json) {
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  std::fprintf(stderr,
               "\nload %.3f s | prompt %zu tokens | prefill %.1f tok/s | first token %.1f ms | decode %d tokens, %.1f tok/s | "
               "stop: %s%s\n",
               loaded->load_s, toks.size(), prefill_tps, ttft * 1e3, n_decoded, decode_tps,
               stop == "eos" ? "end of generation" : stop == "context" ? "context full" : "n_predict reached",
               stop == "context" ? " (use -c to enlarge)" : "");
  if (prof) {
    ctx.SetProfiler(nullptr);
    if (po.profile) prof->Print(stderr);
    if (!po.trace.empty()) {
      st = llm::Profiler::WriteTrace(po.trace, {{"run", prof.get()}});
      if (!st.ok()) return Fail(st);
    }
  }
  if (json) {
    nlohmann::json j;
    j["text"] = text;
    j["prompt_tokens"] = toks;
    j["tokens"] = out_ids;
    j["stop"] = stop;
    j["context_shifts"] = shifts;
    j["timings"] = {{"load_s", loaded->load_s}, {"prefill_s", prefill_s}, {"prefill_tok_s", prefill_tps},
                    {"ttft_ms", ttft * 1e3}, {"decode_s", decode_s}, {"decode_tok_s", decode_tps}};
    j["kernels"] = kernels::IsaName(ctx.isa());
    j["threads"] = ctx.n_threads();
    j["memory"] = {{"plan_bytes", loaded->plan.total}, {"peak_rss_bytes", llm::PeakRssBytes()}};
    j["fusions_off"] = ctx.fusions().OffList();
    if (prof && po.profile) j["profile"] = prof->ToJson();
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

int LogitsMain(int argc, char** argv) {
  CLI::App app{"Teacher-forced pass over a prompt: top-K next-token probabilities at every position "
               "(for correctness checks against other engines).",
               "edgedecode logits"};
  ModelOptions mo;
  mo.Add(app);
  std::string prompt, ids_arg;
  int top = 10;
  bool no_bos = false, json = false;
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("--ids", ids_arg, "token ids instead of text, e.g. 1,403,407");
  app.add_option("--top", top, "how many of the most likely tokens to list per position")->capture_default_str();
  app.add_flag("--no-bos", no_bos, "do not prepend BOS to a text prompt");
  app.add_flag("--json", json, "JSON output (one object)");
  CLI11_PARSE(app, argc, argv);

  auto loaded = LoadModel(mo);
  if (!loaded.ok()) return Fail(loaded.status());
  llm::Context& ctx = *loaded->ctx;
  const tok::Tokenizer& tk = loaded->model->tokenizer();
  std::vector<int32_t> toks;
  if (!ids_arg.empty()) {
    auto r = ParseIds(ids_arg);
    if (!r.ok()) return Fail(r.status());
    toks = *r;
  } else {
    toks = tk.Encode(prompt, !no_bos && tk.add_bos_default());
  }
  if (toks.empty()) return Fail(InvalidArgument("nothing to evaluate: give -p TEXT or --ids"));
  if (static_cast<int>(toks.size()) > ctx.n_ctx())
    return Fail(InvalidArgument(std::to_string(toks.size()) + " tokens do not fit in the context of " + std::to_string(ctx.n_ctx())));
  Status st = ctx.Eval(toks.data(), static_cast<int>(toks.size()), true);
  if (!st.ok()) return Fail(st);

  const int nv = ctx.n_vocab();
  top = std::clamp(top, 1, nv);
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
    if (!json) {
      std::printf("%4d %6d %-16s", i, toks[static_cast<size_t>(i)], ("'" + tk.TokenToPiece(toks[static_cast<size_t>(i)], true) + "'").c_str());
      for (int k = 0; k < std::min(top, 5); ++k)
        std::printf("  %d:%.4f", pr[static_cast<size_t>(k)].second, pr[static_cast<size_t>(k)].first);
      std::printf("\n");
    }
  }
  if (json) {
    nlohmann::json j;
    j["model"] = mo.model;
    j["n_vocab"] = nv;
    j["tokens"] = toks;
    j["kernels"] = kernels::IsaName(ctx.isa());
    j["positions"] = positions;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace edgedecode::cli
