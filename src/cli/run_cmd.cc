// `edgedecode run`: generate text from a GGUF model. Text streams to stdout; timings go to stderr.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/chat_prompt.h"
#include "cli/commands.h"
#include "cli/spec_options.h"
#include "cli/common.h"
#include "cli/model_options.h"
#include "cli/signals.h"
#include "llm/profiler.h"
#include "llm/speculative.h"
#include "llm/stop_strings.h"

namespace edgedecode::cli {
namespace {

const char* StopText(const std::string& stop) {
  if (stop == "eos") return "end of generation";
  if (stop == "context") return "context full (use -c to enlarge, or --context-shift)";
  if (stop == "stop_string") return "stop string";
  if (stop == "interrupted") return "interrupted";
  return "n_predict reached";
}

// The prompt from -p TEXT, -p - (stdin) or -f FILE (- = stdin).
Result<std::string> ReadPrompt(const std::string& prompt, const std::string& file) {
  if (!file.empty()) return ReadInputText(file);
  if (prompt == "-") return ReadInputText("-");
  return prompt;
}

}  // namespace

int RunMain(int argc, char** argv) {
  const std::string cmd = "edgedecode run";
  CLI::App app{"Generate text from a GGUF model. Text streams to stdout; timings go to stderr.", cmd};
  ModelOptions mo;
  mo.Add(app);
  ProfileOptions po;
  po.Add(app);
  SamplerOptions so;
  so.Add(app);
  std::string prompt, prompt_file;
  std::vector<std::string> stops;
  int n_predict = 128;
  bool no_bos = false, ignore_eos = false, context_shift = false, as_chat = false;
  std::string system, template_path;
  JsonOutput json;
  SpecOptions spec_opts;
  CLI::Option* p_opt = app.add_option("-p,--prompt", prompt, "prompt text ('-': read it from stdin; empty: generate from BOS)");
  app.add_option("-f,--file", prompt_file, "read the prompt from FILE ('-': stdin)")->excludes(p_opt);
  app.add_option("-n,--n-predict", n_predict, "tokens to generate")->capture_default_str();
  app.add_option("--stop", stops, "stop when the text contains STR (repeatable; matched across tokens, not printed)");
  CLI::Option* chat_opt = app.add_flag("--chat", as_chat, "apply the model's chat template to the prompt, as one user turn");
  app.add_option("--system", system, "with --chat: a system message before the prompt")->needs(chat_opt);
  app.add_option("--chat-template", template_path, "with --chat: a Jinja template FILE instead of the model's")->needs(chat_opt);
  app.add_flag("--no-bos", no_bos, "do not prepend BOS")->excludes(chat_opt);
  app.add_flag("--context-shift", context_shift,
               "at the context end, drop the oldest half (keeping BOS) and go on, instead of stopping");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating past end-of-generation tokens");
  spec_opts.Add(app);
  json.Add(app, "one object at the end (text, token ids, seed, timings); on stdout the text is not streamed");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  InterruptScope interrupt;  // from here on, a signal while loading still ends with the results (none yet)
  if (n_predict < 0) return Fail(cmd, InvalidArgument("-n must be >= 0"));
  if (Status st = spec_opts.Validate(); !st.ok()) return Fail(cmd, st);
  if (Status st = so.Finish(); !st.ok()) return Fail(cmd, st);
  if (Status st = po.Validate({mo.model, prompt_file}); !st.ok()) return Fail(cmd, st);
  auto prompt_text = ReadPrompt(prompt, prompt_file);
  if (!prompt_text.ok()) return Fail(cmd, prompt_text.status());

  auto loaded = LoadModel(mo, spec_opts.DraftPlan());
  if (!loaded.ok()) return Fail(cmd, loaded.status());
  llm::Context& ctx = *loaded->ctx;
  // The draft model and its own context (same length, threads, batch and KV types as the target's).
  {
    llm::ContextParams dp = loaded->params;
    dp.n_ctx = ctx.n_ctx();
    if (Status st = spec_opts.LoadDraftModel(*loaded->model, ctx.n_threads(), ctx.isa(), mo.no_repack); !st.ok())
      return Fail(cmd, st);
    if (Status st = spec_opts.CreateDraftContext(dp); !st.ok()) return Fail(cmd, st);
  }
  const tok::Tokenizer& tk = loaded->model->tokenizer();

  std::vector<int32_t> toks;
  if (as_chat) {
    auto chat = ChatPrompt::Load(*loaded->model, template_path);
    if (!chat.ok()) return Fail(cmd, chat.status());
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", *prompt_text}});
    auto t = chat->Tokens(messages);
    if (!t.ok()) return Fail(cmd, t.status());
    toks = std::move(*t);
  } else {
    toks = tk.Encode(*prompt_text, !no_bos && tk.add_bos_default());
  }
  if (toks.empty()) {
    if (tk.bos() < 0) return Fail(cmd, InvalidArgument("empty prompt and the vocabulary has no BOS token"));
    toks.push_back(tk.bos());
  }
  if (static_cast<int>(toks.size()) >= ctx.n_ctx())
    return Fail(cmd, InvalidArgument("the prompt has " + std::to_string(toks.size()) + " tokens, which does not fit in the context of " +
                                     std::to_string(ctx.n_ctx()) + " (use -c to enlarge it)"));

  // Self-speculative decoding's skip set (auto's search runs on this context, before the prompt), the replay's
  // recording.
  if (Status st = spec_opts.Resolve(ctx, toks, tk, so.params.seed); !st.ok()) return Fail(cmd, st);
  loaded->load_s += spec_opts.setup_s();

  std::unique_ptr<llm::Profiler> prof;
  if (po.on()) {
    prof = std::make_unique<llm::Profiler>(ctx.n_threads(), !po.trace.empty());
    ctx.SetProfiler(prof.get());
  }
  const bool stream = !json.to_stdout();
  llm::Sampler sampler(so.params);
  for (int32_t t : toks) sampler.Accept(t);
  std::unique_ptr<llm::LookupDecoder> spec;
  if (spec_opts.on()) spec = std::make_unique<llm::LookupDecoder>(ctx, sampler, spec_opts.NewRun(ctx), toks);
  // Positions of the accepted tokens in the cache (with --lookup the cache may hold rows being verified).
  auto n_past = [&] { return spec ? spec->n_past() : ctx.n_past(); };
  std::string stop = "n_predict";
  const auto t_prefill = Clock::now();
  // Prefill in batches, so that an interrupt is seen between them.
  if (InterruptScope::requested()) stop = "interrupted";
  size_t prefilled = 0;  // an interrupt may leave the prompt partly evaluated: the rate counts what was
  for (size_t i = 0; i < toks.size() && stop != "interrupted"; i += static_cast<size_t>(mo.n_batch)) {
    const int n = static_cast<int>(std::min(toks.size() - i, static_cast<size_t>(mo.n_batch)));
    if (Status st = ctx.Eval(toks.data() + i, n, false); !st.ok()) return Fail(cmd, st);
    prefilled += static_cast<size_t>(n);
    if (InterruptScope::requested()) stop = "interrupted";
  }
  // The draft model's prefill (a failure only costs its first draft a longer pass).
  if (spec && stop != "interrupted") spec_opts.PrefillDraft(toks);
  const auto t_prefill_end = Clock::now();

  std::vector<int32_t> out_ids;
  std::string text;
  tok::Utf8Stream utf8;
  llm::StopMatcher stopper(stops);
  auto emit = [&](const std::string& s) {
    text += s;
    if (stream && !s.empty()) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    }
  };
  double ttft = 0;
  auto t_decode = Clock::now();
  int32_t prev = toks.back();
  int shifts = 0;
  for (int i = 0; i < n_predict && stop != "interrupted"; ++i) {
    int32_t next = spec ? spec->Sample() : sampler.Sample(ctx.logits(0), ctx.n_vocab());
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
    emit(stopper.Push(utf8.Push(piece)));
    if (stopper.stopped()) {
      stop = "stop_string";
      break;
    }
    prev = next;
    if (InterruptScope::requested()) {
      stop = "interrupted";
      break;
    }
    if (i + 1 == n_predict) break;
    if (n_past() >= ctx.n_ctx()) {
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
      if (Status st = ctx.Eval(kept.data(), static_cast<int>(kept.size()), false); !st.ok()) return Fail(cmd, st);
      if (spec) spec->CacheRebuilt();
      ++shifts;
      std::fprintf(stderr, "\n[context shift: kept %zu of %zu tokens]\n", kept.size(), all.size() + 1);
    }
    // With --lookup: the next row of a verified draft, or a pass over [next + a new draft] (at most the
    // tokens -n still wants after the one that pass samples first).
    if (Status st = spec ? spec->Advance(next, n_predict - (i + 1) - 1) : ctx.Eval(&next, 1, false); !st.ok())
      return Fail(cmd, st);
  }
  if (!stopper.stopped()) emit(stopper.Push(utf8.Flush()) + stopper.Flush());
  const auto t_end = Clock::now();
  const double prefill_s = Seconds(t_prefill, t_prefill_end);
  const int n_decoded = static_cast<int>(out_ids.size());
  // Decode time covers the n-1 forward passes after the first sampled token.
  const double decode_s = Seconds(t_decode, t_end);
  const double prefill_tps = prefilled > 0 ? prefilled / std::max(prefill_s, 1e-9) : 0.0;
  const double decode_tps = n_decoded > 1 ? (n_decoded - 1) / std::max(decode_s, 1e-9) : 0.0;
  if (stream) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  std::fprintf(stderr,
               "\nload %.3f s | prompt %zu tokens | prefill %.1f tok/s | first token %.1f ms | decode %d tokens, %.1f tok/s | "
               "seed %llu | stop: %s\n",
               loaded->load_s, toks.size(), prefill_tps, ttft * 1e3, n_decoded, decode_tps,
               static_cast<unsigned long long>(so.params.seed), StopText(stop));
  nlohmann::json spec_json;
  if (spec) {
    const llm::LookupStats& ls = spec->stats();
    // Passes after the first token (sampled from the prefill's logits), and the tokens they gave.
    const double per_pass = ls.passes() > 0 ? static_cast<double>(n_decoded - 1) / static_cast<double>(ls.passes()) : 0.0;
    std::fprintf(stderr, "%s\n", spec_opts.StatsLine(ls, per_pass, decode_tps).c_str());
    spec_json = spec_opts.ToJson(ls, per_pass, decode_tps);
  }
  if (prof) {
    ctx.SetProfiler(nullptr);
    if (po.profile) std::fputs(prof->FormatTable().c_str(), stderr);
    if (Status st = po.WriteTrace({{"run", prof.get()}}); !st.ok()) return Fail(cmd, st);
  }
  if (json.on()) {
    nlohmann::json j;
    j["text"] = text;
    j["prompt_tokens"] = toks;
    j["tokens"] = out_ids;
    j["stop"] = stop;
    j["interrupted"] = stop == "interrupted";
    j["seed"] = so.params.seed;
    j["context_shifts"] = shifts;
    j["timings"] = {{"load_s", loaded->load_s}, {"prefill_s", prefill_s}, {"prefill_tok_s", prefill_tps},
                    {"ttft_ms", ttft * 1e3}, {"decode_s", decode_s}, {"decode_tok_s", decode_tps}};
    j["kernels"] = kernels::IsaName(ctx.isa());
    j["threads"] = ctx.n_threads();
    j["memory"] = {{"plan_bytes", loaded->plan.total}, {"peak_rss_bytes", llm::PeakRssBytes()}};
    j["fusions_off"] = ctx.fusions().OffList();
    if (spec) j["speculative"] = spec_json;
    if (prof && po.profile) j["profile"] = prof->ToJson();
    if (Status st = json.Write(j, "run", {mo.model, prompt_file}); !st.ok()) return Fail(cmd, st);
  }
  return stop == "interrupted" ? ToInt(InterruptScope::exit_code()) : 0;
}

}  // namespace edgedecode::cli
