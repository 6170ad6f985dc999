#include "cli/bench_spec.h"

#include <algorithm>

#include "cli/common.h"
#include "cli/signals.h"
#include "llm/speculative.h"

namespace edgedecode::cli {
namespace {

struct Range {
  double median = 0, min = 0, max = 0;
};

Range Summarize(std::vector<double> v) {
  Range r;
  if (v.empty()) return r;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  r.min = v.front();
  r.max = v.back();
  r.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return r;
}

// One arm's decode of n_gen tokens after the prompt: tokens, and the seconds of the passes after the first
// token (sampled from the prefill's logits), as `run` times its decode.
struct Decoded {
  std::vector<int32_t> tokens;
  double decode_s = 0;
  llm::LookupStats stats;  // the speculative arm's
};

Result<Decoded> Decode(llm::Context& ctx, const std::vector<int32_t>& prompt, int n_gen, SpecOptions* spec) {
  ctx.Reset();
  llm::SamplerParams sp;
  sp.temperature = 0;  // greedy: the two arms must agree token for token
  llm::Sampler sampler(sp);
  for (int32_t t : prompt) sampler.Accept(t);
  std::unique_ptr<llm::LookupDecoder> dec;
  llm::LookupParams lp;
  if (spec) lp = spec->NewRun(ctx);
  ED_RETURN_IF_ERROR(ctx.Eval(prompt.data(), static_cast<int>(prompt.size()), false));
  if (spec) {
    spec->PrefillDraft(prompt);
    dec = std::make_unique<llm::LookupDecoder>(ctx, sampler, lp, prompt);
  }
  Decoded d;
  d.tokens.reserve(static_cast<size_t>(n_gen));
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < n_gen; ++i) {
    const int32_t next = dec ? dec->Sample() : sampler.Sample(ctx.logits(0), ctx.n_vocab());
    if (i == 0) t0 = Clock::now();
    d.tokens.push_back(next);
    if (i + 1 == n_gen) break;
    ED_RETURN_IF_ERROR(dec ? dec->Advance(next, n_gen - (i + 1) - 1) : ctx.Eval(&next, 1, false));
  }
  d.decode_s = Seconds(t0, Clock::now());
  if (dec) d.stats = dec->stats();
  return d;
}

Status CheckSameOutput(const Decoded& plain, const Decoded& spec, int rep, const tok::Tokenizer& tk) {
  for (size_t i = 0; i < plain.tokens.size(); ++i) {
    if (i < spec.tokens.size() && spec.tokens[i] == plain.tokens[i]) continue;
    const int32_t s = i < spec.tokens.size() ? spec.tokens[i] : -1;
    return Internal("the speculative output differs from plain decoding at generated token " + std::to_string(i) +
                    " of repetition " + std::to_string(rep) + ": plain " + std::to_string(plain.tokens[i]) + " '" +
                    tk.TokenToPiece(plain.tokens[i]) + "', speculative " + std::to_string(s) +
                    (s >= 0 ? " '" + tk.TokenToPiece(s) + "'" : std::string()) +
                    " (speculative decoding must give plain decoding's tokens under greedy sampling)");
  }
  return Status::Ok();
}

// The measured repetitions of one A/B.
struct Arms {
  std::vector<double> plain_tps, spec_tps;
  llm::LookupStats total;  // summed over the speculative runs
  double spec_decode_s = 0;
};

void Add(const llm::LookupStats& s, llm::LookupStats* t) {
  t->drafted += s.drafted;
  t->accepted += s.accepted;
  t->verify_passes += s.verify_passes;
  t->tree_passes += s.tree_passes;
  t->plain_passes += s.plain_passes;
  t->tokens += s.tokens;
  t->rejected += s.rejected;
  t->draft_s += s.draft_s;
  t->verify_s += s.verify_s;
  t->plain_s += s.plain_s;
}

}  // namespace

Status RunSpecBench(SpecOptions& spec, const SpecBenchParams& p, FILE* out,
                    const std::function<void(nlohmann::json)>& json_line) {
  const llm::Model& m = *p.weights->model;
  const tok::Tokenizer& tk = m.tokenizer();
  std::vector<int32_t> prompt = tk.Encode(p.prompt, tk.add_bos_default());
  if (prompt.empty()) {
    if (tk.bos() < 0) return InvalidArgument("empty prompt and the vocabulary has no BOS token");
    prompt.push_back(tk.bos());
  }
  const double tok_per_run = std::max(1, p.n_gen - 1);  // the tokens of the timed passes
  const ExtraPlan draft_plan = spec.DraftPlan();
  bool resolved = false;
  std::fprintf(out,
               "| model | threads | kernels | test | t/s median | min..max | vs plain | acceptance | tokens/pass | "
               "draft / verify / plain / other |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int threads : p.threads) {
    for (GgmlType kv : p.kv_types) {
      if (InterruptScope::requested()) return Status::Ok();
      llm::ContextParams cp;
      cp.n_threads = threads;
      cp.isa = p.weights->isa;
      cp.n_batch = p.n_batch;
      cp.fusions = p.weights->fusions;
      cp.type_k = cp.type_v = kv;
      // Room for the prompt, the output and a last draft; and for --self-spec auto's calibration text.
      cp.n_ctx = std::max(static_cast<int>(prompt.size()) + p.n_gen + 72, 512);
      llm::PlanParams pp;
      pp.n_ctx = cp.n_ctx;
      pp.n_batch = cp.n_batch;
      pp.type_k = pp.type_v = kv;
      pp.n_threads = threads;
      llm::MemoryPlan plan, extra;
      if (draft_plan) {
        ED_ASSIGN_OR_RETURN(extra, draft_plan(m, pp));
      }
      ED_RETURN_IF_ERROR(CheckPlanFits(m, pp, &plan, draft_plan ? &extra : nullptr));
      ED_ASSIGN_OR_RETURN(std::unique_ptr<llm::Context> ctx, llm::Context::Create(m, cp));
      ED_RETURN_IF_ERROR(spec.LoadDraftModel(m, threads, cp.isa, p.no_repack));
      ED_RETURN_IF_ERROR(spec.CreateDraftContext(cp));
      if (!resolved) {  // the skip set and the replay are the model's and the prompt's, whatever the context
        ED_RETURN_IF_ERROR(spec.Resolve(*ctx, prompt, tk, 0));
        resolved = true;
      }
      Arms arms;
      for (int r = 0; r <= p.reps && !InterruptScope::requested(); ++r) {  // run 0 warms up
        ED_ASSIGN_OR_RETURN(Decoded plain, Decode(*ctx, prompt, p.n_gen, nullptr));
        ED_ASSIGN_OR_RETURN(Decoded fast, Decode(*ctx, prompt, p.n_gen, &spec));
        ED_RETURN_IF_ERROR(CheckSameOutput(plain, fast, r, tk));
        if (r == 0) continue;
        arms.plain_tps.push_back(tok_per_run / std::max(plain.decode_s, 1e-9));
        arms.spec_tps.push_back(tok_per_run / std::max(fast.decode_s, 1e-9));
        Add(fast.stats, &arms.total);
        arms.spec_decode_s += fast.decode_s;
      }
      if (arms.spec_tps.empty()) return Status::Ok();  // interrupted before a measured repetition
      const Range a = Summarize(arms.plain_tps), b = Summarize(arms.spec_tps);
      const llm::LookupStats& t = arms.total;
      const double ratio = b.median / std::max(a.median, 1e-9);
      const double runs = static_cast<double>(arms.spec_tps.size());
      const double per_pass = t.passes() > 0 ? tok_per_run * runs / static_cast<double>(t.passes()) : 0.0;
      const double other_s = std::max(0.0, arms.spec_decode_s - t.draft_s - t.verify_s - t.plain_s);
      auto pct = [&](double s) { return 100 * s / std::max(arms.spec_decode_s, 1e-9); };
      const std::string test = "tg" + std::to_string(p.n_gen);
      const std::string kv_name = TypeName(static_cast<uint32_t>(kv));
      const std::string kv_label = p.kv_types.size() > 1 || kv != GgmlType::kF16 ? " kv " + kv_name : "";
      const char* name = m.config().name.c_str();
      const char* isa = kernels::IsaName(cp.isa);
      std::fprintf(out, "| %s | %d | %s | %s plain%s | %.2f | %.2f..%.2f | 1.00x | | 1.00 | |\n", name, threads, isa,
                   test.c_str(), kv_label.c_str(), a.median, a.min, a.max);
      std::fprintf(out, "| %s | %d | %s | %s %s%s | %.2f | %.2f..%.2f | %.2fx | %.1f%% | %.2f | %.0f%% / %.0f%% / %.0f%% / %.0f%% |\n",
                   name, threads, isa, test.c_str(), spec.Describe().c_str(), kv_label.c_str(), b.median, b.min, b.max,
                   ratio, 100 * t.acceptance(), per_pass, pct(t.draft_s), pct(t.verify_s), pct(t.plain_s), pct(other_s));
      std::fprintf(out, "speculative / plain decode: %.2fx (%d thread%s%s; medians of %zu runs each, outputs equal)\n\n", ratio,
                   threads, threads == 1 ? "" : "s", kv_label.empty() ? "" : (", kv " + kv_name).c_str(), arms.spec_tps.size());
      std::fflush(out);
      if (json_line) {
        nlohmann::json speculative = SpecOptions::CountersJson(t, per_pass);
        speculative.update({{"tps_median", b.median}, {"tps_min", b.min}, {"tps_max", b.max},
                            {"decode_s", arms.spec_decode_s}, {"other_s", other_s}});
        json_line({{"model", p.model_path},
                   {"size_bytes", m.file().file_size()},
                   {"threads", threads},
                   {"kernels", isa},
                   {"test", "spec " + test},
                   {"kv_type", kv_name},
                   {"n_gen", p.n_gen},
                   {"prompt_tokens", prompt.size()},
                   {"runs", arms.spec_tps.size()},
                   {"method", spec.Method()},
                   {"drafter", spec.Describe()},
                   {"outputs_equal", true},
                   {"plain", {{"tps_median", a.median}, {"tps_min", a.min}, {"tps_max", a.max}}},
                   {"speculative", speculative},
                   {"speedup", ratio}});
      }
    }
  }
  return Status::Ok();
}

}  // namespace edgedecode::cli
