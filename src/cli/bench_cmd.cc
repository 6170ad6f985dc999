// `edgedecode bench`: prefill (pp) and decode (tg) speed like llama-bench, with the decode roofline
// (read bandwidth measured in the same run / bytes read per token) beside each decode figure; with --spec, a
// speculative drafter against plain decoding (bench_spec.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/bench_spec.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/model_options.h"
#include "cli/output_file.h"
#include "cli/signals.h"
#include "doctor/bandwidth.h"
#include "llm/memory_plan.h"

namespace edgedecode::cli {
namespace {

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  s.min = v.front();
  s.max = v.back();
  size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

Result<std::vector<int>> ParseThreadList(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 4096) return InvalidArgument("-t: '" + item + "' is not a thread count (1..4096)");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return InvalidArgument("-t needs at least one thread count");
  return out;
}

// Deterministic token ids that avoid special tokens at the low end of the vocabulary.
std::vector<int32_t> BenchTokens(int n, int n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  uint64_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    t[static_cast<size_t>(i)] = static_cast<int32_t>(3 + (x >> 33) % static_cast<uint64_t>(std::max(1, n_vocab - 3)));
  }
  return t;
}

}  // namespace

// Rolls a context back to `depth` positions of toks: a truncation, unless sliding-window rings have
// overwritten the window before depth (gemma3 after more than a batch of tokens) or a conv state (lfm2)
// cannot go back, then the depth again.
Status BackToDepth(llm::Context& c, const std::vector<int32_t>& toks, int depth) {
  if (depth >= c.min_truncate()) {
    c.Truncate(depth);
    return Status::Ok();
  }
  c.Reset();
  return depth > 0 ? c.Eval(toks.data(), depth, false) : Status::Ok();
}

// Multiply-accumulates of one token through the matrices (every layer's seven, or an lfm2 conv layer's in_proj,
// out_proj and FFN, then the output): what a verify pass of K tokens computes K times, for its GMAC/s beside
// the core's int8 peak (kernels_bench). A layer's absent matrices have no rows.
double MacsPerToken(const llm::Model& m) {
  double macs = static_cast<double>(m.output().rows) * static_cast<double>(m.output().cols);
  for (const llm::LayerWeights& L : m.layers())
    for (const llm::Weight* w : L.matrices())
      macs += static_cast<double>(w->rows) * static_cast<double>(w->cols);
  return macs;
}

int BenchMain(int argc, char** argv) {
  const std::string cmd = "edgedecode bench";
  CLI::App app{"Prefill and decode speed, median of repeated runs, with the decode roofline "
               "(memory read bandwidth measured here / bytes read per token).",
               cmd};
  ModelOptions mo;  // -m, --kernels, --no-repack, -b, --no-fuse; -t and --kv-type take lists here
  std::string threads_arg = "1,2";
  int n_prompt = 512, n_gen = 128, reps = 3, depth = 0, verify = 0;
  JsonOutput json;
  std::string kv_type = "f16";
  app.add_option("-m,--model", mo.model, "GGUF model file")->required();
  app.add_option("--kv-type", kv_type, "KV cache types, comma-separated (f16, bf16, q8_0, q4_0, f32); with several, the decode runs alternate between them")->capture_default_str();
  app.add_option("-p,--n-prompt", n_prompt, "prefill test length (0 = skip)")->capture_default_str();
  app.add_option("-n,--n-gen", n_gen, "decode test length (0 = skip)")->capture_default_str();
  app.add_option("-t,--threads", threads_arg, "thread counts, comma-separated")->capture_default_str();
  app.add_option("-r,--repetitions", reps, "runs per test (the median is reported)")->capture_default_str();
  app.add_option("-d,--depth", depth, "KV cache depth before the prefill and the decode test")->capture_default_str();
  app.add_option("-k,--verify", verify, "also time one forward pass over K tokens (speculative verify), as a multiple of one decode step, with its int8 GMAC/s");
  app.add_option("-b,--batch-size,--batch", mo.n_batch, "prefill batch")->capture_default_str();
  app.add_option("--kernels", mo.kernels, "auto, ref, avx2, avx512, neon")->capture_default_str();
  json.Add(app, "one object per result line (JSON Lines)");
  app.add_flag("--no-repack", mo.no_repack, "keep the matrices in the file mapping and layout (A/B of the huge-page copy and the repacked q4_0 / q8_0 / q4_K / q6_K kernels)");
  AddNoFuse(app, mo.no_fuse);
  ProfileOptions po;
  po.Add(app);
  bool spec_ab = false;
  std::string spec_prompt, spec_prompt_file;
  SpecOptions spec;
  CLI::Option* spec_opt = app.add_flag("--spec", spec_ab,
                                       "instead of pp/tg: a speculative drafter (the options of `run`: --lookup N, --draft MODEL, "
                                       "--draft-quant TYPE, --self-spec LAYERS|auto, --draft-replay FILE, --tree-nodes N, ...) "
                                       "against plain decoding, -n tokens greedily, the arms alternating run by run; the outputs "
                                       "must be equal");
  CLI::Option* prompt_opt = app.add_option("--prompt", spec_prompt, "with --spec: the prompt text (default: a built-in story)")
                                ->needs(spec_opt);
  app.add_option("-f,--file", spec_prompt_file, "with --spec: read the prompt from FILE ('-': stdin)")
      ->needs(spec_opt)
      ->excludes(prompt_opt);
  spec.Add(app);
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (Status st = spec.Validate(); !st.ok()) return Fail(cmd, st);
  if (spec.on() && !spec_ab) return Fail(cmd, InvalidArgument("the drafter options (--lookup, --draft, --draft-quant, --self-spec, --draft-replay) need --spec"));
  if (spec_ab && !spec.on())
    return Fail(cmd, InvalidArgument("--spec needs a drafter: --lookup N, --draft MODEL, --draft-quant TYPE, --self-spec LAYERS|auto or --draft-replay FILE"));
  if (spec_ab) {
    for (const char* name : {"--n-prompt", "--depth", "--verify"})
      if (app.get_option(name)->count() > 0)
        return Fail(cmd, InvalidArgument(std::string(name) + " is not used with --spec (the prompt is text: --prompt TEXT or -f FILE)"));
    if (po.on()) return Fail(cmd, InvalidArgument("--profile and --trace are not used with --spec"));
    if (n_gen < 2) return Fail(cmd, InvalidArgument("with --spec, -n must be >= 2 (the timed passes follow the first token)"));
  }
  if (reps < 1) return Fail(cmd, InvalidArgument("-r must be >= 1"));
  if (n_prompt < 0 || n_gen < 0 || depth < 0 || verify < 0) return Fail(cmd, InvalidArgument("-p, -n, -d and -k must be >= 0"));
  auto thread_counts = ParseThreadList(threads_arg);
  if (!thread_counts.ok()) return Fail(cmd, thread_counts.status());
  if (Status st = po.Validate({mo.model}); !st.ok()) return Fail(cmd, st);
  if (json.on() && !json.to_stdout()) {
    if (Status st = CheckOutputIsNotInput(json.path(), {mo.model, spec_prompt_file}, "--json"); !st.ok()) return Fail(cmd, st);
  }
  std::vector<GgmlType> kv_types;
  {
    std::stringstream ss(kv_type);
    std::string item;
    while (std::getline(ss, item, ',')) {
      GgmlType t;
      if (!ParseGgmlType(item, &t) || !(t == GgmlType::kF16 || t == GgmlType::kBF16 || t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0 || t == GgmlType::kF32))
        return Fail(cmd, InvalidArgument("--kv-type: unknown KV type '" + item + "' (f16, bf16, q8_0, q4_0, f32)"));
      kv_types.push_back(t);
    }
    if (kv_types.empty()) return Fail(cmd, InvalidArgument("--kv-type needs at least one type"));
  }

  std::string prompt_text = spec_prompt_file.empty() ? spec_prompt : std::string();
  if (spec_ab && !spec_prompt_file.empty()) {
    auto text = ReadInputText(spec_prompt_file);
    if (!text.ok()) return Fail(cmd, text.status());
    prompt_text = std::move(*text);
  } else if (spec_ab && prompt_opt->count() == 0) {
    prompt_text = llm::SelfSpecCalibrationText();
  }
  auto weights = LoadWeights(mo);
  if (!weights.ok()) return Fail(cmd, weights.status());
  const kernels::Isa isa = weights->isa;
  const llm::FusionSet fusions = weights->fusions;
  const llm::Model& m = *weights->model;
  InterruptScope interrupt;
  std::string jsonl;  // --json FILE: written at the end
  auto print_json = [&](nlohmann::json j) {
    StampJson(j, "bench");
    const std::string line = DumpJson(j) + "\n";
    if (json.to_stdout()) {
      std::fputs(line.c_str(), stdout);
      std::fflush(stdout);
    } else {
      jsonl += line;
    }
  };
  // The end of every path: the JSON Lines file written whole, then the exit code (130 / 143 after a signal,
  // with what finished already printed).
  auto finish = [&]() -> int {
    if (json.on() && !json.to_stdout()) {
      if (Status st = WriteFileAtomically(json.path(), jsonl); !st.ok()) return Fail(cmd, st);
    }
    if (InterruptScope::requested()) {
      std::fprintf(stderr, "bench: interrupted; the results above are the tests that finished\n");
      return ToInt(InterruptScope::exit_code());
    }
    return 0;
  };
  FILE* out = json.text();
  if (spec_ab) {
    SpecBenchParams sp;
    sp.model_path = mo.model;
    sp.weights = &*weights;
    sp.n_batch = mo.n_batch;
    sp.no_repack = mo.no_repack;
    sp.threads = *thread_counts;
    sp.kv_types = kv_types;
    sp.prompt = prompt_text;
    sp.n_gen = n_gen;
    sp.reps = reps;
    if (Status st = RunSpecBench(spec, sp, out, json.on() ? std::function<void(nlohmann::json)>(print_json) : nullptr); !st.ok())
      return Fail(cmd, st);
    return finish();
  }
  const double model_mib = static_cast<double>(m.file().file_size()) / (1 << 20);
  // One profile per (threads, test), over the measured runs only (not the warm-up run, not the depth fill).
  std::vector<std::unique_ptr<llm::Profiler>> profiles;
  std::vector<std::pair<std::string, const llm::Profiler*>> traced;
  if (!fusions.all_on()) std::fprintf(out, "fusions off: %s\n\n", fusions.OffList().c_str());
  std::fprintf(out, "| model | size MiB | threads | kernels | test | t/s median | min..max | GB/s read | roofline t/s | %% of roofline |\n"
                    "|---|---|---|---|---|---|---|---|---|---|\n");
  const bool label_kv = kv_types.size() > 1 || kv_types[0] != GgmlType::kF16;
  const std::string tg_name = "tg" + std::to_string(n_gen) + (depth ? "@d" + std::to_string(depth) : "");
  for (int threads : *thread_counts) {
    if (InterruptScope::requested()) break;
    // One context per KV type. Prefill runs type after type; the decode runs alternate between the types
    // (run r of every type, then run r + 1), so that a shared machine's slow spells hit all of them alike.
    struct KvRun {
      GgmlType kv;
      std::unique_ptr<llm::Context> ctx;
      llm::Profiler* prof = nullptr;
      std::vector<double> tps, gbps, step_s;
    };
    std::vector<KvRun> runs;
    for (GgmlType kv : kv_types) {
      llm::ContextParams cp;
      cp.n_threads = threads;
      cp.isa = isa;
      cp.n_batch = mo.n_batch;
      cp.fusions = fusions;
      cp.type_k = cp.type_v = kv;
      cp.n_ctx = std::max(depth + n_prompt, depth + n_gen + std::max(verify, 1) + 8);
      llm::PlanParams pp;
      pp.n_ctx = cp.n_ctx;
      pp.n_batch = cp.n_batch;
      pp.type_k = pp.type_v = kv;
      pp.n_threads = threads;
      llm::MemoryPlan plan;
      if (Status st = CheckPlanFits(m, pp, &plan); !st.ok()) return Fail(cmd, st);
      auto ctx = llm::Context::Create(m, cp);
      if (!ctx.ok()) return Fail(cmd, ctx.status());
      runs.push_back(KvRun{kv, std::move(*ctx), nullptr, {}, {}, {}});
    }
    auto label = [&](const std::string& test, GgmlType kv) {
      return label_kv ? test + " kv " + TypeName(static_cast<uint32_t>(kv)) : test;
    };
    auto new_profile = [&](const std::string& test, llm::Context& c) -> llm::Profiler* {
      if (!po.on()) return nullptr;
      profiles.push_back(std::make_unique<llm::Profiler>(c.n_threads(), !po.trace.empty()));
      traced.emplace_back(test + ", " + std::to_string(threads) + " threads", profiles.back().get());
      return profiles.back().get();
    };
    // Profiling covers the measured runs: attached around them, reset after the warm-up run.
    auto attach = [&](llm::Context& c, llm::Profiler* prof, int rep) {
      if (prof == nullptr) return;
      if (rep == 1) prof->Reset();
      c.SetProfiler(prof);
    };
    auto emit = [&](const std::string& test, GgmlType kv, const std::vector<double>& tps, double gbps, double roof,
                    llm::Profiler* prof) {
      Stats s = Summarize(tps);
      const std::string name = label(test, kv);
      if (tps.empty()) return;  // interrupted before a measured run
      if (json.on()) {
        nlohmann::json j = {{"model", mo.model}, {"size_bytes", m.file().file_size()}, {"threads", threads},
                            {"kernels", kernels::IsaName(isa)}, {"test", test}, {"kv_type", TypeName(static_cast<uint32_t>(kv))},
                            {"tps_median", s.median}, {"tps_min", s.min}, {"tps_max", s.max}, {"runs", tps.size()}};
        if (roof > 0) j.update({{"read_gb_s", gbps}, {"roofline_tps", roof}, {"roofline_pct", 100 * s.median / roof}});
        if (!fusions.all_on()) j["fusions_off"] = fusions.OffList();
        if (prof != nullptr && po.profile) j["profile"] = prof->ToJson();
        print_json(j);
      }
      if (roof > 0) {
        std::fprintf(out, "| %s | %.0f | %d | %s | %s | %.2f | %.2f..%.2f | %.1f | %.2f | %.0f%% |\n", m.config().name.c_str(), model_mib,
                     threads, kernels::IsaName(isa), name.c_str(), s.median, s.min, s.max, gbps, roof, 100 * s.median / roof);
      } else {
        std::fprintf(out, "| %s | %.0f | %d | %s | %s | %.2f | %.2f..%.2f | | | |\n", m.config().name.c_str(), model_mib, threads,
                     kernels::IsaName(isa), name.c_str(), s.median, s.min, s.max);
      }
      std::fflush(out);
      if (prof != nullptr && po.profile) {
        std::fprintf(stderr, "\n%s, %d threads (profile of the %d measured runs):", name.c_str(), threads, reps);
        std::fputs(prof->FormatTable().c_str(), stderr);
        std::fprintf(stderr, "\n");
      }
    };
    if (n_prompt > 0) {  // at depth: a prompt after `depth` tokens of history (a follow-up turn)
      const std::string pp_name = "pp" + std::to_string(n_prompt) + (depth ? "@d" + std::to_string(depth) : "");
      std::vector<int32_t> toks = BenchTokens(depth + n_prompt, m.config().n_vocab);
      for (KvRun& run : runs) {
        llm::Context& c = *run.ctx;
        std::vector<double> tps;
        llm::Profiler* prof = new_profile(label(pp_name, run.kv), c);
        c.Reset();
        if (depth > 0) {
          if (Status st = c.Eval(toks.data(), depth, false); !st.ok()) return Fail(cmd, st);
        }
        for (int r = 0; r <= reps && !InterruptScope::requested(); ++r) {  // run 0 warms up
          if (depth == 0) c.Reset();
          else if (Status st = BackToDepth(c, toks, depth); !st.ok()) return Fail(cmd, st);
          attach(c, prof, r);
          auto t0 = Clock::now();
          Status st = c.Eval(toks.data() + depth, n_prompt, false);
          double s = std::chrono::duration<double>(Clock::now() - t0).count();
          c.SetProfiler(nullptr);
          if (!st.ok()) return Fail(cmd, st);
          if (r > 0) tps.push_back(n_prompt / s);
        }
        emit(pp_name, run.kv, tps, 0, 0, prof);
      }
    }
    if (n_gen > 0 || verify > 0) {
      std::vector<int32_t> toks = BenchTokens(depth + n_gen + verify + 1, m.config().n_vocab);
      for (KvRun& run : runs) {  // the depth is filled once per context (the same tokens every run)
        run.ctx->Reset();
        if (depth > 0) {
          if (Status st = run.ctx->Eval(toks.data(), depth, false); !st.ok()) return Fail(cmd, st);
        }
        if (n_gen > 0) run.prof = new_profile(label(tg_name, run.kv), *run.ctx);
      }
      for (int r = 0; r <= reps && !InterruptScope::requested(); ++r) {  // run 0 warms up
        for (KvRun& run : runs) {
          llm::Context& c = *run.ctx;
          if (Status st = BackToDepth(c, toks, depth); !st.ok()) return Fail(cmd, st);
          // Bandwidth beside each run: the machine is shared, so one sample per run, not one for the whole command.
          if (r > 0) run.gbps.push_back(bench::MeasureReadBandwidth(threads, size_t{256} << 20, 3, 4));
          attach(c, run.prof, r);
          auto t0 = Clock::now();
          for (int i = 0; i < n_gen; ++i) c.Eval(&toks[static_cast<size_t>(depth + i)], 1, false);
          double s = std::chrono::duration<double>(Clock::now() - t0).count();
          c.SetProfiler(nullptr);
          if (r > 0 && n_gen > 0) {
            run.tps.push_back(n_gen / s);
            run.step_s.push_back(s / n_gen);
          }
        }
      }
      for (KvRun& run : runs) {
        llm::Context& c = *run.ctx;
        const double bw = Summarize(run.gbps).median;
        const double roof = bw * 1e9 / llm::DecodeStepBytes(m, depth + n_gen / 2, run.kv);
        if (n_gen > 0) emit(tg_name, run.kv, run.tps, bw, roof, run.prof);
        if (verify > 0 && n_gen > 0 && !run.step_s.empty() && !InterruptScope::requested()) {
          std::vector<double> ratio;
          const double step = Summarize(run.step_s).median;
          for (int r = 0; r <= reps; ++r) {
            if (Status st = BackToDepth(c, toks, depth); !st.ok()) return Fail(cmd, st);
            auto t0 = Clock::now();
            c.Eval(&toks[static_cast<size_t>(depth)], verify, true);
            double s = std::chrono::duration<double>(Clock::now() - t0).count();
            if (r > 0) ratio.push_back(s / step);
          }
          Stats s = Summarize(ratio);
          const double gmacs = verify * MacsPerToken(m) / (s.median * step) / 1e9;
          const std::string vname = label("verify" + std::to_string(verify), run.kv);
          if (json.on())
            print_json({{"model", mo.model}, {"threads", threads}, {"test", "verify" + std::to_string(verify)},
                        {"kv_type", TypeName(static_cast<uint32_t>(run.kv))}, {"cost_vs_decode_step_median", s.median},
                        {"gmac_per_s", gmacs}});
          std::fprintf(out, "| %s | %.0f | %d | %s | %s | %.2fx one decode step (%.0f GMAC/s) | %.2f..%.2f | | | |\n",
                       m.config().name.c_str(), model_mib, threads, kernels::IsaName(isa), vname.c_str(), s.median, gmacs,
                       s.min, s.max);
        }
      }
    }
  }
  if (Status st = po.WriteTrace(traced); !st.ok()) return Fail(cmd, st);
  return finish();
}

}  // namespace edgedecode::cli
