// `edgedecode synth`: a model with random weights in a real architecture shape.
#include <cstdio>

#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/output_file.h"
#include "cli/signals.h"
#include "tooling/convert_util.h"
#include "tooling/synth.h"

namespace edgedecode::cli {

int SynthMain(int argc, char** argv) {
  using namespace edgedecode::tooling;
  const std::string cmd = "edgedecode synth";
  std::string presets;
  for (const auto& n : PresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  CLI::App app{"Write a GGUF model with random weights and a real architecture shape (deterministic by seed).", cmd};
  std::string preset, type_name = "f16", vocab, config, out;
  uint64_t seed = 1;
  int threads = 2;
  double logit_scale = 0;
  bool no_progress = false;
  JsonOutput json;
  app.add_option("--preset", preset, "shape preset: " + presets);
  app.add_option("--config", config, "JSON file of shape fields (dim, n_layers, n_heads, n_kv_heads, ffn, vocab, "
                                     "context, arch, tied, qkv_bias, rope_base, rms_eps, head_dim, rope_scaling_factor, rope_low_freq_factor, "
                                     "rope_high_freq_factor, rope_orig_context, rope_dims, longrope, sliding_window, preset); see docs/tooling.md");
  app.add_option("--type", type_name, "type of the weight matrices: " + WritableTypeList())->capture_default_str();
  app.add_option("--vocab", vocab, "copy the tokenizer from this vocab GGUF (default: a synthetic SentencePiece one)");
  app.add_option("-s,--seed", seed, "weight seed")->capture_default_str();
  app.add_option("--logit-scale", logit_scale, "std of the output logits (default: chosen from the vocab size)");
  app.add_option("-t,--threads", threads, "threads for generating and quantizing")->capture_default_str();
  app.add_option("-o,--output", out, "output GGUF")->required();
  json.Add(app, "a summary");
  AddNoProgress(app, &no_progress);
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (threads < 1) return Fail(cmd, InvalidArgument("-t must be >= 1"));
  if (Status st = CheckOutputIsNotInput(out, {config, vocab}, "-o"); !st.ok()) return Fail(cmd, st);

  SynthConfig cfg;
  if (!config.empty()) {
    auto text = ReadInputText(config, uint64_t{1} << 20);
    if (!text.ok()) return Fail(cmd, text.status());
    // --preset gives the base the config file overrides (a "preset" in the file wins).
    auto shape = ShapeFromJson(*text, config, preset);
    if (!shape.ok()) return Fail(cmd, shape.status());
    cfg.shape = shape.value();
  } else {
    if (preset.empty()) return Fail(cmd, InvalidArgument("give --preset NAME (" + presets + ") or --config FILE.json"));
    auto shape = Preset(preset);
    if (!shape.ok()) return Fail(cmd, shape.status());
    cfg.shape = shape.value();
  }
  if (!ParseGgmlType(type_name, &cfg.type) || !IsWritableType(cfg.type))
    return Fail(cmd, InvalidArgument("unknown type '" + type_name + "' (types: " + WritableTypeList() + ")"));
  cfg.seed = seed;
  cfg.vocab_path = vocab;
  cfg.threads = threads;
  cfg.logit_scale = logit_scale;
  if (!no_progress) cfg.log = [](const std::string& line) { std::fprintf(stderr, "synth: %s\n", line.c_str()); };
  ExitOnSignalRemoving(TempPathFor(out));
  SynthStats st;
  if (Status s = SynthesizeModel(cfg, out, &st); !s.ok()) return Fail(cmd, s);
  std::fprintf(stderr, "synth: wrote %s: %s %s, %.1fM params, %.1f MiB, %.1f s\n", out.c_str(),
               cfg.shape.arch.c_str(), TypeTraits(cfg.type).name, st.n_params / 1e6, st.file_bytes / 1048576.0,
               st.seconds);
  if (json.on()) {
    nlohmann::json j = {{"output", out}, {"arch", cfg.shape.arch}, {"type", TypeTraits(cfg.type).name},
                        {"params", st.n_params}, {"bytes", st.file_bytes}, {"seconds", st.seconds},
                        {"fallbacks", st.n_fallbacks}, {"seed", seed}};
    if (Status s = json.Write(j, "synth", {out, config, vocab}); !s.ok()) return Fail(cmd, s);
  }
  return 0;
}

}  // namespace edgedecode::cli
