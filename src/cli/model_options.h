// Options and model loading shared by the commands that run a model (run, logits, bench, perplexity, plan):
// one spelling of every option (llama.cpp's where the meaning is the same), one validation, one loading
// path that checks the memory plan before allocating.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

#include "llm/context.h"
#include "llm/memory_plan.h"
#include "llm/model.h"
#include "llm/profiler.h"
#include "llm/sampler.h"

namespace edgedecode::cli {

// --no-fuse NAME[,NAME].
void AddNoFuse(CLI::App& app, std::string& no_fuse);

// --profile and --trace (run, bench).
struct ProfileOptions {
  bool profile = false;
  std::string trace;
  void Add(CLI::App& app);
  bool on() const { return profile || !trace.empty(); }
  // --trace - is refused (stdout carries the command's output); a trace file that is an input is refused.
  Status Validate(const std::vector<std::string>& inputs) const;
  // Writes the trace file atomically (nothing when --trace was not given).
  Status WriteTrace(const std::vector<std::pair<std::string, const llm::Profiler*>>& profiles) const;
};

// Options of the commands that load a model into a context.
struct ModelOptions {
  std::string model;
  int n_ctx = 0;
  int n_threads = 0;
  int n_batch = 512;
  std::string kernels = "auto";
  bool verbose = false, no_repack = false;
  std::string kv_type, type_k = "f16", type_v = "f16";
  int rotate_k = -1;
  bool attn_f16 = false;
  std::string no_fuse;

  void Add(CLI::App& app);
  // Range checks CLI11 does not make; InvalidArgument naming the flag.
  Status Validate() const;
};

// Sampling options (run): validated ranges, a random seed unless --seed is given.
struct SamplerOptions {
  llm::SamplerParams params;
  bool seed_given = false;
  void Add(CLI::App& app);
  // Checks the ranges and draws the seed when none was given.
  Status Finish();
};

Status ParseKvTypes(const ModelOptions& o, llm::ContextParams* cp);

// The memory plan as a table (component, bytes, how), and the device line when device_bytes > 0.
std::string FormatPlan(const llm::MemoryPlan& plan, uint64_t device_bytes, double headroom, const std::string& device);

// The model's weights, repacked for the kernels unless --no-repack.
struct LoadedWeights {
  std::unique_ptr<llm::Model> model;
  kernels::Isa isa;
  llm::FusionSet fusions;
  size_t repacked_bytes = 0;
};
Result<LoadedWeights> LoadWeights(const ModelOptions& o);

// The context parameters of the options (context length, threads, batch, kernels, fusions, KV types) and
// the memory-plan parameters of one such context.
Status ContextParamsFor(const ModelOptions& o, const LoadedWeights& w, llm::ContextParams* cp, llm::PlanParams* pp);

// ResourceExhausted (with the plan table on stderr) when the plan of pp does not fit in this machine's
// available memory: refused before allocating rather than killed by the OOM killer.
// extra: a draft model's plan (llm::AddDraftPlan), counted in the total.
Status CheckPlanFits(const llm::Model& m, const llm::PlanParams& pp, llm::MemoryPlan* plan,
                     const llm::MemoryPlan* extra = nullptr);

// The context length to use: -c, or the model's trained length capped at 4096. Warns on stderr when -c is
// beyond the trained length.
int ContextLength(const llm::Model& m, int n_ctx_option);

struct Loaded {
  std::unique_ptr<llm::Model> model;
  std::unique_ptr<llm::Context> ctx;
  double load_s = 0;
  llm::MemoryPlan plan;
  llm::ContextParams params;  // ctx's (a draft model's context takes the same)
};
// extra_plan: the plan of what is loaded beside the model (a speculative draft), computed from the model
// and its plan parameters before the plan check, and counted in it; its errors end the load.
using ExtraPlan = std::function<Result<llm::MemoryPlan>(const llm::Model&, const llm::PlanParams&)>;
Result<Loaded> LoadModel(const ModelOptions& o, const ExtraPlan& extra_plan = {});

}  // namespace edgedecode::cli
