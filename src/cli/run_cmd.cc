// `edgedecode run`: generate text from a GGUF model. Text streams to stdout; timings go to stderr.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/chat_prompt.h"
#include "cli/commands.h"
#include "cli/draft_options.h"
#include "cli/self_spec_options.h"
#include "cli/common.h"
#include "cli/model_options.h"
#include "cli/signals.h"
#include "base/json_depth.h"
#include "llm/draft_model.h"
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

// --draft-replay FILE: the prompt and output token ids of an earlier `run --json` (its "prompt_tokens" and
// "tokens"). The prompt must be this run's: the continuation of another prompt would measure nothing.
Result<llm::ReplayDrafter> LoadReplay(const std::string& path, const std::vector<int32_t>& prompt, double accept,
                                      double accept2, uint64_t seed, int n_vocab) {
  ED_ASSIGN_OR_RETURN(std::string text, ReadInputText(path, uint64_t{64} << 20));
  ED_RETURN_IF_ERROR(CheckJsonDepth(text, path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto ids = [&](const char* key) -> Result<std::vector<int32_t>> {
    if (!j.is_object() || !j.contains(key) || !j[key].is_array())
      return Corrupt(path + ": not the JSON of `edgedecode run --json` (no \"" + key + "\" array of token ids)");
    std::vector<int32_t> v;
    for (size_t i = 0; i < j[key].size(); ++i) {
      const nlohmann::json& x = j[key][i];
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= n_vocab)
        return Corrupt(path + ": " + key + "[" + std::to_string(i) + "] is not a token id of this model (0.." + std::to_string(n_vocab - 1) + ")");
      v.push_back(x.get<int32_t>());
    }
    return v;
  };
  ED_ASSIGN_OR_RETURN(std::vector<int32_t> recorded_prompt, ids("prompt_tokens"));
  ED_ASSIGN_OR_RETURN(std::vector<int32_t> continuation, ids("tokens"));
  if (recorded_prompt != prompt) {
    size_t i = 0;
    while (i < prompt.size() && i < recorded_prompt.size() && prompt[i] == recorded_prompt[i]) ++i;
    return InvalidArgument(path + " was recorded for another prompt (" + std::to_string(recorded_prompt.size()) +
                           " tokens; this one has " + std::to_string(prompt.size()) + ", first difference at token " + std::to_string(i) + ")");
  }
  return llm::ReplayDrafter(std::move(recorded_prompt), std::move(continuation), accept, seed, n_vocab, accept2);
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
  llm::LookupParams lookup;
  lookup.n_draft = 0;
  bool lookup_fixed = false;
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
  app.add_option("--lookup", lookup.n_draft,
                 "speculative decoding by prompt lookup: draft up to N tokens from an earlier occurrence of the last "
                 "n-gram (prompt + output) and verify them in one pass; the output is the same as without it")
      ->check(CLI::Range(0, 64));
  app.add_option("--lookup-ngram", lookup.ngram_max, "with --lookup: the longest n-gram matched (then shorter ones, down to 1)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_flag("--lookup-fixed", lookup_fixed,
               "with --lookup, --draft, --draft-quant, --self-spec or --draft-replay: draft whenever a draft is found (default: pause drafting while few drafts are accepted)");
  std::string replay_file;
  double replay_accept = 1.0;
  int draft_max = 8;
  DraftOptions draft;
  draft.Add(app);
  CLI::Option* replay_opt =
      app.add_option("--draft-replay", replay_file,
                     "a measuring tool: draft from FILE, the `run --json` output of a greedy run of the same prompt "
                     "(its own continuation, corrupted by --replay-accept); the output is the same as without it")
          ->excludes("--lookup")
          ->excludes("--draft")
          ->excludes("--draft-quant");
  SelfSpecOptions self_spec;
  CLI::Option* self_spec_opt = self_spec.Add(app)->excludes("--draft")->excludes("--draft-quant")->excludes(replay_opt);
  self_spec.AddBudget(app)->needs(self_spec_opt);
  app.add_option("--replay-accept", replay_accept, "with --draft-replay: the probability that a drafted token is right")
      ->check(CLI::Range(0.0, 1.0))
      ->needs(replay_opt)
      ->capture_default_str();
  double replay_accept2 = -1;
  CLI::Option* accept2_opt =
      app.add_option("--replay-accept2", replay_accept2,
                     "with --draft-replay and --tree-nodes: a second candidate at each position, so that one of the two is "
                     "right with this probability (at least --replay-accept)")
          ->check(CLI::Range(0.0, 1.0))
          ->needs(replay_opt);
  CLI::Option* tree_opt =
      app.add_option("--tree-nodes", lookup.tree_nodes,
                     "with --lookup, --draft, --draft-quant or --draft-replay: verify a token tree of up to N drafted tokens "
                     "per pass, as deep as --lookup N / --draft-max (several candidate continuations in one forward pass: "
                     "n-gram matches, a draft model's second choices where it is least sure; the longest accepted path "
                     "kept; at most the batch size - 1) instead of one chain; the size per pass is chosen from the "
                     "measured acceptance and pass times (--lookup-fixed: always N); 0: chains. The output is the same as without it")
          ->check(CLI::Range(0, 255))
          ->excludes("--self-spec");
  app.add_option("--tree-width", lookup.tree_width,
                 "with --lookup and --tree-nodes: the n-gram matches (distinct continuations) a tree holds")
      ->check(CLI::Range(1, 16))
      ->needs(tree_opt)
      ->capture_default_str();
  CLI::Option* draft_max_opt =
      app.add_option("--draft-max", draft_max, "with --draft, --draft-quant, --self-spec or --draft-replay: tokens drafted per verify pass")
          ->check(CLI::Range(1, 64))
          ->capture_default_str();
  json.Add(app, "one object at the end (text, token ids, seed, timings); on stdout the text is not streamed");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  InterruptScope interrupt;  // from here on, a signal while loading still ends with the results (none yet)
  if (n_predict < 0) return Fail(cmd, InvalidArgument("-n must be >= 0"));
  if (draft_max_opt->count() > 0 && replay_file.empty() && !draft.on() && !self_spec.on())
    return Fail(cmd, InvalidArgument("--draft-max needs --draft, --draft-quant, --self-spec or --draft-replay"));
  if (Status st = draft.Validate(); !st.ok()) return Fail(cmd, st);
  if (lookup.tree_nodes > 0 && lookup.n_draft == 0 && replay_file.empty() && !draft.on())
    return Fail(cmd, InvalidArgument("--tree-nodes needs --lookup, --draft, --draft-quant or --draft-replay"));
  if (accept2_opt->count() > 0 && lookup.tree_nodes == 0)
    return Fail(cmd, InvalidArgument("--replay-accept2 needs --tree-nodes (the second candidates are the tree's branches)"));
  if (accept2_opt->count() > 0 && replay_accept2 < replay_accept)
    return Fail(cmd, InvalidArgument("--replay-accept2 is below --replay-accept (it is the probability that either "
                                     "candidate is right, the first one's included)"));
  if (Status st = so.Finish(); !st.ok()) return Fail(cmd, st);
  if (Status st = po.Validate({mo.model, prompt_file}); !st.ok()) return Fail(cmd, st);
  auto prompt_text = ReadPrompt(prompt, prompt_file);
  if (!prompt_text.ok()) return Fail(cmd, prompt_text.status());

  ExtraPlan draft_plan;
  if (draft.on()) draft_plan = [&](const llm::Model& m, const llm::PlanParams& pp) { return draft.Plan(m, pp); };
  auto loaded = LoadModel(mo, draft_plan);
  if (!loaded.ok()) return Fail(cmd, loaded.status());
  llm::Context& ctx = *loaded->ctx;
  // The draft model and its own context (same length, threads, batch and KV types as the target's).
  std::unique_ptr<llm::Model> draft_model;
  std::unique_ptr<llm::Context> draft_ctx;
  std::unique_ptr<llm::DraftModelDrafter> drafter;
  if (draft.on()) {
    const auto t0 = Clock::now();
    auto dm = draft.Load(*loaded->model, ctx.n_threads());
    if (!dm.ok()) return Fail(cmd, dm.status());
    draft_model = std::move(*dm);
    if (!mo.no_repack) draft_model->RepackForKernels(ctx.isa());
    llm::ContextParams dp = loaded->params;
    dp.n_ctx = ctx.n_ctx();
    auto dc = llm::Context::Create(*draft_model, dp);
    if (!dc.ok()) return Fail(cmd, dc.status().WithContext("draft model"));
    draft_ctx = std::move(*dc);
    drafter = std::make_unique<llm::DraftModelDrafter>(*draft_ctx, std::min(ctx.n_vocab(), draft_ctx->n_vocab()));
    loaded->load_s += Seconds(t0, Clock::now());
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

  // Self-speculative decoding: the skip set (auto's search runs on this context, before the prompt).
  std::unique_ptr<llm::SelfSpecDrafter> self_drafter;
  if (self_spec.on()) {
    const auto t0 = Clock::now();
    if (Status st = self_spec.Resolve(ctx, toks, tk); !st.ok()) return Fail(cmd, st);
    self_drafter = std::make_unique<llm::SelfSpecDrafter>(ctx, self_spec.skip());
    loaded->load_s += Seconds(t0, Clock::now());
  }

  std::unique_ptr<llm::Profiler> prof;
  if (po.on()) {
    prof = std::make_unique<llm::Profiler>(ctx.n_threads(), !po.trace.empty());
    ctx.SetProfiler(prof.get());
  }
  const bool stream = !json.to_stdout();
  llm::Sampler sampler(so.params);
  for (int32_t t : toks) sampler.Accept(t);
  lookup.adaptive = !lookup_fixed;
  if (!replay_file.empty()) {
    auto replay = LoadReplay(replay_file, toks, replay_accept, std::max(replay_accept, replay_accept2), so.params.seed,
                             ctx.n_vocab());
    if (!replay.ok()) return Fail(cmd, replay.status());
    auto shared = std::make_shared<llm::ReplayDrafter>(std::move(*replay));
    lookup.drafter = [shared](const std::vector<int32_t>& h, int k) { return (*shared)(h, k); };
    if (lookup.tree_nodes > 0)
      lookup.tree_drafter = [shared](const std::vector<int32_t>& h, int nodes, int depth) { return shared->Tree(h, nodes, depth); };
    lookup.n_draft = draft_max;
  }
  // A draft model or the self-speculative drafter, after the n-gram lookup when --lookup is given too: the first
  // drafter that proposes wins.
  const int lookup_n = lookup.n_draft;
  if (drafter || self_drafter) {
    llm::Drafter d = drafter ? llm::Drafter(std::ref(*drafter)) : llm::Drafter(std::ref(*self_drafter));
    const llm::LookupParams lp = lookup;
    lookup.drafter = [d, lp, lookup_n, draft_max](const std::vector<int32_t>& history, int k) {
      std::vector<int32_t> found;
      if (lookup_n > 0) found = llm::LookupDraft(history, std::min(k, lookup_n), lp.ngram_max, lp.ngram_min);
      return found.empty() ? d(history, std::min(k, draft_max)) : found;
    };
    lookup.costly_drafter = true;
    lookup.n_draft = std::max(lookup_n, draft_max);
    // Trees: the n-gram matches' tree where there is one, else the draft model's.
    if (drafter && lookup.tree_nodes > 0) {
      llm::DraftModelDrafter* dm = drafter.get();
      lookup.tree_drafter = [dm, lp, lookup_n](const std::vector<int32_t>& history, int nodes, int depth) {
        llm::DraftTree t;
        if (lookup_n > 0) t = llm::LookupTree(history, nodes, std::min(depth, lookup_n), lp.tree_width, lp.ngram_max, lp.ngram_min);
        return t.empty() ? dm->Tree(history, nodes, depth) : t;
      };
    }
  }
  const std::string model_method = drafter ? "draft" : "self-spec";
  const std::string spec_method = drafter || self_drafter ? (lookup_n > 0 ? "lookup+" : "") + model_method
                                  : replay_file.empty() ? "lookup" : "replay";
  std::unique_ptr<llm::LookupDecoder> spec;
  if (lookup.n_draft > 0) spec = std::make_unique<llm::LookupDecoder>(ctx, sampler, lookup, toks);
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
  if (drafter && stop != "interrupted") (void)drafter->Prefill(toks);
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
    std::string drafter_text = replay_file.empty() ? "lookup " + std::to_string(lookup.n_draft) + " (n-gram " +
                                                          std::to_string(lookup.ngram_max) + "..1" + (lookup.adaptive ? ", adaptive)" : ")")
                                                    : "replay " + std::to_string(lookup.n_draft) + " (accept " + std::to_string(replay_accept).substr(0, 4) +
                                                          (lookup.adaptive ? ", adaptive)" : ")");
    if (lookup.tree_nodes > 0) drafter_text += ", trees of " + std::to_string(lookup.tree_nodes) + " nodes";
    if (drafter || self_drafter)
      drafter_text = (lookup_n > 0 ? "lookup " + std::to_string(lookup_n) + " then " : std::string()) + model_method + " " +
                     std::to_string(draft_max) + " (" + (drafter ? draft.Describe() : self_spec.Describe()) +
                     (lookup.adaptive ? ", adaptive)" : ")");
    std::fprintf(stderr,
                 "%s | drafted %lld, accepted %lld (%.1f%%) | %lld verify + %lld plain passes | "
                 "%.2f tokens/pass | %.1f tok/s | draft %.3f s, verify %.3f s, plain %.3f s\n",
                 drafter_text.c_str(), static_cast<long long>(ls.drafted),
                 static_cast<long long>(ls.accepted), 100.0 * ls.acceptance(), static_cast<long long>(ls.verify_passes),
                 static_cast<long long>(ls.plain_passes), per_pass, decode_tps, ls.draft_s, ls.verify_s, ls.plain_s);
    spec_json = {{"method", spec_method},
                 {"n_draft", lookup.n_draft},
                 {"ngram_max", lookup.ngram_max},
                 {"adaptive", lookup.adaptive},
                 {"replay_accept", replay_file.empty() ? nlohmann::json() : nlohmann::json(replay_accept)},
                 {"replay_accept2", replay_file.empty() || replay_accept2 < 0 ? nlohmann::json() : nlohmann::json(replay_accept2)},
                 {"tree_nodes", lookup.tree_nodes},
                 {"drafted", ls.drafted},
                 {"accepted", ls.accepted},
                 {"acceptance_rate", ls.acceptance()},
                 {"verify_passes", ls.verify_passes},
                 {"tree_passes", ls.tree_passes},
                 {"plain_passes", ls.plain_passes},
                 {"tokens_per_pass", per_pass},
                 {"decode_tok_s", decode_tps},
                 {"draft_s", ls.draft_s},
                 {"verify_s", ls.verify_s},
                 {"plain_s", ls.plain_s}};
    if (lookup.adaptive && lookup.tree_nodes == 0) spec_json["acceptance_estimate"] = ls.accept_estimate;
    nlohmann::json lengths = nlohmann::json::array();  // chain passes by draft length
    for (size_t k = 1; k < ls.chain_passes.size(); ++k)
      if (ls.chain_passes[k] > 0)
        lengths.push_back({{"draft", k}, {"passes", ls.chain_passes[k]},
                           {"mean_ms", 1000.0 * ls.chain_s[k] / static_cast<double>(ls.chain_passes[k])}});
    spec_json["draft_lengths"] = lengths;
    if (drafter) {
      const llm::DraftModelStats& ds = drafter->stats();
      spec_json["draft_model"] = {{"source", draft.Describe()}, {"draft_max", draft_max}, {"evals", ds.evals},
                                  {"caught_up", ds.caught_up}, {"rolled_back", ds.rolled_back}};
    }
    if (self_drafter) {
      spec_json["self_spec"] = self_spec.ToJson();
      spec_json["self_spec"]["draft_max"] = draft_max;
      spec_json["self_spec"]["evals"] = self_drafter->stats().evals;
    }
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
