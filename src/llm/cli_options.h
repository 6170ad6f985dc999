// Options and model loading shared by the commands that run a model (run, logits, bench, perplexity).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "llm/context.h"
#include "llm/memory_plan.h"
#include "llm/model.h"

namespace edgedecode::cli {

using Clock = std::chrono::steady_clock;
inline double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

inline void AddNoFuse(CLI::App& app, std::string& no_fuse) {
  app.add_option("--no-fuse", no_fuse,
                 "turn fusions off, comma-separated, for A/B (also EDGEDECODE_NO_FUSE): " + llm::FusionNames() +
                     ", all; the unfused paths compute the same function");
}

// --profile and --trace (run, bench).
struct ProfileOptions {
  bool profile = false;
  std::string trace;
  void Add(CLI::App& app) {
    app.add_flag("--profile", profile,
                 "print per-op time, bytes moved, GB/s, barrier wait and kernel to stderr at the end (off: no cost)");
    app.add_option("--trace", trace, "write a Chrome trace (JSON; opens in Perfetto) of every op on every thread");
  }
  bool on() const { return profile || !trace.empty(); }
};

// Options shared by the commands that load a model.
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

  void Add(CLI::App& app) {
    app.add_option("-m,--model", model, "GGUF model file")->required();
    app.add_option("-c,--ctx-size", n_ctx, "context size in tokens (default: the model's, at most 4096)");
    app.add_option("-t,--threads", n_threads, "threads (default: all cores)");
    app.add_option("-b,--batch", n_batch, "tokens per forward pass in prefill")->check(CLI::PositiveNumber);
    app.add_option("--kernels", kernels, "matmul kernels: auto, ref, avx2, avx512, neon")->capture_default_str();
    app.add_flag("-v,--verbose", verbose, "log the kernel each weight type gets");
    app.add_flag("--no-repack", no_repack, "keep the matrices in the file mapping and layout (by default they are moved to huge-page memory at load, q4_0, q4_K and q6_K repacked by 8 rows for the x86 kernels)");
    app.add_option("--kv-type", kv_type, "KV cache type for K and V: f16, q8_0, q4_0, f32");
    app.add_option("--ctk", type_k, "K cache type")->capture_default_str();
    app.add_option("--ctv", type_v, "V cache type")->capture_default_str();
    app.add_flag("--attn-f16", attn_f16, "attention as llama.cpp's CPU flash attention computes it over an f16 cache (f16 query and accumulator): reproduces its default output exactly on small heads");
    app.add_option("--rotate-k", rotate_k, "Hadamard-rotate keys before quantizing: 1 on, 0 off, -1 auto (on for q8_0 and q4_0 K)")->capture_default_str();
    AddNoFuse(app, no_fuse);
  }
};

inline int Fail(const Status& st) {
  std::fprintf(stderr, "edgedecode: %s\n", st.message().c_str());
  switch (st.code()) {
    case StatusCode::kInvalidArgument: return 2;
    case StatusCode::kCorrupt: case StatusCode::kNotFound: case StatusCode::kIoError: case StatusCode::kUnsupported: return 3;
    default: return 1;
  }
}

inline Status ParseKvTypes(const ModelOptions& o, llm::ContextParams* cp) {
  const std::string k = o.kv_type.empty() ? o.type_k : o.kv_type, v = o.kv_type.empty() ? o.type_v : o.kv_type;
  if (!ParseGgmlType(k, &cp->type_k)) return InvalidArgument("unknown K cache type '" + k + "'");
  if (!ParseGgmlType(v, &cp->type_v)) return InvalidArgument("unknown V cache type '" + v + "'");
  cp->rotate_k = o.rotate_k;
  cp->attn_f16 = o.attn_f16;
  return Status::Ok();
}

void PrintPlan(FILE* out, const llm::MemoryPlan& plan, uint64_t device_bytes, double headroom, const std::string& device);

struct Loaded {
  std::unique_ptr<llm::Model> model;
  std::unique_ptr<llm::Context> ctx;
  double load_s = 0;
  llm::MemoryPlan plan;
};

inline Result<Loaded> LoadModel(const ModelOptions& o) {
  auto t0 = Clock::now();
  ED_ASSIGN_OR_RETURN(kernels::Isa isa, kernels::ResolveIsa(o.kernels));
  ED_ASSIGN_OR_RETURN(llm::FusionSet fusions, llm::ResolveFusions(o.no_fuse));
  Loaded l;
  ED_ASSIGN_OR_RETURN(l.model, llm::Model::Load(o.model));
  const size_t repacked = o.no_repack ? 0 : l.model->RepackForKernels(isa);
  llm::ContextParams cp;
  cp.n_ctx = o.n_ctx;
  cp.n_threads = o.n_threads;
  cp.n_batch = o.n_batch;
  cp.isa = isa;
  cp.fusions = fusions;
  ED_RETURN_IF_ERROR(ParseKvTypes(o, &cp));
  {
    // Refuse before allocating, with the plan, rather than be killed by the OOM killer.
    llm::PlanParams pp;
    pp.n_ctx = cp.n_ctx > 0 ? cp.n_ctx : std::min(l.model->config().n_ctx_train, 4096);
    pp.n_batch = cp.n_batch;
    pp.type_k = cp.type_k;
    pp.type_v = cp.type_v;
    pp.n_threads = cp.n_threads > 0 ? cp.n_threads : 1;
    l.plan = llm::PlanMemory(*l.model, pp);
    const uint64_t avail = llm::AvailableMemoryBytes();
    if (avail > 0 && l.plan.total > avail) {
      PrintPlan(stderr, l.plan, avail, 1.0, "this machine (available memory)");
      return ResourceExhausted("the model needs " + llm::FormatBytes(l.plan.total) + " but only " + llm::FormatBytes(avail) +
                               " is available: lower -c, use --kv-type q8_0 or q4_0, or a smaller weight type (see edgedecode plan)");
    }
  }
  ED_ASSIGN_OR_RETURN(l.ctx, llm::Context::Create(*l.model, cp));
  l.load_s = Seconds(t0, Clock::now());
  if (o.verbose) {
    const llm::ModelConfig& c = l.model->config();
    std::fprintf(stderr, "model: %s arch=%s dim=%d layers=%d heads=%d kv_heads=%d ffn=%d vocab=%d ctx=%d threads=%d\n",
                 o.model.c_str(), c.arch.c_str(), c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.ffn_dim, c.n_vocab,
                 l.ctx->n_ctx(), l.ctx->n_threads());
    std::set<GgmlType> types;
    for (const llm::Weight* w : l.model->all_weights()) types.insert(w->type);
    for (GgmlType t : types) std::fprintf(stderr, "kernel: %-6s -> %s\n", TypeName(static_cast<uint32_t>(t)).c_str(), kernels::KernelName(isa, t).c_str());
    if (!fusions.all_on()) std::fprintf(stderr, "fusions off: %s\n", fusions.OffList().c_str());
    if (repacked > 0)
      std::fprintf(stderr, "kernel: matrices moved to huge-page memory, q4_0 / q4_K / q6_K (and q8_0 with AVX-512) repacked by 8 rows (%s; token embedding kept in the file mapping)\n",
                   llm::FormatBytes(repacked).c_str());
  }
  return l;
}

}  // namespace edgedecode::cli
