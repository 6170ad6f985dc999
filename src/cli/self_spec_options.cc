#include "cli/self_spec_options.h"

#include <chrono>
#include <cstdio>

#include "cli/signals.h"

namespace edgedecode::cli {

CLI::Option* SelfSpecOptions::Add(CLI::App& app, bool with_prompt) {
  const std::string calibration = with_prompt ? "the prompt (64 tokens or more) or a built-in text" : "a built-in text";
  return app.add_option(
      "--self-spec", value,
      "self-speculative decoding: the model drafts with some of its layers skipped (same weights, same KV cache) and "
      "verifies with all of them; the output is the same as without it. LAYERS: the layers to skip, counted from 0, "
      "as a comma list of numbers and inclusive ranges (e.g. 4-7,10; not every layer); auto: the set saved beside "
      "the model file (m.gguf: m.gguf.self-spec.json), else one searched on " + calibration +
      " and saved there (a saved file of another model is an error)")
      ->type_name("LAYERS|auto");
}

CLI::Option* SelfSpecOptions::AddBudget(CLI::App& app) {
  return app.add_option("--self-spec-budget", budget_s,
                        "--self-spec auto: stop the search after this many seconds with the best skip set found so far "
                        "(each step scores every remaining layer with a pass over the calibration text)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
}

Status SelfSpecOptions::Resolve(llm::Context& ctx, const std::vector<int32_t>& prompt, const tok::Tokenizer& tk) {
  const llm::Model& model = ctx.model();
  const int n_layers = model.config().n_layers;
  if (value != "auto") {
    auto skip = llm::ParseSkipLayers(value, n_layers);
    if (!skip.ok()) return skip.status().WithContext("--self-spec " + value);
    choice_.skip = std::move(*skip);
    source_ = "given";
    return Status::Ok();
  }
  ED_ASSIGN_OR_RETURN(const llm::ModelIdentity id, llm::IdentifyModel(model.file()));
  file_ = llm::SelfSpecPath(model.file().path());
  ED_ASSIGN_OR_RETURN(std::optional<llm::SelfSpecChoice> saved, llm::ReadSelfSpecFile(file_, id, n_layers));
  if (saved) {
    choice_ = std::move(*saved);
    source_ = "saved";
    saved_ = true;
    std::fprintf(stderr, "self-spec: skipping layers %s of %d, as saved in %s (acceptance %.1f%% when searched)\n",
                 llm::FormatSkipLayers(choice_.skip).c_str(), n_layers, file_.c_str(), 100 * choice_.acceptance);
    return Status::Ok();
  }
  const bool from_prompt = static_cast<int>(prompt.size()) >= llm::kSelfSpecMinPromptTokens;
  const std::vector<int32_t> calib = from_prompt ? prompt : tk.Encode(llm::SelfSpecCalibrationText(), tk.add_bos_default());
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  llm::SelfSpecSearchParams sp;
  bool over_budget = false;
  sp.progress = [&](const llm::SelfSpecProgress& p) {
    if (p.step_scored == p.step_candidates)  // a step done: one line (the best set is known from the second on)
      std::fprintf(stderr, "self-spec: searching: sets of %d skipped layer(s) scored, %d sets in %.1f s\n", p.step,
                   p.scored, elapsed());
    over_budget = elapsed() > budget_s;
    return !over_budget && !InterruptScope::requested();
  };
  auto found = llm::SearchSkipSet(ctx, calib, sp);
  if (!found.ok()) return found.status().WithContext("--self-spec auto");
  search_s_ = elapsed();
  choice_ = std::move(*found);
  choice_.calibration = from_prompt ? "prompt" : "built-in";
  source_ = "searched";
  std::fprintf(stderr,
               "self-spec: searched the layers to skip on %d tokens of the %s text in %.2f s: %s of %d (acceptance "
               "%.1f%%, expected speedup %.2fx at %d drafted tokens)\n",
               choice_.calibration_tokens, from_prompt ? "prompt's" : "built-in", search_s_,
               llm::FormatSkipLayers(choice_.skip).c_str(), n_layers, 100 * choice_.acceptance, choice_.expected_speedup,
               choice_.draft_len);
  if (choice_.expected_speedup < 1)
    std::fprintf(stderr, "self-spec: no skip set is expected to pay on this model here; adaptive drafting pauses "
                         "while drafts lose\n");
  if (!choice_.complete && !over_budget) {  // interrupted: the run ends at once, with nothing saved
    std::fprintf(stderr, "self-spec: search interrupted: nothing saved\n");
    return Status::Ok();
  }
  if (!choice_.complete)
    std::fprintf(stderr, "self-spec: the search stopped at --self-spec-budget %.0f s with the best set so far; delete %s "
                         "to search again with a larger budget\n", budget_s, file_.c_str());
  if (Status st = llm::WriteSelfSpecFile(file_, choice_, id, n_layers); !st.ok()) {
    std::fprintf(stderr, "self-spec: the choice is not saved (%s); the next run searches again\n", st.message().c_str());
  } else {
    saved_ = true;
  }
  return Status::Ok();
}

std::string SelfSpecOptions::Describe() const {
  std::string s = "skip " + llm::FormatSkipLayers(choice_.skip) + ", " + source_;
  if (source_ != "given") s += " at acceptance " + std::to_string(static_cast<int>(100 * choice_.acceptance + 0.5)) + "%";
  return s;
}

nlohmann::json SelfSpecOptions::ToJson() const {
  nlohmann::json j = {{"skip", choice_.skip},
                      {"skip_text", llm::FormatSkipLayers(choice_.skip)},
                      {"source", source_},
                      {"file", file_.empty() ? nlohmann::json() : nlohmann::json(file_)},
                      {"saved", saved_}};
  if (source_ != "given") {
    j["search"] = {{"acceptance", choice_.acceptance},         {"draft_cost", choice_.draft_cost},
                   {"verify_extra", choice_.verify_extra},     {"draft_len", choice_.draft_len},
                   {"expected_speedup", choice_.expected_speedup}, {"calibration", choice_.calibration},
                   {"calibration_tokens", choice_.calibration_tokens}, {"seconds", search_s_}};
  }
  return j;
}

}  // namespace edgedecode::cli
