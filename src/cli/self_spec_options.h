// `run --self-spec LAYERS|auto`: self-speculative decoding by layer skip (llm/self_spec.h). LAYERS is the
// skip set given by hand; `auto` reads the set saved beside the model (MODEL.gguf.self-spec.json), or
// searches one on a calibration text and saves it there. Notices go to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "llm/context.h"
#include "llm/self_spec.h"
#include "tok/tokenizer.h"

namespace edgedecode::cli {

class SelfSpecOptions {
 public:
  std::string value;  // --self-spec
  double budget_s = 300;  // --self-spec-budget: auto's search stops after this many seconds

  // with_prompt: auto may search on the prompt (run's); else (serve's, which starts without one) on the
  // built-in text only, as the help says.
  CLI::Option* Add(CLI::App& app, bool with_prompt = true);
  CLI::Option* AddBudget(CLI::App& app);  // --self-spec-budget
  bool on() const { return !value.empty(); }

  // The skip set for ctx's model, before the prompt is evaluated (auto's search uses ctx and resets it; an
  // empty prompt: the built-in calibration text).
  // LAYERS: InvalidArgument naming the problem (exit 2). auto: the saved file's errors (Corrupt, exit 3:
  // bad JSON, another model's file), or the search's; a file that cannot be saved is a notice, not an error.
  // The search reports each step on stderr; past budget_s it stops with the best set so far (saved, and
  // said); on SIGINT / SIGTERM it stops too, uses that set for this run and saves nothing.
  Status Resolve(llm::Context& ctx, const std::vector<int32_t>& prompt, const tok::Tokenizer& tk);

  const std::vector<int>& skip() const { return choice_.skip; }
  // "skip 3-4, given", "skip 3-4, searched at acceptance 61%": for the stats line.
  std::string Describe() const;
  // The --json `speculative.self_spec` object (without the drafter's counters).
  nlohmann::json ToJson() const;

 private:
  llm::SelfSpecChoice choice_;
  std::string source_;  // "given", "saved" or "searched"
  std::string file_;    // auto: the JSON file beside the model
  bool saved_ = false;  // auto: the file now holds the choice
  double search_s_ = 0;
};

}  // namespace edgedecode::cli
