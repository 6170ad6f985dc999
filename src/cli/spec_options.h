// Speculative decoding's options, shared by `run` and `bench --spec`: the drafters (--lookup N, --draft MODEL,
// --draft-quant TYPE, --self-spec LAYERS|auto, --draft-replay FILE with --replay-accept and --replay-accept2),
// token trees (--tree-nodes, --tree-width), --draft-max, --lookup-ngram and --lookup-fixed; their checks; the
// draft model's memory plan, weights and context; and the LookupParams of one decoding run with drafters in
// their starting state, so that a command can decode several times (bench's repetitions) alike.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/draft_options.h"
#include "cli/model_options.h"
#include "cli/self_spec_options.h"
#include "llm/draft_model.h"
#include "llm/self_spec.h"
#include "llm/speculative.h"

namespace edgedecode::cli {

class SpecOptions {
 public:
  // Registers the options (the same spellings and help in every command).
  void Add(CLI::App& app);
  // A drafter was asked for: the decoding runs through LookupDecoder.
  bool on() const { return lookup_.n_draft > 0 || !replay_file_.empty() || draft_.on() || self_spec_.on(); }
  // After parsing: the combinations CLI11 does not check and --draft-quant's type (InvalidArgument, exit 2).
  Status Validate();
  // The draft model's memory plan for LoadModel (empty without --draft / --draft-quant).
  ExtraPlan DraftPlan();
  // With --draft / --draft-quant, after the plan was checked: the draft's weights (repacked for isa unless
  // no_repack). threads: --draft-quant's quantize threads. Once.
  Status LoadDraftModel(const llm::Model& target, int threads, kernels::Isa isa, bool no_repack);
  // The draft model's context, with the target context's parameters (context length included); a second call
  // replaces the first. Nothing without a draft model.
  Status CreateDraftContext(const llm::ContextParams& target_params);
  // Once, before the prompt is evaluated: --self-spec's skip set (auto's search runs on ctx and resets it) and
  // --draft-replay's recording (it must be of this prompt; seed: its corruption's).
  Status Resolve(llm::Context& ctx, const std::vector<int32_t>& prompt, const tok::Tokenizer& tk, uint64_t seed);
  // The parameters of one decoding run on ctx with drafters in their starting state (a draft model's context
  // emptied, the replay's corruption from its seed): the drafters of the previous call's parameters are
  // replaced (those parameters must not be used any more).
  llm::LookupParams NewRun(llm::Context& ctx);
  // After the target's prefill of a run: the draft model's (a failure only costs its first draft a longer pass).
  void PrefillDraft(const std::vector<int32_t>& prompt);

  // "lookup", "replay", "draft", "self-spec", "lookup+draft", "lookup+self-spec".
  std::string Method() const;
  // "lookup 4 (n-gram 3..1, adaptive)", "draft 8 (q4_0 copy ..., adaptive)": after NewRun.
  std::string Describe() const;
  // The stats line `run` prints after decoding (tokens_per_pass: tokens after the first over passes).
  std::string StatsLine(const llm::LookupStats& ls, double tokens_per_pass, double decode_tps) const;
  // The --json `speculative` object of `run`.
  nlohmann::json ToJson(const llm::LookupStats& ls, double tokens_per_pass, double decode_tps) const;
  // The drafter's counters and time split (drafted, accepted, acceptance_rate, passes, tokens_per_pass,
  // draft_s / verify_s / plain_s): the fields `run --json` and `bench --spec --json` share.
  static nlohmann::json CountersJson(const llm::LookupStats& ls, double tokens_per_pass);
  // Seconds spent loading the draft and resolving the skip set (load time, not decode time).
  double setup_s() const { return setup_s_; }

 private:
  llm::LookupParams lookup_;  // as given (n_draft: --lookup)
  llm::LookupParams last_;    // the last NewRun's, without its drafters (for the stats)
  bool lookup_fixed_ = false;
  std::string replay_file_;
  double replay_accept_ = 1.0, replay_accept2_ = -1;
  int draft_max_ = 8;
  CLI::Option* draft_max_opt_ = nullptr;
  CLI::Option* accept2_opt_ = nullptr;
  DraftOptions draft_;
  SelfSpecOptions self_spec_;
  std::unique_ptr<llm::Model> draft_model_;
  std::unique_ptr<llm::Context> draft_ctx_;
  std::unique_ptr<llm::DraftModelDrafter> drafter_;       // the current run's
  std::unique_ptr<llm::SelfSpecDrafter> self_drafter_;    // the current run's
  std::optional<llm::ReplayDrafter> replay_;              // as loaded (each run copies it)
  double setup_s_ = 0;
};

}  // namespace edgedecode::cli
