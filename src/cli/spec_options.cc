#include "cli/spec_options.h"

#include <algorithm>
#include <cstdio>

#include "base/json_depth.h"
#include "cli/common.h"

namespace edgedecode::cli {
namespace {

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

void SpecOptions::Add(CLI::App& app) {
  lookup_.n_draft = 0;
  app.add_option("--lookup", lookup_.n_draft,
                 "speculative decoding by prompt lookup: draft up to N tokens from an earlier occurrence of the last "
                 "n-gram (prompt + output) and verify them in one pass; the output is the same as without it")
      ->check(CLI::Range(0, 64));
  app.add_option("--lookup-ngram", lookup_.ngram_max, "with --lookup: the longest n-gram matched (then shorter ones, down to 1)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_flag("--lookup-fixed", lookup_fixed_,
               "with --lookup, --draft, --draft-quant, --self-spec or --draft-replay: draft whenever a draft is found (default: pause drafting while few drafts are accepted)");
  draft_.Add(app);
  CLI::Option* replay_opt =
      app.add_option("--draft-replay", replay_file_,
                     "a measuring tool: draft from FILE, the `run --json` output of a greedy run of the same prompt "
                     "(its own continuation, corrupted by --replay-accept); the output is the same as without it")
          ->excludes("--lookup")
          ->excludes("--draft")
          ->excludes("--draft-quant");
  CLI::Option* self_spec_opt = self_spec_.Add(app)->excludes("--draft")->excludes("--draft-quant")->excludes(replay_opt);
  self_spec_.AddBudget(app)->needs(self_spec_opt);
  app.add_option("--replay-accept", replay_accept_, "with --draft-replay: the probability that a drafted token is right")
      ->check(CLI::Range(0.0, 1.0))
      ->needs(replay_opt)
      ->capture_default_str();
  accept2_opt_ = app.add_option("--replay-accept2", replay_accept2_,
                                "with --draft-replay and --tree-nodes: a second candidate at each position, so that one of the two is "
                                "right with this probability (at least --replay-accept)")
                     ->check(CLI::Range(0.0, 1.0))
                     ->needs(replay_opt);
  CLI::Option* tree_opt =
      app.add_option("--tree-nodes", lookup_.tree_nodes,
                     "with --lookup, --draft, --draft-quant or --draft-replay: verify a token tree of up to N drafted tokens "
                     "per pass, as deep as --lookup N / --draft-max (several candidate continuations in one forward pass: "
                     "n-gram matches, a draft model's second choices where it is least sure; the longest accepted path "
                     "kept; at most the batch size - 1) instead of one chain; the size per pass is chosen from the "
                     "measured acceptance and pass times (--lookup-fixed: always N); 0: chains. The output is the same as without it")
          ->check(CLI::Range(0, 255))
          ->excludes("--self-spec");
  app.add_option("--tree-width", lookup_.tree_width,
                 "with --lookup and --tree-nodes: the n-gram matches (distinct continuations) a tree holds")
      ->check(CLI::Range(1, 16))
      ->needs(tree_opt)
      ->capture_default_str();
  draft_max_opt_ =
      app.add_option("--draft-max", draft_max_, "with --draft, --draft-quant, --self-spec or --draft-replay: tokens drafted per verify pass")
          ->check(CLI::Range(1, 64))
          ->capture_default_str();
}

Status SpecOptions::Validate() {
  if (draft_max_opt_->count() > 0 && replay_file_.empty() && !draft_.on() && !self_spec_.on())
    return InvalidArgument("--draft-max needs --draft, --draft-quant, --self-spec or --draft-replay");
  ED_RETURN_IF_ERROR(draft_.Validate());
  if (lookup_.tree_nodes > 0 && lookup_.n_draft == 0 && replay_file_.empty() && !draft_.on())
    return InvalidArgument("--tree-nodes needs --lookup, --draft, --draft-quant or --draft-replay");
  if (accept2_opt_->count() > 0 && lookup_.tree_nodes == 0)
    return InvalidArgument("--replay-accept2 needs --tree-nodes (the second candidates are the tree's branches)");
  if (accept2_opt_->count() > 0 && replay_accept2_ < replay_accept_)
    return InvalidArgument("--replay-accept2 is below --replay-accept (it is the probability that either "
                           "candidate is right, the first one's included)");
  return Status::Ok();
}

ExtraPlan SpecOptions::DraftPlan() {
  if (!draft_.on()) return {};
  return [this](const llm::Model& m, const llm::PlanParams& pp) { return draft_.Plan(m, pp); };
}

Status SpecOptions::LoadDraftModel(const llm::Model& target, int threads, kernels::Isa isa, bool no_repack) {
  if (!draft_.on() || draft_model_) return Status::Ok();
  const auto t0 = Clock::now();
  ED_ASSIGN_OR_RETURN(draft_model_, draft_.Load(target, threads));
  if (!no_repack) draft_model_->RepackForKernels(isa);
  setup_s_ += Seconds(t0, Clock::now());
  return Status::Ok();
}

Status SpecOptions::CreateDraftContext(const llm::ContextParams& target_params) {
  if (!draft_model_) return Status::Ok();
  const auto t0 = Clock::now();
  drafter_.reset();
  draft_ctx_.reset();
  auto dc = llm::Context::Create(*draft_model_, target_params);
  if (!dc.ok()) return dc.status().WithContext("draft model");
  draft_ctx_ = std::move(*dc);
  setup_s_ += Seconds(t0, Clock::now());
  return Status::Ok();
}

Status SpecOptions::Resolve(llm::Context& ctx, const std::vector<int32_t>& prompt, const tok::Tokenizer& tk, uint64_t seed) {
  if (on()) ED_RETURN_IF_ERROR(llm::SpeculativeSupported(ctx.model().config()));
  if (self_spec_.on()) {
    const auto t0 = Clock::now();
    ED_RETURN_IF_ERROR(self_spec_.Resolve(ctx, prompt, tk));
    setup_s_ += Seconds(t0, Clock::now());
  }
  if (!replay_file_.empty()) {
    ED_ASSIGN_OR_RETURN(llm::ReplayDrafter r, LoadReplay(replay_file_, prompt, replay_accept_,
                                                         std::max(replay_accept_, replay_accept2_), seed, ctx.n_vocab()));
    replay_.emplace(std::move(r));
  }
  return Status::Ok();
}

llm::LookupParams SpecOptions::NewRun(llm::Context& ctx) {
  llm::LookupParams lookup = lookup_;
  lookup.adaptive = !lookup_fixed_;
  drafter_.reset();
  self_drafter_.reset();
  if (draft_ctx_) {
    draft_ctx_->Reset();
    drafter_ = std::make_unique<llm::DraftModelDrafter>(*draft_ctx_, std::min(ctx.n_vocab(), draft_ctx_->n_vocab()));
  }
  if (self_spec_.on()) self_drafter_ = std::make_unique<llm::SelfSpecDrafter>(ctx, self_spec_.skip());
  if (replay_) {
    auto shared = std::make_shared<llm::ReplayDrafter>(*replay_);
    lookup.drafter = [shared](const std::vector<int32_t>& h, int k) { return (*shared)(h, k); };
    if (lookup.tree_nodes > 0)
      lookup.tree_drafter = [shared](const std::vector<int32_t>& h, int nodes, int depth) { return shared->Tree(h, nodes, depth); };
    lookup.n_draft = draft_max_;
  }
  // A draft model or the self-speculative drafter, after the n-gram lookup when --lookup is given too: the first
  // drafter that proposes wins.
  const int lookup_n = lookup.n_draft;
  if (drafter_ || self_drafter_) {
    llm::Drafter d = drafter_ ? llm::Drafter(std::ref(*drafter_)) : llm::Drafter(std::ref(*self_drafter_));
    const int ngram_max = lookup.ngram_max, ngram_min = lookup.ngram_min, draft_max = draft_max_;
    lookup.drafter = [d, ngram_max, ngram_min, lookup_n, draft_max](const std::vector<int32_t>& history, int k) {
      std::vector<int32_t> found;
      if (lookup_n > 0) found = llm::LookupDraft(history, std::min(k, lookup_n), ngram_max, ngram_min);
      return found.empty() ? d(history, std::min(k, draft_max)) : found;
    };
    lookup.costly_drafter = true;
    lookup.n_draft = std::max(lookup_n, draft_max_);
    // Trees: the n-gram matches' tree where there is one, else the draft model's.
    if (drafter_ && lookup.tree_nodes > 0) {
      llm::DraftModelDrafter* dm = drafter_.get();
      const int tree_width = lookup.tree_width;
      lookup.tree_drafter = [dm, tree_width, ngram_max, ngram_min, lookup_n](const std::vector<int32_t>& history, int nodes,
                                                                            int depth) {
        llm::DraftTree t;
        if (lookup_n > 0) t = llm::LookupTree(history, nodes, std::min(depth, lookup_n), tree_width, ngram_max, ngram_min);
        return t.empty() ? dm->Tree(history, nodes, depth) : t;
      };
    }
  }
  last_ = lookup;
  last_.drafter = nullptr;
  last_.tree_drafter = nullptr;
  return lookup;
}

void SpecOptions::PrefillDraft(const std::vector<int32_t>& prompt) {
  if (drafter_) (void)drafter_->Prefill(prompt);
}

std::string SpecOptions::Method() const {
  const std::string model_method = draft_.on() ? "draft" : "self-spec";
  if (draft_.on() || self_spec_.on()) return (lookup_.n_draft > 0 ? "lookup+" : "") + model_method;
  return replay_file_.empty() ? "lookup" : "replay";
}

std::string SpecOptions::Describe() const {
  const std::string adaptive = last_.adaptive ? ", adaptive)" : ")";
  if (draft_.on() || self_spec_.on()) {
    return (lookup_.n_draft > 0 ? "lookup " + std::to_string(lookup_.n_draft) + " then " : std::string()) +
           (draft_.on() ? "draft " : "self-spec ") + std::to_string(draft_max_) + " (" +
           (draft_.on() ? draft_.Describe() : self_spec_.Describe()) + adaptive;
  }
  std::string text = replay_file_.empty()
                         ? "lookup " + std::to_string(last_.n_draft) + " (n-gram " + std::to_string(last_.ngram_max) + "..1" + adaptive
                         : "replay " + std::to_string(last_.n_draft) + " (accept " + std::to_string(replay_accept_).substr(0, 4) + adaptive;
  if (last_.tree_nodes > 0) text += ", trees of " + std::to_string(last_.tree_nodes) + " nodes";
  return text;
}

std::string SpecOptions::StatsLine(const llm::LookupStats& ls, double tokens_per_pass, double decode_tps) const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                " | drafted %lld, accepted %lld (%.1f%%) | %lld verify + %lld plain passes | "
                "%.2f tokens/pass | %.1f tok/s | draft %.3f s, verify %.3f s, plain %.3f s",
                static_cast<long long>(ls.drafted), static_cast<long long>(ls.accepted), 100.0 * ls.acceptance(),
                static_cast<long long>(ls.verify_passes), static_cast<long long>(ls.plain_passes), tokens_per_pass,
                decode_tps, ls.draft_s, ls.verify_s, ls.plain_s);
  return Describe() + buf;
}

nlohmann::json SpecOptions::CountersJson(const llm::LookupStats& ls, double tokens_per_pass) {
  return {{"drafted", ls.drafted},          {"accepted", ls.accepted},         {"acceptance_rate", ls.acceptance()},
          {"verify_passes", ls.verify_passes}, {"tree_passes", ls.tree_passes}, {"plain_passes", ls.plain_passes},
          {"tokens_per_pass", tokens_per_pass}, {"draft_s", ls.draft_s},        {"verify_s", ls.verify_s},
          {"plain_s", ls.plain_s}};
}

nlohmann::json SpecOptions::ToJson(const llm::LookupStats& ls, double tokens_per_pass, double decode_tps) const {
  const bool replay = !replay_file_.empty();
  nlohmann::json j = {{"method", Method()},
                      {"n_draft", last_.n_draft},
                      {"ngram_max", last_.ngram_max},
                      {"adaptive", last_.adaptive},
                      {"replay_accept", replay ? nlohmann::json(replay_accept_) : nlohmann::json()},
                      {"replay_accept2", !replay || replay_accept2_ < 0 ? nlohmann::json() : nlohmann::json(replay_accept2_)},
                      {"tree_nodes", last_.tree_nodes},
                      {"decode_tok_s", decode_tps}};
  j.update(CountersJson(ls, tokens_per_pass));
  if (last_.adaptive && last_.tree_nodes == 0) j["acceptance_estimate"] = ls.accept_estimate;
  nlohmann::json lengths = nlohmann::json::array();  // chain passes by draft length
  for (size_t k = 1; k < ls.chain_passes.size(); ++k)
    if (ls.chain_passes[k] > 0)
      lengths.push_back({{"draft", k}, {"passes", ls.chain_passes[k]},
                         {"mean_ms", 1000.0 * ls.chain_s[k] / static_cast<double>(ls.chain_passes[k])}});
  j["draft_lengths"] = lengths;
  if (drafter_) {
    const llm::DraftModelStats& ds = drafter_->stats();
    j["draft_model"] = {{"source", draft_.Describe()}, {"draft_max", draft_max_}, {"evals", ds.evals},
                        {"caught_up", ds.caught_up}, {"rolled_back", ds.rolled_back}};
  }
  if (self_drafter_) {
    j["self_spec"] = self_spec_.ToJson();
    j["self_spec"]["draft_max"] = draft_max_;
    j["self_spec"]["evals"] = self_drafter_->stats().evals;
  }
  return j;
}

}  // namespace edgedecode::cli
