#include "cli/model_options.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "base/temp_path.h"
#include "cli/common.h"
#include "cli/output_file.h"

namespace edgedecode::cli {

constexpr int kMaxContextOption = 1 << 20;  // what llm::Context accepts

void AddNoFuse(CLI::App& app, std::string& no_fuse) {
  app.add_option("--no-fuse", no_fuse,
                 "turn fusions off, comma-separated, for A/B (also EDGEDECODE_NO_FUSE): " + llm::FusionNames() +
                     ", all; the unfused paths compute the same function");
}

void ProfileOptions::Add(CLI::App& app) {
  app.add_flag("--profile", profile,
               "print per-op time, bytes moved, GB/s, barrier wait and kernel to stderr at the end (off: no cost)");
  app.add_option("--trace", trace, "write a Chrome trace (JSON; opens in Perfetto) of every op on every thread to FILE");
}

Status ProfileOptions::Validate(const std::vector<std::string>& inputs) const {
  if (trace == "-") return InvalidArgument("--trace -: stdout carries the command's output; name a trace FILE.json");
  if (!trace.empty()) return CheckOutputIsNotInput(trace, inputs, "--trace");
  return Status::Ok();
}

Status ProfileOptions::WriteTrace(const std::vector<std::pair<std::string, const llm::Profiler*>>& profiles) const {
  if (trace.empty()) return Status::Ok();
  const std::string tmp = TempPathFor(trace);
  Status st = llm::Profiler::WriteTrace(tmp, profiles);
  if (st.ok() && std::rename(tmp.c_str(), trace.c_str()) != 0) st = IoError(trace + ": cannot rename " + tmp + " to it");
  if (!st.ok()) std::remove(tmp.c_str());
  return st;
}

void ModelOptions::Add(CLI::App& app) {
  app.add_option("-m,--model", model, "GGUF model file")->required();
  app.add_option("-c,--ctx-size", n_ctx, "context size in tokens (default: the model's, at most 4096)");
  app.add_option("-t,--threads", n_threads, "threads (default: all cores)");
  app.add_option("-b,--batch-size,--batch", n_batch, "tokens per forward pass in prefill")->capture_default_str();
  app.add_option("--kernels", kernels, "matmul kernels: auto, ref, avx2, avx512, neon")->capture_default_str();
  app.add_flag("-v,--verbose", verbose, "log the kernel each weight type gets");
  app.add_flag("--no-repack", no_repack,
               "keep the matrices in the file mapping and layout (by default they are copied to huge-page memory at "
               "load and repacked for the kernels)");
  CLI::Option* kv = app.add_option("--kv-type", kv_type, "KV cache type for K and V: f16, bf16, q8_0, q4_0, f32");
  app.add_option("--ctk,--cache-type-k", type_k, "K cache type")->capture_default_str()->excludes(kv);
  app.add_option("--ctv,--cache-type-v", type_v, "V cache type")->capture_default_str()->excludes(kv);
  app.add_flag("--attn-f16", attn_f16,
               "attention as llama.cpp's CPU flash attention computes it over an f16 cache (f16 query and "
               "accumulator): reproduces its default output exactly on small heads");
  app.add_option("--rotate-k", rotate_k, "Hadamard-rotate keys before quantizing: 1 on, 0 off, -1 auto (on for q8_0 and q4_0 K)")
      ->capture_default_str();
  AddNoFuse(app, no_fuse);
}

Status ModelOptions::Validate() const {
  if (n_ctx < 0) return InvalidArgument("-c must be >= 0 (0: the model's context)");
  if (n_ctx > kMaxContextOption)
    return InvalidArgument("-c " + std::to_string(n_ctx) + " is more than the largest context, " +
                           std::to_string(kMaxContextOption) + " tokens");
  if (n_threads < 0) return InvalidArgument("-t must be >= 0 (0: all cores)");
  if (n_batch < 1) return InvalidArgument("-b must be >= 1");
  if (rotate_k < -1 || rotate_k > 1) return InvalidArgument("--rotate-k must be -1, 0 or 1");
  return Status::Ok();
}

void SamplerOptions::Add(CLI::App& app) {
  llm::SamplerParams& p = params;
  app.add_option("--temp", p.temperature, "temperature; 0 = greedy")->capture_default_str();
  app.add_option("--top-k", p.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", p.top_p, "top-p, in (0, 1] (1 = off)")->capture_default_str();
  app.add_option("--min-p", p.min_p, "min-p, in [0, 1] (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", p.repeat_penalty, "repetition penalty, > 0 (1 = off)")->capture_default_str();
  app.add_option("--repeat-last-n", p.repeat_last_n, "tokens the penalty looks back over")->capture_default_str();
  app.add_option("-s,--seed", p.seed, "RNG seed (default: random, printed): the same seed gives the same text")
      ->each([this](const std::string&) { seed_given = true; });
}

Status SamplerOptions::Finish() {
  const llm::SamplerParams& p = params;
  if (!std::isfinite(p.temperature) || p.temperature < 0) return InvalidArgument("--temp must be >= 0 (0: greedy)");
  if (p.top_k < 0) return InvalidArgument("--top-k must be >= 0 (0: off)");
  if (!(p.top_p > 0 && p.top_p <= 1)) return InvalidArgument("--top-p must be in (0, 1] (1: off)");
  if (!(p.min_p >= 0 && p.min_p <= 1)) return InvalidArgument("--min-p must be in [0, 1] (0: off)");
  if (!(p.repeat_penalty > 0) || !std::isfinite(p.repeat_penalty)) return InvalidArgument("--repeat-penalty must be > 0 (1: off)");
  if (p.repeat_last_n < 0) return InvalidArgument("--repeat-last-n must be >= 0");
  if (!seed_given) {
    std::random_device rd;
    params.seed = (static_cast<uint64_t>(rd()) << 32 | rd()) & ((uint64_t{1} << 53) - 1);  // exact in a JSON double
  }
  return Status::Ok();
}

Status ParseKvTypes(const ModelOptions& o, llm::ContextParams* cp) {
  const std::string k = o.kv_type.empty() ? o.type_k : o.kv_type, v = o.kv_type.empty() ? o.type_v : o.kv_type;
  if (!ParseGgmlType(k, &cp->type_k)) return InvalidArgument("unknown K cache type '" + k + "' (f16, bf16, q8_0, q4_0, f32)");
  if (!ParseGgmlType(v, &cp->type_v)) return InvalidArgument("unknown V cache type '" + v + "' (f16, bf16, q8_0, q4_0, f32)");
  cp->rotate_k = o.rotate_k;
  cp->attn_f16 = o.attn_f16;
  return Status::Ok();
}

std::string FormatPlan(const llm::MemoryPlan& plan, uint64_t device_bytes, double headroom, const std::string& device) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof line, "%-32s %12s  %s\n", "component", "bytes", "how");
  s += line;
  for (const llm::MemoryItem& it : plan.items) {
    std::snprintf(line, sizeof line, "%-32s %12s  ", it.component.c_str(), llm::FormatBytes(it.bytes).c_str());
    s += line + it.detail + "\n";
  }
  std::snprintf(line, sizeof line, "%-32s %12s\n", "total (peak)", llm::FormatBytes(plan.total).c_str());
  s += line;
  if (device_bytes > 0) {
    const double frac = static_cast<double>(plan.total) / static_cast<double>(device_bytes);
    std::snprintf(line, sizeof line, "%-32s %12s  %.0f%% of it; rule: at most %.0f%% -> %s\n", ("device: " + device).c_str(),
                  llm::FormatBytes(device_bytes).c_str(), 100 * frac, 100 * headroom, frac <= headroom ? "PASS" : "FAIL");
    s += line;
  }
  return s;
}

Result<LoadedWeights> LoadWeights(const ModelOptions& o) {
  ED_RETURN_IF_ERROR(o.Validate());
  LoadedWeights w;
  ED_ASSIGN_OR_RETURN(w.isa, kernels::ResolveIsa(o.kernels));
  ED_ASSIGN_OR_RETURN(w.fusions, llm::ResolveFusions(o.no_fuse));
  ED_ASSIGN_OR_RETURN(w.model, llm::Model::Load(o.model));
  // The scales of the quantized matrices (a NaN there makes every output garbage); the float matrices are
  // covered by the logits check of every evaluation (docs/runtime.md).
  ED_RETURN_IF_ERROR(w.model->CheckWeights(false).WithContext(o.model));
  w.repacked_bytes = o.no_repack ? 0 : w.model->RepackForKernels(w.isa);
  return w;
}

Status CheckPlanFits(const llm::Model& m, const llm::PlanParams& pp, llm::MemoryPlan* plan, const llm::MemoryPlan* extra) {
  *plan = llm::PlanMemory(m, pp);
  if (extra) llm::AddDraftPlan(*extra, plan);
  ED_ASSIGN_OR_RETURN(const uint64_t avail, llm::AvailableMemoryBytes());
  if (avail == 0 || plan->total <= avail) return Status::Ok();
  std::fputs(FormatPlan(*plan, avail, 1.0, "this machine (available memory)").c_str(), stderr);
  return ResourceExhausted(std::string(extra ? "the model and its draft need " : "the model needs ") + llm::FormatBytes(plan->total) + " but only " + llm::FormatBytes(avail) +
                           " is available: lower -c, use --kv-type q8_0 or q4_0, or a smaller weight type (see edgedecode plan)");
}

int ContextLength(const llm::Model& m, int n_ctx_option) {
  const int train = m.config().n_ctx_train;
  if (n_ctx_option > 0 && train > 0 && n_ctx_option > train)
    std::fprintf(stderr, "warning: -c %d is beyond the model's trained context of %d tokens: quality degrades past it\n",
                 n_ctx_option, train);
  return n_ctx_option > 0 ? n_ctx_option : std::min(train > 0 ? train : 4096, 4096);
}

Status ContextParamsFor(const ModelOptions& o, const LoadedWeights& w, llm::ContextParams* cp, llm::PlanParams* pp) {
  cp->n_ctx = ContextLength(*w.model, o.n_ctx);
  cp->n_threads = o.n_threads;
  cp->n_batch = o.n_batch;
  cp->isa = w.isa;
  cp->fusions = w.fusions;
  ED_RETURN_IF_ERROR(ParseKvTypes(o, cp));
  pp->n_ctx = cp->n_ctx;
  pp->n_batch = cp->n_batch;
  pp->type_k = cp->type_k;
  pp->type_v = cp->type_v;
  pp->n_threads = cp->n_threads > 0 ? cp->n_threads : 1;
  return Status::Ok();
}

Result<Loaded> LoadModel(const ModelOptions& o, const ExtraPlan& extra_plan) {
  const auto t0 = Clock::now();
  ED_ASSIGN_OR_RETURN(LoadedWeights w, LoadWeights(o));
  llm::ContextParams cp;
  llm::PlanParams pp;
  ED_RETURN_IF_ERROR(ContextParamsFor(o, w, &cp, &pp));
  Loaded l;
  l.model = std::move(w.model);
  llm::MemoryPlan extra;
  if (extra_plan) {
    ED_ASSIGN_OR_RETURN(extra, extra_plan(*l.model, pp));
  }
  ED_RETURN_IF_ERROR(CheckPlanFits(*l.model, pp, &l.plan, extra_plan ? &extra : nullptr));
  ED_ASSIGN_OR_RETURN(l.ctx, llm::Context::Create(*l.model, cp));
  l.params = cp;
  l.load_s = Seconds(t0, Clock::now());
  if (o.verbose) {
    const llm::ModelConfig& c = l.model->config();
    std::fprintf(stderr, "model: %s arch=%s dim=%d layers=%d heads=%d kv_heads=%d ffn=%d vocab=%d ctx=%d threads=%d\n",
                 o.model.c_str(), c.arch.c_str(), c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.ffn_dim, c.n_vocab,
                 l.ctx->n_ctx(), l.ctx->n_threads());
    std::set<GgmlType> types;
    for (const llm::Weight* wt : l.model->all_weights()) types.insert(wt->type);
    for (GgmlType t : types)
      std::fprintf(stderr, "kernel: %-6s -> %s\n", TypeName(static_cast<uint32_t>(t)).c_str(), kernels::KernelName(w.isa, t).c_str());
    if (!w.fusions.all_on()) std::fprintf(stderr, "fusions off: %s\n", w.fusions.OffList().c_str());
    if (w.repacked_bytes > 0)
      std::fprintf(stderr, "kernel: matrices moved to huge-page memory and repacked for the kernels (%s; token embedding kept in the file mapping)\n",
                   llm::FormatBytes(w.repacked_bytes).c_str());
  }
  return l;
}

}  // namespace edgedecode::cli
