// The draft model of speculative decoding, shared by `run` and `plan`: `--draft MODEL` (a smaller GGUF of
// the same vocabulary) or `--draft-quant TYPE` (the target's own weights re-encoded at load by the quantize
// library). Its memory is planned before anything of it is allocated; its checks against the target
// (vocabulary, size) come before its context is created.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "llm/memory_plan.h"
#include "llm/model.h"
#include "tooling/quantize.h"

namespace edgedecode::cli {

class DraftOptions {
 public:
  std::string model;  // --draft FILE
  std::string quant;  // --draft-quant TYPE

  // --draft and --draft-quant (each excluding the other).
  void Add(CLI::App& app);
  bool on() const { return !model.empty() || !quant.empty(); }
  // Parses --draft-quant's type: InvalidArgument naming it and the types there are.
  Status Validate();
  // The draft's memory plan for contexts of pp, before anything of the draft is allocated: --draft opens
  // the file (mapped, not read) and checks it against the target; --draft-quant sizes the re-encoded
  // weights from the target's tensors. InvalidArgument when the vocabularies differ in a way that breaks
  // verification (the first differing token id and its pieces) or when the draft's weights are larger than
  // the target's; the draft file's own errors as Model::Load gives them.
  Result<llm::MemoryPlan> Plan(const llm::Model& target, const llm::PlanParams& pp);
  // The draft model, after Plan: the opened --draft model with its weights checked; or the target's file
  // re-encoded into a temporary file (removed once mapped) and loaded. threads: quantize's threads.
  Result<std::unique_ptr<llm::Model>> Load(const llm::Model& target, int threads);
  // "q4_0 copy of the target" / the --draft file, for the stats line.
  std::string Describe() const;

 private:
  tooling::QuantizeOptions qopts_;
  std::unique_ptr<llm::Model> opened_;  // --draft, between Plan and Load
};

}  // namespace edgedecode::cli
