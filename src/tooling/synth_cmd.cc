// edgedecode synth: a model with random weights in a real architecture shape.
#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tooling/cmd_util.h"
#include "tooling/convert_util.h"
#include "tooling/synth.h"

namespace edgedecode::cli {

int SynthMain(int argc, char** argv) {
  using namespace edgedecode::tooling;
  std::string presets;
  for (const auto& n : PresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  CLI::App app{"Write a GGUF model with random weights and a real architecture shape (deterministic by seed).",
               "edgedecode synth"};
  std::string preset, type_name = "f16", vocab, config, out;
  uint64_t seed = 1;
  int threads = 2;
  double logit_scale = 0;
  bool json = false;
  app.add_option("--preset", preset, "shape preset: " + presets);
  app.add_option("--config", config, "JSON file of shape fields (dim, n_layers, n_heads, n_kv_heads, ffn, vocab, "
                                     "context, arch, tied, qkv_bias, rope_base, rms_eps, preset); see docs/tooling.md");
  app.add_option("--type", type_name, "type of the weight matrices: " + WritableTypeList())->capture_default_str();
  app.add_option("--vocab", vocab, "copy the tokenizer from this vocab GGUF (default: a synthetic SentencePiece one)");
  app.add_option("--seed", seed, "weight seed")->capture_default_str();
  app.add_option("--logit-scale", logit_scale, "std of the output logits (default: chosen from the vocab size)");
  app.add_option("-t,--threads", threads, "threads for generating and quantizing")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("-o,--output", out, "output GGUF")->required();
  app.add_flag("--json", json, "print a JSON summary on stdout");
  CLI11_PARSE(app, argc, argv);

  SynthConfig cfg;
  if (!config.empty()) {
    std::ifstream f(config);
    if (!f) return Fail("synth", NotFound(config + ": cannot open"));
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    if (!preset.empty()) {  // --preset gives the base the config file overrides
      auto j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_object() && !j.contains("preset")) {
        j["preset"] = preset;
        text = j.dump();
      }
    }
    auto shape = ShapeFromJson(text, config);
    if (!shape.ok()) return Fail("synth", shape.status());
    cfg.shape = shape.value();
  } else {
    if (preset.empty()) return Fail("synth", InvalidArgument("give --preset NAME (" + presets + ") or --config FILE.json"));
    auto shape = Preset(preset);
    if (!shape.ok()) return Fail("synth", shape.status());
    cfg.shape = shape.value();
  }
  if (!ParseGgmlType(type_name, &cfg.type) || !IsWritableType(cfg.type))
    return Fail("synth", InvalidArgument("unknown type '" + type_name + "' (types: " + WritableTypeList() + ")"));
  cfg.seed = seed;
  cfg.vocab_path = vocab;
  cfg.threads = threads;
  cfg.logit_scale = logit_scale;
  cfg.progress = true;
  SynthStats st;
  Status s = SynthesizeModel(cfg, out, &st);
  if (!s.ok()) return Fail("synth", s);
  std::fprintf(stderr, "synth: wrote %s: %s %s, %.1fM params, %.1f MiB, %.1f s\n", out.c_str(),
               cfg.shape.arch.c_str(), TypeTraits(cfg.type).name, st.n_params / 1e6, st.file_bytes / 1048576.0,
               st.seconds);
  if (json) {
    nlohmann::json j = {{"output", out}, {"arch", cfg.shape.arch}, {"type", TypeTraits(cfg.type).name},
                        {"params", st.n_params}, {"bytes", st.file_bytes}, {"seconds", st.seconds},
                        {"fallbacks", st.n_fallbacks}, {"seed", seed}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace edgedecode::cli
